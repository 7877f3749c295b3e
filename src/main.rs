//! The `regscope` binary: parses flags and runs the console, the demo, the recorder, a
//! replay or a CLI subcommand.

use std::process::ExitCode;

use anyhow::Result;
use tokio::sync::mpsc;

use regscope::cli::args::{
    Cli, Command, ConnArgs, DemoArgs, MetricsArgs, SnapshotArgs, UiArgs, VerifyArgs,
};
use regscope::cli::{out, snapshot_json, snapshot_replica, sync_until_caught_up};
use regscope::model::{ScrapeTarget, SessionInfo, Stamped};
use regscope::source::scrape::ScrapeFrom;
use regscope::source::{EtcdMetricsFrom, EtcdOptions, EtcdSource, ScrapeConfig};
use regscope::store::Session;
use regscope::tui::{Exit, Feed, UiOptions};

/// `println!` through [`out`].
macro_rules! outln {
    ($($t:tt)*) => { out(format_args!("{}\n", format_args!($($t)*))) };
}

fn main() -> ExitCode {
    // One rustls crypto provider for every TLS user (etcd-client via tonic, kube and
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
        // Output that could not be written is a failure, whatever the command found.
        Ok(code) if code == ExitCode::SUCCESS && regscope::cli::stdout_failed() => {
            ExitCode::from(1)
        }
        Ok(code) => code,
        Err(e) => {
            eprintln!("regscope: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn dispatch(mut cli: Cli) -> Result<ExitCode> {
    for w in &cli.config_warnings {
        eprintln!("regscope: {w}");
    }
    cli.ui.config_warnings = cli.config_warnings.clone();
    let discovery = discover_node(&mut cli);
    // `--user NAME` without a password: asked on the terminal, as etcdctl does.
    let conn = match &mut cli.command {
        None => Some(&mut cli.conn),
        Some(Command::Snapshot(s)) if s.from.is_none() => Some(&mut s.conn),
        Some(Command::Verify(v)) => Some(&mut v.conn),
        Some(Command::Record(r)) => Some(&mut r.conn),
        _ => None,
    };
    if let Some(conn) = conn {
        conn.prompt_password()
            .map_err(|e| anyhow::anyhow!("reading the etcd password from the terminal: {e}"))?;
    }
    // The console takes over a terminal: say what to use instead when there is none.
    // (`replay` reads its file first and asks for the terminal after: an empty or damaged
    // file is the error to report, terminal or not.)
    let console_cmd = matches!(&cli.command, None | Some(Command::Demo(_)));
    // A replay of a file that is not there says so, terminal or not.
    if let Some(Command::Replay(r)) = &cli.command {
        if let Err(e) = regscope::record::files::recording_files(&r.file) {
            eprintln!("regscope: {e}");
            return Ok(ExitCode::from(2));
        }
    }
    {
        use std::io::IsTerminal;
        if console_cmd && !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
            eprintln!(
                "regscope: the console needs a terminal (stdin and stdout); without one use `regscope snapshot --json`, `regscope record -o FILE` or `regscope replay --check FILE`"
            );
            return Ok(ExitCode::from(2));
        }
    }
    if let Some(Command::Doctor(d)) = &cli.command {
        if d.timeout.is_zero() {
            eprintln!("regscope: doctor --timeout must be more than 0 (e.g. 3s)");
            return Ok(ExitCode::from(2));
        }
    }
    match cli.command {
        None => console(&cli.conn, &cli.ui, &cli.metrics, discovery.as_ref()).await,
        Some(Command::Doctor(mut d)) => {
            d.encryption_config.clone_from(&cli.ui.encryption_config);
            let d_found = discovery.unwrap_or_default();
            regscope::cli::doctor::run(&d, &d_found, &cli.metrics).await
        }
        Some(Command::Demo(d)) => demo(&cli.conn, &cli.ui, &d, &cli.metrics).await,
        Some(Command::Snapshot(s)) if s.from.is_some() => {
            regscope::cli::record::snapshot_from(&s, cli.ui.zone())
        }
        Some(Command::Snapshot(s)) => snapshot(&s.conn, &s, &cli.metrics).await,
        Some(Command::Verify(VerifyArgs { conn })) => verify(&conn).await,
        Some(Command::Record(r)) => {
            let mut scfg = match scrape_config(&cli.metrics) {
                Ok(c) => c,
                Err(code) => return Ok(code),
            };
            scfg.other_clusters = r.conn.other_clusters(&cli.metrics.node_other_clusters);
            regscope::cli::record::record(&r, &scfg, cli.ui.show_secrets).await
        }
        Some(Command::Replay(r)) if r.check => {
            regscope::cli::record::check(&r.file, r.p99_threshold, r.lag_threshold, cli.ui.zone())
        }
        Some(Command::Replay(r)) => regscope::cli::record::replay(&r, ui_options(&cli.ui)?).await,
        Some(Command::Export(e)) => regscope::cli::record::export(&e, &cli.ui),
        Some(Command::Decode(d)) => regscope::cli::decode::run(&d, &cli.ui),
        Some(Command::Completions { shell }) => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "regscope", &mut script);
            out(format_args!("{}", String::from_utf8_lossy(&script)));
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Man) => {
            use clap::CommandFactory;
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut page)
                .map_err(|e| anyhow::anyhow!("rendering the manual page: {e}"))?;
            out(format_args!("{}", String::from_utf8_lossy(&page)));
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::PrintConfig { which }) => {
            use regscope::cli::args::ConfigFile;
            match which {
                Some(ConfigFile::Keymap) => {
                    out(format_args!("{}", regscope::config::DEFAULT_KEYMAP))
                }
                Some(ConfigFile::Theme) => out(format_args!("{}", regscope::config::DEFAULT_THEME)),
                None => out(format_args!("{}", settings_text(&cli.settings))),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `regscope print-config`: one TOML line per setting, its origin as a comment.
fn settings_text(settings: &[regscope::cli::args::Setting]) -> String {
    let file = regscope::config::config_file()
        .map_or("none ($REGSCOPE_CONFIG is empty)".into(), |p| {
            p.display().to_string()
        });
    let mut s = format!(
        "# regscope settings in effect; the config file: {file}\n\
         # (its lines have this form; the command line and ETCDCTL_* win over it)\n"
    );
    let w = settings.iter().map(|x| x.key.len()).max().unwrap_or(0);
    for x in settings {
        let line = match &x.value {
            Some(v) if x.key == "mouse" => format!("{:w$} = {v}", x.key),
            Some(v) => format!("{:w$} = {}", x.key, toml_string(v)),
            None => format!("# {:w$} (unset)", x.key),
        };
        s.push_str(&format!("{line:50}  # {}\n", x.origin));
    }
    s.push_str(
        "# `regscope print-config keymap` and `print-config theme` print the key bindings and colours.\n",
    );
    s
}

fn toml_string(v: &str) -> String {
    toml::Value::String(v.to_string()).to_string()
}

/// Reads what the node runs (under `--root`) for the commands that connect or decrypt,
/// and fills in what the flags left unset: etcd access and prefix ([`ConnArgs::apply_discovery`]),
/// etcd's metrics URL when etcd access came from the node, and the encryption config.
fn discover_node(cli: &mut Cli) -> Option<regscope::node::Discovery> {
    let files =
        !cli.metrics.apiserver_metrics_file.is_empty() || !cli.metrics.etcd_metrics_file.is_empty();
    // The console shows the endpoints in its header; doctor prints every fact.
    let say = !matches!(cli.command, None | Some(Command::Doctor(_)));
    let conn = match &mut cli.command {
        None => Some(&mut cli.conn),
        Some(Command::Snapshot(s)) if s.from.is_none() => Some(&mut s.conn),
        Some(Command::Verify(v)) => Some(&mut v.conn),
        Some(Command::Record(r)) => Some(&mut r.conn),
        Some(Command::Doctor(d)) => Some(&mut d.conn),
        Some(Command::Decode(_) | Command::Export(_) | Command::Snapshot(_)) => None,
        Some(Command::Replay(r)) if !r.check => None,
        _ => return None,
    };
    if !cli.node.root.is_dir() {
        eprintln!(
            "regscope: --root {}: not a directory (give the directory holding the node's etc/ and var/)",
            cli.node.root.display()
        );
        std::process::exit(2);
    }
    let d = regscope::node::discover(&cli.node.root);
    cli.metrics.node_root = Some(cli.node.root.clone());
    if let Some(conn) = conn {
        // Metric files without endpoints are an offline snapshot: no etcd to find.
        let offline = files && conn.endpoints.is_empty();
        if offline && d.etcd.is_some() {
            eprintln!(
                "regscope: metric files given without --endpoints: reading the files only, not the etcd this node runs (give --endpoints too to connect to it)"
            );
        }
        if !offline {
            for note in conn.apply_discovery(&d) {
                if say {
                    eprintln!("regscope: {note}");
                }
            }
            if say {
                for p in &d.problems {
                    eprintln!(
                        "regscope: node discovery: {}: {} (`regscope doctor` checks the node's setup)",
                        p.file, p.message
                    );
                }
            }
            let from_node = d
                .etcd
                .as_ref()
                .is_some_and(|e| e.endpoints == conn.endpoints);
            if from_node && cli.metrics.etcd_metrics_url.is_none() && !files {
                cli.metrics.etcd_metrics_url.clone_from(&d.etcd_metrics_url);
            }
            cli.metrics
                .node_apiserver_flags
                .clone_from(&d.apiserver_flags);
            cli.metrics.node_other_clusters = d.other_clusters();
        }
    }
    if let Some(p) = &d.encryption_config {
        let manifest = d
            .facts
            .iter()
            .find(|f| f.flag.as_deref() == Some("--encryption-provider-config"))
            .map_or_else(String::new, |f| f.file.clone());
        cli.ui.discovered_encryption = Some((p.clone(), manifest));
    }
    Some(d)
}

/// Console options from the flags. Fails only when `--encryption-config` names a file that
/// cannot be used; a config found on the node that cannot be used becomes a warning.
fn ui_options(ui: &UiArgs) -> Result<UiOptions> {
    let (keyring, note) = regscope::cli::load_keyring(ui)?;
    Ok(UiOptions {
        keymap_path: ui.keymap.clone(),
        theme_path: ui.theme.clone(),
        show_secrets: ui.show_secrets,
        warnings: ui.config_warnings.iter().cloned().chain(note).collect(),
        keyring: keyring.map(std::sync::Arc::new),
        memory_limit: None,
        screenshot_dir: ui.screenshot_dir.clone().unwrap_or_default(),
        mouse: ui.mouse,
        zone: ui.zone(),
    })
}

/// The scrape configuration from the flags; a flag error is printed (exit 2).
fn scrape_config(m: &MetricsArgs) -> Result<ScrapeConfig, ExitCode> {
    m.scrape_config().map_err(|e| {
        eprintln!("regscope: {e}");
        ExitCode::from(2)
    })
}

async fn console(
    conn: &ConnArgs,
    ui: &UiArgs,
    m: &MetricsArgs,
    discovery: Option<&regscope::node::Discovery>,
) -> Result<ExitCode> {
    let scfg = match scrape_config(m) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    // Fail fast, before taking over the terminal, when the endpoint is wrong.
    let (source, cluster_id, info) = match regscope::cli::connect_session(conn).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("regscope: {e}");
            eprintln!(
                "regscope: `regscope doctor` checks each etcd member, certificate and file it uses"
            );
            return Ok(ExitCode::from(2));
        }
    };
    let mut scfg = scfg;
    scfg.other_clusters = conn.other_clusters(&m.node_other_clusters);
    let mut opts = ui_options(ui)?;
    opts.memory_limit = conn.memory_limit.map(|b| b as u64);
    for p in discovery.map_or(&[][..], |d| &d.problems) {
        opts.warnings.push(format!(
            "node discovery: {}: {} (run `regscope doctor`)",
            p.file, p.message
        ));
    }
    run_console(source, info, opts, &scfg, cluster_id).await
}

/// Runs the live sources into the console until the user quits.
async fn run_console(
    source: EtcdSource,
    mut info: SessionInfo,
    opts: UiOptions,
    scfg: &ScrapeConfig,
    cluster_id: u64,
) -> Result<ExitCode> {
    // Build the merged Kubernetes schemas (~0.1 s) while the initial list runs, so opening
    // the first key does not pause.
    std::thread::spawn(|| regscope::decode::schema::plan().is_some());
    let (tx, rx) = mpsc::channel(1024);
    let sources = match regscope::cli::start_live(source, scfg, tx, &mut info).await {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let feed = Feed::Live {
        rx,
        record_dir: std::env::current_dir().unwrap_or_else(|_| ".".into()),
        cluster_id,
    };
    let res = regscope::tui::run(feed, Session::new(info), opts).await;
    drop(sources);
    exit_code(res?)
}

fn exit_code(e: Exit) -> Result<ExitCode> {
    Ok(match e {
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
    use regscope::demo::PrivateEtcd;
    use regscope::demo::{SimConfig, Simulation};
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
    let res = match &d.record {
        Some(path) => {
            let ropts = regscope::record::RecordOptions {
                show_secrets: ui.show_secrets,
                overwrite: true,
                ..regscope::record::RecordOptions::new(path)
            };
            regscope::cli::record::record_session(
                source,
                &scfg,
                info,
                cluster_id,
                ropts,
                Some(d.duration),
                conn.memory_limit.map(|b| b as u64),
            )
            .await
        }
        None => run_console(source, info, opts, &scfg, cluster_id).await,
    };
    sim.stop().await;
    api.stop().await;
    etcd_task.abort();
    let _ = etcd_task.await;
    res
}

/// `snapshot --json`: the replica (unless only metric files are given and no
/// `--endpoints`), then one scrape of each configured target (or the metric files), derived
/// into the apiserver panels' data.
async fn snapshot(conn: &ConnArgs, s: &SnapshotArgs, m: &MetricsArgs) -> Result<ExitCode> {
    use regscope::source::scrape::scrape_once;
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
    let mut session = Session::new(conn.session_info(String::new()));
    if !files_only {
        // kube-apiserver's other etcd clusters are asked once each, while the main one is
        // listed: a hung one then costs its timeouts beside the list, not after it.
        let others = conn.other_clusters(&m.node_other_clusters);
        let others_asked = futures::future::join_all(others.iter().map(|o| o.once()));
        let limit = conn.memory_limit.map(|b| b as u64);
        let (listed, others_seen) =
            tokio::join!(snapshot_replica(&source, &mut session, limit), others_asked);
        listed?;
        // The members, polled once (the console polls them beside its watch).
        if let Some(rows) =
            regscope::source::members_once(&source.etcd, source.sync.request_timeout).await
        {
            session.apply(&Stamped::now(regscope::model::Observation::Members(rows)));
        }
        if let Some(f) = &scfg.apiserver_flags {
            session.apply(&Stamped::now(regscope::model::Observation::ApiserverFlags(
                f.clone(),
            )));
        }
        for seen in others_seen {
            session.apply(&Stamped::now(regscope::model::Observation::OtherCluster(
                seen,
            )));
        }
    }
    for st in &files {
        session.apply(st);
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
            session.apply(&Stamped::now(regscope::model::Observation::Scrape {
                target,
                outcome,
            }));
        }
    }
    // The session's clock is the newest stamp, as in the console; a snapshot is taken now.
    session.apply(&Stamped::now(regscope::model::Observation::Tick));
    let view = regscope::derive::apiserver::view(
        &session.metrics,
        (!files_only).then_some(&session),
        &session.informers,
        session.now(),
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
        snapshot_json(
            (!files_only).then_some(&session),
            s.keys,
            Some(&view),
            Some(&session),
        )?
    ));
    Ok(ExitCode::SUCCESS)
}

async fn verify(conn: &ConnArgs) -> Result<ExitCode> {
    let source = EtcdSource::new(conn.etcd_options(), conn.sync_options());
    let mut session = Session::new(conn.session_info(String::new()));
    let limit = conn.memory_limit.map(|b| b as u64);
    // etcd may compact past the replica's revision while etcd's copy is read (kube-apiserver
    // compacts every 5 minutes): catch up again and compare at the newer revision.
    let mut attempt = 0;
    let diffs = loop {
        attempt += 1;
        sync_until_caught_up(
            &source,
            &mut session,
            std::time::Duration::from_secs(120),
            limit,
        )
        .await?;
        match regscope::cli::verify_replica_within(&source, &session.replica, limit).await {
            Err(e) if attempt < 3 && format!("{e:#}").contains("compacted") => eprintln!(
                "regscope: etcd compacted past revision {} while verifying; catching up and comparing again",
                session.replica.revision()
            ),
            other => break other?,
        }
    };
    let replica = &session.replica;
    // Nothing under the prefix matches trivially: say what etcd holds instead.
    if replica.live_keys() == 0 {
        let timeout = source.sync.request_timeout;
        if let Ok((mut client, _)) = source.etcd.connect(timeout).await {
            let prefix = conn.prefix_bytes();
            let counted = regscope::source::etcd::keys_under(&mut client, &prefix);
            if let Ok(Ok(regscope::source::etcd::KeysUnder::None(n))) =
                tokio::time::timeout(timeout, counted).await
            {
                eprintln!("regscope: {n}");
            }
        }
    }
    if diffs.is_empty() {
        outln!(
            "OK: {} key{} under {} match etcd at revision {}",
            replica.live_keys(),
            if replica.live_keys() == 1 { "" } else { "s" },
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
