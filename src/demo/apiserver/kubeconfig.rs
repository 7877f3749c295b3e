//! The kubeconfig the demo apiserver writes for its URL, so that clients (the console, the
//! `kube` crate) can reach it.

use std::path::PathBuf;

use crate::demo::etcd_server::DemoError;

/// The kubeconfig context (and cluster and user) name of [`DemoApiserver::kubeconfig_path`](super::DemoApiserver::kubeconfig_path).
pub const KUBECONFIG_CONTEXT: &str = "regscope-demo";

pub(super) fn io_err(context: &str, source: std::io::Error) -> DemoError {
    DemoError::Io {
        context: context.to_string(),
        source,
    }
}

/// Writes the kubeconfig into a fresh temp dir, readable by the owner only.
pub(super) fn write_kubeconfig(url: &str) -> Result<(tempfile::TempDir, PathBuf), DemoError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = tempfile::Builder::new()
        .prefix("regscope-apiserver-")
        .tempdir()
        .map_err(|e| io_err("create the demo kubeconfig dir", e))?;
    let path = dir.path().join("kubeconfig");
    let text = format!(
        "apiVersion: v1\n\
         kind: Config\n\
         clusters:\n\
         - name: {KUBECONFIG_CONTEXT}\n  cluster:\n    server: {url}\n\
         contexts:\n\
         - name: {KUBECONFIG_CONTEXT}\n  context:\n    cluster: {KUBECONFIG_CONTEXT}\n    user: {KUBECONFIG_CONTEXT}\n\
         current-context: {KUBECONFIG_CONTEXT}\n\
         users:\n\
         - name: {KUBECONFIG_CONTEXT}\n  user:\n    token: regscope-demo-token\n\
         preferences: {{}}\n"
    );
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| io_err("write the demo kubeconfig", e))?;
    f.write_all(text.as_bytes())
        .map_err(|e| io_err("write the demo kubeconfig", e))?;
    Ok((dir, path))
}
