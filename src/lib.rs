//! regscope: a terminal console for the Kubernetes storage layer (kube-apiserver on etcd).
//!
//! Data flows one way: [`source`]s turn etcd responses and scrapes into
//! [`model::Observation`]s, the [`store`]'s [`store::Session`] applies them (the MVCC
//! replica, the metric series, informer lag), [`derive`] builds what is shown from it on
//! read, and the [`tui`] and [`cli`] show that.
//! [`record`] taps the stream into a file and plays a file back in place of the sources.
//! [`demo`] runs a private etcd with a simulated control plane; it is the only code that
//! writes to etcd, and only to an etcd it started itself.

/// The allocator of every regscope program. A replay allocates and frees a value per
/// watch event and a session's worth of memory per seek; with mimalloc instead of glibc's
/// malloc, replaying a 1-hour, 1,000,000-event recording took half the time and freeing a
/// 300 MB session a seventh (`cargo bench --bench record`). Built without transparent huge
/// pages (`no_thp`): with them, a replay's speed depended on whether the kernel had huge
/// pages at hand (0.5 or 1.2 million events/s from one run to the next, the slow runs
/// zeroing 2 MiB pages), and a guest on a control-plane node should not hold memory in
/// 2 MiB steps.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Gives memory the allocator holds freed back to the kernel now, instead of after its
/// purge delay and only in part: after a burst that freed a lot (values replaced by their
/// packed form after a big list, a session replaced by a seek), so that the resident size
/// the header shows is what regscope holds. Costs a pass over the allocator's pages
/// (milliseconds); call it after such bursts, not per event.
pub fn release_free_memory() {
    // SAFETY: `mi_collect` only walks and frees the calling thread's allocator pages and
    // abandoned segments; it takes no pointers from us.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

pub mod bbolt;
pub mod cli;
pub mod config;
pub mod decode;
pub mod decrypt;
pub mod demo;
pub mod derive;
pub mod exporter;
pub mod metrics;
pub mod model;
pub mod node;
pub mod record;
pub mod report;
pub mod source;
pub mod store;
#[cfg(test)]
mod testdata;
pub mod tui;
