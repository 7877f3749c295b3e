//! `regscope completions SHELL` and `regscope man`: the shell completion script and the
//! manual page, both made by clap from the same flags and texts as `--help`.

use std::process::ExitCode;

use anyhow::Result;
use clap::CommandFactory;

use super::args::Cli;
use super::out;

/// Prints the completion script for `shell` on stdout.
pub fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "regscope", &mut script);
    out(format_args!("{}", String::from_utf8_lossy(&script)));
    ExitCode::SUCCESS
}

/// Prints the manual page (roff) on stdout.
///
/// Errors: the page could not be rendered.
pub fn man() -> Result<ExitCode> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .map_err(|e| anyhow::anyhow!("rendering the manual page: {e}"))?;
    out(format_args!("{}", String::from_utf8_lossy(&page)));
    Ok(ExitCode::SUCCESS)
}
