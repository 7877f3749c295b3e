//! What the console and the CLI show, derived on read from the store: nothing here is
//! kept between frames, and nothing here reads a clock or a source ("now" is passed in).
//! Each module takes `&` parts of the session and returns owned data for one panel, which
//! the views draw (and `regscope snapshot --json` prints, for the apiserver side). Live,
//! paused and replayed sessions run the same code.
//!
//! - [`apiserver`]: the apiserver-side panels (latency, watch cache, compaction window,
//!   etcd health, objects, APF) from the metric series, the informer lag and the replica.
//! - [`encryption`]: per resource, how many values are plaintext and how many are
//!   encrypted under which provider and key, from the replica's values.
//! - [`keys`]: the key browser's pages of one resource's keys, filtered, from the replica.
//! - [`diff`]: what changed between two revisions of one object, and who wrote it.
//! - [`changes`]: two states of the keyspace compared key by key (keys created, deleted
//!   and changed, per resource, with bytes), for the report and `regscope diff`.
//! - [`progress`]: a list's progress and what `--memory-limit` did, as one line each.
//! - [`units`]: counts, sizes and seconds as text.

pub mod apiserver;
pub mod changes;
pub mod diff;
pub mod encryption;
pub mod keys;
pub mod progress;
pub mod signals;
pub mod units;
