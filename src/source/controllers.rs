//! Where kube-controller-manager's and kube-scheduler's `/metrics` are scraped from, and
//! with which credentials: the controllers' own informers (`informer_*`, Kubernetes 1.36+)
//! and workqueues (`workqueue_*`) come from there, as the apiserver's watch cache comes
//! from the apiserver's page.
//!
//! Both components serve `/metrics` on their secure port only (10257 and 10259 since
//! Kubernetes 1.22, `--secure-port`; the insecure ports 10252 and 10251 are gone), behind
//! delegated authentication and authorization: a client the apiserver authenticates
//! (a client certificate, a bearer token) and authorises for `GET /metrics`
//! (k8s.io/apiserver `pkg/server/options` `DelegatingAuthenticationOptions` and
//! `DelegatingAuthorizationOptions`). The node's admin kubeconfig is such a client, so by
//! default regscope uses the kubeconfig it already uses for the apiserver, pointed at the
//! component's URL. Without `--tls-cert-file` a component serves a certificate it signed
//! itself at start (k8s.io/apiserver `SecureServingOptions.MaybeDefaultWithSelfSignedCerts`),
//! which no CA file can verify: on loopback regscope then accepts it and says so in the
//! source line; elsewhere it needs `--controllers-cacert`.

use std::path::PathBuf;

use super::scrape::{AuthFlags, HttpAuth, ScrapeFrom};
use crate::model::ScrapeTarget;

/// One component's `/metrics` as configured: a live URL (a flag, or found in the node's
/// static pod manifest) or files (`--controller-manager-metrics-file`, repeatable like the
/// apiserver's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControllerScrape {
    /// [`ScrapeTarget::ControllerManager`] or [`ScrapeTarget::Scheduler`].
    pub target: ScrapeTarget,
    /// `https://127.0.0.1:10257/metrics` and the like.
    pub url: Option<String>,
    /// The URL was found on the node rather than given: a failure to set it up is a note,
    /// not an error.
    pub discovered: bool,
    /// Metrics files, in order; non-empty replaces the live scrape.
    pub files: Vec<PathBuf>,
}

/// The component's default secure port (kube-controller-manager 10257, kube-scheduler
/// 10259; Kubernetes `pkg/cluster/ports`), for examples in messages.
fn default_port(target: ScrapeTarget) -> u16 {
    match target {
        ScrapeTarget::Scheduler => 10259,
        _ => 10257,
    }
}

/// Whether a URL's host is the loopback interface (`127.0.0.0/8`, `::1`, `localhost`).
pub fn is_loopback(url: &str) -> bool {
    let Ok(u) = url.parse::<http::Uri>() else {
        return false;
    };
    let Some(host) = u.host() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(a) => a.is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

/// How to scrape `url` for `target`, and a line saying how (for the source shown beside
/// the target's status).
///
/// - With a token or a client certificate in `auth` (`--controllers-token-file`,
///   `--controllers-cert`/`--controllers-key`): a plain GET with those.
/// - Otherwise with `kube` (the apiserver's kubeconfig, its exec, token or certificate
///   credentials) pointed at the component.
///
/// The server's certificate is verified against `--controllers-cacert` when given; without
/// it, only a loopback URL is scraped, its certificate unverified (a self-signed one by
/// default). Errors are one line naming what to give.
pub fn scrape_from(
    target: ScrapeTarget,
    url: &str,
    auth: &HttpAuth,
    kube: Option<&kube::Config>,
) -> Result<(ScrapeFrom, String), String> {
    let component = target.component();
    let parsed: http::Uri = url
        .parse()
        .map_err(|e| format!("{component} metrics URL {url}: {e}"))?;
    let (Some(scheme @ ("http" | "https")), Some(authority)) =
        (parsed.scheme_str(), parsed.authority())
    else {
        return Err(format!(
            "{component} metrics URL {url}: needs a scheme and host, e.g. https://127.0.0.1:{}/metrics",
            default_port(target)
        ));
    };
    let loopback = is_loopback(url);
    let https = scheme == "https";
    if https && auth.cacert.is_none() && !loopback {
        return Err(format!(
            "{component} metrics at {url} not scraped: off loopback its certificate must be verified, and no --controllers-cacert was given (the CA that signed the component's --tls-cert-file; without --tls-cert-file it serves a certificate it signed itself in memory, which nothing can verify: give it one, or scrape it on 127.0.0.1)"
        ));
    }
    let sends_secret = auth.token_file.is_some() || auth.cert.is_some();
    if !https && !loopback && sends_secret {
        return Err(format!(
            "{component} metrics at {url} not scraped: credentials are not sent over plain HTTP off loopback (use the component's https secure port)"
        ));
    }
    let unverified = https && auth.cacert.is_none();
    let verify_note = if unverified {
        ", certificate not verified (loopback)"
    } else {
        ""
    };
    if auth.token_file.is_some() || auth.cert.is_some() || auth.key.is_some() {
        let mut a = auth.clone();
        a.insecure = unverified;
        let from =
            ScrapeFrom::url_with(url, &a, &AuthFlags::CONTROLLERS).map_err(|e| e.to_string())?;
        let how = if a.token_file.is_some() {
            "bearer token"
        } else {
            "client certificate"
        };
        return Ok((from, format!("{url} ({how}{verify_note})")));
    }
    if !https {
        // Plain HTTP (a test server, a metrics proxy on the node): no credentials to send.
        let from =
            ScrapeFrom::url_with(url, auth, &AuthFlags::CONTROLLERS).map_err(|e| e.to_string())?;
        return Ok((from, url.to_string()));
    }
    let Some(base) = kube else {
        return Err(format!(
            "{component} metrics at {url} not scraped: no credentials (it serves /metrics to authenticated clients only: give --kubeconfig, --controllers-token-file or --controllers-cert/--controllers-key)"
        ));
    };
    let mut cfg = base.clone();
    // The authority without any user info a URL may carry.
    let host_port = authority.as_str().rsplit('@').next().unwrap_or_default();
    cfg.cluster_url = format!("{scheme}://{host_port}")
        .parse()
        .map_err(|e| format!("{component} metrics URL {url}: {e}"))?;
    cfg.tls_server_name = None;
    cfg.proxy_url = None;
    match &auth.cacert {
        Some(ca) => {
            let pem = std::fs::read(ca)
                .map_err(|e| format!("cannot read --controllers-cacert {}: {e}", ca.display()))?;
            let ders = super::kubeconfig::pem_certificates(&pem);
            if ders.is_empty() {
                return Err(format!(
                    "--controllers-cacert {} holds no certificate",
                    ca.display()
                ));
            }
            cfg.root_cert = Some(ders);
            cfg.accept_invalid_certs = false;
        }
        None => {
            cfg.root_cert = None;
            cfg.accept_invalid_certs = unverified;
        }
    }
    let client = kube::Client::try_from(cfg)
        .map_err(|e| format!("cannot build a client for {component} at {url}: {e}"))?;
    let from = ScrapeFrom::Kube {
        client,
        url: url.to_string(),
    };
    Ok((from, format!("{url} (kubeconfig credentials{verify_note})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        assert!(is_loopback("https://127.0.0.1:10257/metrics"));
        assert!(is_loopback("https://127.0.0.53:10257/metrics"));
        assert!(is_loopback("https://[::1]:10259/metrics"));
        assert!(is_loopback("https://localhost:10259/metrics"));
        assert!(!is_loopback("https://10.0.0.4:10257/metrics"));
        assert!(!is_loopback("not a url"));
    }

    #[test]
    fn a_remote_component_needs_a_ca() {
        let e = scrape_from(
            ScrapeTarget::Scheduler,
            "https://10.0.0.4:10259/metrics",
            &HttpAuth::default(),
            None,
        )
        .unwrap_err();
        assert!(
            e.contains("kube-scheduler") && e.contains("--controllers-cacert"),
            "{e}"
        );
    }

    #[test]
    fn no_token_over_plain_http_off_loopback() {
        let auth = HttpAuth {
            token_file: Some("/nonexistent".into()),
            ..Default::default()
        };
        let e = scrape_from(
            ScrapeTarget::ControllerManager,
            "http://10.0.0.4:10257/metrics",
            &auth,
            None,
        )
        .unwrap_err();
        assert!(e.contains("plain HTTP off loopback"), "{e}");
        let e = scrape_from(
            ScrapeTarget::Scheduler,
            "ftp://127.0.0.1/metrics",
            &auth,
            None,
        )
        .unwrap_err();
        assert!(e.contains("https://127.0.0.1:10259/metrics"), "{e}");
    }

    #[test]
    fn no_credentials_is_said() {
        let e = scrape_from(
            ScrapeTarget::ControllerManager,
            "https://127.0.0.1:10257/metrics",
            &HttpAuth::default(),
            None,
        )
        .unwrap_err();
        assert!(e.contains("no credentials"), "{e}");
    }
}
