//! What the demo apiserver says it is, in `/version` and `kubernetes_build_info`.

/// The `git_version` this server reports in `kubernetes_build_info` and `/version`.
pub const DEMO_GIT_VERSION: &str = "v1.34.0-regscope-demo";

pub(super) fn platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        a => a,
    };
    format!("{}/{arch}", std::env::consts::OS)
}
