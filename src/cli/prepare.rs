//! What every subcommand starts from, before `main` hands it its flags: the config file's
//! warnings said, the node's discovery filled into the flags the command line left unset
//! ([`crate::node::discover`]), and the etcd password asked on the terminal for
//! `--user NAME` without one.

use anyhow::Result;

use super::args::{Cli, Command};

/// Says the config file's warnings on stderr (and hands them to the console), reads what
/// the node runs for the commands that connect or decrypt ([`discover_node`]) and asks
/// for the etcd password when `--user` names no password. Returns the node's discovery,
/// when it was read (the console shows its problems, `doctor` prints it).
///
/// Exits the process (2) when `--root` is not a directory. Errors: the terminal could not
/// be read for the password.
pub fn prepare(cli: &mut Cli) -> Result<Option<crate::node::Discovery>> {
    for w in &cli.config_warnings {
        eprintln!("regscope: {w}");
    }
    cli.ui.config_warnings = cli.config_warnings.clone();
    let discovery = discover_node(cli);
    // `--user NAME` without a password: asked on the terminal, as etcdctl does.
    let conn = match &mut cli.command {
        None => Some(&mut cli.conn),
        Some(Command::Snapshot(s)) if s.from.is_none() => Some(&mut s.conn),
        Some(Command::Verify(v)) => Some(&mut v.conn),
        Some(Command::Record(r)) => Some(&mut r.conn),
        Some(Command::Serve(a)) => Some(&mut a.conn),
        Some(Command::Analyze(a)) if a.file.is_none() => Some(&mut a.conn),
        _ => None,
    };
    if let Some(conn) = conn {
        conn.prompt_password()
            .map_err(|e| anyhow::anyhow!("reading the etcd password from the terminal: {e}"))?;
    }
    Ok(discovery)
}

/// Reads what the node runs (under `--root`) for the commands that connect or decrypt,
/// and fills in what the flags left unset: etcd access and prefix ([`super::args::ConnArgs::apply_discovery`]),
/// etcd's metrics URL when etcd access came from the node, and the encryption config.
fn discover_node(cli: &mut Cli) -> Option<crate::node::Discovery> {
    let files =
        !cli.metrics.apiserver_metrics_file.is_empty() || !cli.metrics.etcd_metrics_file.is_empty();
    // The console shows the endpoints in its header; doctor prints every fact.
    let say = !matches!(cli.command, None | Some(Command::Doctor(_)));
    let conn = match &mut cli.command {
        None => Some(&mut cli.conn),
        Some(Command::Snapshot(s)) if s.from.is_none() => Some(&mut s.conn),
        Some(Command::Verify(v)) => Some(&mut v.conn),
        Some(Command::Record(r)) => Some(&mut r.conn),
        Some(Command::Serve(a)) => Some(&mut a.conn),
        Some(Command::Doctor(d)) => Some(&mut d.conn),
        Some(Command::Analyze(a)) if a.file.is_none() => Some(&mut a.conn),
        Some(Command::Decode(_) | Command::Export(_) | Command::Snapshot(_) | Command::Diff(_)) => {
            None
        }
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
    let d = crate::node::discover(&cli.node.root);
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
            // kube-controller-manager's and kube-scheduler's /metrics on this node.
            cli.metrics.node_controllers = [
                (
                    crate::model::ScrapeTarget::ControllerManager,
                    &d.controller_manager_metrics_url,
                ),
                (
                    crate::model::ScrapeTarget::Scheduler,
                    &d.scheduler_metrics_url,
                ),
            ]
            .into_iter()
            .filter_map(|(t, u)| Some((t, u.clone()?)))
            .collect();
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
