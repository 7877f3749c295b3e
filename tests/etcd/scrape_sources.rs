//! Scrape sources against real etcd: its `/metrics` endpoint, moving to the next endpoint
//! after a failure, the metrics flags anywhere on the command line, and the demo apiserver
//! scraped with its informers (bookmarks and a 410 relist).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::require;
use crate::common::scrape::{body_of, bounded, init};
use regscope::cli::args::{Cli, MetricsArgs};
use regscope::model::{InformerWhat, Observation, ScrapeOutcome, ScrapeTarget};
use regscope::source::scrape::{scrape_once, spawn_scraper, ScrapeFrom};
use regscope::source::EtcdOptions;
use tokio::sync::mpsc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_endpoint_metrics_from_a_private_etcd() {
    require!(ETCD);
    init();
    bounded(60, async {
        let etcd = regscope::demo::PrivateEtcd::start().await.expect("etcd");
        let opts = EtcdOptions {
            endpoints: vec![etcd.endpoint()],
            ..Default::default()
        }
        .with_defaults();
        let how = ScrapeFrom::etcd(&opts).unwrap();
        assert_eq!(how.source(), format!("{}/metrics", etcd.endpoint()));
        let out = scrape_once(&how, Duration::from_secs(5)).await;
        let body = body_of(&out);
        let text = std::str::from_utf8(body).unwrap();
        assert!(text.contains("etcd_debugging_mvcc_current_revision"));
        // Through the spawned scraper as well, tagged etcd.
        let (tx, mut rx) = mpsc::channel(4);
        let h = spawn_scraper(
            ScrapeTarget::Etcd,
            how,
            Duration::from_secs(5),
            Duration::from_secs(5),
            tx,
        );
        let s = rx.recv().await.unwrap();
        assert!(matches!(
            s.obs,
            Observation::Scrape {
                target: ScrapeTarget::Etcd,
                outcome: ScrapeOutcome::Body { .. }
            }
        ));
        h.abort();
    })
    .await;
}

/// etcd's metrics with several endpoints given: after a failed scrape of the first (a
/// member down), the next scrape asks the next endpoint's `/metrics`, and stays there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_metrics_move_to_the_next_endpoint_after_a_failure() {
    require!(ETCD);
    init();
    bounded(60, async {
        let etcd = regscope::demo::PrivateEtcd::start().await.expect("etcd");
        // A port nothing listens on: bound, then closed.
        let dead = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}", l.local_addr().unwrap())
        };
        let opts = EtcdOptions {
            endpoints: vec![dead.clone(), etcd.endpoint()],
            ..Default::default()
        }
        .with_defaults();
        let how = ScrapeFrom::etcd(&opts).unwrap();
        assert_eq!(how.source(), format!("{dead}/metrics"));
        let (tx, mut rx) = mpsc::channel(8);
        let h = spawn_scraper(
            ScrapeTarget::Etcd,
            how,
            Duration::from_millis(200),
            Duration::from_secs(2),
            tx,
        );
        let mut sources = Vec::new();
        for _ in 0..3 {
            let Observation::Scrape { outcome, .. } = rx.recv().await.unwrap().obs else {
                panic!("a scrape")
            };
            sources.push(match outcome {
                ScrapeOutcome::Failed { source, .. } => format!("failed {source}"),
                ScrapeOutcome::Body { source, body } => {
                    assert!(std::str::from_utf8(&body)
                        .unwrap()
                        .contains("etcd_debugging_mvcc_current_revision"));
                    format!("body {source}")
                }
            });
        }
        let live = format!("body {}/metrics", etcd.endpoint());
        assert_eq!(
            sources,
            [format!("failed {dead}/metrics"), live.clone(), live]
        );
        h.abort();
    })
    .await;
}

// ---------------------------------------------------------------------------------------
// Files.

fn parse(args: &[&str]) -> Cli {
    Cli::try_parse_merged_from(std::iter::once("regscope").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

#[test]
fn metrics_flags_anywhere_on_the_command_line() {
    require!(ETCD);
    let c = parse(&[
        "snapshot",
        "--json",
        "--apiserver-metrics-file",
        "a.prom",
        "--apiserver-metrics-file",
        "b.prom",
    ]);
    assert_eq!(
        c.metrics.apiserver_metrics_file,
        [PathBuf::from("a.prom"), PathBuf::from("b.prom")]
    );
    let c = parse(&["--kubeconfig", "kc", "--context", "prod"]);
    assert_eq!(c.metrics.kubeconfig.as_deref(), Some(Path::new("kc")));
    assert_eq!(c.metrics.context.as_deref(), Some("prod"));
    assert_eq!(c.metrics.scrape_interval, Duration::from_secs(5));
    assert_eq!(c.metrics.informers, ["pods", "nodes", "leases", "events"]);
    let c = parse(&["demo", "--informers", "none", "--scrape-interval", "2s"]);
    assert_eq!(c.metrics.informers, ["none"]);
    assert_eq!(c.metrics.scrape_interval, Duration::from_secs(2));
    let c = parse(&[
        "--scrape-interval",
        "500ms",
        "--etcd-metrics-file",
        "e.prom",
        "snapshot",
    ]);
    assert_eq!(c.metrics.scrape_interval, Duration::from_millis(500));
    assert_eq!(c.metrics.etcd_metrics_file, [PathBuf::from("e.prom")]);
    // It parses, but a sub-second interval is refused (a `1ms` typo for `1m` would hammer
    // the apiserver's /metrics).
    let e = c.metrics.scrape_config().unwrap_err();
    assert!(e.contains("--scrape-interval must be at least 1s"), "{e}");
    let c = parse(&["--scrape-interval", "10"]);
    assert_eq!(c.metrics.scrape_interval, Duration::from_secs(10));
    assert!(Cli::try_parse_merged_from(["regscope", "--scrape-interval", "soon"]).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_apiserver_scrapes_informers_bookmarks_and_a_410_relist() {
    require!(ETCD);
    use regscope::demo::{
        DemoApiserver, DemoApiserverConfig, PrivateEtcd, SimConfig, Simulation, SlowWatcher,
        StorageLatencies,
    };
    use std::collections::BTreeMap;
    init();
    bounded(45, async {
        let etcd = PrivateEtcd::start().await.expect("etcd");
        let latencies = Arc::new(StorageLatencies::new());
        let sim = Simulation::start(
            &etcd,
            SimConfig {
                rate: 300,
                latencies: Some(latencies.clone()),
                ..SimConfig::default()
            },
        )
        .await
        .expect("simulation");
        // The first watch on events (our informer's) is slow: it falls out of the ring, is
        // terminated, and its resume is answered 410; the informer must relist.
        let api = DemoApiserver::start(
            &etcd,
            latencies,
            DemoApiserverConfig {
                slow_watcher: Some(SlowWatcher {
                    resource: "events".into(),
                    delay_per_event: Duration::from_millis(50),
                }),
                ..DemoApiserverConfig::default()
            },
        )
        .await
        .expect("demo apiserver");
        let args = MetricsArgs {
            kubeconfig: Some(api.kubeconfig_path().to_path_buf()),
            scrape_interval: Duration::from_secs(1),
            ..Default::default()
        };
        let cfg = args.scrape_config().expect("config");
        let etcd_opts = EtcdOptions {
            endpoints: vec![etcd.endpoint()],
            ..Default::default()
        }
        .with_defaults();
        let (tx, mut rx) = mpsc::channel(1024);
        let tasks = cfg.start(&etcd_opts, tx).await.expect("start");
        assert_eq!(tasks.apiserver.as_deref(), Some(api.url().as_str()));

        let (mut api_body, mut etcd_body) = (false, false);
        // Per resource: first list, bookmarks seen, 410s, relists, last version seen.
        #[derive(Default, Debug)]
        struct Seen {
            listed: Option<i64>,
            bookmarks: u32,
            events: u32,
            gone: Vec<String>,
            relists: u32,
            last: i64,
        }
        let mut seen: BTreeMap<String, Seen> = BTreeMap::new();
        let done = |seen: &BTreeMap<String, Seen>, a: bool, e: bool| {
            a && e
                && ["pods", "nodes", "leases", "events"].iter().all(|r| {
                    seen.get(*r)
                        .is_some_and(|s| s.listed.is_some() && s.bookmarks > 0)
                })
                && seen.get("events").is_some_and(|s| s.relists > 0)
        };
        let deadline = Instant::now() + Duration::from_secs(35);
        while !done(&seen, api_body, etcd_body) {
            assert!(
                Instant::now() < deadline,
                "apiserver {api_body} etcd {etcd_body} {seen:#?}"
            );
            let Ok(Some(s)) = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await else {
                panic!("no observation for 5 s: {seen:#?}")
            };
            match s.obs {
                Observation::Scrape {
                    target: ScrapeTarget::Apiserver,
                    outcome,
                } => {
                    let b = std::str::from_utf8(body_of(&outcome)).unwrap().to_string();
                    assert!(
                        b.contains("etcd_request_duration_seconds"),
                        "apiserver body"
                    );
                    api_body = true;
                }
                Observation::Scrape {
                    target: ScrapeTarget::Etcd,
                    outcome,
                } => {
                    let b = body_of(&outcome);
                    assert!(std::str::from_utf8(b)
                        .unwrap()
                        .contains("etcd_debugging_mvcc_current_revision"));
                    etcd_body = true;
                }
                Observation::Informer(i) => {
                    let key = i.resource.clone();
                    if key == "leases" {
                        assert_eq!(i.group, "coordination.k8s.io");
                    } else {
                        assert_eq!(i.group, "");
                    }
                    let e = seen.entry(key.clone()).or_default();
                    match i.what {
                        InformerWhat::Listed {
                            resource_version,
                            relist,
                            ..
                        } => {
                            assert!(resource_version > 0);
                            assert_eq!(relist, e.listed.is_some(), "{key}");
                            if relist {
                                e.relists += 1;
                            } else {
                                e.listed = Some(resource_version);
                            }
                            e.last = resource_version;
                        }
                        InformerWhat::Event {
                            resource_version,
                            bookmark,
                        } => {
                            assert!(
                                resource_version >= e.last,
                                "{key}: {resource_version} after {}",
                                e.last
                            );
                            e.last = resource_version;
                            if bookmark {
                                e.bookmarks += 1;
                            } else {
                                e.events += 1;
                            }
                        }
                        InformerWhat::Gone { message } => e.gone.push(message),
                        InformerWhat::Error { message } => {
                            // The slow watcher's termination may surface as an error; the
                            // rest must not.
                            assert_eq!(key, "events", "{message}");
                        }
                    }
                }
                Observation::Note(n) => panic!("unexpected note: {n}"),
                other => panic!("unexpected {other:?}"),
            }
        }
        let ev = &seen["events"];
        assert!(
            ev.gone
                .iter()
                .any(|m| m.contains("too old resource version")),
            "{ev:?}"
        );
        eprintln!("informers: {seen:#?}");
        drop(tasks);
        api.stop().await;
        sim.stop().await;
    })
    .await;
}
