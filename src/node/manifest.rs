//! Static pod manifests (kubeadm's `/etc/kubernetes/manifests/*.yaml`, RKE2's
//! `agent/pod-manifests/*.yaml`) and etcd's own config file (k3s and RKE2 write one under
//! `server/db/etcd/config`): the flags a component runs with, and where the files they name
//! are on the host.
//!
//! The YAML is read into a generic tree (`serde_norway::Value`) and walked by hand: a
//! manifest is a Pod, but tools also write plain argument lists or shell strings
//! (`sh -c 'exec kube-apiserver --flag=…'`), and all of them should be read.

use std::path::{Path, PathBuf};

use serde_norway::Value;

/// A manifest that could not be used. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file could not be read (missing, permissions, not UTF-8).
    #[error("cannot read {}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The text is not YAML (the parser's message gives the line and column).
    #[error("{}: not valid YAML: {message}", path.display())]
    Yaml { path: PathBuf, message: String },
}

/// One component's manifest: its argument lists and volumes.
#[derive(Debug)]
pub struct Manifest {
    path: PathBuf,
    doc: Value,
}

impl Manifest {
    /// Reads and parses `path`. Errors: [`ManifestError`].
    pub fn read(path: &Path) -> Result<Manifest, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|error| ManifestError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        Manifest::parse(&text, path)
    }

    /// Parses manifest text; `path` is only for messages.
    pub fn parse(text: &str, path: &Path) -> Result<Manifest, ManifestError> {
        let doc: Value = serde_norway::from_str(text).map_err(|e| ManifestError::Yaml {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Ok(Manifest {
            path: path.to_path_buf(),
            doc,
        })
    }

    /// The file read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The value of `flag` (written `--name`), as the component sees it: `--name=value`
    /// or `--name value`, in a container's `command` or `args` (also inside shell-string
    /// arguments), or in any list of strings when the YAML is not a Pod. When given more
    /// than once the last wins, as with the Go flag parsers Kubernetes and etcd use. A flag
    /// is never confused with a longer one (`--encryption-provider-config` with
    /// `--encryption-provider-config-automatic-reload`). `Some("")` when given empty.
    pub fn flag(&self, flag: &str) -> Option<String> {
        self.find(flag).map(|(value, _)| value)
    }

    /// For a list flag (pflag's `StringSlice`, such as kube-apiserver's
    /// `--etcd-servers-overrides` and `--watch-cache-sizes`): every value given, in order,
    /// joined with commas, since each occurrence appends to the list rather than replacing
    /// it. `None` when the flag is absent.
    pub fn list_flag(&self, flag: &str) -> Option<String> {
        let containers = self
            .doc
            .get("spec")
            .and_then(|s| s.get("containers"))
            .and_then(Value::as_sequence);
        let mut lists: Vec<Vec<&str>> = Vec::new();
        match containers {
            Some(containers) => {
                for container in containers {
                    lists.push(container_args(container));
                }
            }
            None => string_lists(&self.doc, &mut lists),
        }
        let values = lists
            .iter()
            .map(|args| flag_values(args, flag))
            .rfind(|v| !v.is_empty())?;
        Some(values.join(","))
    }

    /// As [`Manifest::flag`] for a flag naming a file: the path inside the container is
    /// translated to the host through the container's `hostPath` volume mounts (longest
    /// mount path wins; kubeadm mounts paths unchanged). Relative paths stay as written.
    /// `None` when the flag is absent or empty.
    pub fn path_flag(&self, flag: &str) -> Option<PathBuf> {
        let (value, container) = self.find(flag)?;
        if value.is_empty() {
            return None;
        }
        Some(match container {
            Some(c) => host_path(self.doc.get("spec"), c, &value),
            None => PathBuf::from(value),
        })
    }

    /// The value of a top-level key of a plain YAML mapping (etcd's config file:
    /// `listen-client-urls: https://…`), as text; sequences are joined with commas.
    pub fn key(&self, key: &str) -> Option<String> {
        match self.doc.get(key)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Sequence(items) => Some(
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            _ => None,
        }
    }

    /// A nested key of a plain YAML mapping, e.g. `["client-transport-security",
    /// "cert-file"]`.
    pub fn nested(&self, keys: &[&str]) -> Option<String> {
        let mut v = &self.doc;
        for k in keys {
            v = v.get(*k)?;
        }
        v.as_str().map(str::to_string)
    }

    /// The flag's value and the container it was found in (`None` when found outside a
    /// Pod's containers).
    fn find(&self, flag: &str) -> Option<(String, Option<&Value>)> {
        let containers = self
            .doc
            .get("spec")
            .and_then(|s| s.get("containers"))
            .and_then(Value::as_sequence);
        if let Some(containers) = containers {
            let mut found = None;
            for container in containers {
                let args = container_args(container);
                if let Some(v) = find_flag(&args, flag) {
                    found = Some((v, Some(container)));
                }
            }
            return found;
        }
        let mut lists = Vec::new();
        string_lists(&self.doc, &mut lists);
        lists
            .iter()
            .rev()
            .find_map(|args| find_flag(args, flag))
            .map(|v| (v, None))
    }
}

/// A container's `command` and `args`, in that order.
fn container_args(container: &Value) -> Vec<&str> {
    ["command", "args"]
        .iter()
        .filter_map(|field| container.get(*field).and_then(Value::as_sequence))
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// Every value of `flag` in an argument list (whole arguments), in order.
fn all_flags(words: &[&str], flag: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if *word == flag {
            let value = words.get(i + 1).filter(|v| !v.starts_with("--"));
            out.push(value.map_or(String::new(), |v| v.to_string()));
        } else if let Some(value) = word.strip_prefix(flag).and_then(|v| v.strip_prefix('=')) {
            out.push(value.trim_matches(|c| c == '"' || c == '\'').to_string());
        }
    }
    out
}

/// The last value of `flag` in an argument list. Looks at whole arguments first, then at
/// whitespace-separated words (shell-string commands).
fn find_flag(args: &[&str], flag: &str) -> Option<String> {
    flag_values(args, flag).pop()
}

/// Every value of `flag` in an argument list, in order: in whole arguments, or, when none
/// is there, in whitespace-separated words (shell-string commands).
fn flag_values(args: &[&str], flag: &str) -> Vec<String> {
    let all = all_flags(args, flag);
    if !all.is_empty() {
        return all;
    }
    let words: Vec<&str> = args.iter().flat_map(|a| a.split_whitespace()).collect();
    all_flags(&words, flag)
}

/// Translates a container path to the host through the container's hostPath volume mounts
/// (longest mount path wins).
fn host_path(spec: Option<&Value>, container: &Value, path: &str) -> PathBuf {
    let mounts = container.get("volumeMounts").and_then(Value::as_sequence);
    let volumes = spec
        .and_then(|s| s.get("volumes"))
        .and_then(Value::as_sequence);
    let (Some(mounts), Some(volumes)) = (mounts, volumes) else {
        return PathBuf::from(path);
    };
    let mut best: Option<(usize, String)> = None;
    for mount in mounts {
        let (Some(name), Some(mount_path)) = (
            mount.get("name").and_then(Value::as_str),
            mount.get("mountPath").and_then(Value::as_str),
        ) else {
            continue;
        };
        let mount_path = mount_path.trim_end_matches('/');
        let rest = if path == mount_path {
            ""
        } else if let Some(rest) = path.strip_prefix(mount_path).filter(|r| r.starts_with('/')) {
            rest
        } else {
            continue;
        };
        if best
            .as_ref()
            .is_some_and(|(len, _)| *len >= mount_path.len())
        {
            continue;
        }
        let host = volumes
            .iter()
            .find(|v| v.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|v| v.get("hostPath"))
            .and_then(|h| h.get("path"))
            .and_then(Value::as_str);
        if let Some(host) = host {
            let host = host.trim_end_matches('/');
            let host = if host.is_empty() && rest.is_empty() {
                "/"
            } else {
                host
            };
            best = Some((mount_path.len(), format!("{host}{rest}")));
        }
    }
    PathBuf::from(best.map(|(_, p)| p).unwrap_or_else(|| path.to_string()))
}

/// Every sequence of strings anywhere in the document.
fn string_lists<'a>(value: &'a Value, out: &mut Vec<Vec<&'a str>>) {
    match value {
        Value::Sequence(items) => {
            let strings: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            if !strings.is_empty() {
                out.push(strings);
            }
            for item in items {
                string_lists(item, out);
            }
        }
        Value::Mapping(map) => {
            for (_, v) in map {
                string_lists(v, out);
            }
        }
        Value::Tagged(tagged) => string_lists(&tagged.value, out),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENC: &str = "--encryption-provider-config";

    fn apiserver(dir: &Path, command: &str) -> Manifest {
        let path = dir.join("kube-apiserver.yaml");
        let text = format!(
            "apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
spec:
  containers:
  - name: kube-apiserver
    command:
    - kube-apiserver
    - --advertise-address=10.0.0.10
    - --encryption-provider-config-automatic-reload=true
{command}
    - --etcd-servers=https://127.0.0.1:2379
    volumeMounts:
    - name: enc
      mountPath: /etc/kubernetes/enc
      readOnly: true
    - name: k8s-certs
      mountPath: /etc/kubernetes/pki
  volumes:
  - name: enc
    hostPath:
      path: /srv/kubernetes/enc
      type: DirectoryOrCreate
  - name: k8s-certs
    hostPath:
      path: /etc/kubernetes/pki
"
        );
        std::fs::write(&path, text).unwrap();
        Manifest::read(&path).unwrap()
    }

    #[test]
    fn flags_and_host_paths_from_a_static_pod() {
        let dir = tempfile::tempdir().unwrap();
        let m = apiserver(
            dir.path(),
            "    - --encryption-provider-config=/etc/kubernetes/pki/enc.yaml",
        );
        assert_eq!(
            m.path_flag(ENC),
            Some(PathBuf::from("/etc/kubernetes/pki/enc.yaml"))
        );
        assert_eq!(
            m.flag("--etcd-servers").as_deref(),
            Some("https://127.0.0.1:2379")
        );
        // Two arguments.
        let m = apiserver(
            dir.path(),
            "    - --encryption-provider-config\n    - /etc/kubernetes/pki/enc2.yaml",
        );
        assert_eq!(
            m.path_flag(ENC),
            Some(PathBuf::from("/etc/kubernetes/pki/enc2.yaml"))
        );
        // A path inside the container under a hostPath mount is translated to the host.
        let m = apiserver(
            dir.path(),
            "    - --encryption-provider-config=/etc/kubernetes/enc/config.yaml",
        );
        assert_eq!(
            m.path_flag(ENC),
            Some(PathBuf::from("/srv/kubernetes/enc/config.yaml"))
        );
        // Absent: the automatic-reload flag must not be mistaken for it.
        let m = apiserver(dir.path(), "    - --secure-port=6443");
        assert_eq!(m.path_flag(ENC), None);
        assert_eq!(m.flag("--secure-port").as_deref(), Some("6443"));
        // Given twice: the last wins, as with Go's flag parsers.
        let m = apiserver(dir.path(), "    - --etcd-prefix=/a\n    - --etcd-prefix=/b");
        assert_eq!(m.flag("--etcd-prefix").as_deref(), Some("/b"));
    }

    #[test]
    fn shell_strings_plain_lists_and_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let shell = dir.path().join("shell.yaml");
        std::fs::write(
            &shell,
            "command: [sh, -c, 'exec kube-apiserver --encryption-provider-config=/e.yaml --v=2']\n",
        )
        .unwrap();
        let m = Manifest::read(&shell).unwrap();
        assert_eq!(m.path_flag(ENC), Some(PathBuf::from("/e.yaml")));
        assert_eq!(m.flag("--v").as_deref(), Some("2"));

        let missing = dir.path().join("nope.yaml");
        let err = Manifest::read(&missing).unwrap_err();
        assert!(err.to_string().contains("nope.yaml"), "{err}");

        let err = Manifest::parse("spec:\n  containers: [\n", Path::new("typo.yaml")).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("typo.yaml: not valid YAML"), "{text}");

        // etcd's config file: a plain mapping.
        let m = Manifest::parse(
            "listen-client-urls: https://10.0.0.1:2379,https://127.0.0.1:2379\n\
             quota-backend-bytes: 8589934592\n\
             client-transport-security:\n  cert-file: /tls/server.crt\n",
            Path::new("config"),
        )
        .unwrap();
        assert_eq!(
            m.key("listen-client-urls").as_deref(),
            Some("https://10.0.0.1:2379,https://127.0.0.1:2379")
        );
        assert_eq!(m.key("quota-backend-bytes").as_deref(), Some("8589934592"));
        assert_eq!(
            m.nested(&["client-transport-security", "cert-file"])
                .as_deref(),
            Some("/tls/server.crt")
        );
    }
}
