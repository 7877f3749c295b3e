//! `regscope print-config`: the settings in effect, one TOML line each with where it came
//! from (command line, environment, config file, default); with `keymap` or `theme`, the
//! embedded default file to copy and override.

use std::process::ExitCode;

use super::args::{ConfigFile, Setting};
use super::out;

/// Prints the settings (`which` omitted) or the embedded default keymap or theme.
pub fn run(which: Option<ConfigFile>, settings: &[Setting]) -> ExitCode {
    match which {
        Some(ConfigFile::Keymap) => out(format_args!("{}", crate::config::DEFAULT_KEYMAP)),
        Some(ConfigFile::Theme) => out(format_args!("{}", crate::config::DEFAULT_THEME)),
        None => out(format_args!("{}", settings_text(settings))),
    }
    ExitCode::SUCCESS
}

/// `regscope print-config`: one TOML line per setting, its origin as a comment.
pub fn settings_text(settings: &[Setting]) -> String {
    let file = crate::config::config_file()
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
