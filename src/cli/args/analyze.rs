//! Flags of `analyze`, with its examples.

use std::path::PathBuf;

use clap::Args;

use super::conn::ConnArgs;
use super::parse::parse_size;

#[derive(Debug, Args, Clone)]
pub struct AnalyzeArgs {
    /// etcd's db file (what `etcdctl snapshot save` writes, or a stopped member's
    /// member/snap/db: regscope takes no lock, so a running member's may change under it)
    /// or a regscope recording; told apart by content. Without it, the live etcd of
    /// --endpoints (or the one the node runs) is listed once and analysed.
    pub file: Option<PathBuf>,
    /// Print one JSON document instead of tables: `kind` ("etcd_db"), `file`, `quota`,
    /// `snapshot_status`, `head`, `compaction`, `meta`, `members`, `alarms`, `lease_count`,
    /// `buckets`, `prefix`, `all_keys`, `outside_prefix`, `resources`, `namespaces`,
    /// `largest`, `most_revisions`, `leases_by_keys`; for a recording `kind` "recording",
    /// `files`, `revision`, `compacted`, `history_from`, and the same key tables; live,
    /// `kind` "live", `endpoint`, `revision`, `compacted`, `members`, `db_size`,
    /// `db_size_in_use`, `free_bytes`, `quota`, `alarms`, `not_counted`, `all_keys`,
    /// `resources`, `namespaces`, `largest`, `most_written`, `leases_by_keys`. Bytes and
    /// revisions as numbers.
    #[arg(long)]
    pub json: bool,
    /// Rows in each ranked list (largest objects, most revisions, leases, namespaces).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// etcd's --quota-backend-bytes, to say how close the file is to NOSPACE (e.g. 8GiB;
    /// 8G is 8×10^9 bytes);
    /// etcd's default, 2 GiB, when not given or 0 (etcd reads a quota of 0 as its default).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub quota_bytes: Option<usize>,
    /// etcd access for a live analysis, and the key prefix: keys under it are split by
    /// resource and namespace (for a db file, the rest are summed on one line).
    #[command(flatten)]
    pub conn: ConnArgs,
}

pub(super) const ANALYZE_EXAMPLES: &str = "Examples:
  etcdctl snapshot save s.db && regscope analyze s.db     what fills it, per resource
  regscope analyze /var/lib/etcd/member/snap/db --quota-bytes 8GiB
                                                          a stopped member's file (or a copy)
  regscope analyze s.db --json | jq '.resources[:5]'      the five resources retaining most
  regscope analyze incident.rgs                           what a recording's replica held at its end
  regscope analyze --endpoints https://127.0.0.1:2379 --cacert ca.crt --cert c.crt --key c.key
                                                          a live etcd: one list, no history read
  sudo regscope analyze                                   the etcd this control-plane node runs";
