//! `regscope report`: a recording becomes a postmortem document. One pass over the
//! recording ([`collect`]) samples the derived signals ([`crate::derive::signals`]) on one
//! time grid, gathers the markers, the bookmarks, what stands out and the keys changed
//! between `--from` and `--to`, into a [`Report`] ([`model`]); the renderers write it as
//! one self-contained HTML file, as Markdown with SVG charts beside it, or as JSON.

pub mod chart;
pub mod collect;
pub mod figures;
pub mod html;
pub mod markdown;
pub mod model;
#[cfg(test)]
mod sample;
pub mod series;
mod tables;
mod text;

pub use model::Report;
