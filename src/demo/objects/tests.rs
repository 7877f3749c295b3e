//! Unit tests of the storage encoding and the object builders.

use super::*;

#[test]
fn envelope_round_trip_names_the_type() {
    let mut rng = rand::rng();
    let dep = deployment(&mut rng, "ns", "web", 2, "nginx:1");
    let rs = replica_set(&mut rng, &dep, "abc12", 2);
    let pod = pod_for(&mut rng, &rs);
    let bytes = encode_object(&pod);
    assert!(bytes.starts_with(PROTOBUF_MAGIC));
    let env = decode_envelope(&bytes).unwrap();
    assert_eq!((env.api_version.as_str(), env.kind.as_str()), ("v1", "Pod"));
    let back: Pod = decode_object(&bytes).unwrap();
    assert_eq!(back, pod);
    assert!(decode_object::<Lease>(&bytes).is_err());
}

#[test]
fn envelope_ends_with_empty_content_fields() {
    let v = encode_envelope("v1", "Pod", vec![]);
    // typeMeta, raw (empty), contentEncoding "", contentType "".
    assert_eq!(
        v,
        b"k8s\x00\x0a\x09\x0a\x02v1\x12\x03Pod\x12\x00\x1a\x00\x22\x00".to_vec()
    );
}

#[test]
fn decode_rejects_missing_magic() {
    assert!(decode_envelope(b"{\"kind\":\"Pod\"}").is_err());
}

#[test]
fn uid_is_version_4() {
    let uid = new_uid(&mut rand::rng());
    assert_eq!(uid.len(), 36);
    assert_eq!(&uid[14..15], "4");
    assert!(matches!(&uid[19..20], "8" | "9" | "a" | "b"));
}

#[test]
fn widget_is_json_with_trailing_newline() {
    let w = widget_json("ns", "w", "u", 3, 1);
    assert_eq!(w.last(), Some(&b'\n'));
    let v: serde_json::Value = serde_json::from_slice(&w).unwrap();
    assert_eq!(v["kind"], "Widget");
}

#[test]
fn rollout_helpers_keep_managed_fields_unique() {
    let mut rng = rand::rng();
    let mut dep = deployment(&mut rng, "ns", "web", 2, "nginx:1");
    set_deployment_image(&mut dep, "nginx:2");
    set_deployment_image(&mut dep, "nginx:3");
    let m = dep.metadata.as_ref().unwrap();
    assert_eq!(m.generation, Some(3));
    assert_eq!(m.managed_fields.len(), 1);
}
