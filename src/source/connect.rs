//! Connecting to etcd: endpoints, TLS and authentication options (the same environment
//! variables etcdctl honours), the local default, and one-line errors that say what to do.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use etcd_client::{Certificate, Client, ConnectOptions, GetOptions, Identity, TlsOptions};

/// How to reach etcd. Built from flags and `ETCDCTL_*` variables by the CLI.
#[derive(Clone, Debug, Default)]
pub struct EtcdOptions {
    /// Endpoint URLs, e.g. `https://127.0.0.1:2379`. Empty: see [`EtcdOptions::with_defaults`].
    pub endpoints: Vec<String>,
    pub cacert: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub user: Option<String>,
    pub password: Option<String>,
}

/// Why connecting failed, each with the action to take. `fatal` errors are not retried.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(
        "cannot read {flag} {path}: {err} (check the path and that you may read it; try sudo)"
    )]
    File {
        flag: &'static str,
        path: PathBuf,
        err: std::io::Error,
    },
    #[error("{flag} {path} does not hold {expected} (check the file, and that --cert and --key are not swapped)")]
    BadFile {
        flag: &'static str,
        path: PathBuf,
        expected: String,
    },
    #[error("cannot reach etcd at {endpoint}: {detail} ({hint})")]
    Unreachable {
        endpoint: String,
        detail: String,
        hint: String,
    },
    #[error(
        "etcd at {endpoint} is not responding (connected, but no answer within {secs} s): {detail}"
    )]
    NotResponding {
        endpoint: String,
        secs: u64,
        detail: String,
    },
    #[error("TLS with {endpoint} failed: {detail} ({hint})")]
    Tls {
        endpoint: String,
        detail: String,
        hint: String,
    },
    #[error("etcd at {endpoint} refused authentication: {detail} (check --user/--password or ETCDCTL_USER)")]
    Auth { endpoint: String, detail: String },
    #[error("etcd at {endpoint} denied access: {detail} (the user needs read access to the prefix; on kubeadm nodes use the apiserver's etcd client certificate)")]
    Permission { endpoint: String, detail: String },
    #[error("etcd at {endpoint}: {detail}")]
    Other { endpoint: String, detail: String },
}

impl ConnectError {
    /// Errors that retrying cannot fix.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            ConnectError::File { .. }
                | ConnectError::BadFile { .. }
                | ConnectError::Tls { .. }
                | ConnectError::Auth { .. }
                | ConnectError::Permission { .. }
        )
    }
}

/// etcd's client URL on its own node with TLS, as kubeadm, RKE2 and k3s server nodes run
/// it (etcd's `--listen-client-urls` includes `https://127.0.0.1:2379` in their manifests).
pub const LOCAL_ETCD: &str = "https://127.0.0.1:2379";

impl EtcdOptions {
    /// Fills unset fields: no endpoints → etcd's local client URL, `https://127.0.0.1:2379`
    /// when TLS files are given, else `http://127.0.0.1:2379`. (What a control-plane node
    /// runs is found by `node::discover` before this.)
    pub fn with_defaults(mut self) -> Self {
        if self.endpoints.is_empty() {
            self.endpoints = vec![if self.cert.is_some() || self.cacert.is_some() {
                LOCAL_ETCD.into()
            } else {
                "http://127.0.0.1:2379".into()
            }];
        }
        // etcdctl accepts bare host:port; tonic needs a scheme.
        let tls = self.cacert.is_some() || self.cert.is_some();
        for e in &mut self.endpoints {
            if !e.contains("://") {
                *e = format!("{}://{e}", if tls { "https" } else { "http" });
            }
        }
        self
    }

    /// The scheme of the endpoints given (`http` or `https`; `http` when none).
    pub fn scheme(&self) -> &str {
        self.endpoints
            .first()
            .and_then(|e| e.split_once("://"))
            .map_or("http", |(s, _)| s)
    }

    /// Of a member's client URLs (etcd's `Member.clientURLs`), the first with the scheme of
    /// the endpoints given: the connection's TLS options fit it.
    pub fn client_url<'a>(&self, urls: &'a [String]) -> Option<&'a String> {
        let scheme = format!("{}://", self.scheme());
        urls.iter().find(|u| u.starts_with(&scheme))
    }

    /// The first endpoint, for messages.
    pub fn endpoint_label(&self) -> String {
        match self.endpoints.as_slice() {
            [] => "(no endpoint)".into(),
            [one] => one.clone(),
            [first, rest @ ..] => format!("{first} (+{})", rest.len()),
        }
    }

    fn tls(&self) -> Result<Option<TlsOptions>, ConnectError> {
        if self.cacert.is_none() && self.cert.is_none() && self.key.is_none() {
            return Ok(None);
        }
        let mut tls = TlsOptions::new();
        if let Some(ca) = &self.cacert {
            let pem = read_pem("--cacert", ca, "CERTIFICATE-----", "a PEM certificate")?;
            tls = tls.ca_certificate(Certificate::from_pem(pem));
        }
        match (&self.cert, &self.key) {
            (Some(c), Some(k)) => {
                let cert = read_pem("--cert", c, "CERTIFICATE-----", "a PEM certificate")?;
                let key = read_pem("--key", k, "PRIVATE KEY-----", "a PEM private key")?;
                tls = tls.identity(Identity::from_pem(cert, key));
            }
            (Some(_), None) | (None, Some(_)) => {
                return Err(ConnectError::Tls {
                    endpoint: self.endpoint_label(),
                    detail: "--cert and --key must be given together".into(),
                    hint: "pass both, or neither".into(),
                })
            }
            (None, None) => {}
        }
        Ok(Some(tls))
    }

    /// Connects and checks the connection with a Status call. Returns the client and
    /// etcd's server version. Bounded: gives up after about `timeout` per endpoint.
    pub async fn connect(&self, timeout: Duration) -> Result<(Client, String), ConnectError> {
        self.connect_info(timeout)
            .await
            .map(|c| (c.client, c.version))
    }

    /// Like [`EtcdOptions::connect`], with what the Status call told: tries the endpoints in
    /// order and uses the first that answers (etcdctl balances over them; a console needs
    /// one good member). Returns the first endpoint's error when none answers.
    pub async fn connect_info(&self, timeout: Duration) -> Result<Connected, ConnectError> {
        let mut first_err = None;
        for endpoint in &self.endpoints {
            match self.connect_one(endpoint, timeout).await {
                Ok(c) => return Ok(c),
                // Credentials and certificate files are the same for every endpoint.
                Err(e @ (ConnectError::File { .. } | ConnectError::Auth { .. })) => return Err(e),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        Err(first_err.unwrap_or(ConnectError::Other {
            endpoint: self.endpoint_label(),
            detail: "no endpoint given".into(),
        }))
    }

    /// A second connection to `endpoint` for the watch, whose requests carry etcd's
    /// require-leader flag (gRPC metadata `hasleader`, what `clientv3.WithRequireLeader`
    /// sets and kube-apiserver's watches use): etcd refuses a watch on a member without a
    /// leader and cancels open ones once the member has had none for a few election
    /// timeouts (etcd's `v3rpc` `monitorLeader`). Without it, a member cut off from the
    /// others (partitioned, or removed and not stopped yet) keeps the watch open and answers
    /// progress requests at its own stale revision, and the console would show it as live.
    pub async fn connect_require_leader(
        &self,
        endpoint: &str,
        timeout: Duration,
    ) -> Result<Client, ConnectError> {
        let opts = self
            .connect_options(endpoint, timeout)?
            .with_require_leader(true);
        match tokio::time::timeout(timeout, Client::connect([endpoint], Some(opts))).await {
            Ok(Ok(c)) => Ok(c),
            Ok(Err(e)) => Err(classify(endpoint, self, &e)),
            Err(_) => Err(ConnectError::NotResponding {
                endpoint: endpoint.to_string(),
                secs: timeout.as_secs(),
                detail: "connect timed out".into(),
            }),
        }
    }

    fn connect_options(
        &self,
        endpoint: &str,
        timeout: Duration,
    ) -> Result<ConnectOptions, ConnectError> {
        let mut opts = ConnectOptions::new()
            .with_connect_timeout(timeout)
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(10))
            .with_keep_alive_while_idle(true)
            .with_tcp_keepalive(Duration::from_secs(10));
        // Like etcdctl, TLS files apply to https:// endpoints and are ignored for http://.
        if endpoint.starts_with("https://") {
            if let Some(tls) = self.tls()? {
                opts = opts.with_tls(tls);
            }
        }
        if let Some(user) = &self.user {
            opts = opts.with_user(user.clone(), self.password.clone().unwrap_or_default());
        }
        Ok(opts)
    }

    async fn connect_one(
        &self,
        endpoint: &str,
        timeout: Duration,
    ) -> Result<Connected, ConnectError> {
        let label = endpoint.to_string();
        let opts = self.connect_options(endpoint, timeout)?;
        let fut = Client::connect([endpoint], Some(opts));
        let mut client = match tokio::time::timeout(timeout, fut).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(plain_behind_https(classify(&label, self, &e)).await),
            Err(_) => {
                return Err(ConnectError::NotResponding {
                    endpoint: label,
                    secs: timeout.as_secs(),
                    detail: "connect timed out".into(),
                })
            }
        };
        let status = match tokio::time::timeout(timeout, client.status()).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(plain_behind_https(classify(&label, self, &e)).await),
            Err(_) => {
                return Err(ConnectError::NotResponding {
                    endpoint: label,
                    secs: timeout.as_secs(),
                    detail: "status request timed out".into(),
                })
            }
        };
        let (cluster_id, revision) = status
            .header()
            .map_or((0, 0), |h| (h.cluster_id(), h.revision()));
        Ok(Connected {
            client,
            version: status.version().to_string(),
            status: etcd_status(&label, &status),
            endpoint: label,
            cluster_id,
            revision,
        })
    }
}

/// Corrects a TLS failure whose cause the error text cannot tell: a plain-HTTP etcd that
/// receives a TLS ClientHello either answers with bytes rustls calls a corrupt message, or
/// resets the connection, which looks the same as a TLS 1.3 server dropping a client
/// without a certificate. When the port answers an HTTP/2 connection preface with a
/// SETTINGS frame, it speaks plain (h2c) gRPC and the hint says so. Bounded: one TCP
/// connection, at most 2 s.
async fn plain_behind_https(err: ConnectError) -> ConnectError {
    let ConnectError::Tls {
        endpoint,
        detail,
        hint,
    } = err
    else {
        return err;
    };
    let hint = if speaks_plain_http2(&endpoint, Duration::from_secs(2)).await {
        PLAIN_HTTP_HINT.to_string()
    } else {
        hint
    };
    ConnectError::Tls {
        endpoint,
        detail,
        hint,
    }
}

const PLAIN_HTTP_HINT: &str =
    "the endpoint does not seem to speak TLS: if etcd serves plain HTTP there, use an http:// endpoint";

/// Whether `endpoint` (`scheme://host:port[/…]`) answers the HTTP/2 client preface
/// (RFC 9113 §3.4) followed by an empty SETTINGS frame with a frame of type SETTINGS
/// (0x4), as an h2c server such as a plain-HTTP etcd does. False on any error or timeout.
pub async fn speaks_plain_http2(endpoint: &str, timeout: Duration) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let authority = endpoint
        .split_once("://")
        .map_or(endpoint, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default()
        .to_string();
    let probe = async move {
        let mut conn = tokio::net::TcpStream::connect(authority).await.ok()?;
        let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        // Frame header: length 0 (3 bytes), type SETTINGS, flags 0, stream 0.
        hello.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        conn.write_all(&hello).await.ok()?;
        let mut head = [0u8; 9];
        conn.read_exact(&mut head).await.ok()?;
        Some(head[3] == 4)
    };
    matches!(tokio::time::timeout(timeout, probe).await, Ok(Some(true)))
}

/// etcd-client's Status answer as the model keeps it.
pub fn etcd_status(endpoint: &str, s: &etcd_client::StatusResponse) -> crate::model::EtcdStatus {
    crate::model::EtcdStatus {
        endpoint: endpoint.to_string(),
        member_id: s.header().map_or(0, |h| h.member_id()),
        leader: s.leader(),
        raft_term: s.raft_term(),
        raft_index: s.raft_index(),
        raft_applied_index: s.raft_applied_index(),
        db_size: s.db_size(),
        db_size_in_use: s.raft_used_db_size(),
        is_learner: s.is_learner(),
        errors: s.errors().to_vec(),
    }
}

/// A checked connection to one etcd member.
pub struct Connected {
    pub client: Client,
    /// etcd server version, e.g. `3.4.23`.
    pub version: String,
    /// The endpoint that answered.
    pub endpoint: String,
    /// etcd's cluster ID; a restore from snapshot or a wiped data dir makes a new cluster.
    pub cluster_id: u64,
    /// etcd's head revision when the Status call was answered.
    pub revision: i64,
    /// The whole Status answer.
    pub status: crate::model::EtcdStatus,
}

/// Reads a PEM file and checks it holds what the flag needs (catches swapped --cert/--key
/// and non-PEM files before a handshake turns them into an opaque transport error).
fn read_pem(
    flag: &'static str,
    path: &Path,
    marker: &str,
    what: &str,
) -> Result<Vec<u8>, ConnectError> {
    let pem = read_file(flag, path)?;
    if !pem.windows(marker.len()).any(|w| w == marker.as_bytes()) {
        return Err(ConnectError::BadFile {
            flag,
            path: path.to_path_buf(),
            expected: what.to_string(),
        });
    }
    Ok(pem)
}

fn read_file(flag: &'static str, path: &Path) -> Result<Vec<u8>, ConnectError> {
    std::fs::read(path).map_err(|err| ConnectError::File {
        flag,
        path: path.to_path_buf(),
        err,
    })
}

/// Turns an etcd-client error into the one-line error an operator can act on.
pub fn classify(endpoint: &str, opts: &EtcdOptions, e: &etcd_client::Error) -> ConnectError {
    // Match on everything tonic says, show only the most specific part.
    let lower = format!("{} {e:?}", error_chain(e)).to_lowercase();
    let detail = short_detail(e);
    let endpoint = endpoint.to_string();
    if let etcd_client::Error::GRpcStatus(s) = e {
        match s.code() {
            tonic::Code::Unauthenticated => {
                return ConnectError::Auth {
                    endpoint,
                    detail: s.message().to_string(),
                }
            }
            tonic::Code::PermissionDenied => {
                return ConnectError::Permission {
                    endpoint,
                    detail: s.message().to_string(),
                }
            }
            // etcd 3.4 answers a bad password with InvalidArgument, not Unauthenticated.
            _ if lower.contains("user name is empty") => {
                return ConnectError::Auth {
                    endpoint,
                    detail: "etcd has authentication enabled and no user was given".into(),
                }
            }
            _ if lower.contains("authentication failed")
                || lower.contains("invalid user id or password")
                || lower.contains("invalid auth token") =>
            {
                return ConnectError::Auth {
                    endpoint,
                    detail: s.message().to_string(),
                }
            }
            _ if lower.contains("permission denied") => {
                return ConnectError::Permission {
                    endpoint,
                    detail: s.message().to_string(),
                }
            }
            // A gRPC server without etcd's services (etcd has served Maintenance.Status
            // since v3.0).
            tonic::Code::Unimplemented => {
                return ConnectError::Unreachable {
                    endpoint,
                    detail: s.message().to_string(),
                    hint: "a gRPC server answered, but not etcd: check --endpoints (etcd's client port, 2379 by default)".into(),
                }
            }
            _ => {}
        }
    }
    // rustls refuses a client identity whose key is not the certificate's before it
    // connects (`InconsistentKeys(KeyMismatch)`, rustls 0.23); tonic's Display says only
    // "transport error".
    if lower.contains("keymismatch") {
        let path = |p: &Option<std::path::PathBuf>| {
            p.as_ref().map_or("-".into(), |p| p.display().to_string())
        };
        return ConnectError::Tls {
            endpoint,
            detail: format!(
                "--key {} is not the private key of --cert {}",
                path(&opts.key),
                path(&opts.cert)
            ),
            hint: "pass the key that belongs to the certificate (kubeadm: apiserver-etcd-client.key beside apiserver-etcd-client.crt)".into(),
        };
    }
    if lower.contains("certificate")
        || lower.contains("tls")
        || lower.contains("handshake")
        || (endpoint.starts_with("https://") && lower.contains("corrupt message"))
        || lower.contains("unknownissuer")
        || lower.contains("invalid peer")
    {
        let hint = tls_hint(&lower, opts);
        return ConnectError::Tls {
            endpoint,
            detail,
            hint,
        };
    }
    // With TLS 1.3 a rejected (or missing) client certificate surfaces after the handshake,
    // as the server closing the connection on the first request.
    if endpoint.starts_with("https://")
        && (lower.contains("connection closed")
            || lower.contains("broken pipe")
            || lower.contains("connection reset"))
    {
        let hint = if opts.cert.is_none() {
            "etcd closed the TLS connection: it probably requires a client certificate: pass --cert and --key".to_string()
        } else {
            "etcd closed the TLS connection: check that --cert is signed by etcd's trusted CA"
                .to_string()
        };
        return ConnectError::Tls {
            endpoint,
            detail,
            hint,
        };
    }
    if endpoint.starts_with("https://")
        && lower.contains("transport error")
        && !lower.contains("connection refused")
        && !lower.contains("dns error")
    {
        let hint = if opts.cert.is_some() {
            "the TLS session failed: check that --key is the private key of --cert and both are signed by etcd's CA".to_string()
        } else {
            "the TLS session failed: etcd may require a client certificate (--cert, --key)"
                .to_string()
        };
        return ConnectError::Tls {
            endpoint,
            detail,
            hint,
        };
    }
    // Something that is not HTTP/2 (an HTTP/1 server, a metrics or peer port of another
    // kind) answered the h2c connection preface with bytes h2 cannot frame.
    // Or closed the connection on it without an answer (hyper: "operation was canceled:
    // connection closed"), which a TLS-only etcd does too.
    if endpoint.starts_with("http://")
        && (lower.contains("h2 protocol error")
            || lower.contains("frame with invalid size")
            || (lower.contains("operation was canceled") && lower.contains("connection closed")))
    {
        return ConnectError::Unreachable {
            endpoint,
            detail,
            hint: "the port answered, but not as etcd (gRPC over HTTP/2): check --endpoints (etcd's client port, 2379 by default; https:// if it serves TLS)".into(),
        };
    }
    if lower.contains("connection refused")
        || lower.contains("dns error")
        || lower.contains("no route")
        || lower.contains("tcp connect")
        || lower.contains("transport error")
    {
        let hint = if endpoint.starts_with("http://")
            && (lower.contains("broken pipe")
                || lower.contains("connection reset")
                || lower.contains("stream closed"))
        {
            "the port answered but closed the connection: if etcd serves TLS there, use https:// with --cacert, --cert and --key".to_string()
        } else {
            "is etcd running there? set --endpoints or ETCDCTL_ENDPOINTS".to_string()
        };
        return ConnectError::Unreachable {
            endpoint,
            detail,
            hint,
        };
    }
    if lower.contains("timed out") || lower.contains("deadline") {
        return ConnectError::NotResponding {
            endpoint,
            secs: 0,
            detail,
        };
    }
    ConnectError::Other { endpoint, detail }
}

fn tls_hint(lower: &str, opts: &EtcdOptions) -> String {
    let ca = opts
        .cacert
        .as_ref()
        .map_or("(none)".into(), |p| p.display().to_string());
    let cert = opts
        .cert
        .as_ref()
        .map_or("(none)".into(), |p| p.display().to_string());
    if lower.contains("invalidcontenttype")
        || lower.contains("corrupt message")
        || lower.contains("wrong version number")
        || lower.contains("invalidmessage")
        || lower.contains("handshake eof")
    {
        PLAIN_HTTP_HINT.to_string()
    } else if lower.contains("unknownissuer") || lower.contains("unknown issuer") {
        format!("the server's certificate is not signed by --cacert {ca}: pass the etcd CA")
    } else if lower.contains("notvalidforname") || lower.contains("not valid for name") {
        "the server's certificate does not name this endpoint: connect by a host/IP in its SANs"
            .into()
    } else if lower.contains("certificaterequired")
        || lower.contains("certificate required")
        || lower.contains("badcertificate")
        || lower.contains("bad certificate")
    {
        if opts.cert.is_none() {
            "etcd requires a client certificate: pass --cert and --key (on kubeadm nodes /etc/kubernetes/pki/apiserver-etcd-client.{crt,key})".to_string()
        } else {
            format!("etcd rejected the client certificate --cert {cert}: use one signed by etcd's trusted CA")
        }
    } else if lower.contains("invalid") && lower.contains("pem") || lower.contains("private key") {
        format!("a certificate or key file is not valid PEM (--cacert {ca}, --cert {cert})")
    } else if opts.cacert.is_none() && opts.cert.is_none() {
        "no TLS files given: pass --cacert, --cert and --key, or use an http:// endpoint if etcd serves plain HTTP"
            .into()
    } else {
        format!("check --cacert {ca} and --cert {cert} match this etcd")
    }
}

/// The most specific message of an etcd-client error: the gRPC status message, or the
/// innermost source of a transport error.
pub fn short_detail(e: &etcd_client::Error) -> String {
    if let etcd_client::Error::GRpcStatus(s) = e {
        if !s.message().is_empty() {
            let mut msg = s.message().to_string();
            let mut cur: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(s);
            let mut innermost = None;
            while let Some(c) = cur {
                innermost = Some(c.to_string());
                cur = c.source();
            }
            if let Some(i) = innermost {
                if !msg.contains(&i) && !i.is_empty() {
                    msg = format!("{msg}: {i}");
                }
            }
            return msg;
        }
    }
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut last = e.to_string();
    while let Some(c) = cur {
        last = c.to_string();
        cur = c.source();
    }
    // etcd-client's Display wraps tonic's ("transport error: {e}"), and tonic's own may
    // say the same again: "transport error: transport error".
    match last.split_once(": ") {
        Some((a, b)) if a == b => a.to_string(),
        _ => last,
    }
}

/// The error and its sources, joined with ": " (tonic nests the useful part).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        cur = s.source();
    }
    parts.join(": ")
}

/// The top-level prefix `key` lies under: its first segment, `/registry/pods/a` ->
/// `/registry`, a key without a `/` after its first byte (`compact_rev_key`) itself.
pub fn first_segment(key: &[u8]) -> &[u8] {
    let start = usize::from(key.first() == Some(&b'/'));
    let end = key[start..]
        .iter()
        .position(|b| *b == b'/')
        .map_or(key.len(), |p| p + start);
    &key[..end]
}

/// Up to `max` distinct top-level prefixes (`/registry`, `/kubernetes.io`, …) that hold keys,
/// found by skipping from one prefix to the next with keys-only limit-1 ranges (cheap even
/// on a large keyspace).
pub async fn top_level_prefixes(
    client: &mut Client,
    max: usize,
) -> Result<Vec<String>, etcd_client::Error> {
    let mut out = Vec::new();
    let mut from: Vec<u8> = vec![0];
    while out.len() < max {
        let resp = client
            .get(
                from.clone(),
                Some(
                    GetOptions::new()
                        .with_from_key()
                        .with_keys_only()
                        .with_limit(1),
                ),
            )
            .await?;
        let Some(kv) = resp.kvs().first() else {
            break;
        };
        let key = kv.key();
        let seg = first_segment(key);
        let end = seg.len();
        // A key that is the segment itself (`/registry`) comes just before the keys under
        // it (`/registry/…`): one entry for both.
        let name = crate::model::escape_bytes(seg).into_owned();
        if out.last() != Some(&name) {
            out.push(name);
        }
        // Next key after every key starting with seg: seg + "/" + 0xff... → use seg's successor
        // over the "seg/" prefix: prefix_end(seg + "/").
        let mut p = seg.to_vec();
        if end < key.len() {
            p.push(b'/');
            from = prefix_end(&p);
        } else {
            p.push(0);
            from = p;
        }
        if from.is_empty() {
            break;
        }
    }
    Ok(out)
}

pub use crate::model::prefix_end;

impl fmt::Display for EtcdOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.endpoint_label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_increments_last_byte() {
        assert_eq!(prefix_end(b"/registry/"), b"/registry0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff"), vec![0]);
    }

    #[test]
    fn defaults_add_scheme() {
        let o = EtcdOptions {
            endpoints: vec!["127.0.0.1:2379".into()],
            ..Default::default()
        }
        .with_defaults();
        assert_eq!(o.endpoints, vec!["http://127.0.0.1:2379".to_string()]);
    }

    #[test]
    fn missing_cert_file_is_a_clear_fatal_error() {
        let o = EtcdOptions {
            endpoints: vec!["https://127.0.0.1:1".into()],
            cacert: Some("/nonexistent/ca.crt".into()),
            ..Default::default()
        };
        let e = o.tls().expect_err("must fail");
        assert!(e.is_fatal());
        let msg = e.to_string();
        assert!(msg.contains("--cacert /nonexistent/ca.crt"), "{msg}");
    }
}
