//! The console's state, one module per thing it holds. [`crate::tui::App`] owns one of
//! each with the session, turns keys, clicks and observations into calls on them, and
//! hands them the session's data; none of them imports the app or a view.
//!
//! - [`cursor`]: live, paused and replay as one cursor; the replay's timeline, the
//!   recording and memory figures the loop sets; what the app asks of the loop.
//! - [`events`]: the event list's filter, selection and following.
//! - [`keys`]: the key browser's resource, filter and key-anchored window.
//! - [`encryption`]: the encryption summary over the key browser and its counts.
//! - [`opened_key`]: the key opened from the browser or an event: its history, the
//!   version shown (decoded), the diff.
//! - [`apiserver`]: the apiserver panel's derived data, focus, zoom, scrolls and filter.
//! - [`palette`]: the command palette's candidates.
//! - [`drawn`]: what the views drew in the last frame (heights, scroll limits, where
//!   rows are), recorded while drawing and read when paging, clamping or hit-testing.

pub(crate) mod apiserver;
pub(crate) mod cursor;
pub(crate) mod drawn;
pub(crate) mod encryption;
pub(crate) mod events;
pub(crate) mod keys;
pub(crate) mod opened_key;
pub(crate) mod palette;

pub(crate) use apiserver::ApiserverState;
pub use apiserver::Section;
pub use cursor::{Cursor, MemoryStatus, RecordingStatus, ReplayStatus, Request, Speed};
pub(crate) use drawn::{Drawn, ListRows};
pub(crate) use encryption::EncryptionState;
pub(crate) use events::EventsState;
pub(crate) use keys::{KeysFocus, KeysState};
pub(crate) use opened_key::OpenedKeyState;
