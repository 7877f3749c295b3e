//! Why a TLS connection to etcd fails, in words an operator can act on.
//!
//! rustls (what regscope connects with) reports a refused certificate as a one-word cause
//! buried in "transport error". `regscope doctor` looks at the certificates themselves
//! instead: the files given (`--cacert`, `--cert`) and the chain the server presents
//! (captured by a handshake that trusts nothing and only records it), and names the usual
//! faults: expired, not yet valid, no subjectAltName for the address used, a client
//! certificate without the clientAuth usage, a server certificate from another CA, and
//! X.509 v1 certificates. `openssl x509 -req` without `-extfile` makes v1 certificates; Go
//! clients such as etcdctl accept them, rustls (webpki) refuses them
//! (`UnsupportedCertVersion`).

use std::io::{Read, Write};
use std::net::{IpAddr, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

/// Whether the private key in PEM file `key` belongs to the first certificate in PEM file
/// `cert`: the key's public key equals the certificate's SubjectPublicKeyInfo, as rustls
/// checks when it loads a client identity (`CertifiedKey::keys_match`, rustls 0.23) — a
/// mismatch fails every connection before a byte is sent, reported by tonic only as
/// "transport error". `Ok(None)` when it cannot be told (a key type whose public key
/// rustls does not derive).
///
/// Errors: a file that cannot be read, or holds no PEM certificate or private key.
pub fn key_matches_cert(cert: &Path, key: &Path) -> Result<Option<bool>, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let cert_der = CertificateDer::from_pem_file(cert)
        .map_err(|e| format!("{}: no PEM certificate ({e})", cert.display()))?;
    let key_der = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("{}: no PEM private key ({e})", key.display()))?;
    let signing = rustls::crypto::ring::default_provider()
        .key_provider
        .load_private_key(key_der)
        .map_err(|e| format!("{}: unusable private key ({e})", key.display()))?;
    match rustls::sign::CertifiedKey::new(vec![cert_der], signing).keys_match() {
        Ok(()) => Ok(Some(true)),
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            Ok(Some(false))
        }
        Err(rustls::Error::InconsistentKeys(_)) => Ok(None),
        Err(e) => Err(format!("{}: {e}", cert.display())),
    }
}

/// What regscope needs to know of one certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertInfo {
    pub subject: String,
    pub issuer: String,
    /// Validity, seconds since the Unix epoch.
    pub not_before: i64,
    pub not_after: i64,
    /// 1 for X.509 v1 (no extensions possible), 3 for v3.
    pub version: u32,
    /// DNS names and IP addresses of the subjectAltName extension.
    pub dns_names: Vec<String>,
    pub ips: Vec<IpAddr>,
    /// Extended key usage: `None` when the extension is absent (any use allowed).
    pub client_auth: Option<bool>,
    pub server_auth: Option<bool>,
}

impl CertInfo {
    /// Parses one DER certificate. Errors: not an X.509 certificate.
    pub fn from_der(der: &[u8]) -> Result<CertInfo, String> {
        let (_, c) =
            X509Certificate::from_der(der).map_err(|e| format!("not an X.509 certificate: {e}"))?;
        let (mut dns_names, mut ips) = (Vec::new(), Vec::new());
        if let Ok(Some(san)) = c.subject_alternative_name() {
            for name in &san.value.general_names {
                match name {
                    GeneralName::DNSName(n) => dns_names.push(n.to_string()),
                    GeneralName::IPAddress(b) => match b.len() {
                        4 => ips.push(IpAddr::from(<[u8; 4]>::try_from(*b).unwrap_or_default())),
                        16 => ips.push(IpAddr::from(<[u8; 16]>::try_from(*b).unwrap_or_default())),
                        _ => {}
                    },
                    _ => {}
                }
            }
        }
        let eku = c.extended_key_usage().ok().flatten();
        Ok(CertInfo {
            subject: c.subject().to_string(),
            issuer: c.issuer().to_string(),
            not_before: c.validity().not_before.timestamp(),
            not_after: c.validity().not_after.timestamp(),
            version: c.version().0 + 1,
            dns_names,
            ips,
            client_auth: eku.as_ref().map(|e| e.value.client_auth || e.value.any),
            server_auth: eku.as_ref().map(|e| e.value.server_auth || e.value.any),
        })
    }

    /// The first certificate of a PEM file. Errors: unreadable, or no PEM certificate.
    pub fn from_pem_file(path: &Path) -> Result<CertInfo, String> {
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        for pem in x509_parser::pem::Pem::iter_from_buffer(&bytes) {
            let pem = pem.map_err(|e| format!("{}: not PEM: {e}", path.display()))?;
            if pem.label == "CERTIFICATE" {
                return CertInfo::from_der(&pem.contents)
                    .map_err(|e| format!("{}: {e}", path.display()));
            }
        }
        Err(format!("{}: holds no PEM certificate", path.display()))
    }

    /// Whether the certificate names `host` (an IP address or a DNS name; `*.` wildcards
    /// match one label).
    pub fn names(&self, host: &str) -> bool {
        if let Ok(ip) = host
            .trim_matches(|c| c == '[' || c == ']')
            .parse::<IpAddr>()
        {
            return self.ips.contains(&ip);
        }
        let host = host.to_ascii_lowercase();
        self.dns_names.iter().any(|n| {
            let n = n.to_ascii_lowercase();
            match n.strip_prefix("*.") {
                Some(rest) => host
                    .split_once('.')
                    .is_some_and(|(first, tail)| !first.is_empty() && tail == rest),
                None => n == host,
            }
        })
    }

    /// Faults any use of the certificate has at `now`: validity window and version.
    pub fn faults(&self, what: &str, now: SystemTime) -> Vec<String> {
        let now = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let day = |t: i64| {
            humantime::format_rfc3339_seconds(
                SystemTime::UNIX_EPOCH + Duration::from_secs(t.max(0) as u64),
            )
            .to_string()
        };
        let mut out = Vec::new();
        if now > self.not_after {
            out.push(format!(
                "{what} expired on {} ({})",
                day(self.not_after),
                self.subject
            ));
        }
        if now < self.not_before {
            out.push(format!(
                "{what} is not valid yet: from {} ({}; is this node's clock right?)",
                day(self.not_before),
                self.subject
            ));
        }
        if self.version < 3 {
            out.push(format!(
                "{what} is an X.509 v{} certificate ({}): Go clients such as etcdctl accept it, rustls does not; reissue it as v3 (openssl x509 -req … -extfile with subjectAltName and extendedKeyUsage)",
                self.version, self.subject
            ));
        }
        out
    }

    /// Faults of a client certificate: [`CertInfo::faults`] plus a missing clientAuth usage.
    pub fn client_faults(&self, now: SystemTime) -> Vec<String> {
        let mut out = self.faults("the client certificate", now);
        if self.client_auth == Some(false) {
            out.push(format!(
                "the client certificate ({}) lacks the clientAuth extended key usage: etcd refuses it; reissue it with extendedKeyUsage=clientAuth",
                self.subject
            ));
        }
        out
    }

    /// Faults of the certificate a server presented at `host`, against the CA the client
    /// trusts (`ca`, when given).
    pub fn server_faults(&self, host: &str, ca: Option<&CertInfo>, now: SystemTime) -> Vec<String> {
        let mut out = self.faults("etcd's server certificate", now);
        if !self.names(host) {
            let mut names: Vec<String> = self.dns_names.clone();
            names.extend(self.ips.iter().map(|i| i.to_string()));
            out.push(format!(
                "etcd's server certificate has no subjectAltName for {host} (it names {}): connect with an address it names, or reissue it",
                if names.is_empty() { "nothing".to_string() } else { names.join(", ") }
            ));
        }
        if let Some(ca) = ca {
            if ca.subject != self.issuer {
                out.push(format!(
                    "etcd's server certificate is issued by \"{}\", but --cacert is \"{}\": a different CA; use the CA that signed etcd's certificate (kubeadm: /etc/kubernetes/pki/etcd/ca.crt)",
                    self.issuer, ca.subject
                ));
            }
        }
        out
    }
}

/// Why a TLS connection with these options to `endpoint` fails, from the certificates:
/// the client certificate's own faults, then the server certificate's (against the CA
/// given). Empty when nothing is wrong with them (or the endpoint is not `https://`).
/// Blocking: one TCP connection and a handshake, bounded by `timeout`.
pub fn diagnose(
    opts: &crate::source::EtcdOptions,
    endpoint: &str,
    timeout: Duration,
) -> Vec<String> {
    let now = SystemTime::now();
    let mut out = Vec::new();
    if let Some(Ok(c)) = opts.cert.as_deref().map(CertInfo::from_pem_file) {
        out.extend(c.client_faults(now));
    }
    if !endpoint.starts_with("https://") {
        return out;
    }
    let ca = opts
        .cacert
        .as_deref()
        .and_then(|p| CertInfo::from_pem_file(p).ok());
    if let Ok(chain) = server_chain(endpoint, timeout) {
        if let Some(Ok(leaf)) = chain.first().map(|d| CertInfo::from_der(d)) {
            out.extend(leaf.server_faults(host_of(endpoint), ca.as_ref(), now));
        }
    }
    out
}

/// The certificate chain a TLS server presents at `endpoint` (`https://host:port`), leaf
/// first, captured during a handshake that trusts anything and sends no client
/// certificate (the server may then end the handshake; the chain is already known).
/// Errors: unreachable, not TLS, bounded by `timeout` per step.
pub fn server_chain(endpoint: &str, timeout: Duration) -> Result<Vec<Vec<u8>>, String> {
    use rustls::pki_types::ServerName;
    let authority = endpoint
        .split_once("://")
        .map_or(endpoint, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default();
    let host = host_of(endpoint);
    let addr = authority
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {authority}: {e}"))?
        .next()
        .ok_or_else(|| format!("cannot resolve {authority}"))?;
    let captured = Arc::new(Mutex::new(Vec::new()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Capture {
            chain: captured.clone(),
            provider,
        }))
        .with_no_client_auth();
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| format!("{host}: not a server name: {e}"))?;
    let mut conn =
        rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
    let mut sock = TcpStream::connect_timeout(&addr, timeout).map_err(|e| e.to_string())?;
    let _ = sock.set_read_timeout(Some(timeout));
    let _ = sock.set_write_timeout(Some(timeout));
    // A few round trips at most; the chain arrives in the server's first flight.
    for _ in 0..8 {
        if !conn.is_handshaking() || !captured.lock().map_or(true, |c| c.is_empty()) {
            break;
        }
        if conn.complete_io(&mut sock).is_err() {
            break;
        }
    }
    let _ = sock.flush();
    let mut sink = [0u8; 0];
    let _ = sock.read(&mut sink);
    let chain = captured.lock().map(|c| c.clone()).unwrap_or_default();
    if chain.is_empty() {
        return Err(format!("{endpoint} did not present a TLS certificate"));
    }
    Ok(chain)
}

/// The host of `https://host:port/…` (brackets of an IPv6 literal removed).
pub fn host_of(endpoint: &str) -> &str {
    let authority = endpoint
        .split_once("://")
        .map_or(endpoint, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default();
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    authority.rsplit_once(':').map_or(authority, |(h, _)| h)
}

/// A verifier that records the server's chain and accepts it: used only to look at the
/// certificate, never for a connection that carries data.
#[derive(Debug)]
struct Capture {
    chain: Arc<Mutex<Vec<Vec<u8>>>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl rustls::client::danger::ServerCertVerifier for Capture {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        if let Ok(mut c) = self.chain.lock() {
            c.push(end_entity.to_vec());
            c.extend(intermediates.iter().map(|i| i.to_vec()));
        }
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> CertInfo {
        CertInfo {
            subject: "CN=etcd".into(),
            issuer: "CN=etcd-ca".into(),
            not_before: 1_000,
            not_after: 2_000,
            version: 3,
            dns_names: vec!["localhost".into(), "*.etcd.example".into()],
            ips: vec!["127.0.0.1".parse().unwrap()],
            client_auth: Some(true),
            server_auth: Some(true),
        }
    }

    fn at(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(s)
    }

    #[test]
    fn faults_name_their_cause() {
        let c = info();
        assert!(c.client_faults(at(1_500)).is_empty());
        assert!(c.faults("x", at(2_001))[0].contains("expired on 1970-01-01T00:33:20Z"));
        assert!(c.faults("x", at(999))[0].contains("not valid yet"));
        let v1 = CertInfo {
            version: 1,
            ..info()
        };
        assert!(v1.faults("x", at(1_500))[0].contains("X.509 v1"));
        let no_client = CertInfo {
            client_auth: Some(false),
            ..info()
        };
        assert!(no_client.client_faults(at(1_500))[0].contains("clientAuth"));
        let any_use = CertInfo {
            client_auth: None,
            ..info()
        };
        assert!(any_use.client_faults(at(1_500)).is_empty());

        let ca = CertInfo {
            subject: "CN=etcd-ca".into(),
            ..info()
        };
        assert!(c
            .server_faults("127.0.0.1", Some(&ca), at(1_500))
            .is_empty());
        assert!(c
            .server_faults("a.etcd.example", Some(&ca), at(1_500))
            .is_empty());
        let f = c.server_faults("10.0.0.2", Some(&ca), at(1_500));
        assert!(f[0].contains("no subjectAltName for 10.0.0.2"), "{f:?}");
        let other = CertInfo {
            subject: "CN=other".into(),
            ..info()
        };
        let f = c.server_faults("localhost", Some(&other), at(1_500));
        assert!(f[0].contains("a different CA"), "{f:?}");
    }

    #[test]
    fn hosts_of_endpoints() {
        assert_eq!(host_of("https://127.0.0.1:2379"), "127.0.0.1");
        assert_eq!(host_of("https://[::1]:2379/"), "::1");
        assert_eq!(host_of("etcd-0.example:2379"), "etcd-0.example");
    }
}
