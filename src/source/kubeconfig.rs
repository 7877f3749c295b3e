//! Finding and reaching kube-apiserver: kubeconfig discovery (`--kubeconfig`, kubeadm's
//! `/etc/kubernetes/admin.conf`, `$KUBECONFIG`, `~/.kube/config`, in that order), loading it
//! with the kube crate (which does exec, token and certificate authentication), and the
//! `--apiserver-metrics-url` mode with a bearer token or a client certificate.
//!
//! Discovery is a pure function of its inputs ([`discover_kubeconfig`]) so that it can be
//! tested without touching the process environment.

use std::path::{Path, PathBuf};

use kube::config::{KubeConfigOptions, Kubeconfig};

use super::scrape::{HttpAuth, ScrapeFrom};

/// kubeadm's admin kubeconfig on control-plane nodes (readable by root).
pub const KUBEADM_ADMIN_CONF: &str = "/etc/kubernetes/admin.conf";

/// Where the kubeconfig in use came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KubeconfigOrigin {
    /// `--kubeconfig`: must be usable, or regscope exits with status 2.
    Flag,
    /// kubeadm's `/etc/kubernetes/admin.conf`.
    KubeadmAdmin,
    /// `$KUBECONFIG` (a path list; the readable files are merged, as kubectl does).
    Env,
    /// `~/.kube/config`.
    Home,
}

impl KubeconfigOrigin {
    pub fn label(self) -> &'static str {
        match self {
            KubeconfigOrigin::Flag => "--kubeconfig",
            KubeconfigOrigin::KubeadmAdmin => "kubeadm admin.conf",
            KubeconfigOrigin::Env => "$KUBECONFIG",
            KubeconfigOrigin::Home => "~/.kube/config",
        }
    }
}

/// The kubeconfig file(s) to load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeconfigChoice {
    /// One file, or several from `$KUBECONFIG` (merged, first wins).
    pub paths: Vec<PathBuf>,
    pub origin: KubeconfigOrigin,
}

impl KubeconfigChoice {
    /// The paths joined with `:`, for messages.
    pub fn display(&self) -> String {
        self.paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(":")
    }
}

/// What discovery may look at, passed in rather than read from the process so that tests
/// need no global state. [`DiscoveryEnv::from_process`] gives the real one.
#[derive(Clone, Debug, Default)]
pub struct DiscoveryEnv {
    /// `$KUBECONFIG`, verbatim (a path list).
    pub kubeconfig: Option<std::ffi::OsString>,
    /// `$HOME`.
    pub home: Option<PathBuf>,
    /// kubeadm's admin kubeconfig; [`KUBEADM_ADMIN_CONF`] in real use.
    pub kubeadm_admin: PathBuf,
}

impl DiscoveryEnv {
    pub fn from_process() -> Self {
        Self {
            kubeconfig: std::env::var_os("KUBECONFIG"),
            home: std::env::var_os("HOME").map(PathBuf::from),
            kubeadm_admin: PathBuf::from(KUBEADM_ADMIN_CONF),
        }
    }
}

/// What a probe of a candidate file found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    Readable,
    /// Exists but cannot be opened (typically: root-only and not run with sudo).
    Unreadable,
    Missing,
}

/// Probes a file on the real filesystem.
pub fn probe_file(p: &Path) -> Probe {
    match std::fs::File::open(p) {
        Ok(_) if p.is_file() => Probe::Readable,
        Ok(_) => Probe::Missing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Probe::Missing,
        Err(_) => Probe::Unreadable,
    }
}

/// Picks the kubeconfig: `explicit` (`--kubeconfig`, returned as is; loading reports a
/// file that cannot be read), else kubeadm's admin.conf when readable, else the readable
/// files of `$KUBECONFIG`, else `~/.kube/config` when readable, else none (the apiserver side
/// is then "not configured", which is not an error). The notes say which candidates were
/// present but unusable, for the event log.
pub fn discover_kubeconfig(
    explicit: Option<&Path>,
    env: &DiscoveryEnv,
    probe: &dyn Fn(&Path) -> Probe,
) -> (Option<KubeconfigChoice>, Vec<String>) {
    let mut notes = Vec::new();
    if let Some(p) = explicit {
        return (
            Some(KubeconfigChoice {
                paths: vec![p.to_path_buf()],
                origin: KubeconfigOrigin::Flag,
            }),
            notes,
        );
    }
    match probe(&env.kubeadm_admin) {
        Probe::Readable => {
            return (
                Some(KubeconfigChoice {
                    paths: vec![env.kubeadm_admin.clone()],
                    origin: KubeconfigOrigin::KubeadmAdmin,
                }),
                notes,
            )
        }
        Probe::Unreadable => notes.push(format!(
            "{} exists but cannot be read (run with sudo to use it)",
            env.kubeadm_admin.display()
        )),
        Probe::Missing => {}
    }
    if let Some(list) = env.kubeconfig.as_deref().filter(|l| !l.is_empty()) {
        let mut paths = Vec::new();
        for p in std::env::split_paths(list) {
            if p.as_os_str().is_empty() {
                continue;
            }
            match probe(&p) {
                Probe::Readable => paths.push(p),
                Probe::Unreadable => notes.push(format!(
                    "$KUBECONFIG names {} but it cannot be read",
                    p.display()
                )),
                Probe::Missing => {}
            }
        }
        if !paths.is_empty() {
            return (
                Some(KubeconfigChoice {
                    paths,
                    origin: KubeconfigOrigin::Env,
                }),
                notes,
            );
        }
        notes.push(format!(
            "$KUBECONFIG ({}) names no readable file",
            list.to_string_lossy()
        ));
    }
    if let Some(home) = &env.home {
        let p = home.join(".kube").join("config");
        match probe(&p) {
            Probe::Readable => {
                return (
                    Some(KubeconfigChoice {
                        paths: vec![p],
                        origin: KubeconfigOrigin::Home,
                    }),
                    notes,
                )
            }
            Probe::Unreadable => notes.push(format!("{} exists but cannot be read", p.display())),
            Probe::Missing => {}
        }
    }
    (None, notes)
}

/// Reads (and merges, first file wins) the kubeconfig file(s) and builds the kube client
/// configuration for `context` (the current context when `None`). Errors are one line and
/// name the file.
pub async fn load_kube_config(
    choice: &KubeconfigChoice,
    context: Option<&str>,
) -> Result<kube::Config, String> {
    let mut merged: Option<Kubeconfig> = None;
    for p in &choice.paths {
        let kc = Kubeconfig::read_from(p).map_err(|e| {
            // YAML errors carry a source snippet on further lines: one line only.
            let msg = innermost(&e);
            let first = msg.lines().next().unwrap_or("").trim();
            format!("cannot read kubeconfig {}: {first}", p.display())
        })?;
        merged = Some(match merged {
            None => kc,
            Some(m) => m
                .merge(kc)
                .map_err(|e| format!("cannot merge kubeconfig {}: {e}", p.display()))?,
        });
    }
    let kc = merged.ok_or_else(|| "no kubeconfig file given".to_string())?;
    if let Some(ctx) = context {
        if !kc.contexts.iter().any(|c| c.name == ctx) {
            let names: Vec<&str> = kc.contexts.iter().map(|c| c.name.as_str()).collect();
            return Err(format!(
                "kubeconfig {} has no context '{ctx}' (it has: {})",
                choice.display(),
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ));
        }
    }
    let opts = KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    kube::Config::from_custom_kubeconfig(kc, &opts)
        .await
        .map_err(|e| {
            format!(
                "cannot use kubeconfig {}: {}",
                choice.display(),
                super::connect::error_chain(&e)
            )
        })
}

/// The most specific message of an error: its innermost source (kube wraps the I/O or
/// YAML error with the path, which the caller already says).
fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(s) = cur.source() {
        cur = s;
    }
    cur.to_string()
}

/// A kube client configuration for `--apiserver-metrics-url` mode: the URL's scheme, host
/// and port with the same bearer token file, client certificate and CA, so that informers
/// work without a kubeconfig too.
pub fn kube_config_for_url(url: &str, auth: &HttpAuth) -> Result<kube::Config, String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| format!("--apiserver-metrics-url {url}: {e}"))?;
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return Err(format!(
            "--apiserver-metrics-url {url}: needs a scheme and host, e.g. https://127.0.0.1:6443/metrics"
        ));
    };
    let base: http::Uri = format!("{scheme}://{authority}")
        .parse()
        .map_err(|e| format!("--apiserver-metrics-url {url}: {e}"))?;
    let mut cfg = kube::Config::new(base);
    if let Some(t) = &auth.token_file {
        cfg.auth_info.token_file = Some(t.display().to_string());
    }
    if let Some(c) = &auth.cert {
        cfg.auth_info.client_certificate = Some(c.display().to_string());
    }
    if let Some(k) = &auth.key {
        cfg.auth_info.client_key = Some(k.display().to_string());
    }
    if let Some(ca) = &auth.cacert {
        let pem = std::fs::read(ca)
            .map_err(|e| format!("cannot read --apiserver-cacert {}: {e}", ca.display()))?;
        let ders = pem_certificates(&pem);
        if ders.is_empty() {
            return Err(format!(
                "--apiserver-cacert {} holds no PEM certificate",
                ca.display()
            ));
        }
        cfg.root_cert = Some(ders);
    }
    Ok(cfg)
}

/// The DER bytes of every `CERTIFICATE` block in a PEM bundle.
pub(crate) fn pem_certificates(pem: &[u8]) -> Vec<Vec<u8>> {
    use base64::Engine;
    let text = String::from_utf8_lossy(pem);
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line == "-----BEGIN CERTIFICATE-----" {
            cur = Some(String::new());
        } else if line == "-----END CERTIFICATE-----" {
            if let Some(b64) = cur.take() {
                if let Ok(der) = base64::engine::general_purpose::STANDARD.decode(b64) {
                    out.push(der);
                }
            }
        } else if let Some(b) = cur.as_mut() {
            b.push_str(line);
        }
    }
    out
}

/// How regscope reaches kube-apiserver, resolved from the flags (no I/O beyond probing
/// which kubeconfig files are readable). [`ApiserverAccess::connect`] builds the clients.
#[derive(Clone, Debug, Default)]
pub struct ApiserverAccess {
    /// The kubeconfig to use for informers, and for `/metrics` when `metrics_url` is unset.
    pub kubeconfig: Option<KubeconfigChoice>,
    /// `--context`; the kubeconfig's current context when `None`.
    pub context: Option<String>,
    /// `--apiserver-metrics-url`: scrape this URL (with `auth`) instead of going through the
    /// kubeconfig.
    pub metrics_url: Option<String>,
    /// Token / client certificate / CA for `metrics_url`.
    pub auth: HttpAuth,
}

/// The clients built from an [`ApiserverAccess`].
pub struct ApiserverClients {
    /// How to scrape the apiserver's `/metrics`.
    pub metrics: ScrapeFrom,
    /// A kube client for informers.
    pub kube: kube::Client,
    /// The apiserver's base URL, for titles and messages.
    pub server: String,
}

impl ApiserverAccess {
    /// Access through one kubeconfig file (e.g. the demo apiserver's), as if given with
    /// `--kubeconfig`.
    pub fn from_kubeconfig_path(path: impl Into<PathBuf>) -> Self {
        Self {
            kubeconfig: Some(KubeconfigChoice {
                paths: vec![path.into()],
                origin: KubeconfigOrigin::Flag,
            }),
            ..Default::default()
        }
    }

    /// False when no kubeconfig was found and no URL given: the apiserver side is off.
    pub fn is_configured(&self) -> bool {
        self.kubeconfig.is_some() || self.metrics_url.is_some()
    }

    /// One line saying where the apiserver is taken from.
    pub fn describe(&self) -> String {
        match (&self.metrics_url, &self.kubeconfig) {
            (Some(u), _) => format!("apiserver metrics from {u}"),
            (None, Some(k)) => format!(
                "apiserver via kubeconfig {} ({}){}",
                k.display(),
                k.origin.label(),
                self.context
                    .as_deref()
                    .map(|c| format!(", context {c}"))
                    .unwrap_or_default()
            ),
            (None, None) => "apiserver not configured".into(),
        }
    }

    /// Loads the kubeconfig (or builds a configuration from the URL and its credentials)
    /// and makes the clients. `Ok(None)` when not configured. An error is one line; the
    /// caller treats it as fatal when the kubeconfig or URL was given explicitly and as a
    /// note otherwise (see [`ApiserverAccess::is_explicit`]).
    pub async fn connect(&self) -> Result<Option<ApiserverClients>, String> {
        let Some(kube_cfg) = self.load_config().await? else {
            return Ok(None);
        };
        let server = kube_cfg
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_string();
        let kube = kube::Client::try_from(kube_cfg)
            .map_err(|e| format!("cannot build a client for {server}: {e}"))?;
        let metrics = match &self.metrics_url {
            Some(u) => ScrapeFrom::url(u, &self.auth).map_err(|e| e.to_string())?,
            None => ScrapeFrom::kube(kube.clone(), &server),
        };
        Ok(Some(ApiserverClients {
            metrics,
            kube,
            server,
        }))
    }

    /// The kube client configuration [`ApiserverAccess::connect`] builds its clients from:
    /// the kubeconfig's (with its credentials), or one made from `--apiserver-metrics-url`
    /// and its credentials. `Ok(None)` when not configured.
    pub async fn load_config(&self) -> Result<Option<kube::Config>, String> {
        Ok(Some(match (&self.kubeconfig, &self.metrics_url) {
            (Some(k), _) => load_kube_config(k, self.context.as_deref()).await?,
            (None, Some(u)) => kube_config_for_url(u, &self.auth)?,
            (None, None) => return Ok(None),
        }))
    }

    /// Whether the user named the apiserver (`--kubeconfig` or `--apiserver-metrics-url`):
    /// then failing to use it is an error, not a note.
    pub fn is_explicit(&self) -> bool {
        self.metrics_url.is_some()
            || self
                .kubeconfig
                .as_ref()
                .is_some_and(|k| k.origin == KubeconfigOrigin::Flag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn probe_map(m: &[(&str, Probe)]) -> impl Fn(&Path) -> Probe {
        let m: HashMap<PathBuf, Probe> = m.iter().map(|(p, s)| (PathBuf::from(p), *s)).collect();
        move |p: &Path| m.get(p).copied().unwrap_or(Probe::Missing)
    }

    fn env(kubeconfig: Option<&str>, home: Option<&str>) -> DiscoveryEnv {
        DiscoveryEnv {
            kubeconfig: kubeconfig.map(Into::into),
            home: home.map(Into::into),
            kubeadm_admin: "/etc/kubernetes/admin.conf".into(),
        }
    }

    #[test]
    fn explicit_wins_even_if_missing() {
        let (c, _) = discover_kubeconfig(
            Some(Path::new("/nope/kc")),
            &env(Some("/a"), Some("/home/u")),
            &probe_map(&[("/etc/kubernetes/admin.conf", Probe::Readable)]),
        );
        let c = c.unwrap();
        assert_eq!(c.origin, KubeconfigOrigin::Flag);
        assert_eq!(c.paths, vec![PathBuf::from("/nope/kc")]);
    }

    #[test]
    fn kubeadm_then_env_then_home() {
        let all = [
            ("/etc/kubernetes/admin.conf", Probe::Readable),
            ("/a", Probe::Readable),
            ("/home/u/.kube/config", Probe::Readable),
        ];
        let e = env(Some("/a"), Some("/home/u"));
        let (c, _) = discover_kubeconfig(None, &e, &probe_map(&all));
        assert_eq!(c.unwrap().origin, KubeconfigOrigin::KubeadmAdmin);
        let (c, notes) = discover_kubeconfig(None, &e, &probe_map(&all[1..]));
        let c = c.unwrap();
        assert_eq!(c.origin, KubeconfigOrigin::Env);
        assert_eq!(c.paths, vec![PathBuf::from("/a")]);
        assert!(notes.is_empty(), "{notes:?}");
        let (c, _) = discover_kubeconfig(None, &e, &probe_map(&all[2..]));
        assert_eq!(c.unwrap().origin, KubeconfigOrigin::Home);
        let (c, notes) = discover_kubeconfig(None, &e, &probe_map(&[]));
        assert!(c.is_none());
        assert!(notes.iter().any(|n| n.contains("$KUBECONFIG")), "{notes:?}");
    }

    #[test]
    fn unreadable_admin_conf_is_noted_and_skipped() {
        let (c, notes) = discover_kubeconfig(
            None,
            &env(None, Some("/home/u")),
            &probe_map(&[
                ("/etc/kubernetes/admin.conf", Probe::Unreadable),
                ("/home/u/.kube/config", Probe::Readable),
            ]),
        );
        assert_eq!(c.unwrap().origin, KubeconfigOrigin::Home);
        assert!(notes[0].contains("sudo"), "{notes:?}");
    }

    #[test]
    fn kubeconfig_path_list_keeps_readable_files() {
        let (c, _) = discover_kubeconfig(
            None,
            &env(Some("/a::/b:/c"), None),
            &probe_map(&[("/a", Probe::Readable), ("/c", Probe::Readable)]),
        );
        assert_eq!(
            c.unwrap().paths,
            vec![PathBuf::from("/a"), PathBuf::from("/c")]
        );
    }

    #[test]
    fn empty_kubeconfig_env_is_ignored() {
        let (c, notes) = discover_kubeconfig(None, &env(Some(""), None), &probe_map(&[]));
        assert!(c.is_none());
        assert!(notes.is_empty());
    }

    #[test]
    fn url_mode_config_keeps_the_base_and_credentials() {
        let cfg = kube_config_for_url(
            "https://10.0.0.1:6443/metrics",
            &HttpAuth {
                token_file: Some("/var/run/token".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(cfg.cluster_url.to_string(), "https://10.0.0.1:6443/");
        assert_eq!(cfg.auth_info.token_file.as_deref(), Some("/var/run/token"));
        assert!(kube_config_for_url("not a url", &HttpAuth::default()).is_err());
    }
}
