//! `regscope diff --key KEY`: one key's two objects decoded with the repository's decoder
//! (Secret data redacted unless `--show-secrets`, values encrypted at rest decrypted with
//! the keyring) and compared field by field with [`crate::derive::diff`], the diff the
//! console's opened key shows.

use serde::Serialize;
use serde_json::{json, Value};

use super::side::{SameRevision, Side, ValueCheck};
use crate::decode::{self, DecodeOptions};
use crate::decrypt::Keyring;
use crate::derive::diff::{self, Change};
use crate::model::{escape_bytes, KeyPath, Revision};
use crate::store::VersionValue;

/// A key's newest version on one side.
#[derive(Clone, Debug, Serialize)]
pub struct Version {
    pub mod_revision: Revision,
    /// Value bytes as stored.
    pub bytes: usize,
}

/// One key compared (`key_diffs` in `--json`).
#[derive(Clone, Debug, Serialize)]
pub struct KeyDiff {
    /// The key, non-UTF-8 bytes escaped.
    pub key: String,
    /// `created`, `deleted`, `changed`, `recreated` (live on both sides with another
    /// create_revision: deleted and created again in between), `unchanged` (the same
    /// version on both sides: the same mod_revision, and between two files the same value)
    /// or `absent` (live on neither).
    pub change: &'static str,
    pub from: Option<Version>,
    pub to: Option<Version>,
    /// Field by field: `{op: "~", path, old, new}`, `{op: "+"|"-", path, value}`;
    /// `metadata.resourceVersion` is not compared and `metadata.managedFields` is in
    /// `managed_fields`.
    pub changes: Vec<Value>,
    /// managedFields entries added (`+`), removed (`-`) or updated (`~`), e.g.
    /// `~kubelet (Update, status)`.
    pub managed_fields: Vec<String>,
    /// Who wrote B's object since A's, from its managedFields
    /// ([`diff::changed_writers`]).
    pub writers: Vec<String>,
    /// The diff as the console shows it: `~ path: old → new`, `+ path: value`, …
    pub lines: Vec<String>,
    /// Why the objects could not be compared (a value that does not decode, encrypted
    /// without its key, a Secret that could not be redacted).
    pub error: Option<String>,
}

impl KeyDiff {
    /// Whether the key differs between the sides.
    pub fn differs(&self) -> bool {
        matches!(self.change, "created" | "deleted" | "changed" | "recreated")
    }
}

/// How the objects are decoded.
pub struct Decoding<'a> {
    pub keyring: Option<&'a Keyring>,
    /// `--show-secrets` (a redacted recording's Secrets stay redacted whatever it says).
    pub show_secrets: bool,
}

/// Compares `key` between `a` and `b`; at the same mod_revision, by `same_revision`'s
/// rule (the comparison's own).
pub fn key_diff(
    key: &[u8],
    a: &Side,
    b: &Side,
    how: &Decoding<'_>,
    same_revision: &SameRevision,
) -> KeyDiff {
    let (va, vb) = (a.session.replica.get(key), b.session.replica.get(key));
    let version = |v: &Option<VersionValue>| {
        v.as_ref().map(|v| Version {
            mod_revision: v.mod_revision,
            bytes: v.value.as_ref().map_or(0, |x| x.len()),
        })
    };
    let mut out = KeyDiff {
        key: escape_bytes(key).into_owned(),
        change: "absent",
        from: version(&va),
        to: version(&vb),
        changes: Vec::new(),
        managed_fields: Vec::new(),
        writers: Vec::new(),
        lines: Vec::new(),
        error: None,
    };
    out.change = match (&va, &vb) {
        (None, None) => return out,
        (None, Some(_)) => "created",
        (Some(_), None) => "deleted",
        (Some(x), Some(y))
            if x.create_revision != y.create_revision && !same_revision.two_clusters =>
        {
            "recreated"
        }
        (Some(x), Some(y))
            if x.mod_revision == y.mod_revision
                && x.create_revision == y.create_revision
                && same_revision.compare(key, a, b) != ValueCheck::Differs =>
        {
            "unchanged"
        }
        _ => "changed",
    };
    if out.change == "unchanged" {
        return out;
    }
    // A side without the key compares as an empty object: every field is added or
    // removed.
    let object = |side: &Side, v: &Option<VersionValue>| match v {
        Some(v) => object_of(key, side, v, how),
        None => Ok(Value::Object(Default::default())),
    };
    let (old, new) = match (object(a, &va), object(b, &vb)) {
        (Ok(o), Ok(n)) => (o, n),
        (Err(e), _) => {
            out.error = Some(format!("A: {e}"));
            return out;
        }
        (_, Err(e)) => {
            out.error = Some(format!("B: {e}"));
            return out;
        }
    };
    let od = diff::diff(&old, &new);
    out.changes = od
        .changes
        .iter()
        .map(|c| match c {
            Change::Changed { path, old, new } => {
                json!({"op": "~", "path": path, "old": old, "new": new})
            }
            Change::Added { path, value } => json!({"op": "+", "path": path, "value": value}),
            Change::Removed { path, value } => json!({"op": "-", "path": path, "value": value}),
        })
        .collect();
    out.managed_fields = od
        .managed
        .iter()
        .map(|m| format!("{}{}", m.op, m.entry))
        .collect();
    out.writers = od.writers.iter().map(diff::Writer::describe).collect();
    out.lines = od.lines().into_iter().map(|(_, l)| l).collect();
    out
}

/// The object of one version, decoded as `export --decode` decodes it: Secret data
/// redacted unless shown, and a value under `secrets/` that does not decode as a Secret
/// (so could not be redacted) not shown at all.
fn object_of(
    key: &[u8],
    side: &Side,
    v: &VersionValue,
    how: &Decoding<'_>,
) -> Result<Value, String> {
    let Some(value) = &v.value else {
        return Ok(Value::Object(Default::default()));
    };
    let show_secrets = how.show_secrets && !side.secrets_redacted;
    let d = decode::decode(
        value,
        &DecodeOptions {
            show_secrets,
            etcd_key: key,
            mod_revision: Some(v.mod_revision),
            keyring: how.keyring,
            candidates: &[],
        },
    );
    let secret = KeyPath::parse(side.root(), key).resource == "secrets";
    match d.value() {
        Some(_) if secret && !show_secrets && !d.summary.is_secret() => Err(format!(
            "revision {} is under secrets/ but does not decode as a v1 Secret, so its data could not be redacted: not shown (--show-secrets shows it)",
            v.mod_revision
        )),
        Some(obj) => Ok(obj),
        None => {
            let why = d
                .encryption
                .and_then(|e| e.message)
                .or(d.error)
                .unwrap_or_else(|| "it does not decode".into());
            Err(format!(
                "revision {} cannot be compared: {why}",
                v.mod_revision
            ))
        }
    }
}
