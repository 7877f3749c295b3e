//! The one way the demo apiserver takes its mutexes.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`; when a holder panicked (the mutex is poisoned) it goes on with the data, so
/// that one failed task does not stop the others.
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}
