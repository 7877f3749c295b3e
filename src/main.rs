//! The `regscope` binary: parses flags and runs the console, the demo or a CLI subcommand.

use std::process::ExitCode;

use anyhow::Result;
use tokio::sync::mpsc;

use regscope::cli::args::{Cli, Command, ConnArgs, DemoArgs, SnapshotArgs, UiArgs, VerifyArgs};
use regscope::cli::{snapshot_json, snapshot_replica, sync_until_caught_up, verify_replica};
use regscope::source::{EtcdOptions, EtcdSource};
use regscope::store::Replica;
use regscope::tui::{Exit, UiOptions};

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
        None => console(&cli.conn, &cli.ui).await,
        Some(Command::Demo(d)) => demo(&cli.conn, &cli.ui, &d).await,
        Some(Command::Snapshot(s)) => snapshot(&s.conn, &s).await,
        Some(Command::Verify(VerifyArgs { conn })) => verify(&conn).await,
        Some(Command::Decode(d)) => regscope::cli::decode::run(&d, &cli.ui),
        Some(Command::PrintConfig { which }) => {
            use regscope::cli::args::ConfigFile;
            match which {
                Some(ConfigFile::Keymap) => print!("{}", regscope::config::DEFAULT_KEYMAP),
                Some(ConfigFile::Theme) => print!("{}", regscope::config::DEFAULT_THEME),
                None => print!("{}", regscope::config::print_defaults()),
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
    })
}

async fn console(conn: &ConnArgs, ui: &UiArgs) -> Result<ExitCode> {
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
    run_console(source, conn, ui_options(ui, title)?).await
}

/// Runs the source into the console until the user quits.
async fn run_console(source: EtcdSource, conn: &ConnArgs, opts: UiOptions) -> Result<ExitCode> {
    // Build the merged Kubernetes schemas (~0.1 s) while the initial list runs, so opening
    // the first key does not pause.
    std::thread::spawn(|| regscope::decode::schema::plan().is_some());
    let (tx, rx) = mpsc::channel(1024);
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

async fn demo(conn: &ConnArgs, ui: &UiArgs, d: &DemoArgs) -> Result<ExitCode> {
    use regscope::demo::sim::{SimConfig, Simulation};
    use regscope::demo::PrivateEtcd;
    eprintln!("regscope demo: starting a private etcd and the simulated control plane...");
    let etcd = match PrivateEtcd::start().await {
        Ok(e) => e,
        Err(e) => {
            eprintln!("regscope demo: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let cfg = SimConfig {
        nodes: d.nodes,
        rate: d.rate,
        compact_interval: std::time::Duration::from_secs(d.compact_interval.max(1)),
        prefix: conn.prefix.trim_end_matches('/').to_string(),
        ..SimConfig::default()
    };
    let sim = match Simulation::start(&etcd, cfg).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("regscope demo: cannot start the simulation: {e}");
            return Ok(ExitCode::from(2));
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
    let title = format!("demo · private etcd {}", etcd.endpoint());
    let mut opts = ui_options(ui, title)?;
    if !conn.endpoints.is_empty() {
        opts.warnings.push(format!(
            "--endpoints/ETCDCTL_ENDPOINTS ignored: the demo watches its own private etcd at {}",
            etcd.endpoint()
        ));
    }
    let res = run_console(source, conn, opts).await;
    sim.stop().await;
    drop(etcd);
    res
}

async fn snapshot(conn: &ConnArgs, _s: &SnapshotArgs) -> Result<ExitCode> {
    let source = EtcdSource::new(conn.etcd_options(), conn.sync_options());
    let replica = snapshot_replica(&source, conn.replica_config()).await?;
    println!("{}", snapshot_json(Some(&replica), _s.keys, None)?);
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
        println!(
            "OK: {} keys under {} match etcd at revision {}",
            replica.live_keys(),
            conn.prefix,
            replica.revision()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        for d in &diffs {
            println!("{}: {}", d.key, d.what);
        }
        println!(
            "{} difference(s) at revision {}",
            diffs.len(),
            replica.revision()
        );
        Ok(ExitCode::from(1))
    }
}
