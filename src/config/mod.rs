//! Configuration files: the embedded keymaps and themes, user overrides from disk, and the
//! config file of default flags.
//!
//! Keymaps and themes ship as real TOML files (`keymaps/*.toml`, `themes/*.toml`) embedded
//! in the binary with `include_str!`. `--keymap`/`--theme` take a shipped name (`light`,
//! `emacs`), the name of a user file in the config directory (`~/.config/regscope/themes/
//! NAME.toml`), or a path. Every choice is a partial override merged over the default: the
//! entries it names replace the default ones, everything else stays. The config file
//! (`~/.config/regscope/config.toml`, see [`config_file`]) gives default flags. Nothing here fails: a file that cannot be read or parsed becomes a
//! warning and the defaults stay in force; an entry of the wrong shape is skipped with a
//! warning. What names mean (actions, key names, colours) is checked by the TUI
//! ([`crate::tui::Keymap`], [`crate::tui::Theme`]), which adds its own warnings.

use std::collections::BTreeMap;
use std::path::Path;

pub mod zone;
pub use zone::Zone;

/// The default key bindings (`keymaps/default.toml`).
pub const DEFAULT_KEYMAP: &str = include_str!("../../keymaps/default.toml");

/// The default colour theme (`themes/default.toml`).
pub const DEFAULT_THEME: &str = include_str!("../../themes/default.toml");

/// Themes shipped in `themes/`, by name; all but `default` are merged over `default`.
pub const THEMES: &[(&str, &str)] = &[
    ("default", DEFAULT_THEME),
    ("light", include_str!("../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
    ("16-colour", include_str!("../../themes/16-colour.toml")),
];

/// Keymaps shipped in `keymaps/`, by name; all but `default` are merged over `default`.
pub const KEYMAPS: &[(&str, &str)] = &[
    ("default", DEFAULT_KEYMAP),
    ("emacs", include_str!("../../keymaps/emacs.toml")),
];

/// regscope's user configuration directory: `$XDG_CONFIG_HOME/regscope`, else
/// `$HOME/.config/regscope` (the XDG Base Directory default); `None` without either.
pub fn config_dir() -> Option<std::path::PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| std::path::PathBuf::from(h).join(".config"))
        })?;
    Some(base.join("regscope"))
}

/// The config file of default flags: `$REGSCOPE_CONFIG` when set (empty: none), else
/// `config.toml` in [`config_dir`].
pub fn config_file() -> Option<std::path::PathBuf> {
    match std::env::var_os("REGSCOPE_CONFIG") {
        Some(v) if v.is_empty() => None,
        Some(v) => Some(v.into()),
        None => config_dir().map(|d| d.join("config.toml")),
    }
}

/// A value without a directory or a `.toml` ending: meant as a name.
fn is_bare_name(p: &Path) -> bool {
    p.to_str()
        .is_some_and(|s| !s.contains('/') && !s.ends_with(".toml"))
}

/// What a `--theme`/`--keymap` value names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// A shipped file, by name, and its text.
    Shipped(&'static str, &'static str),
    /// A file on disk (a user file in the config directory, or a path).
    File(std::path::PathBuf),
}

/// Resolves a `--theme`/`--keymap` value against the shipped `table`, then the user's
/// `<config dir>/<dir>/NAME.toml`, else takes it as a path.
pub fn choose(value: &Path, table: &[(&'static str, &'static str)], dir: &str) -> Choice {
    if let Some(name) = value.to_str() {
        if let Some((n, text)) = table.iter().find(|(n, _)| *n == name) {
            return Choice::Shipped(n, text);
        }
        if is_bare_name(value) {
            if let Some(user) = config_dir().map(|d| d.join(dir).join(format!("{name}.toml"))) {
                if user.exists() {
                    return Choice::File(user);
                }
            }
        }
    }
    Choice::File(value.to_path_buf())
}

/// Key bindings as written in a file: mode name → key name → action name.
pub type KeymapSpec = BTreeMap<String, BTreeMap<String, String>>;

/// One style as written in a theme file. `None` fields inherit (from the default theme when
/// overriding, from the terminal otherwise).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StyleSpec {
    /// Foreground colour: a name (`red`, `light_blue`, `reset`), `#rrggbb` or an index 0–255.
    pub fg: Option<String>,
    /// Background colour, same forms as `fg`.
    pub bg: Option<String>,
    /// Bold text.
    pub bold: Option<bool>,
    /// Dim (faint) text.
    pub dim: Option<bool>,
    /// Italic text.
    pub italic: Option<bool>,
    /// Underlined text.
    pub underlined: Option<bool>,
    /// Swapped foreground and background.
    pub reversed: Option<bool>,
}

impl StyleSpec {
    /// Field-wise override: fields set in `over` replace ours.
    pub fn merge(&mut self, over: &StyleSpec) {
        fn pick<T: Clone>(a: &mut Option<T>, b: &Option<T>) {
            if b.is_some() {
                a.clone_from(b);
            }
        }
        pick(&mut self.fg, &over.fg);
        pick(&mut self.bg, &over.bg);
        pick(&mut self.bold, &over.bold);
        pick(&mut self.dim, &over.dim);
        pick(&mut self.italic, &over.italic);
        pick(&mut self.underlined, &over.underlined);
        pick(&mut self.reversed, &over.reversed);
    }
}

/// Styles as written in a theme file: semantic role name → style.
pub type ThemeSpec = BTreeMap<String, StyleSpec>;

/// Reads a user file; `None` plus a warning when it cannot be read.
fn read_text(path: &Path, what: &str, warnings: &mut Vec<String>) -> Option<String> {
    match std::fs::read_to_string(path) {
        Ok(t) => Some(t),
        Err(e) => {
            warnings.push(format!(
                "{what} {}: cannot read ({e}); using the defaults",
                path.display()
            ));
            None
        }
    }
}

fn parse_table(text: &str, origin: &str, warnings: &mut Vec<String>) -> Option<toml::Table> {
    match text.parse::<toml::Table>() {
        Ok(t) => Some(t),
        Err(e) => {
            let msg = e.to_string();
            let first = msg.lines().next().unwrap_or("invalid TOML").trim();
            warnings.push(format!(
                "{origin}: not valid TOML ({first}); using the defaults"
            ));
            None
        }
    }
}

/// Parses keymap TOML text. Entries of the wrong shape are skipped with a warning naming
/// `origin`; `None` when the text is not TOML at all.
pub fn parse_keymap(text: &str, origin: &str, warnings: &mut Vec<String>) -> Option<KeymapSpec> {
    let table = parse_table(text, origin, warnings)?;
    let mut spec = KeymapSpec::new();
    for (mode, v) in table {
        let Some(t) = v.as_table() else {
            warnings.push(format!(
                "{origin}: `{mode}` should be a table of \"key\" = \"action\" (ignored)"
            ));
            continue;
        };
        let entry = spec.entry(mode.clone()).or_default();
        for (key, action) in t {
            match action.as_str() {
                Some(a) => {
                    entry.insert(key.clone(), a.to_string());
                }
                None => warnings.push(format!(
                    "{origin}: [{mode}] \"{key}\" should name an action as a string (ignored)"
                )),
            }
        }
    }
    Some(spec)
}

/// Parses theme TOML text; same rules as [`parse_keymap`].
pub fn parse_theme(text: &str, origin: &str, warnings: &mut Vec<String>) -> Option<ThemeSpec> {
    let table = parse_table(text, origin, warnings)?;
    let mut spec = ThemeSpec::new();
    for (role, v) in table {
        let Some(t) = v.as_table() else {
            warnings.push(format!(
                "{origin}: `{role}` should be a table such as {{ fg = \"red\", bold = true }} (ignored)"
            ));
            continue;
        };
        let mut style = StyleSpec::default();
        for (field, value) in t {
            let colour = || match value {
                toml::Value::String(s) => Some(s.clone()),
                toml::Value::Integer(i) => Some(i.to_string()),
                _ => None,
            };
            let ok = match field.as_str() {
                "fg" => colour().map(|c| style.fg = Some(c)).is_some(),
                "bg" => colour().map(|c| style.bg = Some(c)).is_some(),
                "bold" => value.as_bool().map(|b| style.bold = Some(b)).is_some(),
                "dim" => value.as_bool().map(|b| style.dim = Some(b)).is_some(),
                "italic" => value.as_bool().map(|b| style.italic = Some(b)).is_some(),
                "underlined" => value
                    .as_bool()
                    .map(|b| style.underlined = Some(b))
                    .is_some(),
                "reversed" => value.as_bool().map(|b| style.reversed = Some(b)).is_some(),
                other => {
                    warnings.push(format!(
                        "{origin}: [{role}] unknown field `{other}` (fields: fg, bg, bold, dim, italic, underlined, reversed)"
                    ));
                    continue;
                }
            };
            if !ok {
                warnings.push(format!(
                    "{origin}: [{role}] `{field}` has the wrong type (colours are strings or 0-255, the rest true/false)"
                ));
            }
        }
        spec.insert(role, style);
    }
    Some(spec)
}

/// The effective keymap spec: the embedded defaults with the choice `user` (a shipped name,
/// a user file's name or a path; see [`choose`]) merged over them key by key, plus warnings
/// for anything that could not be used.
pub fn load_keymap(user: Option<&Path>) -> (KeymapSpec, Vec<String>) {
    let mut warnings = Vec::new();
    let mut spec =
        parse_keymap(DEFAULT_KEYMAP, "keymaps/default.toml", &mut warnings).unwrap_or_default();
    match user.map(|u| choose(u, KEYMAPS, "keymaps")) {
        None => {}
        Some(Choice::Shipped(name, text)) => {
            let origin = format!("keymaps/{name}.toml");
            if let Some(over) = parse_keymap(text, &origin, &mut warnings) {
                merge_keymap(&mut spec, over);
            }
        }
        Some(Choice::File(path)) if !path.exists() && is_bare_name(&path) => {
            warnings.push(format!(
                "keymap {}: no shipped keymap or file of that name (shipped: {}); using the default",
                path.display(),
                KEYMAPS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ));
        }
        Some(Choice::File(path)) => {
            let origin = format!("keymap {}", path.display());
            if let Some(text) = read_text(&path, "keymap", &mut warnings) {
                if let Some(over) = parse_keymap(&text, &origin, &mut warnings) {
                    merge_keymap(&mut spec, over);
                }
            }
        }
    }
    (spec, warnings)
}

/// Merges `over` into `base`: bindings for the same mode and key are replaced.
pub fn merge_keymap(base: &mut KeymapSpec, over: KeymapSpec) {
    for (mode, keys) in over {
        base.entry(mode).or_default().extend(keys);
    }
}

/// The effective theme spec: the embedded defaults with the choice `user` (see [`choose`])
/// merged over them field by field, plus warnings.
pub fn load_theme(user: Option<&Path>) -> (ThemeSpec, Vec<String>) {
    let mut warnings = Vec::new();
    let mut spec =
        parse_theme(DEFAULT_THEME, "themes/default.toml", &mut warnings).unwrap_or_default();
    match user.map(|u| choose(u, THEMES, "themes")) {
        None => {}
        Some(Choice::Shipped(name, text)) => {
            let origin = format!("themes/{name}.toml");
            if let Some(over) = parse_theme(text, &origin, &mut warnings) {
                merge_theme(&mut spec, over);
            }
        }
        Some(Choice::File(path)) if !path.exists() && is_bare_name(&path) => {
            warnings.push(format!(
                "theme {}: no shipped theme or file of that name (shipped: {}); using the default",
                path.display(),
                THEMES
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Some(Choice::File(path)) => {
            let origin = format!("theme {}", path.display());
            if let Some(text) = read_text(&path, "theme", &mut warnings) {
                if let Some(over) = parse_theme(&text, &origin, &mut warnings) {
                    merge_theme(&mut spec, over);
                }
            }
        }
    }
    (spec, warnings)
}

/// Merges `over` into `base` field by field.
pub fn merge_theme(base: &mut ThemeSpec, over: ThemeSpec) {
    for (role, style) in over {
        base.entry(role).or_default().merge(&style);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_defaults_parse_without_warnings() {
        let mut w = Vec::new();
        let k = parse_keymap(DEFAULT_KEYMAP, "default", &mut w).expect("keymap parses");
        let t = parse_theme(DEFAULT_THEME, "default", &mut w).expect("theme parses");
        assert!(w.is_empty(), "{w:?}");
        assert!(k.contains_key("global"));
        assert!(t.contains_key("selection"));
    }

    #[test]
    fn every_shipped_theme_and_keymap_parses_and_is_chosen_by_name() {
        for (name, text) in THEMES {
            let mut w = Vec::new();
            parse_theme(text, name, &mut w).expect("theme parses");
            assert!(w.is_empty(), "{name}: {w:?}");
            let (spec, w) = load_theme(Some(Path::new(name)));
            assert!(w.is_empty(), "{name}: {w:?}");
            assert_eq!(
                spec.len(),
                load_theme(None).0.len(),
                "{name}: every role set"
            );
        }
        for (name, text) in KEYMAPS {
            let mut w = Vec::new();
            parse_keymap(text, name, &mut w).expect("keymap parses");
            assert!(w.is_empty(), "{name}: {w:?}");
            let (spec, w) = load_keymap(Some(Path::new(name)));
            assert!(w.is_empty(), "{name}: {w:?}");
            assert_eq!(spec["global"]["q"], "quit", "{name}: defaults stay");
        }
        let (light, _) = load_theme(Some(Path::new("light")));
        assert_eq!(light["selection"].bg.as_deref(), Some("blue"));
        let (emacs, _) = load_keymap(Some(Path::new("emacs")));
        assert_eq!(emacs["global"]["ctrl-n"], "down");
        // The 16-colour theme uses the eight basic colours only.
        let (sixteen, _) = load_theme(Some(Path::new("16-colour")));
        let basic = [
            "black", "red", "green", "yellow", "blue", "magenta", "cyan", "white", "reset",
        ];
        for (role, st) in &sixteen {
            for c in [&st.fg, &st.bg].into_iter().flatten() {
                assert!(basic.contains(&c.as_str()), "16-colour [{role}] uses {c}");
            }
        }
    }

    #[test]
    fn user_file_is_a_partial_override() {
        let dir = tempfile::tempdir().expect("tempdir");
        let kp = dir.path().join("k.toml");
        std::fs::write(&kp, "[global]\n\"x\" = \"quit\"\n").expect("write");
        let (k, w) = load_keymap(Some(&kp));
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(k["global"]["x"], "quit");
        assert_eq!(k["global"]["q"], "quit", "defaults stay");
        let tp = dir.path().join("t.toml");
        std::fs::write(&tp, "[selection]\nfg = \"red\"\n").expect("write");
        let (t, w) = load_theme(Some(&tp));
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(t["selection"].fg.as_deref(), Some("red"));
        let (d, _) = load_theme(None);
        assert_eq!(
            t["selection"].bg, d["selection"].bg,
            "unnamed fields inherit"
        );
    }

    #[test]
    fn missing_and_broken_files_warn_and_keep_defaults() {
        let (k, w) = load_keymap(Some(Path::new("/nonexistent/regscope-keymap.toml")));
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("cannot read"), "{w:?}");
        assert_eq!(k, load_keymap(None).0);
        let mut w = Vec::new();
        assert!(parse_theme("[selection\nfg=", "t", &mut w).is_none());
        assert!(w[0].contains("not valid TOML"), "{w:?}");
        let mut w = Vec::new();
        let t =
            parse_theme("selection = 3\n[a]\nfg = true\nblink = 1\n", "t", &mut w).expect("toml");
        assert_eq!(w.len(), 3, "{w:?}");
        assert_eq!(t["a"], StyleSpec::default());
    }
}
