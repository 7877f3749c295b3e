//! What the controllers' section costs the panel derive (`derive::apiserver::build`, run
//! after every scrape and once a second while screen 4 is shown): a session holding `N`
//! configmaps (listed, so regscope's event log does not reach back before the list) and a
//! kube-controller-manager scrape with 1.36-style informer metrics whose configmaps
//! informer is older than the list, so its missed changes are counted from the keys (the
//! worst case, up to 20,000 keys looked at), plus the real v1.34.0 capture's 53
//! workqueues. A/B alternated against the same session without the controller manager,
//! medians, in one run: what the section adds to each derive.
//!
//! Run: `cargo bench --bench controllers` (`CONTROLLERS_KEYS`, default 20000 and 100000).

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use regscope::model::{
    Bytes, ConnState, KeyValue, Observation, ScrapeOutcome, ScrapeTarget, Stamped,
};
use regscope::store::Session;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn session(keys: usize, with_kcm: bool) -> Session {
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_750_000_000);
    let mut s = Session::new(Default::default());
    let mut clock = 0u64;
    let mut apply = |s: &mut Session, obs: Observation| {
        clock += 1;
        s.apply(&Stamped {
            at: t0 + Duration::from_millis(clock),
            obs,
        });
    };
    let kvs: Vec<KeyValue> = (0..keys)
        .map(|i| {
            let k = format!("/registry/configmaps/ns{}/cm{i}", i % 50);
            let rev = i as i64 + 2;
            KeyValue::joined(k.as_bytes(), rev, rev, 1, 0, b"{\"data\":{}}")
        })
        .collect();
    let head = keys as i64 + 1;
    apply(&mut s, Observation::Conn(ConnState::Connecting));
    apply(&mut s, Observation::ListBegin { revision: head });
    for page in kvs.chunks(1000) {
        apply(&mut s, Observation::ListPage { kvs: page.to_vec() });
    }
    apply(
        &mut s,
        Observation::ListDone {
            revision: head,
            compacted: None,
        },
    );
    apply(&mut s, Observation::Conn(ConnState::Watching));
    if with_kcm {
        let capture = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/testdata/controlplane-metrics/kube-controller-manager-v1.34.0.prom");
        let workqueues: String = std::fs::read_to_string(capture)
            .map(|b| {
                b.lines()
                    .filter(|l| l.starts_with("workqueue_"))
                    .map(|l| format!("{l}\n"))
                    .collect()
            })
            .unwrap_or_default();
        // The configmaps informer's store is at half the keys' revisions: every key
        // written after it counts.
        let body = format!(
            "kubernetes_build_info{{git_version=\"v1.36.0\"}} 1\n\
             informer_store_resource_version{{group=\"\",name=\"shared\",resource=\"configmaps\",version=\"v1\"}} {}\n\
             informer_queued_items{{group=\"\",name=\"shared\",resource=\"configmaps\",version=\"v1\"}} 0\n{workqueues}",
            head / 2
        );
        for _ in 0..2 {
            apply(
                &mut s,
                Observation::Scrape {
                    target: ScrapeTarget::ControllerManager,
                    outcome: ScrapeOutcome::Body {
                        source: "bench".into(),
                        body: Bytes::from(body.clone()),
                    },
                },
            );
        }
    }
    s.settle();
    s
}

fn derive(s: &Session) -> f64 {
    let start = Instant::now();
    let p = regscope::derive::apiserver::build(&s.metrics, Some(s), &s.informers, s.now());
    black_box(&p);
    start.elapsed().as_secs_f64()
}

fn main() {
    let sizes: Vec<usize> = match std::env::var("CONTROLLERS_KEYS") {
        Ok(v) => v.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        Err(_) => vec![20_000, 100_000],
    };
    for keys in sizes {
        let (a, b) = (session(keys, false), session(keys, true));
        let panel = regscope::derive::apiserver::build(&b.metrics, Some(&b), &b.informers, b.now());
        let row = panel.controllers.informers.first();
        let (mut ta, mut tb) = (Vec::new(), Vec::new());
        for _ in 0..15 {
            ta.push(derive(&a));
            tb.push(derive(&b));
        }
        let (ma, mb) = (median(ta), median(tb));
        println!(
            "controllers, {keys} configmaps: derive without {:.3} ms, with the controller manager {:.3} ms (adds {:.3} ms); informer behind {:?} from {:?}, {} workqueues",
            ma * 1e3,
            mb * 1e3,
            (mb - ma) * 1e3,
            row.and_then(|r| r.events_behind),
            row.map(|r| r.events_behind_from),
            panel.controllers.workqueues.len()
        );
    }
}
