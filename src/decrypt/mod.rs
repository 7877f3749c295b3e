//! Encryption at rest: turn values kube-apiserver encrypted before writing them to etcd back
//! into their storage encoding, given the apiserver's `EncryptionConfiguration`.
//!
//! Facts come from Kubernetes `k8s.io/apiserver/pkg/storage/value/encrypt` and
//! `k8s.io/apiserver/pkg/server/options/encryptionconfig`:
//!
//! - A stored value is `k8s:enc:<provider>:v1:<keyname>:` + body (`aescbc`, `aesgcm`,
//!   `secretbox`), `k8s:enc:kms:v1:<name>:` or `k8s:enc:kms:v2:<name>:` + body. A value
//!   without the `k8s:enc:` prefix was written by the `identity` provider (plaintext).
//! - `aescbc`: body = IV (16 bytes) + AES-CBC ciphertext with PKCS#7 padding; not
//!   authenticated, so a wrong key usually shows as bad padding but may give garbage.
//! - `aesgcm`: body = nonce (12 bytes) + ciphertext + tag (16 bytes); the additional
//!   authenticated data is the full etcd key (`/registry/secrets/default/s2`), so the bytes
//!   only decrypt under the key they were written to.
//! - `secretbox`: body = nonce (24 bytes) + NaCl secretbox (tag (16 bytes) then ciphertext),
//!   XSalsa20-Poly1305 with a 32-byte key and no additional data (not bound to the key path).
//! - `kms`: never decrypted here (that needs the KMS plugin); the plugin name and, for KMS v2,
//!   the key id are reported.
//!
//! Nothing here logs or `Debug`-prints key material or plaintext, and nothing panics on any
//! input.

mod ciphers;
mod config;
mod kms;

#[cfg(test)]
pub(crate) mod tests;

use std::fmt;
use std::path::Path;

pub use config::ConfigError;

pub use crate::model::kubernetes::ENCRYPTED_PREFIX;

/// Longest provider, version or key name looked for in a prefix, in bytes. A configured key
/// name of any length is still matched exactly against the prefix.
const MAX_FIELD: usize = 256;

/// The encrypting providers kube-apiserver prefixes values with, and that a key decrypts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cipher {
    AesCbc,
    AesGcm,
    SecretBox,
}

impl Cipher {
    fn name(self) -> &'static str {
        match self {
            Cipher::AesCbc => "aescbc",
            Cipher::AesGcm => "aesgcm",
            Cipher::SecretBox => "secretbox",
        }
    }

    fn from_name(name: &[u8]) -> Option<Cipher> {
        match name {
            b"aescbc" => Some(Cipher::AesCbc),
            b"aesgcm" => Some(Cipher::AesGcm),
            b"secretbox" => Some(Cipher::SecretBox),
            _ => None,
        }
    }
}

/// Key bytes. `Debug` prints only the length; the bytes are overwritten on drop.
#[derive(Clone)]
struct KeyBytes(Vec<u8>);

impl fmt::Debug for KeyBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} key bytes>", self.0.len())
    }
}

impl Drop for KeyBytes {
    fn drop(&mut self) {
        self.0.fill(0);
        std::hint::black_box(&self.0);
    }
}

/// One `{name, secret}` of an aescbc/aesgcm/secretbox provider.
#[derive(Clone, Debug)]
struct NamedKey {
    name: String,
    secret: KeyBytes,
}

/// One entry of an entry's `providers` list.
#[derive(Clone, Debug)]
enum Provider {
    Cipher { cipher: Cipher, keys: Vec<NamedKey> },
    Identity,
    Kms { version: u8, name: String },
}

/// One entry of the configuration's `resources` list.
#[derive(Clone, Debug)]
struct ResourceEntry {
    resources: Vec<String>,
    providers: Vec<Provider>,
}

impl ResourceEntry {
    /// Whether this entry covers `resource` (`secrets`, `widgets.example.com`), with the
    /// wildcards of EncryptionConfiguration: `*.*` everything, `*.` the core group,
    /// `*.<group>` one group.
    fn matches(&self, resource: &str) -> bool {
        self.resources.iter().any(|pattern| {
            let pattern = pattern.as_str();
            if pattern == "*.*" {
                true
            } else if let Some(group) = pattern.strip_prefix("*.") {
                match resource.split_once('.') {
                    Some((_, g)) => g.eq_ignore_ascii_case(group) && !group.is_empty(),
                    None => group.is_empty(),
                }
            } else {
                pattern.eq_ignore_ascii_case(resource)
            }
        })
    }
}

/// The keys of a kube-apiserver `EncryptionConfiguration`, ready to decrypt stored values.
///
/// `Debug` lists the source and the `provider:name` labels, never key material.
#[derive(Clone)]
pub struct Keyring {
    source: String,
    entries: Vec<ResourceEntry>,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let labels: Vec<String> = self
            .keys()
            .into_iter()
            .map(|(p, k)| if k.is_empty() { p } else { format!("{p}:{k}") })
            .collect();
        f.debug_struct("Keyring")
            .field("source", &self.source)
            .field("keys", &labels)
            .finish()
    }
}

impl Keyring {
    /// Reads and parses the EncryptionConfiguration at `path` (the file named by
    /// kube-apiserver's `--encryption-provider-config`).
    ///
    /// Errors: [`ConfigError::Read`] when the file cannot be read (names the path), and every
    /// error of [`Keyring::from_yaml`] with the path as the source.
    pub fn load(path: &Path) -> Result<Keyring, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        Keyring::from_yaml(&text, &path.display().to_string())
    }

    /// Parses an EncryptionConfiguration from YAML text; `source` names it in errors (a path,
    /// or e.g. `<inline>`).
    ///
    /// Accepts `apiVersion: apiserver.config.k8s.io/v1` + `kind: EncryptionConfiguration` and
    /// the pre-1.13 `apiVersion: v1` + `kind: EncryptionConfig`. Providers: `aescbc` and
    /// `aesgcm` (keys of 16, 24 or 32 bytes), `secretbox` (32 bytes), `identity`, `kms`
    /// (`apiVersion` v1, the default, or v2). Secrets are standard base64 with padding, as
    /// kube-apiserver decodes them.
    ///
    /// Errors ([`ConfigError`], each naming `source` and the place in the file): not YAML,
    /// not an EncryptionConfiguration, empty `resources`/`providers`/`keys`, an unknown
    /// provider, a key without a name, a secret that is not base64 or has the wrong length.
    /// Error texts never contain key material.
    pub fn from_yaml(text: &str, source: &str) -> Result<Keyring, ConfigError> {
        let entries = config::parse(text, source)?;
        Ok(Keyring {
            source: source.to_string(),
            entries,
        })
    }

    /// Where the configuration came from (the path given to [`Keyring::load`], or the
    /// `source` given to [`Keyring::from_yaml`]).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The resources each entry covers, in configuration order (`secrets`, `*.*`, …), as
    /// written in the file.
    pub fn resources(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in self.entries.iter().flat_map(|e| &e.resources) {
            if !out.contains(r) {
                out.push(r.clone());
            }
        }
        out
    }

    /// Every configured (provider, key name), in configuration order, for display. Providers
    /// are `aescbc`, `aesgcm`, `secretbox`, `kmsv1`, `kmsv2` (name = the plugin name) and
    /// `identity` (empty name). A pair configured in several resource entries is listed once.
    pub fn keys(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for entry in &self.entries {
            for provider in &entry.providers {
                let pairs: Vec<(String, String)> = match provider {
                    Provider::Cipher { cipher, keys } => keys
                        .iter()
                        .map(|k| (cipher.name().to_string(), k.name.clone()))
                        .collect(),
                    Provider::Identity => vec![("identity".to_string(), String::new())],
                    Provider::Kms { version, name } => {
                        vec![(format!("kmsv{version}"), name.clone())]
                    }
                };
                for pair in pairs {
                    if !out.contains(&pair) {
                        out.push(pair);
                    }
                }
            }
        }
        out
    }

    /// Decrypts one stored value.
    ///
    /// - `resource`: the resource as named in EncryptionConfiguration and the etcd key path,
    ///   `secrets` for the core group, `widgets.example.com` for group resources; used to
    ///   choose between keys that share a name across resource entries (may be empty).
    /// - `etcd_key`: the full etcd key the value was read from (`/registry/secrets/default/s2`);
    ///   aesgcm authenticates it as additional data, as kube-apiserver's storage does.
    /// - `value`: the raw bytes etcd holds.
    ///
    /// Keys are tried from the entries whose `resources` match `resource` first (in file
    /// order, which is kube-apiserver's first-match order), then from every other entry with
    /// the same provider and key name (kube-apiserver itself would only use the first matching
    /// entry). For aescbc, where a wrong key can pass the padding check, a plaintext that
    /// starts like a storage encoding (`k8s\0`, `{`, CBOR tag `d9d9f7`) is preferred over one
    /// that does not; [`Decryption::Plaintext`] still only means the cipher succeeded, and
    /// the caller must check that the plaintext decodes (else show [`wrong_key_message`]).
    /// Never panics.
    pub fn decrypt(&self, resource: &str, etcd_key: &[u8], value: &[u8]) -> Decryption {
        self.decrypt_with_candidates(resource, etcd_key, value, &[])
    }

    /// As [`Keyring::decrypt`], but when aesgcm authentication fails under `etcd_key`, also
    /// tries each candidate path as the additional data (e.g. the other keys in the replica
    /// holding identical bytes). Success there gives
    /// `Failed { reason: BoundToOtherPath { path } }`: the ciphertext was written under
    /// `path` and copied, which kube-apiserver will refuse to read. Candidates equal to
    /// `etcd_key` are skipped. Other providers ignore `candidates` (aescbc and secretbox do
    /// not bind the value to its key path).
    pub fn decrypt_with_candidates(
        &self,
        resource: &str,
        etcd_key: &[u8],
        value: &[u8],
        candidates: &[&[u8]],
    ) -> Decryption {
        let Some(rest) = value.strip_prefix(ENCRYPTED_PREFIX) else {
            return Decryption::NotEncrypted;
        };
        let malformed = |provider: &str, key: &str, what: String| Decryption::Failed {
            provider: provider.to_string(),
            key: key.to_string(),
            reason: DecryptFailure::Malformed(what),
        };
        let Some((provider, rest)) = take_field(rest) else {
            return malformed("encrypted", "", "no provider name after k8s:enc:".into());
        };
        let provider_text = escape_bytes(provider);
        let Some((version, rest)) = take_field(rest) else {
            return malformed(
                &provider_text,
                "",
                "no version after the provider name".into(),
            );
        };

        if provider == b"kms" {
            let version = match version {
                b"v1" => 1,
                b"v2" => 2,
                other => {
                    return malformed(
                        "kms",
                        "",
                        format!("unknown KMS version {}", escape_bytes(other)),
                    )
                }
            };
            let label = format!("kmsv{version}");
            let Some((name, body)) = take_field(rest) else {
                return malformed(&label, "", "no plugin name after the version".into());
            };
            let name = escape_bytes(name);
            let key_id = if version == 1 {
                match kms::check_v1(body) {
                    Ok(()) => None,
                    Err(what) => return malformed(&label, &name, what),
                }
            } else {
                match kms::v2_key_id(body) {
                    Ok(id) => id.map(|id| escape_bytes(&id)),
                    Err(what) => return malformed(&label, &name, what),
                }
            };
            return Decryption::Kms {
                version,
                name,
                key_id,
            };
        }

        let Some(cipher) = Cipher::from_name(provider) else {
            // A provider this build does not know: report it like an unlisted key.
            let key = take_field(rest)
                .map(|(k, _)| escape_bytes(k))
                .unwrap_or_default();
            return Decryption::NoKey {
                provider: provider_text,
                key,
            };
        };
        if version != b"v1" {
            return malformed(
                cipher.name(),
                "",
                format!(
                    "unknown prefix version {} (kube-apiserver writes v1)",
                    escape_bytes(version)
                ),
            );
        }

        // Configured names are matched exactly (they may contain ':'), longest first;
        // otherwise the name runs to the next ':'.
        let (name, body) = match self.configured_name_prefix(cipher, rest) {
            Some(name) => (name.to_string(), &rest[name.len() + 1..]),
            None => match take_field(rest) {
                Some((name, body)) => (escape_bytes(name), body),
                None => {
                    return malformed(cipher.name(), "", "no key name after the version".into())
                }
            },
        };
        let keys = self.keys_for(cipher, &name, resource);
        if keys.is_empty() {
            return Decryption::NoKey {
                provider: cipher.name().to_string(),
                key: name,
            };
        }
        let plaintext = |plaintext: Vec<u8>| Decryption::Plaintext {
            provider: cipher.name().to_string(),
            key: name.clone(),
            plaintext,
        };
        let failed = |reason: DecryptFailure| Decryption::Failed {
            provider: cipher.name().to_string(),
            key: name.clone(),
            reason,
        };
        match cipher {
            Cipher::AesCbc => {
                if let Err(what) = ciphers::check_cbc(body) {
                    return failed(DecryptFailure::Malformed(what));
                }
                let mut fallback = None;
                for key in &keys {
                    if let Some(pt) = ciphers::cbc_open(&key.secret.0, body) {
                        if looks_like_storage(&pt) {
                            return plaintext(pt);
                        }
                        fallback.get_or_insert(pt);
                    }
                }
                match fallback {
                    Some(pt) => plaintext(pt),
                    None => failed(DecryptFailure::WrongKey),
                }
            }
            Cipher::AesGcm => {
                if let Err(what) = ciphers::check_gcm(body) {
                    return failed(DecryptFailure::Malformed(what));
                }
                let gcms: Vec<ciphers::Gcm> = keys
                    .iter()
                    .filter_map(|k| ciphers::Gcm::new(&k.secret.0))
                    .collect();
                for gcm in &gcms {
                    if let Some(pt) = gcm.open(body, etcd_key) {
                        return plaintext(pt);
                    }
                }
                for &path in candidates.iter().filter(|c| **c != etcd_key) {
                    if gcms.iter().any(|gcm| gcm.open(body, path).is_some()) {
                        return failed(DecryptFailure::BoundToOtherPath {
                            path: path.to_vec(),
                        });
                    }
                }
                failed(DecryptFailure::AuthFailed)
            }
            Cipher::SecretBox => {
                if let Err(what) = ciphers::check_secretbox(body) {
                    return failed(DecryptFailure::Malformed(what));
                }
                for key in &keys {
                    if let Some(pt) = ciphers::secretbox_open(&key.secret.0, body) {
                        return plaintext(pt);
                    }
                }
                failed(DecryptFailure::WrongKey)
            }
        }
    }

    /// The longest configured key name `n` of `cipher` such that `rest` starts with `n:`.
    fn configured_name_prefix(&self, cipher: Cipher, rest: &[u8]) -> Option<&str> {
        self.cipher_keys(cipher)
            .map(|k| k.name.as_str())
            .filter(|n| {
                rest.len() > n.len() && rest.starts_with(n.as_bytes()) && rest[n.len()] == b':'
            })
            .max_by_key(|n| n.len())
    }

    fn cipher_keys(&self, cipher: Cipher) -> impl Iterator<Item = &NamedKey> {
        self.entries.iter().flat_map(move |e| {
            e.providers.iter().flat_map(move |p| match p {
                Provider::Cipher { cipher: c, keys } if *c == cipher => keys.as_slice(),
                _ => &[],
            })
        })
    }

    /// Keys of `cipher` named `name`: those of entries matching `resource` first.
    fn keys_for(&self, cipher: Cipher, name: &str, resource: &str) -> Vec<&NamedKey> {
        let mut out = Vec::new();
        for wanted in [true, false] {
            for entry in self
                .entries
                .iter()
                .filter(|e| e.matches(resource) == wanted)
            {
                for provider in &entry.providers {
                    if let Provider::Cipher { cipher: c, keys } = provider {
                        if *c == cipher {
                            out.extend(keys.iter().filter(|k| k.name == name));
                        }
                    }
                }
            }
        }
        out
    }
}

/// Splits `bytes` at the first `:` within [`MAX_FIELD`] bytes: (field, rest after the colon).
fn take_field(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let limit = bytes.len().min(MAX_FIELD + 1);
    let colon = bytes[..limit].iter().position(|&b| b == b':')?;
    Some((&bytes[..colon], &bytes[colon + 1..]))
}

/// Whether a plaintext starts like one of kube-apiserver's storage encodings: protobuf
/// (`k8s\0`), JSON (`{`) or CBOR (self-described tag `d9 d9 f7`).
fn looks_like_storage(plaintext: &[u8]) -> bool {
    plaintext.starts_with(b"k8s\0")
        || plaintext.starts_with(b"{")
        || plaintext.starts_with(&[0xd9, 0xd9, 0xf7])
}

/// Renders bytes as text: printable UTF-8 kept, `\` doubled, control characters and bytes
/// that are not UTF-8 escaped as `\xNN` (`\u{NNNN}` for non-ASCII control characters).
pub fn escape_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                c if c.is_control() && c.is_ascii() => out.push_str(&format!("\\x{:02x}", c as u8)),
                c if c.is_control() => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// The one-line text for a value whose cipher succeeded under key `key` but whose plaintext
/// does not decode (aescbc is not authenticated, so a wrong key can pass the padding check).
/// Same text as [`DecryptFailure::WrongKey`]:
/// `key1 is configured but does not match the key that wrote this value`.
pub fn wrong_key_message(key: &str) -> String {
    format!("{key} is configured but does not match the key that wrote this value")
}

/// The outcome of decrypting one stored value.
///
/// `Debug` never shows plaintext: `Plaintext` prints its length only.
#[derive(Clone, PartialEq, Eq)]
pub enum Decryption {
    /// No `k8s:enc:` prefix: written by the identity provider (or before encryption was
    /// enabled); the value is the storage encoding itself.
    NotEncrypted,
    /// The cipher succeeded. For aesgcm and secretbox this is authenticated; for aescbc the
    /// caller must still check that `plaintext` decodes (else show [`wrong_key_message`]).
    Plaintext {
        /// `aescbc`, `aesgcm` or `secretbox`.
        provider: String,
        /// The key name from the prefix.
        key: String,
        /// The storage encoding (protobuf `k8s\0…`, JSON or CBOR). Sensitive.
        plaintext: Vec<u8>,
    },
    /// Written by a KMS plugin (`k8s:enc:kms:v1:` / `k8s:enc:kms:v2:`); decryption needs the
    /// plugin, which this tool never calls.
    Kms {
        /// 1 or 2.
        version: u8,
        /// The plugin name from the prefix (the config's `kms.name`).
        name: String,
        /// KMS v2 only: `EncryptedObject.keyID`, the plugin's key id at write time.
        key_id: Option<String>,
    },
    /// The prefix names a provider key that the EncryptionConfiguration does not list (or a
    /// provider this build does not know).
    NoKey {
        /// Provider from the prefix.
        provider: String,
        /// Key name from the prefix.
        key: String,
    },
    /// The key is configured but the value does not decrypt with it.
    Failed {
        /// Provider from the prefix (`aescbc`, `aesgcm`, `secretbox`, `kmsv1`, `kmsv2`, or
        /// `encrypted` when even the provider cannot be read).
        provider: String,
        /// Key name from the prefix (may be empty when the prefix is cut short).
        key: String,
        /// Why.
        reason: DecryptFailure,
    },
}

/// Why a configured key did not decrypt a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecryptFailure {
    /// Bad PKCS#7 padding (aescbc) or a failed secretbox tag: the configured key with this
    /// name is not the key that wrote the value.
    WrongKey,
    /// aesgcm tag check failed under the value's own etcd key and under every candidate path:
    /// either the value was copied from another key path, or the key differs.
    AuthFailed,
    /// aesgcm authenticates under `path` (an etcd key), not the key the value is stored
    /// under: the bytes were copied, and kube-apiserver will refuse to read them.
    BoundToOtherPath {
        /// The etcd key the value was written under.
        path: Vec<u8>,
    },
    /// The body does not have the provider's shape (too short, not whole blocks, bad KMS
    /// framing, unreadable prefix).
    Malformed(String),
}

impl fmt::Debug for Decryption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decryption::NotEncrypted => f.write_str("NotEncrypted"),
            Decryption::Plaintext {
                provider,
                key,
                plaintext,
            } => f
                .debug_struct("Plaintext")
                .field("provider", provider)
                .field("key", key)
                .field("plaintext_len", &plaintext.len())
                .finish(),
            Decryption::Kms {
                version,
                name,
                key_id,
            } => f
                .debug_struct("Kms")
                .field("version", version)
                .field("name", name)
                .field("key_id", key_id)
                .finish(),
            Decryption::NoKey { provider, key } => f
                .debug_struct("NoKey")
                .field("provider", provider)
                .field("key", key)
                .finish(),
            Decryption::Failed {
                provider,
                key,
                reason,
            } => f
                .debug_struct("Failed")
                .field("provider", provider)
                .field("key", key)
                .field("reason", reason)
                .finish(),
        }
    }
}

impl Decryption {
    /// One-line operator text, or `None` for `NotEncrypted` and `Plaintext`:
    ///
    /// - WrongKey: `key1 is configured but does not match the key that wrote this value`
    /// - AuthFailed: `authentication failed: ciphertext is bound to a different key path, or
    ///   key2 does not match the key that wrote this value`
    /// - BoundToOtherPath: `authentication failed: ciphertext is bound to a different key
    ///   path (written under /registry/secrets/default/s2)` (path escaped as by
    ///   [`escape_bytes`])
    /// - NoKey: `encrypted with aescbc key key9, which the EncryptionConfiguration does not
    ///   list`
    /// - Kms: `encrypted by KMS v2 plugin <name> (key id <id>): decryption needs the KMS
    ///   plugin` (no parenthesis without a key id)
    /// - Malformed: `malformed aesgcm value: <what>`
    pub fn message(&self) -> Option<String> {
        match self {
            Decryption::NotEncrypted | Decryption::Plaintext { .. } => None,
            Decryption::Kms {
                version,
                name,
                key_id,
            } => Some(match key_id {
                Some(id) => format!(
                    "encrypted by KMS v{version} plugin {name} (key id {id}): decryption needs the KMS plugin"
                ),
                None => format!(
                    "encrypted by KMS v{version} plugin {name}: decryption needs the KMS plugin"
                ),
            }),
            Decryption::NoKey { provider, key } => Some(format!(
                "encrypted with {provider} key {key}, which the EncryptionConfiguration does not list"
            )),
            Decryption::Failed {
                provider,
                key,
                reason,
            } => Some(match reason {
                DecryptFailure::WrongKey => wrong_key_message(key),
                DecryptFailure::AuthFailed => format!(
                    "authentication failed: ciphertext is bound to a different key path, or {key} does not match the key that wrote this value"
                ),
                DecryptFailure::BoundToOtherPath { path } => format!(
                    "authentication failed: ciphertext is bound to a different key path (written under {})",
                    escape_bytes(path)
                ),
                DecryptFailure::Malformed(what) => format!("malformed {provider} value: {what}"),
            }),
        }
    }

    /// The provider and key for a column: `aescbc:key1`, `aesgcm:key2`, `secretbox:k`,
    /// `kmsv2:name`, `identity` (not encrypted), or the bare provider when the key name could
    /// not be read.
    pub fn label(&self) -> String {
        match self {
            Decryption::NotEncrypted => "identity".to_string(),
            Decryption::Kms { version, name, .. } => format!("kmsv{version}:{name}"),
            Decryption::Plaintext { provider, key, .. }
            | Decryption::NoKey { provider, key }
            | Decryption::Failed { provider, key, .. } => {
                if key.is_empty() {
                    provider.clone()
                } else {
                    format!("{provider}:{key}")
                }
            }
        }
    }
}
