//! Flags of `regscope diff`, its long help and examples.

use std::path::PathBuf;

use clap::Args;

pub(super) const DIFF_ABOUT: &str = "\
Compare the keyspace at two moments: of one file (--at T1 --at T2), or of two files (each at
its end, or at the moments --at gives, A's first). A file is either etcd's own db file (what
`etcdctl snapshot save` writes, or a member's member/snap/db; told apart by content; its
moments are revisions: rN or a number, `start` for its finished compaction, `end` for its
head) or a regscope recording (moments as `snapshot --at` takes them: a time, +D from its
start, -D from its end, rN, `start`, `end`).

Per resource it counts the keys created (live in B only), deleted (live in A only),
recreated (live in both with another create_revision: deleted and created again between the
two moments, such as a StatefulSet's Pod replaced under the same name; counted once, as
recreated, not also as deleted, created or changed) and changed (live in both, the same
create_revision, another mod_revision, or, at the same mod_revision, another value: two
clusters' files), with the bytes of their newest values: bytes created, bytes deleted and
the change in size of the changed and of the recreated keys; then the total and the keys
whose size changed most (`±` marks a recreated key). Two db files whose members share no
ID are two clusters' histories: a note says so, their revisions do not compare, and a key
live in both is changed, never recreated. It is the comparison `regscope report` makes between --from and --to.
--key KEY (repeatable) adds that key's two objects decoded and compared field by field
(metadata.resourceVersion not compared); Secret data is redacted unless --show-secrets,
values encrypted at rest are decrypted with --encryption-config.

--json prints one object for scripts; `from` is A's side, `to` is B's:
  {from: {file, kind: \"db_file\"|\"recording\", at, revision, time, holds, keys, bytes,
          secrets_redacted},
   to: {...}, prefix, identical,
   total: {created, deleted, changed, recreated, bytes_from, bytes_to, bytes_created,
           bytes_deleted, bytes_changed_delta, bytes_recreated_delta},
   per_resource: [{resource, created, deleted, changed, recreated, bytes_from, bytes_to,
                   bytes_created, bytes_deleted, bytes_changed_delta, bytes_recreated_delta}],
   top_keys: [{key, resource, change: \"created\"|\"deleted\"|\"changed\"|\"recreated\",
               bytes_from, bytes_to, mod_revision_from, mod_revision_to,
               create_revision_from, create_revision_to}],
   keys: [every key created, deleted, changed or recreated, in key order, as in top_keys],
   key_diffs: [{key, change: \"created\"|\"deleted\"|\"changed\"|\"recreated\"|\"unchanged\"|\"absent\",
                from: {mod_revision, bytes}|null, to: ..., changes: [{op: \"~\"|\"+\"|\"-\",
                path, old, new, value}], managed_fields: [\"+manager (Update)\"…],
                writers: [..], lines: [..], error}],
   notes: [what to know, one line each], damage: [a recording's damage, one line each]}
Sizes are bytes of stored values (as etcd holds them, encrypted or not); revisions are
etcd's; `time` is RFC 3339 (a recording's moment) or null (a db file holds no times).

Exit status, as diff(1): 0 when nothing differs, 1 when something does, 2 on trouble (a
file missing, unreadable or damaged, a moment outside a file).";

pub(super) const DIFF_EXAMPLES: &str = "Examples:
  regscope diff backup-mon.db backup-tue.db                  two etcd snapshots, each at its head
  regscope diff member/snap/db --at r1200 --at end           one db file at two revisions
  regscope diff incident.rgs --at 14:30 --at 14:45           one recording at two times
  regscope diff incident.rgs --at start --at -5m --prefix /registry/pods/
  regscope diff snapshot.db incident.rgs --at r5000 --at r5000    a db file against a recording
  regscope diff a.db b.db --key /registry/deployments/default/web   with that object's fields
  regscope diff a.db b.db --json | jq '.keys[] | select(.change == \"deleted\") | .key'";

/// `regscope diff` options. `--encryption-config` and `--show-secrets` are the global UI
/// flags ([`super::UiArgs`]).
#[derive(Debug, Args, Clone)]
pub struct DiffArgs {
    /// A, and optionally B: etcd db files or recordings (a file, or the base name of a
    /// --keep-last set). With one file, --at is given twice.
    #[arg(value_name = "FILE", num_args = 1..=2, required = true)]
    pub files: Vec<PathBuf>,
    /// A moment: with one file, give it twice (A's moment, then B's); with two files, twice
    /// (A's, then B's) or not at all (each file's end). A revision (r1234 or 1234), `start`,
    /// `end`, and for a recording also a time, +D or -D, as `snapshot --at`.
    #[arg(long, value_name = "TIME|REV", allow_hyphen_values = true)]
    pub at: Vec<String>,
    /// Also compare this key's two objects decoded, field by field (repeatable).
    #[arg(long, value_name = "KEY")]
    pub key: Vec<std::ffi::OsString>,
    /// Only keys under this prefix (compared byte for byte, e.g. /registry/pods/). For a db
    /// file, when it lies outside /registry it is also where kube-apiserver stored (its
    /// --etcd-prefix), which resource names are read after.
    #[arg(long, value_name = "PREFIX")]
    pub prefix: Option<String>,
    /// Print one JSON object instead of tables (its shape: `regscope diff --help`).
    #[arg(long)]
    pub json: bool,
    /// Keys in the list of those changed most in size (0: none).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
}
