//! The `regscope` binary: parses the flags, starts the async runtime and hands each
//! subcommand to its module in [`regscope::cli`].

use std::process::ExitCode;

use anyhow::Result;

use regscope::cli;
use regscope::cli::args::{Cli, Command};

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
        Ok(code) if code == ExitCode::SUCCESS && cli::stdout_failed() => ExitCode::from(1),
        Ok(code) => code,
        Err(e) => {
            eprintln!("regscope: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn dispatch(mut cli: Cli) -> Result<ExitCode> {
    let discovery = cli::prepare::prepare(&mut cli)?;
    let (ui, m) = (&cli.ui, &cli.metrics);
    match cli.command {
        None => cli::console::run(&cli.conn, ui, m, discovery.as_ref()).await,
        Some(Command::Doctor(d)) => cli::doctor::command(d, ui, discovery, m).await,
        Some(Command::Demo(d)) => cli::demo::run(&cli.conn, ui, &d, m).await,
        Some(Command::Snapshot(s)) if s.from.is_some() => {
            cli::snapshot::from_recording(&s, ui.zone())
        }
        Some(Command::Snapshot(s)) => cli::snapshot::live(&s, m).await,
        Some(Command::Verify(v)) => cli::verify::run(&v.conn).await,
        Some(Command::Record(r)) => cli::record::run(&r, m, ui.show_secrets).await,
        Some(Command::Serve(a)) => cli::record::serve(&a, m).await,
        Some(Command::Replay(r)) if r.check => {
            cli::check::run(&r.file, r.p99_threshold, r.lag_threshold, ui.zone())
        }
        Some(Command::Replay(r)) => cli::replay::run(&r, ui).await,
        Some(Command::Export(e)) if cli::db_file::is_db_file(&e.file) => {
            cli::export_db::run(&e, ui)
        }
        Some(Command::Export(e)) => cli::export::run(&e, ui),
        Some(Command::Report(r)) => cli::report::run(&r, ui),
        Some(Command::Diff(d)) => cli::diff::run(&d, ui),
        Some(Command::Decode(d)) => cli::decode::run(&d, ui),
        Some(Command::Analyze(a)) => match &a.file {
            Some(file) => {
                // ETCDCTL_ENDPOINTS is often set on a node; only a flag is worth a word.
                let flag =
                    !a.conn.endpoints.is_empty() && std::env::var_os("ETCDCTL_ENDPOINTS").is_none();
                if flag {
                    eprintln!(
                        "regscope: analyze: --endpoints is not used when a file is given (leave out the file to analyse the live etcd)"
                    );
                }
                cli::analyze::run(&a, file)
            }
            None => cli::analyze_live::run(&a, discovery.as_ref()).await,
        },
        Some(Command::Completions { shell }) => Ok(cli::completions::completions(shell)),
        Some(Command::Man) => cli::completions::man(),
        Some(Command::PrintConfig { which }) => Ok(cli::print_config::run(which, &cli.settings)),
    }
}
