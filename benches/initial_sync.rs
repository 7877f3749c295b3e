//! Initial sync of 100,000 keys of ~2 KiB from a local etcd, against
//! `etcdctl get --prefix /registry -w protobuf > /dev/null` in the same run.
//!
//! `cargo bench --bench initial_sync` (needs `etcd` and `etcdctl` on PATH) prints the median
//! of 3 runs of each and the ratio (target: regscope ≤ 1.5× etcdctl).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use etcd_client::{Txn, TxnOp};
use regscope::demo::PrivateEtcd;
use regscope::source::{EtcdOptions, EtcdSource, SyncOptions};

const KEYS: usize = 100_000;
const VALUE: usize = 2048;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        if regscope::demo::etcd_server::find_on_path("etcdctl").is_none() {
            eprintln!("initial_sync: etcdctl not on PATH (apt-get install etcd-client); skipped");
            return;
        }
        let etcd = PrivateEtcd::start_with(&["--max-txn-ops=1000", "--max-request-bytes=10485760"])
            .await
            .expect("start etcd");
        let mut c = etcd.client().await.expect("client");
        let t = Instant::now();
        let value = vec![b'v'; VALUE];
        for batch in 0..KEYS / 1000 {
            let ops: Vec<TxnOp> = (batch * 1000..(batch + 1) * 1000)
                .map(|i| {
                    TxnOp::put(
                        format!("/registry/configmaps/ns-{:03}/cm-{i:07}", i % 100),
                        value.clone(),
                        None,
                    )
                })
                .collect();
            c.txn(Txn::new().and_then(ops)).await.expect("load txn");
        }
        eprintln!("loaded {KEYS} keys in {:?}", t.elapsed());

        let mut etcdctl = Vec::new();
        let mut ours = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            let st = Command::new("etcdctl")
                .env("ETCDCTL_API", "3")
                .args([
                    "--endpoints",
                    &etcd.endpoint(),
                    "get",
                    "--prefix",
                    "/registry",
                    "-w",
                    "protobuf",
                ])
                .stdout(Stdio::null())
                .status()
                .expect("run etcdctl");
            assert!(st.success());
            etcdctl.push(t.elapsed());

            let source = EtcdSource::new(
                EtcdOptions {
                    endpoints: vec![etcd.endpoint()],
                    ..Default::default()
                }
                .with_defaults(),
                SyncOptions::default(),
            );
            let t = Instant::now();
            let mut session = regscope::store::Session::new(Default::default());
            regscope::cli::snapshot_replica(&source, &mut session)
                .await
                .expect("sync");
            ours.push(t.elapsed());
            assert_eq!(session.replica.live_keys(), KEYS as u64);
        }
        let (e, o) = (median(etcdctl), median(ours));
        println!(
            "initial_sync: {KEYS} keys x {VALUE} B: etcdctl get -w protobuf {:.3} s, regscope list into replica {:.3} s (page 500), ratio {:.2}",
            e.as_secs_f64(),
            o.as_secs_f64(),
            o.as_secs_f64() / e.as_secs_f64()
        );
    });
}
