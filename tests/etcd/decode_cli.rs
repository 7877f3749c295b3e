//! `regscope decode` fed by a real etcd: `etcdctl get -w json` of objects written to etcd,
//! piped into decode.

use std::process::{Command, Stdio};

use crate::common::decode_cli::{finish, json, BIN, WIDGET_KEY};
use crate::common::fixtures;
use crate::common::fixtures::WIDGET_W1;
use crate::common::require;

fn golden_pod() -> Vec<u8> {
    std::fs::read(fixtures::testdata().join("k8s-api/v1.30.3/core.v1.Pod.pb"))
        .expect("the golden Pod in ../shared/testdata")
}

/// `etcdctl get <args> -w json | regscope decode -o json`, through a real pipe.
fn etcdctl_pipe_decode(endpoint: &str, get: &[&str]) -> (i32, Vec<u8>, String) {
    let mut etcdctl = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", endpoint, "get"])
        .args(get)
        .args(["-w", "json"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("etcdctl");
    let pipe = etcdctl.stdout.take().unwrap();
    let out = Command::new(BIN)
        .args(["decode", "-o", "json"])
        .stdin(Stdio::from(pipe))
        .output()
        .unwrap();
    assert!(etcdctl.wait().unwrap().success(), "etcdctl failed");
    finish(out)
}

#[tokio::test(flavor = "multi_thread")]
async fn real_etcd_etcdctl_json_piped_into_decode() {
    require!(ETCD, ETCDCTL, TESTDATA);
    let pod = golden_pod();
    let etcd = regscope::demo::PrivateEtcd::start()
        .await
        .expect("start etcd");
    let mut c = etcd.client().await.expect("client");
    let pod_key = "/registry/pods/default/golden";
    let pod_rev = c
        .put(pod_key, pod.clone(), None)
        .await
        .unwrap()
        .header()
        .unwrap()
        .revision();
    let widget_rev = c
        .put(WIDGET_KEY, WIDGET_W1, None)
        .await
        .unwrap()
        .header()
        .unwrap()
        .revision();
    assert!(widget_rev > pod_rev);
    let endpoint = etcd.endpoint();

    let (code, out, err) = tokio::task::spawn_blocking({
        let endpoint = endpoint.clone();
        move || etcdctl_pipe_decode(&endpoint, &[pod_key])
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    assert_eq!(v["kind"], "Pod");
    assert_eq!(v["apiVersion"], "v1");
    assert_eq!(v["metadata"]["resourceVersion"], pod_rev.to_string());
    assert!(err.contains(&format!("# key       {pod_key}")), "{err}");
    assert!(
        err.contains(&format!(
            "# revision  create {pod_rev}, mod {pod_rev}, version 1"
        )),
        "{err}"
    );

    let (code, out, err) = tokio::task::spawn_blocking(move || {
        etcdctl_pipe_decode(&endpoint, &["/registry/", "--prefix"])
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let arr = v.as_array().expect("a JSON array for several kvs");
    assert_eq!(arr.len(), 2);
    // etcd returns keys in byte order: /registry/example.com/... before /registry/pods/...
    assert_eq!(arr[0]["kind"], "Widget");
    assert_eq!(
        arr[0]["metadata"]["resourceVersion"],
        widget_rev.to_string()
    );
    assert_eq!(arr[1]["kind"], "Pod");
    assert_eq!(arr[1]["metadata"]["resourceVersion"], pod_rev.to_string());
    assert!(err.contains("# resource  widgets.example.com"), "{err}");
}
