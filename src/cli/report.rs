//! `regscope report FILE -o OUT`: a postmortem report of a recording, as one
//! self-contained HTML file, Markdown with SVG charts beside it, or JSON
//! ([`crate::report`]). The recording is only read; the report is written next to a
//! temporary name and renamed into place, so a failed run leaves no half report.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, Result};

use super::args::{ReportArgs, ReportFormat, UiArgs};
use super::recording::{files_exist, open, parse_at};
use crate::record::{Player, Target};
use crate::report::collect::{collect, Options};

/// Runs `regscope report`. Exit 0 with the report written, 1 when written from a damaged
/// recording (the report says what was lost), 2 when nothing was written.
pub fn run(r: &ReportArgs, ui: &UiArgs) -> Result<ExitCode> {
    if super::db_file::is_db_file(&r.file) {
        // The report's charts run over time, and a db file keeps none.
        eprintln!(
            "regscope: {} is etcd's db file: it keeps revisions but no times, and the report charts a span of time; for the file use `regscope analyze` (what fills it), `regscope diff FILE --at rA --at rB` (what changed) or `regscope replay` (its history in the console)",
            r.file.display()
        );
        return Ok(ExitCode::from(2));
    }
    if let Err(code) = files_exist(&r.file) {
        return Ok(code);
    }
    let format = r.format.or_else(|| format_of(&r.output));
    let to_stdout = r.output.as_os_str() == "-";
    if to_stdout && format == Some(ReportFormat::Md) {
        eprintln!("regscope: --format md writes SVG files beside the report: give -o FILE.md");
        return Ok(ExitCode::from(2));
    }
    let mut player = match open(&r.file) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    if !to_stdout && is_recording_file(&r.output, player.paths()) {
        eprintln!(
            "regscope: -o {} is the recording itself: choose another file",
            r.output.display()
        );
        return Ok(ExitCode::from(2));
    }
    let Some(format) = format else {
        eprintln!(
            "regscope: -o {}: the report is HTML, Markdown or JSON: name it .html, .md or .json, or give --format",
            r.output.display()
        );
        return Ok(ExitCode::from(2));
    };
    // Every file this run would write, checked before anything is read or written: a
    // refusal leaves everything as it was.
    let targets = if to_stdout {
        Vec::new()
    } else {
        let mut t = vec![r.output.clone()];
        if format == ReportFormat::Md {
            let dir = out_dir(&r.output);
            let stem = svg_stem(&r.output);
            t.extend(
                crate::report::figures::CHART_IDS
                    .iter()
                    .map(|id| dir.join(format!("{stem}-{id}.svg"))),
            );
        }
        t
    };
    let sidecar = crate::record::bookmarks::bookmarks_path(player.name());
    for t in &targets {
        if same_file(t, &sidecar) {
            eprintln!(
                "regscope: {} holds the recording's bookmarks: choose another -o",
                t.display()
            );
            return Ok(ExitCode::from(2));
        }
        if let Err(why) = writable(t, r.force) {
            eprintln!("regscope: {why}");
            return Ok(ExitCode::from(2));
        }
    }
    let (from, to) = match (
        moment("--from", r.from.as_deref(), &mut player, ui),
        moment("--to", r.to.as_deref(), &mut player, ui),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(m), _) | (_, Err(m)) => {
            eprintln!("regscope: {m}");
            return Ok(ExitCode::from(2));
        }
    };
    let opts = Options {
        from,
        to,
        p99_threshold: r.p99_threshold,
        lag_threshold: r.lag_threshold,
    };
    let report = match collect(player, &opts) {
        Ok(rep) => rep,
        Err(m) => {
            eprintln!("regscope: {m}");
            return Ok(ExitCode::from(2));
        }
    };
    for d in &report.source.damage {
        eprintln!("regscope: damaged recording: {d}");
    }
    match format {
        ReportFormat::Json => {
            let text = serde_json::to_string_pretty(&report)? + "\n";
            write_out(&r.output, text.as_bytes())?;
        }
        ReportFormat::Html => write_out(&r.output, crate::report::html::html(&report).as_bytes())?,
        ReportFormat::Md => {
            let stem = svg_stem(&r.output);
            let (md, svgs) = crate::report::markdown::markdown(&report, &stem);
            let dir = out_dir(&r.output);
            for (name, svg) in &svgs {
                write_out(&dir.join(name), svg.as_bytes())?;
            }
            write_out(&r.output, md.as_bytes())?;
        }
    }
    if !to_stdout {
        eprintln!(
            "regscope: report of {} written to {}",
            r.file.display(),
            r.output.display()
        );
    }
    Ok(if report.source.damage.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The directory `out` is written in.
fn out_dir(out: &Path) -> PathBuf {
    out.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Whether `path` may be written: its directory exists; it does not exist, or `force` is
/// given and it is a regular file that is no recording (a symlink, a directory or a
/// device is never replaced).
fn writable(path: &Path, force: bool) -> Result<(), String> {
    let dir = out_dir(path);
    if !dir.is_dir() {
        return Err(format!(
            "cannot write {}: {} is not a directory",
            path.display(),
            dir.display()
        ));
    }
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.file_type().is_file() {
        return Err(format!(
            "{} exists and is not a regular file: choose another -o",
            path.display()
        ));
    }
    let mut magic = [0u8; 8];
    let is_recording = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok()
        && magic == crate::record::format::FILE_MAGIC;
    if is_recording {
        return Err(format!(
            "{} is a recording: a report never replaces one",
            path.display()
        ));
    }
    if !force {
        return Err(format!("{} exists: --force replaces it", path.display()));
    }
    Ok(())
}

/// The format an output name asks for: `.md`, `.json`, else HTML.
fn format_of(out: &Path) -> Option<ReportFormat> {
    match out.extension().and_then(|e| e.to_str()) {
        Some("md") | Some("markdown") => Some(ReportFormat::Md),
        Some("json") => Some(ReportFormat::Json),
        Some("html") | Some("htm") | None => Some(ReportFormat::Html),
        Some(_) => None,
    }
}

/// The SVG files' common stem: `report` for `report.md` (files `report-<chart>.svg`).
fn svg_stem(out: &Path) -> String {
    out.file_stem().map_or_else(
        || "report".to_string(),
        |s| s.to_string_lossy().into_owned(),
    )
}

/// Whether `a` and `b` name one file (or would: the same path when neither exists).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => {
            let abs = |p: &Path| std::path::absolute(p).ok();
            abs(a).is_some() && abs(a) == abs(b)
        }
    }
}

/// Whether `out` names one of the recording's own files.
fn is_recording_file(out: &Path, files: &[PathBuf]) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).ok();
    let o = canon(out);
    o.is_some() && files.iter().any(|f| canon(f) == o)
}

/// `--from`/`--to` as a moment: a time as `snapshot --at` reads it, or a revision's time
/// (the stamp of the observation that brought it).
fn moment(
    flag: &str,
    text: Option<&str>,
    player: &mut Player,
    ui: &UiArgs,
) -> Result<Option<SystemTime>, String> {
    let Some(text) = text else { return Ok(None) };
    match parse_at(flag, text, player, ui.zone())? {
        Target::Time(t) => Ok(Some(t)),
        Target::Revision(rev) => Ok(Some(player.seek(Target::Revision(rev)).now())),
        Target::Position(_) | Target::End => Ok(None),
    }
}

/// Writes `bytes` to `path` (`-`: standard output) through a temporary file renamed into
/// place, mode 0644 like other documents.
fn write_out(path: &Path, bytes: &[u8]) -> Result<()> {
    if path.as_os_str() == "-" {
        let mut o = std::io::stdout().lock();
        o.write_all(bytes)
            .context("writing the report to standard output")?;
        return o.flush().context("writing the report to standard output");
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let fail = |e: std::io::Error| anyhow::anyhow!("cannot write {}: {e}", path.display());
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.flush())
        .map_err(fail)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644)).map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_follows_the_extension() {
        assert_eq!(format_of(Path::new("r.md")), Some(ReportFormat::Md));
        assert_eq!(format_of(Path::new("r.json")), Some(ReportFormat::Json));
        assert_eq!(format_of(Path::new("r.html")), Some(ReportFormat::Html));
        assert_eq!(format_of(Path::new("-")), Some(ReportFormat::Html));
        assert_eq!(format_of(Path::new("r.pdf")), None);
        assert_eq!(svg_stem(Path::new("out/postmortem.md")), "postmortem");
    }
}
