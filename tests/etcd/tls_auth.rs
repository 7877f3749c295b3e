//! Connection errors against real etcd processes: TLS with right and wrong certificates
//! (made with the `openssl` CLI), authentication refused and permission denied.

use crate::common;
use crate::common::require;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{fast_sync, free_port, pki, Harness};
use etcd_client::{Permission, PermissionType};
use regscope::demo::PrivateEtcd;
use regscope::model::ConnState;
use regscope::source::connect::speaks_plain_http2;
use regscope::source::{ConnectError, EtcdOptions, EtcdSource};

/// A CA, a server certificate for 127.0.0.1 and a client certificate, plus an unrelated CA.
fn make_pki(dir: &Path) {
    for c in ["ca", "other-ca"] {
        pki::ca(dir, c);
    }
    pki::leaf(dir, "server", "ca", Some(pki::SERVER_EXT));
    pki::leaf(dir, "client", "ca", Some(pki::CLIENT_EXT));
}

struct TlsEtcd {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
    pki: PathBuf,
}

impl Drop for TlsEtcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn tls_etcd() -> TlsEtcd {
    // A port found free can be taken by a test running beside this one before etcd binds
    // it; etcd then exits at once, and a new pair of ports is tried.
    for _ in 0..3 {
        if let Some(e) = tls_etcd_once().await {
            return e;
        }
    }
    panic!("TLS etcd did not come up on three pairs of ports");
}

/// `None`: etcd exited before serving. The test requires etcd and openssl.
async fn tls_etcd_once() -> Option<TlsEtcd> {
    let etcd = regscope::demo::etcd_server::find_on_path("etcd").expect("etcd, required above");
    let dir = tempfile::tempdir().unwrap();
    let pki = dir.path().join("pki");
    std::fs::create_dir(&pki).unwrap();
    make_pki(&pki);
    let (cp, pp) = (free_port(), free_port());
    let url = format!("https://127.0.0.1:{cp}");
    let p = |f: &str| pki.join(f).display().to_string();
    let child = Command::new(etcd)
        .args([
            "--name",
            "tls",
            "--data-dir",
            &dir.path().join("data").display().to_string(),
            "--listen-client-urls",
            &url,
            "--advertise-client-urls",
            &url,
            "--listen-peer-urls",
            &format!("http://127.0.0.1:{pp}"),
            "--initial-advertise-peer-urls",
            &format!("http://127.0.0.1:{pp}"),
            "--initial-cluster",
            &format!("tls=http://127.0.0.1:{pp}"),
            "--cert-file",
            &p("server.crt"),
            "--key-file",
            &p("server.key"),
            "--trusted-ca-file",
            &p("ca.crt"),
            "--client-cert-auth",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn etcd");
    let mut e = TlsEtcd {
        child,
        url,
        _dir: dir,
        pki,
    };
    let good = e.options(Some("ca.crt"), Some("client"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while good.connect(Duration::from_secs(2)).await.is_err() {
        if e.child.try_wait().ok().flatten().is_some() {
            return None;
        }
        assert!(Instant::now() < deadline, "TLS etcd did not come up");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Some(e)
}

impl TlsEtcd {
    fn options(&self, ca: Option<&str>, leaf: Option<&str>) -> EtcdOptions {
        EtcdOptions {
            endpoints: vec![self.url.clone()],
            cacert: ca.map(|c| self.pki.join(c)),
            cert: leaf.map(|l| self.pki.join(format!("{l}.crt"))),
            key: leaf.map(|l| self.pki.join(format!("{l}.key"))),
            ..Default::default()
        }
        .with_defaults()
    }
}

/// Connects with `opts`, which must fail (`why` says what is wrong with them): the error
/// and its text, printed for the log.
async fn refused(opts: &EtcdOptions, t: Duration, why: &str) -> (ConnectError, String) {
    let err = opts
        .connect(t)
        .await
        .err()
        .unwrap_or_else(|| panic!("{why}: connecting must fail"));
    let msg = err.to_string();
    eprintln!("{why}: {msg}");
    (err, msg)
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_right_and_wrong_certificates() {
    require!(ETCD, OPENSSL);
    let e = tls_etcd().await;
    let t = Duration::from_secs(5);
    // A TLS port does not answer an HTTP/2 preface in the clear.
    assert!(!speaks_plain_http2(&e.url, Duration::from_secs(2)).await);
    // Right CA and client certificate: connects and syncs.
    let good = e.options(Some("ca.crt"), Some("client"));
    let mut c = good.connect(t).await.expect("good certs connect").0;
    c.put("/registry/pods/default/p", "x", None).await.unwrap();
    let mut h = Harness::start(EtcdSource::new(good, fast_sync()));
    h.catch_up(&mut c, Duration::from_secs(20)).await;
    assert_eq!(h.replica.live_keys(), 1);

    // A CA that did not sign the server's certificate.
    let (err, msg) = refused(
        &e.options(Some("other-ca.crt"), Some("client")),
        t,
        "wrong CA",
    )
    .await;
    assert!(matches!(err, ConnectError::Tls { .. }), "{msg}");
    assert!(err.is_fatal());
    assert!(msg.contains("other-ca.crt"), "names the CA file: {msg}");
    assert!(!msg.contains('\n'), "one line: {msg}");

    // The client certificate with another certificate's key: rustls refuses the pair
    // before connecting, and the error says which files do not belong together.
    let mut mismatched = e.options(Some("ca.crt"), Some("client"));
    mismatched.key = Some(e.pki.join("server.key"));
    let (err, msg) = refused(&mismatched, t, "mismatched key").await;
    assert!(matches!(err, ConnectError::Tls { .. }), "{msg}");
    assert!(
        msg.contains("server.key is not the private key of --cert") && msg.contains("client.crt"),
        "{msg}"
    );
    assert!(!msg.contains("transport error: transport error"), "{msg}");
    // doctor says so of the files, before any connection.
    let doctor = |key: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_regscope"))
            .args(["doctor", "--endpoints", &e.url, "--cacert"])
            .arg(e.pki.join("ca.crt"))
            .arg("--cert")
            .arg(e.pki.join("client.crt"))
            .arg("--key")
            .arg(e.pki.join(key))
            .env("HOME", "/nonexistent")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, text) = doctor("server.key");
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("FAIL")
                && l.contains("server.key: is not the private key of --cert")),
        "{text}"
    );
    // And with the right key, the key check says whose it is.
    let (_, text) = doctor("client.key");
    assert!(
        text.lines()
            .any(|l| l.contains("ok") && l.contains("client.key: private key of --cert")),
        "{text}"
    );

    // No client certificate while etcd requires one.
    let (err, msg) = refused(&e.options(Some("ca.crt"), None), t, "no client cert").await;
    assert!(
        matches!(
            err,
            ConnectError::Tls { .. } | ConnectError::Unreachable { .. }
        ),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "one line: {msg}");

    // Plain HTTP against a TLS port.
    let err = EtcdOptions {
        endpoints: vec![e.url.replace("https://", "http://")],
        ..Default::default()
    }
    .with_defaults()
    .connect(t)
    .await
    .err()
    .expect("http to a TLS port must fail");
    eprintln!("http to TLS: {err}");
    assert!(!err.to_string().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authentication_refused_and_permission_denied() {
    require!(ETCD);
    let e = PrivateEtcd::start().await.expect("etcd");
    // https:// to an etcd that serves plain HTTP: say so, not "pass certificates". etcd
    // either answers the ClientHello with bytes or resets the connection; both cases end in
    // the same hint because the port answers an HTTP/2 preface in the clear.
    assert!(speaks_plain_http2(&e.endpoint(), Duration::from_secs(2)).await);
    let err = EtcdOptions {
        endpoints: vec![e.endpoint().replace("http://", "https://")],
        ..Default::default()
    }
    .with_defaults()
    .connect(Duration::from_secs(5))
    .await
    .err()
    .expect("https to plain etcd fails");
    assert!(
        err.to_string().contains("does not seem to speak TLS"),
        "{err}"
    );
    let mut c = e.client().await.unwrap();
    c.put("/registry/pods/default/p", "x", None).await.unwrap();
    c.role_add("root").await.unwrap();
    c.user_add("root", "rootpw", None).await.unwrap();
    c.user_grant_role("root", "root").await.unwrap();
    c.role_add("other-reader").await.unwrap();
    c.role_grant_permission(
        "other-reader",
        Permission::new(PermissionType::Read, "/other/").with_prefix(),
    )
    .await
    .unwrap();
    c.user_add("nobody", "nobodypw", None).await.unwrap();
    c.user_grant_role("nobody", "other-reader").await.unwrap();
    c.auth_enable().await.unwrap();

    let opts = |user: Option<&str>, pw: Option<&str>| {
        EtcdOptions {
            endpoints: vec![e.endpoint()],
            user: user.map(String::from),
            password: pw.map(String::from),
            ..Default::default()
        }
        .with_defaults()
    };
    let t = Duration::from_secs(5);
    let err = opts(Some("root"), Some("wrong"))
        .connect(t)
        .await
        .err()
        .expect("wrong password");
    assert!(matches!(err, ConnectError::Auth { .. }), "{err}");
    assert!(err.to_string().contains("--user"), "{err}");

    // Authenticated but not allowed to read /registry: the source fails with a clear line.
    let nobody = opts(Some("nobody"), Some("nobodypw"));
    nobody.connect(t).await.expect("nobody authenticates");
    let mut h = Harness::start(EtcdSource::new(nobody, fast_sync()));
    h.until("failed state", Duration::from_secs(20), |r, _| {
        matches!(r.etcd.conn(), ConnState::Failed { .. })
    })
    .await;
    let ConnState::Failed { error } = h.etcd.conn().clone() else {
        unreachable!()
    };
    assert!(error.contains("denied"), "{error}");

    // Through the binary: no user at all, and a user without read access, are one line each.
    let bin = env!("CARGO_BIN_EXE_regscope");
    for (args, want) in [
        (vec![], "no user was given"),
        (vec!["--user", "nobody:nobodypw"], "denied access"),
    ] {
        let mut cmd = std::process::Command::new(bin);
        cmd.args(["snapshot", "--json", "--endpoints", &e.endpoint()])
            .args(&args);
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }

    // The right user reads everything.
    let root = opts(Some("root"), Some("rootpw"));
    let mut rc = root.connect(t).await.expect("root").0;
    let mut h = Harness::start(EtcdSource::new(root, fast_sync()));
    h.catch_up(&mut rc, Duration::from_secs(20)).await;
    assert_eq!(h.replica.live_keys(), 1);
}
