//! The console's state, split by what it holds; [`super::app::App`] owns one of each and
//! dispatches keys, clicks and observations to them.
//!
//! - [`viewport`]: what the views drew in the last frame (heights, scroll limits, where
//!   rows are), recorded while drawing and read when clamping or hit-testing.

pub(crate) mod viewport;

pub(crate) use viewport::{ListRows, Viewports};
