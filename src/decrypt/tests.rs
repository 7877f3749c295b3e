//! Tests for encryption at rest. The mixed-encryption Secrets s1 (aescbc), s2 (aesgcm) and
//! s3 (identity) are the values of a cluster left half-migrated between providers (an
//! `EncryptionConfiguration` changed without rewriting every Secret); the other vectors were
//! made independently of regscope with Python `cryptography` 48 (AES-CBC/PKCS7, AESGCM) and
//! PyNaCl 1.6 (`SecretBox.encrypt`, which returns nonce + tag + ciphertext like Go's
//! `secretbox.Seal`), as below:
//!
//! ```python
//! def secret_pb(name, ns=b"default"):   # k8s\0 + runtime.Unknown{v1 Secret, raw Secret{metadata}}
//!     meta = b"\x0a" + bytes([len(name)]) + name + b"\x1a" + bytes([len(ns)]) + ns
//!     secret = b"\x0a" + bytes([len(meta)]) + meta
//!     tm = b"\x0a\x02v1\x12\x06Secret"
//!     return (b"k8s\x00" + b"\x0a" + bytes([len(tm)]) + tm
//!             + b"\x12" + bytes([len(secret)]) + secret + b"\x1a\x00\x22\x00")
//! def cbc(key, iv, pt):                  # IV + AES-CBC(PKCS7(pt))
//!     p = padding.PKCS7(128).padder(); d = p.update(pt) + p.finalize()
//!     e = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
//!     return iv + e.update(d) + e.finalize()
//! ```
//!
//! (The same functions reproduce the shared s1 and s2 byte for byte.)

use super::*;
use proptest::prelude::*;

/// The shared test keys: A = 0x00..0x1f, B = 0x20..0x3f, G = 0x40..0x5f.
pub(crate) const KEY_A: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const KEY_B: &str = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=";
const KEY_G: &str = "QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl8=";
/// 16-byte key 0x60..0x6f.
const KEY_16: &str = "YGFiY2RlZmdoaWprbG1ubw==";
/// 24-byte key 0x80..0x97.
const KEY_24: &str = "gIGCg4SFhoeIiYqLjI2Oj5CRkpOUlZaX";

/// Secret s1, encrypted with aescbc key1 (key A), IV 16×0x10.
pub(crate) const S1: &str = "6b38733a656e633a6165736362633a76313a6b6579313a10101010101010101010101010101010817e0b842158eaeb501a708e6469711635910a68c1199da79ecf261a735285648f0de8b1b5ca5dd30759b5867f11ecd8";
/// Secret s2, aesgcm key2 (key G), nonce 00..0b, AAD `/registry/secrets/default/s2`.
pub(crate) const S2: &str = "6b38733a656e633a61657367636d3a76313a6b6579323a000102030405060708090a0b513d1f787d804ea2b42392c4eb88afc9e6b03f066641a7519d12f29125d40f3f351cb01bbb600ba47f2ee88c8ad818507e4cdc6cd10dce";
/// Secret s3, stored plain (identity).
pub(crate) const S3: &str =
    "6b3873000a0c0a0276311206536563726574120f0a0d0a0273331a0764656661756c741a002200";

/// `b"k8s:enc:aescbc:v1:short:" + cbc(KEY_16, bytes(range(0x70, 0x80)), secret_pb(b"cm1"))`.
const CBC16: &str = "6b38733a656e633a6165736362633a76313a73686f72743a707172737475767778797a7b7c7d7e7fd07bf698dd729a45508281580ff2c6c066c0357cc6475c26dfd268d7e1257482b09d5f51f7d0e6ae84076ecb108404bd";
/// `secret_pb(b"cm1")`, the plaintext of [`CBC16`].
const CBC16_PLAIN: &str =
    "6b3873000a0c0a027631120653656372657412100a0e0a03636d311a0764656661756c741a002200";
/// `b"k8s:enc:aescbc:v1:key1:" + cbc(B, b"\x21" * 16, secret_pb(b"cmB"))`: key B under the
/// name key1 (a name reused with another secret in another resource entry).
const CBC_B: &str = "6b38733a656e633a6165736362633a76313a6b6579313a21212121212121212121212121212121d52982351fc27836bb6e059bf3f0522d69b4b87799dc9da29e9df463419592c820b4b48bc66565519fb72935152d0b4f";
/// `n = bytes(range(0xa0, 0xac)); b"k8s:enc:aesgcm:v1:k24:" + n + AESGCM(KEY_24).encrypt(n,
/// secret_pb(b"cm2", b"kube-system"), b"/registry/configmaps/kube-system/cm2")`.
const GCM24: &str = "6b38733a656e633a61657367636d3a76313a6b32343aa0a1a2a3a4a5a6a7a8a9aaab8b33bd645d8255b97a0a7f008760a07826f89fe897cc319ad4bcb609e590e59ffbcfcdad9f37a839dc70680cc4a5392289a4e2f7e58d51c8f5b094d7";
/// `b"k8s:enc:secretbox:v1:k:" + nacl.secret.SecretBox(B).encrypt(secret_pb(b"s4"),
/// bytes(range(0xc0, 0xd8)))`.
const SECRETBOX: &str = "6b38733a656e633a736563726574626f783a76313a6b3ac0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d74a67d8787d5defe7ee8406a5e5773c6a006826660839b55c50dd55317d502e5e8375f80ae3671e5c3e7934ab6204e4671197912c28ff82";
/// `b"k8s:enc:aescbc:v1:key1:" + cbc(A, iv, secret_pb(b"s5"))` with the first IV (counting
/// up from 0, big-endian: 186) for which decrypting with key B also passes the PKCS#7 check,
/// giving 47 bytes of garbage starting `ca68e78f`.
const CBC_A_VALID_UNDER_B: &str = "6b38733a656e633a6165736362633a76313a6b6579313a000000000000000000000000000000badfd3fdc78a3206cbf77ad4c5314dd2ff2376b47762dc3c1ffa9c04fcf11683307efc8bc33e97fc051a91c95633de4324";

pub(crate) fn hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The mixed-encryption EncryptionConfiguration (aescbc key1 = `key1`, aesgcm key2 = G,
/// identity), shared with the decoder and console tests.
pub(crate) fn br11_config(key1: &str) -> Keyring {
    let yaml = format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources:
      - secrets
    providers:
      - aescbc:
          keys:
            - name: key1
              secret: {key1}
      - aesgcm:
          keys:
            - name: key2
              secret: {KEY_G}
      - identity: {{}}
"
    );
    Keyring::from_yaml(&yaml, "<test>").expect("mixed-encryption config parses")
}

fn plaintext(d: &Decryption) -> &[u8] {
    match d {
        Decryption::Plaintext { plaintext, .. } => plaintext,
        other => panic!("expected Plaintext, got {other:?}"),
    }
}

const S2_PATH: &[u8] = b"/registry/secrets/default/s2";

#[test]
fn br11_mixed_encrypted_and_plain_values() {
    let ring = br11_config(KEY_A);

    let s1 = ring.decrypt("secrets", b"/registry/secrets/default/s1", &hex(S1));
    assert_eq!(s1.label(), "aescbc:key1");
    assert_eq!(s1.message(), None);
    let pt = plaintext(&s1);
    assert!(pt.starts_with(b"k8s\0"));
    assert!(contains(pt, b"s1") && contains(pt, b"default") && contains(pt, b"Secret"));

    let s2 = ring.decrypt("secrets", S2_PATH, &hex(S2));
    assert_eq!(s2.label(), "aesgcm:key2");
    let pt = plaintext(&s2);
    assert!(pt.starts_with(b"k8s\0"));
    assert!(contains(pt, b"s2") && contains(pt, b"default"));

    let s3 = ring.decrypt("secrets", b"/registry/secrets/default/s3", &hex(S3));
    assert_eq!(s3, Decryption::NotEncrypted);
    assert_eq!(s3.label(), "identity");
    assert_eq!(s3.message(), None);

    // The s2 bytes copied under another key: AES-GCM binds them to s2's path.
    let copy = b"/registry/secrets/default/s2-copy";
    let d = ring.decrypt("secrets", copy, &hex(S2));
    assert_eq!(
        d,
        Decryption::Failed {
            provider: "aesgcm".into(),
            key: "key2".into(),
            reason: DecryptFailure::AuthFailed
        }
    );
    assert_eq!(
        d.message().unwrap(),
        "authentication failed: ciphertext is bound to a different key path, or key2 does not \
         match the key that wrote this value"
    );
    assert!(d
        .message()
        .unwrap()
        .contains("authentication failed: ciphertext is bound to a different key path"));

    let d = ring.decrypt_with_candidates("secrets", copy, &hex(S2), &[copy, S2_PATH]);
    assert_eq!(
        d,
        Decryption::Failed {
            provider: "aesgcm".into(),
            key: "key2".into(),
            reason: DecryptFailure::BoundToOtherPath {
                path: S2_PATH.to_vec()
            }
        }
    );
    assert_eq!(
        d.message().unwrap(),
        "authentication failed: ciphertext is bound to a different key path (written under \
         /registry/secrets/default/s2)"
    );

    // Candidates that do not authenticate either leave AuthFailed.
    let d = ring.decrypt_with_candidates(
        "secrets",
        copy,
        &hex(S2),
        &[b"/registry/secrets/default/s1"],
    );
    assert_eq!(
        d,
        Decryption::Failed {
            provider: "aesgcm".into(),
            key: "key2".into(),
            reason: DecryptFailure::AuthFailed
        }
    );
}

#[test]
fn wrong_key_under_the_right_name() {
    // key1 = B instead of A: s1's last block does not unpad under B.
    let ring = br11_config(KEY_B);
    let d = ring.decrypt("secrets", b"/registry/secrets/default/s1", &hex(S1));
    assert_eq!(
        d,
        Decryption::Failed {
            provider: "aescbc".into(),
            key: "key1".into(),
            reason: DecryptFailure::WrongKey
        }
    );
    assert_eq!(
        d.message().unwrap(),
        "key1 is configured but does not match the key that wrote this value"
    );
    assert_eq!(d.message().unwrap(), wrong_key_message("key1"));
    assert_eq!(d.label(), "aescbc:key1");
}

#[test]
fn aescbc_wrong_key_with_valid_padding_gives_garbage_plaintext() {
    // aescbc is not authenticated: here key B passes the padding check. decrypt returns
    // Plaintext (the cipher succeeded); the plaintext does not look like a storage encoding,
    // and the caller's decode check turns it into wrong_key_message.
    let ring = br11_config(KEY_B);
    let d = ring.decrypt(
        "secrets",
        b"/registry/secrets/default/s5",
        &hex(CBC_A_VALID_UNDER_B),
    );
    let pt = plaintext(&d);
    assert_eq!(pt.len(), 47);
    assert!(pt.starts_with(&hex("ca68e78f")));
    assert!(!looks_like_storage(pt));

    // With the right key, the real Secret.
    let ring = br11_config(KEY_A);
    let d = ring.decrypt(
        "secrets",
        b"/registry/secrets/default/s5",
        &hex(CBC_A_VALID_UNDER_B),
    );
    assert!(plaintext(&d).starts_with(b"k8s\0") && contains(plaintext(&d), b"s5"));

    // key1 configured twice (B for the matching entry, A elsewhere): the plaintext that looks
    // like a storage encoding wins over B's garbage.
    let yaml = format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aescbc: {{keys: [{{name: key1, secret: {KEY_B}}}]}}
  - resources: [configmaps]
    providers:
      - aescbc: {{keys: [{{name: key1, secret: {KEY_A}}}]}}
"
    );
    let ring = Keyring::from_yaml(&yaml, "<dup>").unwrap();
    let d = ring.decrypt(
        "secrets",
        b"/registry/secrets/default/s5",
        &hex(CBC_A_VALID_UNDER_B),
    );
    assert!(plaintext(&d).starts_with(b"k8s\0") && contains(plaintext(&d), b"s5"));
}

#[test]
fn aesgcm_and_secretbox_wrong_keys() {
    // aesgcm key2 = A: authentication fails even under the right path.
    let yaml = format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ['*.*']
    providers:
      - aesgcm: {{keys: [{{name: key2, secret: {KEY_A}}}]}}
      - secretbox: {{keys: [{{name: k, secret: {KEY_A}}}]}}
"
    );
    let ring = Keyring::from_yaml(&yaml, "<wrong>").unwrap();
    let d = ring.decrypt_with_candidates("secrets", S2_PATH, &hex(S2), &[S2_PATH]);
    assert!(matches!(
        d,
        Decryption::Failed {
            reason: DecryptFailure::AuthFailed,
            ..
        }
    ));
    let d = ring.decrypt("secrets", b"/registry/secrets/default/s4", &hex(SECRETBOX));
    assert_eq!(
        d,
        Decryption::Failed {
            provider: "secretbox".into(),
            key: "k".into(),
            reason: DecryptFailure::WrongKey
        }
    );
    assert_eq!(d.message().unwrap(), wrong_key_message("k"));
}

fn vectors_config() -> Keyring {
    let yaml = format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [configmaps]
    providers:
      - aesgcm: {{keys: [{{name: k24, secret: {KEY_24}}}]}}
      - aescbc: {{keys: [{{name: short, secret: '{KEY_16}'}}]}}
  - resources: [secrets]
    providers:
      - secretbox:
          keys:
            - name: k
              secret: {KEY_B}
      - kms:
          apiVersion: v2
          name: vault
          endpoint: unix:///var/run/kms.sock
          timeout: 3s
      - identity: {{}}
"
    );
    Keyring::from_yaml(&yaml, "<vectors>").unwrap()
}

#[test]
fn independent_vectors() {
    let ring = vectors_config();

    let d = ring.decrypt("secrets", b"/registry/secrets/default/s4", &hex(SECRETBOX));
    assert_eq!(d.label(), "secretbox:k");
    assert!(plaintext(&d).starts_with(b"k8s\0") && contains(plaintext(&d), b"s4"));
    // secretbox has no additional data: the same bytes decrypt under any path.
    let d = ring.decrypt(
        "secrets",
        b"/registry/secrets/default/other",
        &hex(SECRETBOX),
    );
    assert!(contains(plaintext(&d), b"s4"));

    let path = b"/registry/configmaps/kube-system/cm2";
    let d = ring.decrypt("configmaps", path, &hex(GCM24));
    assert_eq!(d.label(), "aesgcm:k24");
    assert!(contains(plaintext(&d), b"cm2") && contains(plaintext(&d), b"kube-system"));
    let d = ring.decrypt(
        "configmaps",
        b"/registry/configmaps/default/cm2",
        &hex(GCM24),
    );
    assert!(matches!(
        d,
        Decryption::Failed {
            reason: DecryptFailure::AuthFailed,
            ..
        }
    ));

    let d = ring.decrypt(
        "configmaps",
        b"/registry/configmaps/default/cm1",
        &hex(CBC16),
    );
    assert_eq!(d.label(), "aescbc:short");
    assert_eq!(plaintext(&d), hex(CBC16_PLAIN).as_slice());
}

#[test]
fn key_names_repeated_across_resource_entries() {
    let yaml = format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [configmaps]
    providers:
      - aescbc: {{keys: [{{name: key1, secret: {KEY_B}}}]}}
  - resources: [secrets]
    providers:
      - aescbc: {{keys: [{{name: key1, secret: {KEY_A}}}]}}
"
    );
    let ring = Keyring::from_yaml(&yaml, "<dup>").unwrap();
    // The matching entry's key is tried first.
    let first = |resource: &str| ring.keys_for(Cipher::AesCbc, "key1", resource)[0].secret.0[0];
    assert_eq!(first("secrets"), 0x00);
    assert_eq!(first("configmaps"), 0x20);
    assert_eq!(first("pods"), 0x20);
    assert_eq!(ring.keys_for(Cipher::AesCbc, "key1", "pods").len(), 2);

    let s1 = ring.decrypt("secrets", b"/registry/secrets/default/s1", &hex(S1));
    assert!(contains(plaintext(&s1), b"s1"));
    let cm = ring.decrypt(
        "configmaps",
        b"/registry/configmaps/default/cmB",
        &hex(CBC_B),
    );
    assert!(contains(plaintext(&cm), b"cmB"));
    // Fallback to the other entry when the resource is unknown or mapped elsewhere.
    let s1 = ring.decrypt("", b"/registry/secrets/default/s1", &hex(S1));
    assert!(contains(plaintext(&s1), b"s1"));
    assert_eq!(
        ring.keys(),
        vec![("aescbc".to_string(), "key1".to_string())]
    );
}

#[test]
fn resource_patterns() {
    let entry = |patterns: &[&str]| ResourceEntry {
        resources: patterns.iter().map(|s| s.to_string()).collect(),
        providers: vec![Provider::Identity],
    };
    assert!(entry(&["*.*"]).matches("secrets"));
    assert!(entry(&["*.*"]).matches("widgets.example.com"));
    assert!(entry(&["*."]).matches("secrets"));
    assert!(!entry(&["*."]).matches("deployments.apps"));
    assert!(entry(&["*.apps"]).matches("deployments.apps"));
    assert!(!entry(&["*.apps"]).matches("secrets"));
    assert!(!entry(&["*.apps"]).matches("widgets.example.com"));
    assert!(entry(&["widgets.example.com"]).matches("widgets.example.com"));
    assert!(entry(&["*.example.com"]).matches("widgets.example.com"));
    assert!(entry(&["secrets", "configmaps"]).matches("configmaps"));
    assert!(!entry(&["secrets"]).matches("configmaps"));
    assert!(!entry(&["secrets"]).matches(""));
}

#[test]
fn unlisted_keys_and_malformed_bodies() {
    let ring = br11_config(KEY_A);
    let mut value = b"k8s:enc:aescbc:v1:key9:".to_vec();
    value.extend_from_slice(&hex(S1)[23..]);
    let d = ring.decrypt("secrets", b"/registry/secrets/default/s9", &value);
    assert_eq!(
        d,
        Decryption::NoKey {
            provider: "aescbc".into(),
            key: "key9".into()
        }
    );
    assert_eq!(
        d.message().unwrap(),
        "encrypted with aescbc key key9, which the EncryptionConfiguration does not list"
    );
    assert_eq!(d.label(), "aescbc:key9");

    // secretbox is not in the mixed-encryption configuration.
    let d = ring.decrypt("secrets", b"/k", &hex(SECRETBOX));
    assert_eq!(d.label(), "secretbox:k");
    assert!(matches!(d, Decryption::NoKey { .. }));

    let d = ring.decrypt("secrets", b"/k", b"k8s:enc:aesgcm:v1:key2:short");
    assert_eq!(
        d.message().unwrap(),
        "malformed aesgcm value: body is 5 bytes, shorter than the 12-byte nonce plus 16-byte tag"
    );
    let mut value = b"k8s:enc:aescbc:v1:key1:".to_vec();
    value.extend_from_slice(&[0u8; 31]);
    let d = ring.decrypt("secrets", b"/k", &value);
    assert_eq!(
        d.message().unwrap(),
        "malformed aescbc value: ciphertext is 15 bytes, not a positive multiple of 16"
    );
    let d = ring.decrypt("secrets", b"/k", b"k8s:enc:aescbc:v1:key1:0123456789abcdef");
    assert!(matches!(
        d,
        Decryption::Failed {
            reason: DecryptFailure::Malformed(_),
            ..
        }
    ));
    let d = ring.decrypt("secrets", b"/k", b"k8s:enc:");
    assert_eq!(d.label(), "encrypted");
    assert!(d
        .message()
        .unwrap()
        .starts_with("malformed encrypted value"));
    let d = ring.decrypt("secrets", b"/k", b"k8s:enc:aescbc:v2:key1:xxxx");
    assert!(d.message().unwrap().contains("unknown prefix version v2"));
    let d = ring.decrypt("secrets", b"/k", b"k8s:enc:rot13:v1:k\xff:zz");
    assert_eq!(
        d,
        Decryption::NoKey {
            provider: "rot13".into(),
            key: "k\\xff".into()
        }
    );
}

#[test]
fn key_names_containing_colons_match_the_configuration() {
    let yaml = format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aesgcm: {{keys: [{{name: 'a:b', secret: {KEY_G}}}]}}
"
    );
    let ring = Keyring::from_yaml(&yaml, "<colon>").unwrap();
    let mut value = b"k8s:enc:aesgcm:v1:a:b:".to_vec();
    value.extend_from_slice(&hex(S2)[23..]);
    let d = ring.decrypt("secrets", S2_PATH, &value);
    assert_eq!(d.label(), "aesgcm:a:b");
    assert!(contains(plaintext(&d), b"s2"));
}

/// A KMS v2 `EncryptedObject` written by hand: encryptedData (1), keyID (2),
/// encryptedDEKSource (3), one annotations entry (4), encryptedDEKSourceType (5).
fn kms_v2_object(key_id: &[u8]) -> Vec<u8> {
    let mut pb = vec![0x0a, 4, 0xde, 0xad, 0xbe, 0xef];
    pb.push(0x12);
    pb.push(key_id.len() as u8);
    pb.extend_from_slice(key_id);
    pb.extend_from_slice(&[0x1a, 3, 1, 2, 3]);
    // map<string,bytes> entry {key = "k.io/a", value = 0x00 0x01}
    pb.extend_from_slice(&[0x22, 12, 0x0a, 6]);
    pb.extend_from_slice(b"k.io/a");
    pb.extend_from_slice(&[0x12, 2, 0, 1]);
    pb.extend_from_slice(&[0x28, 1]);
    pb
}

#[test]
fn kms_values_are_reported_not_decrypted() {
    let ring = vectors_config();

    let mut v1 = b"k8s:enc:kms:v1:legacy-kms:".to_vec();
    v1.extend_from_slice(&[0x00, 0x04, 9, 9, 9, 9, 0x55, 0x66]);
    let d = ring.decrypt("secrets", b"/registry/secrets/default/k1", &v1);
    assert_eq!(
        d,
        Decryption::Kms {
            version: 1,
            name: "legacy-kms".into(),
            key_id: None
        }
    );
    assert_eq!(d.label(), "kmsv1:legacy-kms");
    assert_eq!(
        d.message().unwrap(),
        "encrypted by KMS v1 plugin legacy-kms: decryption needs the KMS plugin"
    );

    let mut v2 = b"k8s:enc:kms:v2:vault:".to_vec();
    v2.extend_from_slice(&kms_v2_object(b"key-2024-06"));
    let d = ring.decrypt("secrets", b"/registry/secrets/default/k2", &v2);
    assert_eq!(
        d,
        Decryption::Kms {
            version: 2,
            name: "vault".into(),
            key_id: Some("key-2024-06".into())
        }
    );
    assert_eq!(d.label(), "kmsv2:vault");
    assert_eq!(
        d.message().unwrap(),
        "encrypted by KMS v2 plugin vault (key id key-2024-06): decryption needs the KMS plugin"
    );

    // Framing errors are Malformed, not panics.
    let mut bad = b"k8s:enc:kms:v1:legacy-kms:".to_vec();
    bad.extend_from_slice(&[0xff, 0xff, 1, 2]);
    let d = ring.decrypt("secrets", b"/k", &bad);
    assert_eq!(d.label(), "kmsv1:legacy-kms");
    assert!(d
        .message()
        .unwrap()
        .starts_with("malformed kmsv1 value: encrypted DEK length 65535"));
    let mut bad = b"k8s:enc:kms:v2:vault:".to_vec();
    bad.extend_from_slice(&[0x12, 0x7f, b'x']);
    let d = ring.decrypt("secrets", b"/k", &bad);
    assert!(d
        .message()
        .unwrap()
        .starts_with("malformed kmsv2 value: EncryptedObject: field 2 truncated"));
    let mut bad = b"k8s:enc:kms:v2:vault:".to_vec();
    bad.extend_from_slice(&[
        0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
    ]);
    assert!(matches!(
        ring.decrypt("secrets", b"/k", &bad),
        Decryption::Failed {
            reason: DecryptFailure::Malformed(_),
            ..
        }
    ));
    assert_eq!(kms::v2_key_id(&[]), Ok(None));
    assert!(kms::v2_key_id(&[0x0b]).is_err()); // wire type 3 (group)
}

#[test]
fn config_parsing_both_api_versions_and_keys() {
    let ring = vectors_config();
    let keys: Vec<String> = ring
        .keys()
        .into_iter()
        .map(|(p, k)| format!("{p}:{k}"))
        .collect();
    assert_eq!(
        keys,
        [
            "aesgcm:k24",
            "aescbc:short",
            "secretbox:k",
            "kmsv2:vault",
            "identity:"
        ]
    );

    let old = format!(
        "apiVersion: v1
kind: EncryptionConfig
resources:
  - resources: [secrets]
    providers:
      - aescbc:
          keys:
            - name: key1
              secret: {KEY_A}
      - identity: {{}}
"
    );
    let ring = Keyring::from_yaml(&old, "<old>").unwrap();
    let d = ring.decrypt("secrets", b"/registry/secrets/default/s1", &hex(S1));
    assert!(contains(plaintext(&d), b"s1"));
    assert_eq!(ring.source(), "<old>");

    let err = Keyring::from_yaml(&old.replace("EncryptionConfig\n", "Pod\n"), "old.yaml")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "old.yaml: apiVersion \"v1\", kind \"Pod\" is not an EncryptionConfiguration"
        ),
        "{err}"
    );
    // The new apiVersion with the old kind is not accepted either.
    assert!(matches!(
        Keyring::from_yaml(
            &old.replace("apiVersion: v1", "apiVersion: apiserver.config.k8s.io/v1"),
            "x"
        ),
        Err(ConfigError::UnknownKind { .. })
    ));
}

#[test]
fn config_errors_name_the_file_and_the_problem() {
    let config = |secret: &str, provider: &str| {
        format!(
            "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - {provider}:
          keys:
            - name: key1
              secret: \"{secret}\"
"
        )
    };
    let err = Keyring::from_yaml(&config("not*base64!", "aescbc"), "/etc/enc.yaml").unwrap_err();
    assert!(matches!(err, ConfigError::BadKey { .. }));
    let text = err.to_string();
    assert_eq!(
        text,
        "/etc/enc.yaml: resources[0].providers[0].aescbc.keys[0].secret: aescbc key \"key1\": \
         secret is not valid base64 (invalid character at offset 3)"
    );

    // 20 bytes: right base64, wrong length.
    let err = Keyring::from_yaml(
        &config("AAECAwQFBgcICQoLDA0ODxAREhM=", "aesgcm"),
        "/etc/enc.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("/etc/enc.yaml: "), "{err}");
    assert!(
        err.ends_with("aesgcm key \"key1\": secret is 20 bytes; aesgcm needs 16, 24 or 32"),
        "{err}"
    );
    assert!(
        !err.contains("AAECAwQF"),
        "no key material in errors: {err}"
    );
    let err = Keyring::from_yaml(&config(KEY_16, "secretbox"), "f")
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with("secret is 16 bytes; secretbox needs 32"),
        "{err}"
    );

    let err = Keyring::from_yaml("resources: [", "bad.yaml").unwrap_err();
    assert!(matches!(err, ConfigError::Yaml { .. }));
    assert!(
        err.to_string().starts_with("bad.yaml: not valid YAML"),
        "{err}"
    );

    let err = Keyring::from_yaml(&config(KEY_A, "rot13"), "f")
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown provider \"rot13\""), "{err}");
    let err = Keyring::from_yaml(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources: []\n",
        "f",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(err, "f: resources: must be a non-empty list");

    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing-encryption.yaml");
    let err = Keyring::load(&missing).unwrap_err();
    assert!(matches!(err, ConfigError::Read { .. }));
    assert!(
        err.to_string().contains(&missing.display().to_string()),
        "{err}"
    );

    // load reads the file and names it in later errors.
    let path = dir.path().join("enc.yaml");
    std::fs::write(&path, config(KEY_A, "aescbc")).unwrap();
    let ring = Keyring::load(&path).unwrap();
    assert_eq!(ring.source(), path.display().to_string());
    std::fs::write(&path, config("AAAA", "aescbc")).unwrap();
    let err = Keyring::load(&path).unwrap_err().to_string();
    assert!(err.starts_with(&format!("{}: ", path.display())), "{err}");
}

#[test]
fn debug_never_shows_key_material_or_plaintext() {
    let ring = br11_config(KEY_A);
    let debug = format!("{ring:?}");
    assert_eq!(
        debug,
        "Keyring { source: \"<test>\", keys: [\"aescbc:key1\", \"aesgcm:key2\", \"identity\"] }"
    );
    let alt = format!("{ring:#?}");
    assert!(!alt.contains(KEY_A) && !alt.contains("[0, 1, 2"));

    let d = ring.decrypt("secrets", b"/registry/secrets/default/s1", &hex(S1));
    let debug = format!("{d:?}");
    assert_eq!(
        debug,
        format!(
            "Plaintext {{ provider: \"aescbc\", key: \"key1\", plaintext_len: {} }}",
            plaintext(&d).len()
        )
    );
    assert!(!debug.contains("default"));
}

#[test]
fn escaped_paths_in_messages() {
    assert_eq!(
        escape_bytes(b"/registry/configmaps/default/cm\xff"),
        "/registry/configmaps/default/cm\\xff"
    );
    assert_eq!(escape_bytes(b"a\\b\n"), "a\\\\b\\x0a");
    let d = Decryption::Failed {
        provider: "aesgcm".into(),
        key: "key2".into(),
        reason: DecryptFailure::BoundToOtherPath {
            path: b"/registry/secrets/default/s\xfe".to_vec(),
        },
    };
    assert!(d
        .message()
        .unwrap()
        .ends_with("(written under /registry/secrets/default/s\\xfe)"));
}

fn proptest_ring() -> Keyring {
    let yaml = format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ['*.*']
    providers:
      - aescbc: {{keys: [{{name: key1, secret: {KEY_A}}}, {{name: short, secret: '{KEY_16}'}}]}}
      - aesgcm: {{keys: [{{name: key2, secret: {KEY_G}}}, {{name: k24, secret: {KEY_24}}}]}}
      - secretbox: {{keys: [{{name: k, secret: {KEY_B}}}]}}
      - kms: {{apiVersion: v2, name: vault}}
      - identity: {{}}
"
    );
    Keyring::from_yaml(&yaml, "<proptest>").unwrap()
}

const PREFIXES: &[&[u8]] = &[
    b"",
    b"k8s:enc:",
    b"k8s:enc:aescbc",
    b"k8s:enc:aescbc:v1:",
    b"k8s:enc:aescbc:v1:key1:",
    b"k8s:enc:aescbc:v1:short:",
    b"k8s:enc:aescbc:v1:key9:",
    b"k8s:enc:aesgcm:v1:key2:",
    b"k8s:enc:aesgcm:v1:k24:",
    b"k8s:enc:secretbox:v1:k:",
    b"k8s:enc:kms:v1:vault:",
    b"k8s:enc:kms:v2:vault:",
    b"k8s:enc:kms:v3:vault:",
    b"k8s:enc:kms:",
    b"k8s:enc:other:v1:x:",
];

proptest! {
    #[test]
    fn decrypt_never_panics(
        which in 0..PREFIXES.len(),
        body in prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..200),
            // Whole AES blocks after an IV, so aescbc reaches the padding check.
            (1usize..8).prop_flat_map(|n| proptest::collection::vec(any::<u8>(), 16 * n + 16)),
        ],
        key in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        let ring = proptest_ring();
        let mut value = PREFIXES[which].to_vec();
        value.extend_from_slice(&body);
        let d = ring.decrypt_with_candidates("secrets", &key, &value, &[&key, b"/registry/x", &body]);
        let _ = (d.message(), d.label(), format!("{d:?}"));
        let d = ring.decrypt("", &[], &body);
        let _ = (d.message(), d.label());
    }

    #[test]
    fn kms_v2_reader_never_panics(body in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = kms::v2_key_id(&body);
        let _ = kms::check_v1(&body);
    }
}
