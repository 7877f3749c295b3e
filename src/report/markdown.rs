//! stub
pub fn markdown(r: &super::Report, _s: &str) -> (String, Vec<(String, String)>) {
    (serde_json::to_string(r).unwrap_or_default(), vec![])
}
