//! The flags turned into what the subcommands start with: the console's options
//! ([`ui_options`]), the scrape configuration ([`scrape_config`]) and the keys to decrypt
//! values with ([`load_keyring`]).

use std::process::ExitCode;

use anyhow::{Context, Result};

use super::args::{MetricsArgs, UiArgs};
use crate::source::ScrapeConfig;
use crate::tui::UiOptions;

/// Console options from the flags. Fails only when `--encryption-config` names a file that
/// cannot be used; a config found on the node that cannot be used becomes a warning.
pub fn ui_options(ui: &UiArgs) -> Result<UiOptions> {
    let (keyring, note) = load_keyring(ui)?;
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
pub fn scrape_config(m: &MetricsArgs) -> Result<ScrapeConfig, ExitCode> {
    m.scrape_config().map_err(|e| {
        eprintln!("regscope: {e}");
        ExitCode::from(2)
    })
}

/// Renders the snapshot JSON for a replica. `with_keys` adds `key_list` (every live key).
/// [`load_keyring`] for a command that prints: the keyring, or the error said on stderr
/// and the exit code (2) to return.
pub fn keyring_or_exit(
    ui: &UiArgs,
) -> std::result::Result<Option<crate::decrypt::Keyring>, std::process::ExitCode> {
    load_keyring(ui).map(|(k, _)| k).map_err(|err| {
        eprintln!("regscope: {err:#}");
        std::process::ExitCode::from(2)
    })
}

/// The EncryptionConfiguration to decrypt with: `--encryption-config FILE` (an error if it
/// cannot be read or parsed), else the file the node's kube-apiserver manifest names in
/// `--encryption-provider-config` ([`crate::node::discover`], filled into
/// `ui.discovered_encryption`): a note, not an error, when that file cannot be used
/// (decoding then shows encrypted values as such). Returns the keyring and, for the
/// discovered case, a note saying where it came from or why not.
pub fn load_keyring(ui: &UiArgs) -> Result<(Option<crate::decrypt::Keyring>, Option<String>)> {
    use crate::decrypt::Keyring;
    if let Some(path) = &ui.encryption_config {
        let k = Keyring::load(path).with_context(|| "--encryption-config".to_string())?;
        return Ok((Some(k), None));
    }
    let Some((path, manifest)) = &ui.discovered_encryption else {
        return Ok((None, None));
    };
    match Keyring::load(path) {
        Ok(k) => Ok((
            Some(k),
            Some(format!(
                "decrypting with {} (from {manifest})",
                path.display()
            )),
        )),
        Err(e) => Ok((None, Some(format!("encrypted values stay encrypted: {e}")))),
    }
}
