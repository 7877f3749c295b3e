//! The `regscope` binary: parses flags and runs the console, the demo or a CLI subcommand.

use std::process::ExitCode;

use anyhow::Result;
use tokio::sync::mpsc;

use regscope::cli::args::{
    Cli, Command, ConnArgs, DemoArgs, MetricsArgs, SnapshotArgs, UiArgs, VerifyArgs,
};
use regscope::cli::{snapshot_json, snapshot_replica, sync_until_caught_up, verify_replica};
use regscope::model::{ScrapeTarget, Stamped};
use regscope::source::scrape::{EtcdMetricsFrom, ScrapeConfig};
use regscope::source::{EtcdOptions, EtcdSource};
use regscope::store::Replica;
use regscope::tui::{Exit, UiOptions};

/// Writes to stdout; a closed pipe (`regscope snapshot --json | head`) ends the output
/// quietly instead of panicking like `print!` does.
fn out(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|()| o.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("regscope: writing to stdout: {e}");
        }
    }
}

/// `println!` through [`out`].
macro_rules! outln {
    ($($t:tt)*) => { out(format_args!("{}\n", format_args!($($t)*))) };
}

fn main() -> ExitCode {
    // One rustls crypto provider for every TLS user (etcd-client via tonic, later kube and
    // reqwest): ring, installed before anything builds a TLS config.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse_merged();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("regscope: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match rt.block_on(dispatch(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("regscope: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn dispatch(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        None => console(&cli.conn, &cli.ui, &cli.metrics).await,
        Some(Command::Demo(d)) => demo(&cli.conn, &cli.ui, &d, &cli.metrics).await,
        Some(Command::Snapshot(s)) => snapshot(&s.conn, &s, &cli.metrics).await,
        Some(Command::Verify(VerifyArgs { conn })) => verify(&conn).await,
        Some(Command::Decode(d)) => regscope::cli::decode::run(&d, &cli.ui),
        Some(Command::PrintConfig { which }) => {
            use regscope::cli::args::ConfigFile;
            match which {
                Some(ConfigFile::Keymap) => {
                    out(format_args!("{}", regscope::config::DEFAULT_KEYMAP))
                }
                Some(ConfigFile::Theme) => out(format_args!("{}", regscope::config::DEFAULT_THEME)),
                None => out(format_args!("{}", regscope::config::print_defaults())),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Console options from the flags. Fails only when `--encryption-config` names a file that
/// cannot be used; a kubeadm-discovered config that cannot be used becomes a warning.
fn ui_options(ui: &UiArgs, title: String) -> Result<UiOptions> {
    let (keyring, note) = regscope::cli::load_keyring(ui.encryption_config.as_deref())?;
    Ok(UiOptions {
        keymap_path: ui.keymap.clone(),
        theme_path: ui.theme.clone(),
        title,
        show_secrets: ui.show_secrets,
        warnings: note.into_iter().collect(),
        keyring: keyring.map(std::sync::Arc::new),
        scrape_targets: Vec::new(),
    })
}

/// The scrape configuration from the flags; a flag error is printed (exit 2).
fn scrape_config(m: &MetricsArgs) -> Result<ScrapeConfig, ExitCode> {
    m.scrape_config().map_err(|e| {
        eprintln!("regscope: {e}");
        ExitCode::from(2)
    })
}

async fn console(conn: &ConnArgs, ui: &UiArgs, m: &MetricsArgs) -> Result<ExitCode> {
    let scfg = match scrape_config(m) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let source = EtcdSource::new(conn.etcd_options(), conn.sync_options());
    // Fail fast, before taking over the terminal, when the endpoint is wrong.
    if let Err(e) = source.etcd.connect(source.sync.request_timeout).await {
        eprintln!("regscope: {e}");
        return Ok(ExitCode::from(2));
    }
    let title = format!(
        "{} {}/",
        source.etcd.endpoint_label(),
        conn.prefix.trim_end_matches('/')
    );
    run_console(source, conn, ui_options(ui, title)?, scfg).await
}

/// Runs the source, the scrapers and the informers into the console until the user quits.
/// Metric files are fed first (a postmortem: successive files are successive scrapes) and
/// replace the live scrape of their target.
async fn run_console(
    source: EtcdSource,
    conn: &ConnArgs,
    mut opts: UiOptions,
    mut scfg: ScrapeConfig,
) -> Result<ExitCode> {
    // Build the merged Kubernetes schemas (~0.1 s) while the initial list runs, so opening
    // the first key does not pause.
    std::thread::spawn(|| regscope::decode::schema::plan().is_some());
    let (tx, rx) = mpsc::channel(1024);
    let files = match scfg.file_observations() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("regscope: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    if !scfg.etcd_files.is_empty() {
        scfg.etcd = EtcdMetricsFrom::Off;
    }
    for (t, paths) in [
        (ScrapeTarget::Apiserver, &scfg.apiserver_files),
        (ScrapeTarget::Etcd, &scfg.etcd_files),
    ] {
        if let Some(p) = paths.last() {
            opts.scrape_targets.push((t, p.display().to_string()));
        }
    }
    // Before the terminal is taken: an explicit --kubeconfig or URL that cannot be used is
    // an error the user must see.
    let scrapes = match scfg.start(&source.etcd, tx.clone()).await {
        Ok(t) => t,
        Err(e) => {
            eprintln!("regscope: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    opts.scrape_targets
        .extend(scrapes.configured.iter().cloned());
    let file_tx = tx.clone();
    tokio::spawn(async move {
        for st in files {
            if file_tx.send(st).await.is_err() {
                break;
            }
        }
    });
    let metrics = regscope::source::etcd_metrics::spawn(
        source.etcd.clone(),
        std::time::Duration::from_secs(15),
        tx.clone(),
    );
    let task = source.spawn(tx);
    let replica = Replica::new(conn.replica_config());
    let res = regscope::tui::run(rx, replica, opts).await;
    task.abort();
    metrics.abort();
    drop(scrapes);
    Ok(match res? {
        Exit::Quit => ExitCode::SUCCESS,
        // The shell convention for "ended by signal N".
        Exit::Signal(n) => ExitCode::from(u8::try_from(128 + n).unwrap_or(1)),
        Exit::SourceFailed(e) => {
            eprintln!("regscope: {e}");
            ExitCode::from(2)
        }
    })
}

async fn demo(conn: &ConnArgs, ui: &UiArgs, d: &DemoArgs, m: &MetricsArgs) -> Result<ExitCode> {
    use regscope::demo::apiserver::{
        DemoApiserver, DemoApiserverConfig, SlowWatcher, StorageLatencies,
    };
    use regscope::demo::sim::{SimConfig, Simulation};
    use regscope::demo::PrivateEtcd;
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
        regscope::source::kubeconfig::ApiserverAccess::from_kubeconfig_path(api.kubeconfig_path());
    scfg.etcd = EtcdMetricsFrom::Endpoint;
    let source = EtcdSource::new(
        EtcdOptions {
            endpoints: vec![etcd.endpoint()],
            ..Default::default()
        }
        .with_defaults(),
        conn.sync_options(),
    );
    // Short, so the screen tabs fit at 120 columns; the apiserver's URL is on screen 4.
    let title = format!(
        "demo · etcd {}",
        etcd.endpoint().trim_start_matches("http://")
    );
    let mut opts = ui_options(ui, title)?;
    if !conn.endpoints.is_empty() {
        opts.warnings.push(format!(
            "--endpoints/ETCDCTL_ENDPOINTS ignored: the demo watches its own private etcd at {}",
            etcd.endpoint()
        ));
    }
    let res = run_console(source, conn, opts, scfg).await;
    sim.stop().await;
    api.stop().await;
    drop(etcd);
    res
}

/// `snapshot --json`: the replica (unless only metric files are given and no
/// `--endpoints`), then one scrape of each configured target (or the metric files), derived
/// into the apiserver panels' data.
async fn snapshot(conn: &ConnArgs, s: &SnapshotArgs, m: &MetricsArgs) -> Result<ExitCode> {
    use regscope::source::scrape::{scrape_once, ScrapeFrom};
    use regscope::store::{InformerLag, MetricStore};
    let scfg = match scrape_config(m) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let files = match scfg.file_observations() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("regscope: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let files_only = scfg.has_files() && conn.endpoints.is_empty();
    let source = EtcdSource::new(conn.etcd_options(), conn.sync_options());
    let replica = if files_only {
        None
    } else {
        Some(snapshot_replica(&source, conn.replica_config()).await?)
    };
    let mut store = MetricStore::default();
    for st in &files {
        store.apply(st);
    }
    if !files_only {
        let mut live: Vec<(ScrapeTarget, ScrapeFrom)> = Vec::new();
        if scfg.apiserver_files.is_empty() {
            match scfg.apiserver.connect().await {
                Ok(Some(c)) => live.push((ScrapeTarget::Apiserver, c.metrics)),
                Ok(None) => {}
                Err(e) if scfg.apiserver.is_explicit() => {
                    eprintln!("regscope: {e}");
                    return Ok(ExitCode::from(2));
                }
                Err(e) => eprintln!("regscope: apiserver side off: {e}"),
            }
        }
        if scfg.etcd_files.is_empty() {
            let how = match &scfg.etcd {
                EtcdMetricsFrom::Off => None,
                EtcdMetricsFrom::Endpoint => Some(ScrapeFrom::etcd(&source.etcd)),
                EtcdMetricsFrom::Url(u) => Some(ScrapeFrom::etcd_url(u, &source.etcd)),
            };
            match how {
                Some(Ok(h)) => live.push((ScrapeTarget::Etcd, h)),
                Some(Err(e)) => eprintln!("regscope: etcd metrics not scraped: {e}"),
                None => {}
            }
        }
        for (target, how) in live {
            let outcome = scrape_once(&how, scfg.timeout).await;
            store.apply(&Stamped::now(regscope::model::Observation::Scrape {
                target,
                outcome,
            }));
        }
    }
    let view = regscope::metrics::derive(
        &store,
        replica.as_ref(),
        &InformerLag::default(),
        std::time::SystemTime::now(),
    );
    // Every unusable source gets one line on stderr (down, HTML, garbage, empty); the JSON
    // carries the same under `scrape`.
    for (target, status) in [("apiserver", &view.apiserver), ("etcd", &view.etcd)] {
        if let Some(e) = &status.last_error {
            eprintln!("regscope: {target} metrics from {}: {e}", status.source);
        }
    }
    out(format_args!(
        "{}\n",
        snapshot_json(replica.as_ref(), s.keys, Some(&view))?
    ));
    Ok(ExitCode::SUCCESS)
}

async fn verify(conn: &ConnArgs) -> Result<ExitCode> {
    let source = EtcdSource::new(conn.etcd_options(), conn.sync_options());
    let replica = sync_until_caught_up(
        &source,
        conn.replica_config(),
        std::time::Duration::from_secs(120),
    )
    .await?;
    let diffs = verify_replica(&source, &replica).await?;
    if diffs.is_empty() {
        outln!(
            "OK: {} keys under {} match etcd at revision {}",
            replica.live_keys(),
            conn.prefix,
            replica.revision()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        for d in &diffs {
            outln!("{}: {}", d.key, d.what);
        }
        outln!(
            "{} difference(s) at revision {}",
            diffs.len(),
            replica.revision()
        );
        Ok(ExitCode::from(1))
    }
}
