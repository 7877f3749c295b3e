//! The encryption summary: how values are stored at rest, per resource: plaintext (the
//! `identity` provider: protobuf, JSON, CBOR or anything else unencrypted) or encrypted
//! under a `provider:key`.
//!
//! Input: the replica's live keys at its applied revision; each value is classified by its
//! prefix alone ([`crate::decode::detect`]), so nothing is decrypted and a scan costs a
//! prefix check per key. Output: a [`StorageSummary`] with one [`ResourceStorage`] row per
//! resource. The app computes it on demand (when the view opens) and refreshes it at most
//! once per second while the view is open, so a 100k-key replica is never scanned per frame.
//!
//! Why per key: providers only rewrite a value when it is written again, so after enabling,
//! rotating or reverting encryption etcd holds a mix of encrypted and plain values
//! (kubernetes/kubernetes#58361).

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::decode::{self, Format};
use crate::model::{KeyPath, Revision};
use crate::store::Replica;

/// Label of values stored without encryption (the EncryptionConfiguration's `identity`).
pub const IDENTITY: &str = "identity";

/// The storage label of one value: `identity` for plaintext, else `provider:key`
/// (`aescbc:key1`, `aesgcm:key2`, `secretbox:k`, `kms:name`, `kmsv2:name`).
pub fn storage_label(value: &[u8]) -> String {
    match decode::detect(value) {
        f @ Format::Encrypted { .. } => f.label(),
        _ => IDENTITY.to_string(),
    }
}

/// Counts for one resource.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceStorage {
    /// Resource name as in the key browser (`secrets`, `widgets.example.com`).
    pub resource: String,
    /// Live values.
    pub values: u64,
    /// Values stored in plaintext (identity).
    pub plaintext: u64,
    /// Encrypted values per `provider:key`.
    pub encrypted: BTreeMap<String, u64>,
}

impl ResourceStorage {
    /// Encrypted values, all providers.
    pub fn encrypted_total(&self) -> u64 {
        self.encrypted.values().sum()
    }

    /// `aescbc:key1 1, aesgcm:key2 1` (empty when nothing is encrypted).
    pub fn providers(&self) -> String {
        self.encrypted
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// One sentence: `secrets: 3 values, 2 encrypted (aescbc:key1 1, aesgcm:key2 1), 1
    /// plaintext`.
    pub fn sentence(&self) -> String {
        let plural = if self.values == 1 { "" } else { "s" };
        let enc = self.encrypted_total();
        let mut s = format!(
            "{}: {} value{plural}, {enc} encrypted",
            self.resource, self.values
        );
        if enc > 0 {
            s.push_str(&format!(" ({})", self.providers()));
        }
        s.push_str(&format!(", {} plaintext", self.plaintext));
        s
    }
}

/// Counts for every resource with live keys, at one revision.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StorageSummary {
    /// The replica revision counted.
    pub revision: Revision,
    /// The replica's change counter when counted (see [`Replica::change_seq`]).
    pub seq: u64,
    /// One row per resource, sorted by name.
    pub rows: Vec<ResourceStorage>,
}

impl StorageSummary {
    /// Counts every live value of `replica`. O(live keys), a prefix check each.
    pub fn compute(replica: &Replica) -> StorageSummary {
        let mut rows: BTreeMap<String, ResourceStorage> = BTreeMap::new();
        let scan = crate::derive::keys::scan_prefix(replica);
        let rev = replica.revision();
        // Keys of one resource are contiguous: resolve the resource once per range.
        let mut current: Option<(Bytes, String)> = None;
        let Ok(iter) = replica.range_meta_at(&scan, rev) else {
            return StorageSummary::default();
        };
        for (key, v) in iter {
            if v.size.is_none() {
                continue;
            }
            let resource = match &current {
                Some((p, name)) if p.ends_with(b"/") && key.starts_with(p) => name.clone(),
                _ => {
                    let name = KeyPath::parse(replica.prefix(), key).resource.into_owned();
                    current = crate::derive::keys::resource_prefix(replica.prefix(), key)
                        .map(|p| (p, name.clone()));
                    name
                }
            };
            let row = rows
                .entry(resource)
                .or_insert_with_key(|r| ResourceStorage {
                    resource: r.clone(),
                    ..Default::default()
                });
            row.values += 1;
            // A value held packed is plaintext: values encrypted at rest are never packed.
            match v.raw.map(decode::detect) {
                Some(f @ Format::Encrypted { .. }) => {
                    *row.encrypted.entry(f.label()).or_default() += 1
                }
                _ => row.plaintext += 1,
            }
        }
        StorageSummary {
            revision: rev,
            seq: replica.change_seq(),
            rows: rows.into_values().collect(),
        }
    }

    /// Totals over all resources, as a row named `all resources`.
    pub fn total(&self) -> ResourceStorage {
        let mut t = ResourceStorage {
            resource: "all resources".into(),
            ..Default::default()
        };
        for r in &self.rows {
            t.values += r.values;
            t.plaintext += r.plaintext;
            for (k, n) in &r.encrypted {
                *t.encrypted.entry(k.clone()).or_default() += n;
            }
        }
        t
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::{KeyValue, Observation, Stamped};
    use crate::store::ReplicaConfig;
    use std::time::UNIX_EPOCH;

    /// The mixed-encryption Secrets s1 (aescbc), s2 (aesgcm) and s3 (identity), shared with
    /// the decrypt tests.
    pub(crate) use crate::decrypt::tests::{hex, S1, S2, S3};

    fn replica(kvs: &[(&[u8], Vec<u8>)]) -> Replica {
        let mut r = Replica::new(ReplicaConfig::default());
        let mut kvs: Vec<KeyValue> = kvs
            .iter()
            .enumerate()
            .map(|(i, (k, v))| KeyValue {
                key: Bytes::copy_from_slice(k),
                create_revision: 2 + i as i64,
                mod_revision: 2 + i as i64,
                version: 1,
                lease: 0,
                value: Bytes::from(v.clone()),
            })
            .collect();
        kvs.sort_by(|a, b| a.key.cmp(&b.key));
        let rev = kvs.len() as i64 + 10;
        for obs in [
            Observation::ListBegin { revision: rev },
            Observation::ListPage { kvs },
            Observation::ListDone {
                revision: rev,
                compacted: None,
            },
        ] {
            r.apply(&Stamped {
                at: UNIX_EPOCH,
                obs,
            });
        }
        r
    }

    #[test]
    fn br11_mixed_secrets_are_counted_per_provider_key() {
        let r = replica(&[
            (b"/registry/secrets/default/s1", hex(S1)),
            (b"/registry/secrets/default/s2", hex(S2)),
            (b"/registry/secrets/default/s3", hex(S3)),
            (b"/registry/configmaps/default/c", b"k8s\x00junk".to_vec()),
            (
                b"/registry/example.com/widgets/default/w1",
                b"{\"kind\":\"Widget\"}\n".to_vec(),
            ),
        ]);
        let s = StorageSummary::compute(&r);
        assert_eq!(s.revision, 15);
        let names: Vec<&str> = s.rows.iter().map(|r| r.resource.as_str()).collect();
        assert_eq!(names, ["configmaps", "secrets", "widgets.example.com"]);
        assert_eq!(
            s.rows[1].sentence(),
            "secrets: 3 values, 2 encrypted (aescbc:key1 1, aesgcm:key2 1), 1 plaintext"
        );
        assert_eq!(
            s.rows[2].sentence(),
            "widgets.example.com: 1 value, 0 encrypted, 1 plaintext"
        );
        assert_eq!(s.total().values, 5);
        assert_eq!(s.total().encrypted_total(), 2);
        assert_eq!(storage_label(&hex(S1)), "aescbc:key1");
        assert_eq!(storage_label(&hex(S2)), "aesgcm:key2");
        assert_eq!(storage_label(&hex(S3)), "identity");
        assert_eq!(storage_label(b"raw bytes"), "identity");
    }

    #[test]
    fn a_large_replica_is_counted_quickly() {
        let kvs: Vec<(Vec<u8>, Vec<u8>)> = (0..100_000)
            .map(|i| {
                let v = if i % 3 == 0 { hex(S1) } else { hex(S3) };
                (
                    format!("/registry/secrets/ns{}/s{i:06}", i % 7).into_bytes(),
                    v,
                )
            })
            .collect();
        let refs: Vec<(&[u8], Vec<u8>)> =
            kvs.iter().map(|(k, v)| (k.as_slice(), v.clone())).collect();
        let r = replica(&refs);
        let t = std::time::Instant::now();
        let s = StorageSummary::compute(&r);
        let took = t.elapsed();
        assert_eq!(s.rows.len(), 1);
        assert_eq!(s.rows[0].values, 100_000);
        assert_eq!(s.rows[0].encrypted["aescbc:key1"], 33_334);
        // Generous bound for unoptimized test builds; it is a few ms in release.
        assert!(took < std::time::Duration::from_secs(2), "{took:?}");
    }
}
