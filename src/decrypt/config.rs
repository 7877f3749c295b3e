//! Reading kube-apiserver's EncryptionConfiguration (the file its
//! `--encryption-provider-config` names; [`crate::node`] finds it on a node).
//!
//! The YAML is read into a generic tree and walked by hand, so that error texts can name the
//! place in the file without ever quoting a secret.

use std::path::PathBuf;

use base64::Engine as _;
use serde_norway::Value;

use super::{Cipher, KeyBytes, NamedKey, Provider, ResourceEntry};

/// A problem reading an EncryptionConfiguration. Every variant names
/// the file; none contains key material.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read (missing, permissions, not UTF-8).
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error (in the message, not repeated as a cause).
        error: std::io::Error,
    },
    /// The text is not YAML.
    #[error("{file}: not valid YAML: {message}")]
    Yaml {
        /// The file (or the source given to `from_yaml`).
        file: String,
        /// The parser's message (position, no content).
        message: String,
    },
    /// `apiVersion`/`kind` are not those of an EncryptionConfiguration.
    #[error(
        "{file}: apiVersion {api_version:?}, kind {kind:?} is not an EncryptionConfiguration \
         (expected apiserver.config.k8s.io/v1 EncryptionConfiguration, or v1 EncryptionConfig)"
    )]
    UnknownKind {
        /// The file.
        file: String,
        /// `apiVersion` as found (empty when missing).
        api_version: String,
        /// `kind` as found (empty when missing).
        kind: String,
    },
    /// A key's secret is unusable: not base64, or the wrong length for its provider.
    #[error("{file}: {location}: {provider} key {name:?}: {problem}")]
    BadKey {
        /// The file.
        file: String,
        /// Where, e.g. `resources[0].providers[1].aesgcm.keys[0]`.
        location: String,
        /// `aescbc`, `aesgcm` or `secretbox`.
        provider: String,
        /// The key's name.
        name: String,
        /// What is wrong (never the secret itself).
        problem: String,
    },
    /// Any other structural problem (missing or empty lists, unknown provider, missing name).
    #[error("{file}: {location}: {problem}")]
    Invalid {
        /// The file.
        file: String,
        /// Where, e.g. `resources[0].providers[2]`.
        location: String,
        /// What is wrong.
        problem: String,
    },
}

/// Parses the YAML text of an EncryptionConfiguration into its resource entries.
pub(super) fn parse(text: &str, file: &str) -> Result<Vec<ResourceEntry>, ConfigError> {
    let doc: Value = serde_norway::from_str(text).map_err(|e| ConfigError::Yaml {
        file: file.to_string(),
        message: e.to_string(),
    })?;
    let invalid = |location: &str, problem: &str| ConfigError::Invalid {
        file: file.to_string(),
        location: location.to_string(),
        problem: problem.to_string(),
    };
    let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    match (api_version, kind) {
        ("apiserver.config.k8s.io/v1", "EncryptionConfiguration") | ("v1", "EncryptionConfig") => {}
        _ => {
            return Err(ConfigError::UnknownKind {
                file: file.to_string(),
                api_version: api_version.to_string(),
                kind: kind.to_string(),
            })
        }
    }
    let resources = non_empty_seq(doc.get("resources"))
        .ok_or_else(|| invalid("resources", "must be a non-empty list"))?;

    let mut entries = Vec::with_capacity(resources.len());
    for (i, item) in resources.iter().enumerate() {
        let at = format!("resources[{i}]");
        let names = non_empty_seq(item.get("resources"))
            .ok_or_else(|| invalid(&format!("{at}.resources"), "must be a non-empty list"))?;
        let mut patterns = Vec::with_capacity(names.len());
        for (j, name) in names.iter().enumerate() {
            let name = name.as_str().filter(|s| !s.is_empty()).ok_or_else(|| {
                invalid(&format!("{at}.resources[{j}]"), "must be a resource name")
            })?;
            patterns.push(name.to_string());
        }
        let providers = non_empty_seq(item.get("providers"))
            .ok_or_else(|| invalid(&format!("{at}.providers"), "must be a non-empty list"))?;
        let mut parsed = Vec::with_capacity(providers.len());
        for (j, provider) in providers.iter().enumerate() {
            parsed.push(parse_provider(
                provider,
                file,
                &format!("{at}.providers[{j}]"),
            )?);
        }
        entries.push(ResourceEntry {
            resources: patterns,
            providers: parsed,
        });
    }
    Ok(entries)
}

/// One `providers` item: a mapping with exactly one provider key.
fn parse_provider(item: &Value, file: &str, at: &str) -> Result<Provider, ConfigError> {
    let invalid = |location: &str, problem: String| ConfigError::Invalid {
        file: file.to_string(),
        location: location.to_string(),
        problem,
    };
    let map = item
        .as_mapping()
        .filter(|m| m.len() == 1)
        .ok_or_else(|| invalid(at, "must name exactly one provider".into()))?;
    let Some((name, body)) = map.iter().next() else {
        return Err(invalid(at, "must name exactly one provider".into()));
    };
    let name = name.as_str().unwrap_or("");
    let at = format!("{at}.{name}");
    match name {
        "identity" => Ok(Provider::Identity),
        "kms" => {
            let version = match body.get("apiVersion").and_then(Value::as_str) {
                None | Some("v1") => 1,
                Some("v2") => 2,
                Some(other) => {
                    return Err(invalid(
                        &format!("{at}.apiVersion"),
                        format!("unknown KMS apiVersion {other:?} (expected v1 or v2)"),
                    ))
                }
            };
            let plugin = body
                .get("name")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| invalid(&format!("{at}.name"), "must be the plugin name".into()))?;
            Ok(Provider::Kms {
                version,
                name: plugin.to_string(),
            })
        }
        _ => {
            let Some(cipher) = Cipher::from_name(name.as_bytes()) else {
                return Err(invalid(
                    &at,
                    format!(
                        "unknown provider {name:?} (expected aescbc, aesgcm, secretbox, identity or kms)"
                    ),
                ));
            };
            let keys = non_empty_seq(body.get("keys"))
                .ok_or_else(|| invalid(&format!("{at}.keys"), "must be a non-empty list".into()))?;
            let mut parsed = Vec::with_capacity(keys.len());
            for (k, key) in keys.iter().enumerate() {
                parsed.push(parse_key(cipher, key, file, &format!("{at}.keys[{k}]"))?);
            }
            Ok(Provider::Cipher {
                cipher,
                keys: parsed,
            })
        }
    }
}

/// One `{name, secret}`: the secret is standard base64 (Go `base64.StdEncoding`) of 16, 24 or
/// 32 bytes for aescbc/aesgcm, 32 bytes for secretbox (kube-apiserver's validation).
fn parse_key(cipher: Cipher, key: &Value, file: &str, at: &str) -> Result<NamedKey, ConfigError> {
    let name = key
        .get("name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ConfigError::Invalid {
            file: file.to_string(),
            location: format!("{at}.name"),
            problem: "must be a non-empty key name".to_string(),
        })?;
    let bad = |problem: String| ConfigError::BadKey {
        file: file.to_string(),
        location: format!("{at}.secret"),
        provider: cipher.name().to_string(),
        name: name.to_string(),
        problem,
    };
    let secret = key
        .get("secret")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("secret must be a base64 string".to_string()))?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(secret.trim())
        .map_err(|e| {
            bad(format!(
                "secret is not valid base64 ({})",
                base64_problem(&e)
            ))
        })?;
    let secret = KeyBytes(bytes);
    let allowed: &[usize] = match cipher {
        Cipher::AesCbc | Cipher::AesGcm => &[16, 24, 32],
        Cipher::SecretBox => &[32],
    };
    if !allowed.contains(&secret.0.len()) {
        let want = match cipher {
            Cipher::SecretBox => "32",
            _ => "16, 24 or 32",
        };
        return Err(bad(format!(
            "secret is {} bytes; {} needs {want}",
            secret.0.len(),
            cipher.name()
        )));
    }
    Ok(NamedKey {
        name: name.to_string(),
        secret,
    })
}

/// A base64 error without the offending byte (which would be part of the secret).
fn base64_problem(e: &base64::DecodeError) -> String {
    match e {
        base64::DecodeError::InvalidByte(at, _) => format!("invalid character at offset {at}"),
        base64::DecodeError::InvalidLength(len) => format!("invalid length {len}"),
        base64::DecodeError::InvalidLastSymbol(at, _) => {
            format!("invalid last symbol at offset {at}")
        }
        base64::DecodeError::InvalidPadding => "invalid padding".to_string(),
    }
}

fn non_empty_seq(value: Option<&Value>) -> Option<&Vec<Value>> {
    value.and_then(Value::as_sequence).filter(|s| !s.is_empty())
}
