use super::*;

fn flags(pairs: &[(&str, &str)]) -> ApiserverFlags {
    ApiserverFlags {
        file: "/etc/kubernetes/manifests/kube-apiserver.yaml".into(),
        flags: pairs
            .iter()
            .map(|(f, v)| (f.to_string(), v.to_string()))
            .collect(),
    }
}

#[test]
fn shareable_buffers_are_the_callers_own_and_clones_share_them() {
    let v = b"/registry/pods/default/web-0".to_vec();
    let at = v.as_ptr();
    let b = shareable(v);
    assert_eq!(
        b.as_ptr(),
        at,
        "the Vec's buffer is used as it is, not copied"
    );
    let c = b.clone();
    assert_eq!(c.as_ptr(), at, "a clone is a reference to the same buffer");
    assert!(shareable(Vec::new()).is_empty());
    let kv = KeyValue::joined(b"/k", 1, 2, 1, 0, b"value");
    assert_eq!((&kv.key[..], &kv.value[..]), (&b"/k"[..], &b"value"[..]));
    assert_eq!(
        kv.value.as_ptr(),
        kv.key.as_ptr().wrapping_add(2),
        "one buffer"
    );
    // Either part empty (a DELETE's value; a key is never empty in etcd, but read
    // what is there).
    for (k, v) in [(&b"/k"[..], &b""[..]), (b"", b"value"), (b"", b"")] {
        let kv = KeyValue::joined(k, 1, 2, 1, 0, v);
        assert_eq!((&kv.key[..], &kv.value[..]), (k, v));
        let (key, value) = (kv.key.clone(), kv.value.clone());
        drop(kv);
        assert_eq!((&key[..], &value[..]), (k, v), "each part holds the buffer");
    }
}

#[test]
fn watch_cache_flags_read_as_kube_apiserver_reads_them() {
    assert_eq!(
        flags(&[("--etcd-compaction-interval", "5m")]).watch_cache(),
        None
    );
    let w = flags(&[
        ("--default-watch-cache-size", "0"),
        (
            "--watch-cache-sizes",
            "pods#1000, secrets#0,deployments.apps#5,bad,#3,jobs#-1,x#y",
        ),
    ])
    .watch_cache()
    .unwrap();
    assert!(w.enabled);
    assert_eq!(w.default_size, Some(0));
    assert_eq!(w.size_for("", "pods"), Some(1000));
    assert_eq!(w.size_for("apps", "deployments"), Some(5));
    assert_eq!(w.size_for("", "deployments"), None);
    assert!(w.cached("", "pods"));
    assert!(!w.cached("", "secrets"));
    // Not listed, and the default size is 0: off.
    assert!(!w.cached("", "configmaps"));
    assert_eq!(w.disabled(), vec!["secrets"]);
    assert_eq!(w.unreadable, vec!["bad", "jobs#-1", "x#y"]);
    // --watch-cache=false turns every cache off; the last flag given wins.
    let w = flags(&[("--watch-cache", "true"), ("--watch-cache", "false")])
        .watch_cache()
        .unwrap();
    assert!(!w.enabled && !w.cached("", "pods"));
    let w = flags(&[("--default-watch-cache-size", "100")])
        .watch_cache()
        .unwrap();
    assert!(w.cached("", "pods"));
}

fn kv(key: &[u8], value: &[u8]) -> KeyValue {
    KeyValue {
        key: Bytes::copy_from_slice(key),
        create_revision: 3,
        mod_revision: 7,
        version: 2,
        lease: -1,
        value: Bytes::copy_from_slice(value),
    }
}

#[test]
fn key_values_read_back_as_written_in_one_buffer() {
    for (k, v) in [
        (
            &b"/registry/leases/kube-node-lease/n1"[..],
            &b"k8s\x00\x0a\x01"[..],
        ),
        (b"/registry/pods/default/x", b""),
        (b"", b"value without a key"),
        (b"", b""),
    ] {
        let want = kv(k, v);
        let bin = postcard::to_allocvec(&want).unwrap();
        let got: KeyValue = postcard::from_bytes(&bin).unwrap();
        assert_eq!(got, want);
        if !k.is_empty() && !v.is_empty() {
            // The value starts where the key ends, in the same allocation.
            assert_eq!(got.key.as_ptr().wrapping_add(k.len()), got.value.as_ptr());
        }
        let json = serde_json::to_string(&want).unwrap();
        let got: KeyValue = serde_json::from_str(&json).unwrap();
        assert_eq!(got, want);
    }
    // A truncated encoding is an error, not a panic.
    let bin = postcard::to_allocvec(&kv(b"/registry/a", b"bbbb")).unwrap();
    for n in 0..bin.len() {
        assert!(postcard::from_bytes::<KeyValue>(&bin[..n]).is_err());
    }
}
