//! `regscope demo`: a private etcd (the `etcd` binary on PATH, on a free loopback port with
//! a temp data dir), a simulated control plane writing to it and a simulated apiserver
//! ([`crate::demo`]), watched by the console, or recorded headless with `--record`.

use std::process::ExitCode;

use anyhow::Result;

use super::args::{ConnArgs, DemoArgs, MetricsArgs, UiArgs};
use super::options::{scrape_config, ui_options};
use crate::demo::apiserver::{DemoApiserver, DemoApiserverConfig, SlowWatcher, StorageLatencies};
use crate::demo::{PrivateEtcd, SimConfig, Simulation};
use crate::source::{EtcdMetricsFrom, EtcdOptions, EtcdSource};

/// Starts the private etcd, the simulation and the simulated apiserver, then runs the
/// console over them (or records them to `--record` for `--duration`); everything it
/// started is stopped (and the data dir removed) when it ends. Exit 2 when a part cannot
/// start.
pub async fn run(conn: &ConnArgs, ui: &UiArgs, d: &DemoArgs, m: &MetricsArgs) -> Result<ExitCode> {
    if let Some(flag) = d.exporter.flag_without_listen(d.listen) {
        eprintln!("regscope demo: {flag} goes with --listen (nothing is served without it)");
        return Ok(ExitCode::from(2));
    }
    let headless = d.record.is_some() || d.listen.is_some();
    if d.duration.is_some() && !headless {
        eprintln!(
            "regscope demo: --duration goes with --record or --listen (the console runs until q)"
        );
        return Ok(ExitCode::from(2));
    }
    if !headless {
        if let Some(code) = super::console::need_terminal() {
            return Ok(code);
        }
    }
    let mut scfg = match scrape_config(m) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    eprintln!("regscope demo: starting a private etcd and the simulated control plane...");
    let etcd = match PrivateEtcd::start().await {
        Ok(e) => e,
        Err(e) => {
            eprintln!("regscope demo: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let latencies = std::sync::Arc::new(StorageLatencies::new());
    let cfg = SimConfig {
        nodes: d.nodes,
        rate: d.rate,
        compact_interval: std::time::Duration::from_secs(d.compact_interval.max(1)),
        prefix: conn.prefix.trim_end_matches('/').to_string(),
        latencies: Some(latencies.clone()),
        ..SimConfig::default()
    };
    let sim = match Simulation::start(&etcd, cfg).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("regscope demo: cannot start the simulation: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let api_cfg = DemoApiserverConfig {
        prefix: conn.prefix.trim_end_matches('/').to_string(),
        watch_cache_capacity: d.watch_cache_capacity as usize,
        slow_watcher: d.slow_watcher.clone().map(|resource| SlowWatcher {
            resource,
            delay_per_event: d.slow_watcher_delay,
        }),
        ..DemoApiserverConfig::default()
    };
    let api = match DemoApiserver::start(&etcd, latencies, api_cfg).await {
        Ok(a) => a,
        Err(e) => {
            eprintln!("regscope demo: cannot start the simulated apiserver: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    // The demo's apiserver side is its own simulated apiserver, whatever kubeconfig the
    // machine has; metric files still replace live scrapes when given.
    scfg.apiserver =
        crate::source::kubeconfig::ApiserverAccess::from_kubeconfig_path(api.kubeconfig_path());
    scfg.etcd = EtcdMetricsFrom::Endpoint;
    // The simulated controller manager and scheduler: real informers against the demo
    // apiserver, serving 1.36-style informer and workqueue metrics (screen 4's controllers).
    let _components = match scfg.apiserver.connect().await {
        Ok(Some(clients)) => {
            match crate::demo::components::DemoComponents::start(clients.kube).await {
                Ok(c) => {
                    use crate::model::ScrapeTarget;
                    for (target, comp) in [
                        (ScrapeTarget::ControllerManager, &c.controller_manager),
                        (ScrapeTarget::Scheduler, &c.scheduler),
                    ] {
                        if !scfg.controllers.iter().any(|x| x.target == target) {
                            scfg.controllers
                                .push(crate::source::controllers::ControllerScrape {
                                    target,
                                    url: Some(comp.metrics_url()),
                                    discovered: false,
                                    files: Vec::new(),
                                });
                        }
                    }
                    Some(c)
                }
                Err(e) => {
                    eprintln!("regscope demo: cannot start the simulated controller manager and scheduler: {e}");
                    None
                }
            }
        }
        Ok(None) => None,
        Err(e) => {
            eprintln!(
                "regscope demo: the simulated controllers cannot reach the demo apiserver: {e}"
            );
            None
        }
    };
    let source = EtcdSource::new(
        EtcdOptions {
            endpoints: vec![etcd.endpoint()],
            ..Default::default()
        }
        .with_defaults(),
        conn.sync_options(),
    );
    let cluster_id = source
        .etcd
        .connect_info(source.sync.request_timeout)
        .await
        .map_or(0, |c| c.cluster_id);
    // Short, so the screen tabs fit at 120 columns; the apiserver's URL is on screen 4.
    let title = format!(
        "demo · etcd {}",
        etcd.endpoint().trim_start_matches("http://")
    );
    let mut info = conn.session_info(title);
    info.endpoints = vec![etcd.endpoint()];
    let mut opts = ui_options(ui)?;
    opts.memory_limit = conn.memory_limit.map(|b| b as u64);
    if !conn.endpoints.is_empty() {
        opts.warnings.push(format!(
            "--endpoints/ETCDCTL_ENDPOINTS ignored: the demo watches its own private etcd at {}",
            etcd.endpoint()
        ));
    }
    // The private etcd is restarted once when asked (same ports and data dir).
    let restart_after = d.restart_etcd_after;
    let etcd_endpoint = etcd.endpoint();
    let etcd_task = tokio::spawn(async move {
        let mut etcd = etcd;
        if let Some(after) = restart_after {
            tokio::time::sleep(after).await;
            if let Err(e) = etcd.restart().await {
                eprintln!("regscope demo: restarting etcd: {e}");
            }
        }
        // Held until the demo ends (dropping it stops etcd and removes its data dir).
        std::future::pending::<()>().await;
        drop(etcd);
    });
    let res = if headless {
        // Said on stderr so that a script (or a test) can write to the demo's etcd.
        eprintln!("regscope demo: private etcd at {}", etcd_endpoint);
        let record = d.record.as_ref().map(|path| crate::record::RecordOptions {
            show_secrets: ui.show_secrets,
            overwrite: true,
            ..crate::record::RecordOptions::new(path)
        });
        let duration = match (&record, d.duration) {
            (Some(_), None) => Some(std::time::Duration::from_secs(60)),
            (_, d) => d,
        };
        let h = super::headless::Headless {
            who: if record.is_some() { "record" } else { "serve" },
            record,
            serve: d.listen.map(|l| d.exporter.serve_options(l)),
            duration,
            memory_limit: conn.memory_limit.map(|b| b as u64),
        };
        super::headless::run(source, &scfg, info, cluster_id, h).await
    } else {
        super::console::run_console(source, info, opts, &scfg, cluster_id).await
    };
    sim.stop().await;
    api.stop().await;
    etcd_task.abort();
    let _ = etcd_task.await;
    res
}
