//! The labels and counts of `apiserver_request_duration_seconds` and
//! `apiserver_request_total` for the requests the demo apiserver serves.

use std::collections::BTreeMap;

use super::latency::Histogram;
use super::text_format::esc;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct RequestLabels {
    pub(super) verb: &'static str,
    pub(super) group: String,
    pub(super) version: String,
    pub(super) resource: String,
    pub(super) subresource: String,
    pub(super) scope: &'static str,
    pub(super) component: &'static str,
}

impl RequestLabels {
    pub(super) fn non_resource(path: &str) -> Self {
        RequestLabels {
            verb: "GET",
            group: String::new(),
            version: String::new(),
            resource: String::new(),
            subresource: path.to_string(),
            scope: "",
            component: "",
        }
    }

    pub(super) fn render(&self) -> String {
        format!(
            "component=\"{}\",dry_run=\"\",group=\"{}\",resource=\"{}\",scope=\"{}\",subresource=\"{}\",verb=\"{}\",version=\"{}\"",
            self.component,
            esc(&self.group),
            esc(&self.resource),
            self.scope,
            esc(&self.subresource),
            self.verb,
            esc(&self.version)
        )
    }
}

#[derive(Debug, Default, Clone)]
pub(super) struct RequestStats {
    pub(super) latency: Histogram,
    pub(super) codes: BTreeMap<u16, u64>,
}
