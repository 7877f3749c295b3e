//! The config file merged under the command line: its settings ([`CONFIG_KEYS`]) become
//! flags for what the command line and the environment leave unset
//! ([`config_file_args`]), and every setting's value and origin is kept for
//! `regscope print-config` ([`Setting`]). [`Cli::parse_merged`] parses the process
//! arguments this way; connection flags given before a subcommand reach it.

use super::{AnalyzeArgs, Cli, Command, DoctorArgs, SnapshotArgs, VerifyArgs};

/// Settings the config file may give, as long flag names. Not `show-secrets` (showing
/// Secrets is asked for each time) nor `password` (no passwords in a plain file: use
/// `ETCDCTL_PASSWORD` or the prompt).
pub const CONFIG_KEYS: &[&str] = &[
    "theme",
    "keymap",
    "endpoints",
    "cacert",
    "cert",
    "key",
    "user",
    "prefix",
    "page-limit",
    "list-concurrency",
    "history-budget",
    "memory-limit",
    "encryption-config",
    "kubeconfig",
    "context",
    "apiserver-metrics-url",
    "apiserver-token-file",
    "apiserver-cert",
    "apiserver-key",
    "apiserver-cacert",
    "etcd-metrics-url",
    "scrape-interval",
    "scrape-timeout",
    "informers",
    "root",
    "screenshot-dir",
    "mouse",
    "time-zone",
];

/// One setting as in effect, for `regscope print-config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    pub key: &'static str,
    /// The value (lists joined with commas); `None` when unset.
    pub value: Option<String>,
    /// `command line`, `environment`, `config file PATH` or `default`.
    pub origin: String,
}

/// The config file's settings turned into flags: `--key value` for each key neither given
/// on the command line (`argv`) nor by its environment variable (`env_set`), plus warnings
/// for what cannot be used (unknown keys, values of the wrong type, an unreadable file).
/// `Ok` with nothing when the file does not exist.
pub fn config_file_args(
    path: &std::path::Path,
    argv: &[std::ffi::OsString],
    env_set: &dyn Fn(&str) -> bool,
) -> (Vec<std::ffi::OsString>, Vec<&'static str>, Vec<String>) {
    let (mut args, mut keys, mut warnings) = (Vec::new(), Vec::new(), Vec::new());
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                && std::env::var_os("REGSCOPE_CONFIG").is_none() =>
        {
            return (args, keys, warnings)
        }
        Err(e) => {
            warnings.push(format!("config file {}: cannot read ({e})", path.display()));
            return (args, keys, warnings);
        }
    };
    let table = match text.parse::<toml::Table>() {
        Ok(t) => t,
        Err(e) => {
            let msg = e.to_string();
            warnings.push(format!(
                "config file {}: not valid TOML ({}); ignored",
                path.display(),
                msg.lines().next().unwrap_or("").trim()
            ));
            return (args, keys, warnings);
        }
    };
    let on_command_line = |k: &str| {
        let flag = format!("--{k}");
        let eq = format!("--{k}=");
        argv.iter()
            .filter_map(|a| a.to_str())
            .any(|a| a == flag || a.starts_with(&eq))
    };
    for (k, v) in table {
        // `time_zone` as some write it, for `time-zone`.
        let k = if k == "time_zone" {
            "time-zone".to_string()
        } else {
            k
        };
        let Some(key) = CONFIG_KEYS.iter().copied().find(|c| *c == k) else {
            if k == "show-secrets" || k == "password" {
                warnings.push(format!(
                    "config file {}: `{k}` is never read from a file (ignored): give it on the command line{}",
                    path.display(),
                    if k == "password" { ", in ETCDCTL_PASSWORD or at the prompt" } else { "" }
                ));
                continue;
            }
            let first = !warnings.iter().any(|w| w.contains("unknown setting"));
            warnings.push(format!(
                "config file {}: unknown setting `{k}` (ignored{})",
                path.display(),
                if first {
                    format!("; settings: {}", CONFIG_KEYS.join(", "))
                } else {
                    String::new()
                }
            ));
            continue;
        };
        let env = match key {
            "endpoints" => Some("ETCDCTL_ENDPOINTS"),
            "cacert" => Some("ETCDCTL_CACERT"),
            "cert" => Some("ETCDCTL_CERT"),
            "key" => Some("ETCDCTL_KEY"),
            "user" => Some("ETCDCTL_USER"),
            _ => None,
        };
        if on_command_line(key) || env.is_some_and(env_set) {
            continue;
        }
        let value = match &v {
            toml::Value::String(s) => s.clone(),
            // The one switch: `mouse = true` (or "true") gives `--mouse`.
            _ if key == "mouse" => {
                match (v.as_bool(), v.as_str()) {
                    (Some(true), _) | (_, Some("true")) => {
                        args.push(format!("--{key}").into());
                        keys.push(key);
                    }
                    (Some(false), _) | (_, Some("false")) => {}
                    _ => warnings.push(format!(
                        "config file {}: `mouse` should be true or false (ignored)",
                        path.display()
                    )),
                }
                continue;
            }
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Array(items) => {
                let parts: Option<Vec<String>> = items
                    .iter()
                    .map(|i| i.as_str().map(str::to_string))
                    .collect();
                match parts {
                    Some(p) => p.join(","),
                    None => {
                        warnings.push(format!(
                            "config file {}: `{key}` should be a string or a list of strings (ignored)",
                            path.display()
                        ));
                        continue;
                    }
                }
            }
            _ => {
                warnings.push(format!(
                    "config file {}: `{key}` should be a string or a number (ignored)",
                    path.display()
                ));
                continue;
            }
        };
        args.push(format!("--{key}").into());
        args.push(value.into());
        keys.push(key);
    }
    (args, keys, warnings)
}

impl Cli {
    /// Parses the process arguments (exits on `--help` and usage errors, as
    /// [`Parser::parse`]), with the config file's settings ([`crate::config::config_file`])
    /// for the flags the command line and the environment leave unset. Connection flags given
    /// before a connecting subcommand (`regscope --endpoints X snapshot`) apply to it unless
    /// the subcommand repeats them.
    pub fn parse_merged() -> Cli {
        let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
        let (extra, keys, warnings, path) = match crate::config::config_file() {
            Some(path) => {
                let (a, k, w) = config_file_args(&path, &argv, &|v| std::env::var_os(v).is_some());
                (a, k, w, Some(path))
            }
            None => (Vec::new(), Vec::new(), Vec::new(), None),
        };
        let file = path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        // After the program name, before everything typed: the subcommand's own flags and
        // values stay where they were.
        let with = |extra: &[std::ffi::OsString]| {
            let mut full = argv.clone();
            let at = full.len().min(1);
            full.splice(at..at, extra.iter().cloned());
            full
        };
        let (mut extra, mut keys, mut warnings) = (extra, keys, warnings);
        let mut cli = match Self::try_parse_merged_from(with(&extra)) {
            Ok(c) => c,
            Err(e) if keys.is_empty() => e.exit(),
            Err(e) => {
                // The command line itself is wrong (help and version land here too): say
                // so without the config file's settings.
                if let Err(plain) = Self::try_parse_merged_from(argv.clone()) {
                    plain.exit()
                }
                drop(e);
                // A setting of the config file is: keep those that parse, warn about the rest.
                let mut kept: Vec<std::ffi::OsString> = Vec::new();
                let mut kept_keys = Vec::new();
                // One group per setting: its `--flag`, then its value when it has one.
                let mut groups: Vec<Vec<std::ffi::OsString>> = Vec::new();
                for a in &extra {
                    let flag = groups.is_empty()
                        || a.to_str().is_some_and(|t| {
                            t.starts_with("--") && keys.iter().any(|k| t == format!("--{k}"))
                        });
                    match groups.last_mut() {
                        Some(g) if !flag => g.push(a.clone()),
                        _ => groups.push(vec![a.clone()]),
                    }
                }
                for (pair, key) in groups.iter().zip(keys.iter()) {
                    let mut trial = kept.clone();
                    trial.extend(pair.iter().cloned());
                    match Self::try_parse_merged_from(with(&trial)) {
                        Ok(_) => {
                            kept = trial;
                            kept_keys.push(*key);
                        }
                        Err(err) => {
                            let msg = err.to_string();
                            let first = msg
                                .lines()
                                .next()
                                .unwrap_or("")
                                .trim_start_matches("error: ");
                            warnings
                                .push(format!("config file {file}: `{key}`: {first} (ignored)"));
                        }
                    }
                }
                extra = kept;
                keys = kept_keys;
                Self::try_parse_merged_from(with(&extra)).unwrap_or_else(|e| e.exit())
            }
        };
        let _ = &extra;
        for s in &mut cli.settings {
            if keys.contains(&s.key) {
                s.origin = format!("config file {file}");
            }
        }
        cli.config_warnings = warnings;
        cli
    }

    /// As [`Cli::parse_merged`], from the given arguments (the first is the program name).
    pub fn try_parse_merged_from<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::{CommandFactory, FromArgMatches};
        let matches = Cli::command().try_get_matches_from(args)?;
        let mut cli = Cli::from_arg_matches(&matches)?;
        cli.settings = settings(&matches);
        let root = cli.conn.clone();
        match (&mut cli.command, matches.subcommand()) {
            (Some(Command::Snapshot(SnapshotArgs { conn, .. })), Some((_, sub)))
            | (Some(Command::Doctor(DoctorArgs { conn, .. })), Some((_, sub)))
            | (Some(Command::Verify(VerifyArgs { conn })), Some((_, sub)))
            | (Some(Command::Analyze(AnalyzeArgs { conn, .. })), Some((_, sub))) => {
                conn.inherit(&root, &matches, sub)
            }
            _ => {}
        }
        let given = |m: &clap::ArgMatches| {
            m.value_source("prefix") == Some(clap::parser::ValueSource::CommandLine)
        };
        cli.conn.prefix_given = given(&matches);
        let root_given = cli.conn.prefix_given;
        if let (Some(cmd), Some((_, sub))) = (&mut cli.command, matches.subcommand()) {
            let conn = match cmd {
                Command::Snapshot(a) => Some(&mut a.conn),
                Command::Doctor(a) => Some(&mut a.conn),
                Command::Verify(a) => Some(&mut a.conn),
                Command::Record(a) => Some(&mut a.conn),
                Command::Serve(a) => Some(&mut a.conn),
                Command::Analyze(a) => Some(&mut a.conn),
                _ => None,
            };
            if let Some(conn) = conn {
                conn.prefix_given =
                    root_given || sub.try_contains_id("prefix").unwrap_or(false) && given(sub);
            }
        }
        Ok(cli)
    }
}

/// The [`CONFIG_KEYS`] settings at the root, with their values and origins.
fn settings(m: &clap::ArgMatches) -> Vec<Setting> {
    use clap::parser::ValueSource;
    CONFIG_KEYS
        .iter()
        .map(|&key| {
            let id = key.replace('-', "_");
            let value = m.try_get_raw(&id).ok().flatten().map(|vals| {
                vals.map(|v| v.to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(",")
            });
            let origin = match m.value_source(&id) {
                Some(ValueSource::CommandLine) => "command line",
                Some(ValueSource::EnvVariable) => "environment",
                _ => "default",
            };
            // A password given in --user NAME:PASSWORD is not printed.
            let value = match (key, value) {
                ("user", Some(u)) => Some(u.split(':').next().unwrap_or("").to_string()),
                (_, v) => v,
            };
            Setting {
                key,
                value,
                origin: origin.to_string(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_file_settings_give_way_to_the_command_line_and_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let no_env = |_: &str| false;
        let argv: Vec<std::ffi::OsString> = vec!["regscope".into()];
        let (args, keys, w) = config_file_args(&path, &argv, &no_env);
        assert!(
            args.is_empty() && keys.is_empty() && w.is_empty(),
            "no file: nothing"
        );
        std::fs::write(
            &path,
            "theme = \"light\"\nhistory-budget = \"1GiB\"\npage-limit = 100\n\
             informers = [\"pods\", \"nodes\"]\nendpoints = \"http://e:1\"\n\
             show-secrets = true\nprefix = true\n",
        )
        .unwrap();
        let argv: Vec<std::ffi::OsString> = vec![
            "regscope".into(),
            "--history-budget=2GiB".into(),
            "snapshot".into(),
        ];
        let env = |v: &str| v == "ETCDCTL_ENDPOINTS";
        let (args, keys, w) = config_file_args(&path, &argv, &env);
        let args: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "--informers",
                "pods,nodes",
                "--page-limit",
                "100",
                "--theme",
                "light"
            ],
            "the command line's history-budget and the environment's endpoints win"
        );
        assert_eq!(keys, ["informers", "page-limit", "theme"]);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("`prefix` should be a string"), "{w:?}");
        assert!(
            w[1].contains("`show-secrets` is never read from a file"),
            "{w:?}"
        );
        // The flags parse, and the settings say where each came from.
        let mut full = vec!["regscope".to_string()];
        full.extend(args);
        full.push("print-config".into());
        let cli = Cli::try_parse_merged_from(full).unwrap();
        assert_eq!(cli.ui.theme.as_deref(), Some(std::path::Path::new("light")));
        let theme = cli.settings.iter().find(|s| s.key == "theme").unwrap();
        assert_eq!(theme.value.as_deref(), Some("light"));
        let budget = cli
            .settings
            .iter()
            .find(|s| s.key == "history-budget")
            .unwrap();
        assert_eq!(
            (budget.value.as_deref(), budget.origin.as_str()),
            (Some("256MiB"), "default")
        );
        // Not TOML: one warning, nothing applied.
        std::fs::write(&path, "theme = [\n").unwrap();
        let (args, _, w) = config_file_args(&path, &argv, &no_env);
        assert!(args.is_empty());
        assert!(w[0].contains("not valid TOML"), "{w:?}");
    }
}
