//! Storage values -> what a human needs to see: format detection, the protobuf
//! `runtime.Unknown` envelope, JSON, hex dumps.
//!
//! STUB API (being completed): `summarize` is cheap (used per row in lists and the event
//! stream); `render` produces the text shown in the key view.

/// The encoding a stored value was found in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    /// `k8s\x00` + runtime.Unknown (kube-apiserver's default for built-in types).
    Protobuf,
    /// JSON (custom resources, JSON storage).
    Json,
    /// CBOR (self-described tag 55799).
    Cbor,
    /// `k8s:enc:<provider>:v1:<key>:`.
    Encrypted { provider: String, key: String },
    /// Anything else.
    Raw,
}

impl Format {
    /// Short label for tables: `protobuf`, `json`, `cbor`, `aescbc:key1`, `raw`.
    pub fn label(&self) -> String {
        match self {
            Format::Protobuf => "protobuf".into(),
            Format::Json => "json".into(),
            Format::Cbor => "cbor".into(),
            Format::Encrypted { provider, key } => format!("{provider}:{key}"),
            Format::Raw => "raw".into(),
        }
    }
}

/// Cheap facts about a value: format and, when found, apiVersion/kind/namespace/name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectSummary {
    pub format: Option<Format>,
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

/// Options for [`render`].
#[derive(Clone, Debug, Default)]
pub struct RenderOptions {
    /// Show Secret data instead of `<redacted: N bytes>`.
    pub show_secrets: bool,
}

/// A value rendered for display.
#[derive(Clone, Debug, Default)]
pub struct Rendered {
    /// Format label, e.g. `protobuf`, `json`, `raw (not Kubernetes encoding)`.
    pub format: String,
    pub summary: ObjectSummary,
    /// Text lines of the body (pretty JSON, field dump or hex dump).
    pub lines: Vec<String>,
    /// A decode error or hint, one line.
    pub error: Option<String>,
}

/// Detects the format of a value (never fails).
pub fn detect(value: &[u8]) -> Format {
    if value.starts_with(b"k8s\x00") {
        Format::Protobuf
    } else if value.first() == Some(&b'{') {
        Format::Json
    } else {
        Format::Raw
    }
}

/// Cheap summary; never fails.
pub fn summarize(value: &[u8]) -> ObjectSummary {
    ObjectSummary {
        format: Some(detect(value)),
        ..Default::default()
    }
}

/// Full render for the key view; never fails (errors go into `Rendered::error`).
pub fn render(value: &[u8], _opts: &RenderOptions) -> Rendered {
    Rendered {
        format: detect(value).label(),
        summary: summarize(value),
        lines: value
            .chunks(16)
            .map(|c| {
                c.iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect(),
        error: None,
    }
}
