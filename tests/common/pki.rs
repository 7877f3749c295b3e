//! Certificates made with the `openssl` CLI for TLS tests: CAs, v3 leaves with the
//! subjectAltName and extended key usages etcd needs, and an X.509 v1 leaf (what
//! `openssl x509 -req` makes without `-extfile`).

use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `openssl ARGS` in `dir`; panics when it fails.
pub fn openssl(dir: &Path, args: &[&str]) {
    let st = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("openssl");
    assert!(st.success(), "openssl {args:?}");
}

/// A self-signed CA `NAME.crt`/`NAME.key` in `dir`, valid two days.
pub fn ca(dir: &Path, name: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.crt"),
            "-subj",
            &format!("/CN=regscope-test-{name}"),
        ],
    );
}

/// A leaf `NAME.crt`/`NAME.key` signed by CA `ca`, with `ext` as its extensions file
/// (e.g. `subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n`); `None`
/// makes an X.509 v1 certificate (no extensions at all).
pub fn leaf(dir: &Path, name: &str, ca: &str, ext: Option<&str>) {
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
            "-subj",
            &format!("/CN={name}"),
        ],
    );
    let crt = format!("{name}.crt");
    let csr = format!("{name}.csr");
    let (ca_crt, ca_key) = (format!("{ca}.crt"), format!("{ca}.key"));
    let mut args = vec![
        "x509",
        "-req",
        "-in",
        &csr,
        "-CA",
        &ca_crt,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-days",
        "2",
        "-out",
        &crt,
    ];
    let ext_file = format!("{name}.ext");
    if let Some(ext) = ext {
        std::fs::write(dir.join(&ext_file), ext).unwrap();
        args.extend(["-extfile", &ext_file]);
    }
    openssl(dir, &args);
}

/// Extensions of etcd's server certificate for loopback.
pub const SERVER_EXT: &str =
    "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n";
/// Extensions of a client certificate.
pub const CLIENT_EXT: &str = "extendedKeyUsage=clientAuth\n";
