//! The keymap as data: mode → key → [`Action`].
//!
//! Built from a [`KeymapSpec`] (the embedded `keymaps/default.toml` with any user override
//! merged over it by [`crate::config`]). Unknown modes, key names and actions become warnings
//! and are skipped. Help and the hint bar are generated from [`Keymap::bindings`], so what is
//! shown is always what is bound.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::action::Action;
use crate::config::{self, KeymapSpec};

/// Where a key is looked up. Each mode falls back to [`Mode::Global`], except
/// [`Mode::Filter`] (typing text).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// Bindings available everywhere unless a mode binds the same key.
    Global,
    /// The revision growth panel.
    Growth,
    /// The event stream panel.
    Events,
    /// The key browser (resource list and key list).
    Keys,
    /// A key opened from the key browser or an event (metadata, history, value); its
    /// table in keymap files is `[detail]`.
    OpenedKey,
    /// The encryption-at-rest summary (opened from the key browser).
    Encryption,
    /// The apiserver panel (latency, watch cache, compaction window, etcd health, APF).
    Apiserver,
    /// The help screen.
    Help,
    /// Typing a filter.
    Filter,
}

impl Mode {
    /// Every mode, in help order.
    pub const ALL: &'static [Mode] = &[
        Mode::Global,
        Mode::Growth,
        Mode::Events,
        Mode::Keys,
        Mode::OpenedKey,
        Mode::Encryption,
        Mode::Apiserver,
        Mode::Help,
        Mode::Filter,
    ];

    /// The table name in keymap files.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Global => "global",
            Mode::Growth => "growth",
            Mode::Events => "events",
            Mode::Keys => "keys",
            Mode::OpenedKey => "detail",
            Mode::Encryption => "encryption",
            Mode::Apiserver => "apiserver",
            Mode::Help => "help",
            Mode::Filter => "filter",
        }
    }

    /// Looks a mode up by its table name.
    pub fn from_name(s: &str) -> Option<Mode> {
        Mode::ALL.iter().copied().find(|m| m.name() == s)
    }
}

/// A key with modifiers, normalized so that a binding matches what crossterm reports:
/// characters carry their case and no SHIFT; `shift-tab` is `BackTab`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyChord {
    /// The key.
    pub code: KeyCode,
    /// CONTROL and ALT (SHIFT only for named keys such as `shift-up`).
    pub mods: KeyModifiers,
}

impl KeyChord {
    /// Normalizes a key event from the terminal.
    pub fn from_event(ev: &KeyEvent) -> KeyChord {
        Self::normalized(ev.code, ev.modifiers)
    }

    fn normalized(code: KeyCode, mods: KeyModifiers) -> KeyChord {
        let mods = mods & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        match code {
            KeyCode::Char(c) => {
                // Terminals differ on whether `?` or `G` arrive with SHIFT; the char decides.
                let c = if mods.contains(KeyModifiers::CONTROL) {
                    c.to_ascii_lowercase()
                } else {
                    c
                };
                KeyChord {
                    code: KeyCode::Char(c),
                    mods: mods - KeyModifiers::SHIFT,
                }
            }
            KeyCode::BackTab => KeyChord {
                code: KeyCode::BackTab,
                mods: mods - KeyModifiers::SHIFT,
            },
            KeyCode::Tab if mods.contains(KeyModifiers::SHIFT) => KeyChord {
                code: KeyCode::BackTab,
                mods: mods - KeyModifiers::SHIFT,
            },
            code => KeyChord { code, mods },
        }
    }

    /// Parses a key name as written in keymap files (`q`, `ctrl-c`, `shift-tab`, `pageup`).
    pub fn parse(s: &str) -> Option<KeyChord> {
        let mut mods = KeyModifiers::NONE;
        let mut rest = s;
        loop {
            let lower = rest.to_ascii_lowercase();
            let (m, len) = if lower.starts_with("ctrl-") {
                (KeyModifiers::CONTROL, 5)
            } else if lower.starts_with("alt-") {
                (KeyModifiers::ALT, 4)
            } else if lower.starts_with("shift-") {
                (KeyModifiers::SHIFT, 6)
            } else {
                break;
            };
            // "-" alone (or "ctrl--") is the minus key, not a modifier separator.
            if rest.len() == len {
                break;
            }
            mods |= m;
            rest = &rest[len..];
        }
        let mut chars = rest.chars();
        let code = match (chars.next(), chars.next()) {
            (Some(c), None) => KeyCode::Char(c),
            (None, _) => return None,
            _ => match rest.to_ascii_lowercase().as_str() {
                "enter" | "return" => KeyCode::Enter,
                "esc" | "escape" => KeyCode::Esc,
                "tab" => KeyCode::Tab,
                "backtab" => KeyCode::BackTab,
                "backspace" => KeyCode::Backspace,
                "delete" | "del" => KeyCode::Delete,
                "insert" | "ins" => KeyCode::Insert,
                "space" => KeyCode::Char(' '),
                "up" => KeyCode::Up,
                "down" => KeyCode::Down,
                "left" => KeyCode::Left,
                "right" => KeyCode::Right,
                "home" => KeyCode::Home,
                "end" => KeyCode::End,
                "pageup" | "pgup" => KeyCode::PageUp,
                "pagedown" | "pgdn" => KeyCode::PageDown,
                f if f.starts_with('f') => match f[1..].parse::<u8>() {
                    Ok(n @ 1..=12) => KeyCode::F(n),
                    _ => return None,
                },
                _ => return None,
            },
        };
        if let KeyCode::Char(c) = code {
            if mods.contains(KeyModifiers::SHIFT) && c.is_ascii_alphabetic() {
                return Some(Self::normalized(
                    KeyCode::Char(c.to_ascii_uppercase()),
                    mods - KeyModifiers::SHIFT,
                ));
            }
        }
        Some(Self::normalized(code, mods))
    }
}

impl fmt::Display for KeyChord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mods.contains(KeyModifiers::CONTROL) {
            f.write_str("ctrl-")?;
        }
        if self.mods.contains(KeyModifiers::ALT) {
            f.write_str("alt-")?;
        }
        if self.mods.contains(KeyModifiers::SHIFT) {
            f.write_str("shift-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Enter => f.write_str("enter"),
            KeyCode::Esc => f.write_str("esc"),
            KeyCode::Tab => f.write_str("tab"),
            KeyCode::BackTab => f.write_str("shift-tab"),
            KeyCode::Backspace => f.write_str("bksp"),
            KeyCode::Delete => f.write_str("del"),
            KeyCode::Insert => f.write_str("ins"),
            KeyCode::Up => f.write_str("↑"),
            KeyCode::Down => f.write_str("↓"),
            KeyCode::Left => f.write_str("←"),
            KeyCode::Right => f.write_str("→"),
            KeyCode::Home => f.write_str("home"),
            KeyCode::End => f.write_str("end"),
            KeyCode::PageUp => f.write_str("pgup"),
            KeyCode::PageDown => f.write_str("pgdn"),
            KeyCode::F(n) => write!(f, "f{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// One binding, for help and hints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The action.
    pub action: Action,
    /// Every key bound to it in the mode, in a stable order.
    pub keys: Vec<KeyChord>,
}

/// Mode → key → action. Cheap to query per key press.
#[derive(Clone, Debug)]
pub struct Keymap {
    map: HashMap<(Mode, KeyChord), Action>,
    /// Key names in the order they were written, for stable help output.
    order: Vec<(Mode, KeyChord)>,
}

impl Default for Keymap {
    /// The embedded defaults (`keymaps/default.toml`).
    fn default() -> Self {
        let (spec, _) = config::load_keymap(None);
        Keymap::from_spec(&spec, &mut Vec::new())
    }
}

impl Keymap {
    /// Builds the keymap, skipping (with a warning) unknown modes, key names and actions.
    /// The action name `none` unbinds a key.
    pub fn from_spec(spec: &KeymapSpec, warnings: &mut Vec<String>) -> Keymap {
        let mut km = Keymap {
            map: HashMap::new(),
            order: Vec::new(),
        };
        for (mode_name, keys) in spec {
            let Some(mode) = Mode::from_name(mode_name) else {
                warnings.push(format!(
                    "keymap: unknown mode [{mode_name}] (modes: {})",
                    Mode::ALL
                        .iter()
                        .map(|m| m.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                continue;
            };
            for (key_name, action_name) in keys {
                let Some(chord) = KeyChord::parse(key_name) else {
                    warnings.push(format!(
                        "keymap: [{mode_name}] unknown key \"{key_name}\" (ignored)"
                    ));
                    continue;
                };
                if action_name == "none" {
                    km.map.remove(&(mode, chord));
                    continue;
                }
                let Some(action) = Action::from_name(action_name) else {
                    warnings.push(format!(
                        "keymap: [{mode_name}] \"{key_name}\" = \"{action_name}\": unknown action (ignored)"
                    ));
                    continue;
                };
                if km.map.insert((mode, chord), action).is_none() {
                    km.order.push((mode, chord));
                }
            }
        }
        km.order.retain(|k| km.map.contains_key(k));
        if !km.map.values().any(|a| *a == Action::Quit) {
            warnings.push("keymap: no key is bound to `quit`".to_string());
        }
        km
    }

    /// Loads the defaults with the optional user override; warnings for anything skipped.
    /// An override entry naming an unknown action is skipped as the warning says: the
    /// default binding of that key stays.
    pub fn load(user: Option<&Path>) -> (Keymap, Vec<String>) {
        let (mut spec, mut warnings) = config::load_keymap(user);
        let (defaults, _) = config::load_keymap(None);
        for (mode, keys) in spec.iter_mut() {
            for (key, action) in keys.iter_mut() {
                if action != "none" && Action::from_name(action).is_none() {
                    if let Some(d) = defaults.get(mode).and_then(|m| m.get(key)) {
                        warnings.push(format!(
                            "keymap: [{mode}] \"{key}\" = \"{action}\": unknown action (ignored; \"{key}\" stays {d})"
                        ));
                        action.clone_from(d);
                    }
                }
            }
        }
        let km = Keymap::from_spec(&spec, &mut warnings);
        (km, warnings)
    }

    /// The action for a key event in `mode`: the mode's own binding, else the global one
    /// (never for [`Mode::Filter`]). Key releases are ignored.
    pub fn lookup(&self, mode: Mode, ev: &KeyEvent) -> Option<Action> {
        if ev.kind == KeyEventKind::Release {
            return None;
        }
        let chord = KeyChord::from_event(ev);
        self.map.get(&(mode, chord)).copied().or_else(|| {
            // What is typed into a prompt is text, but a ctrl- chord never is: ctrl-c
            // quits from a prompt too, as the help says it does everywhere.
            let typed = mode == Mode::Filter && !ev.modifiers.contains(KeyModifiers::CONTROL);
            if typed || mode == Mode::Global {
                None
            } else {
                self.map.get(&(Mode::Global, chord)).copied()
            }
        })
    }

    /// Bindings of one mode (not including global ones), in action order, keys grouped.
    pub fn bindings(&self, mode: Mode) -> Vec<Binding> {
        let mut out: Vec<Binding> = Vec::new();
        for a in Action::ALL {
            let keys: Vec<KeyChord> = self
                .order
                .iter()
                .filter(|(m, k)| *m == mode && self.map.get(&(*m, *k)) == Some(a))
                .map(|(_, k)| *k)
                .collect();
            if !keys.is_empty() {
                out.push(Binding {
                    action: *a,
                    keys: sorted(keys),
                });
            }
        }
        out
    }

    /// The keys that trigger `action` in `mode`, including global bindings that the mode
    /// does not shadow.
    pub fn keys_for(&self, mode: Mode, action: Action) -> Vec<KeyChord> {
        let mut keys: Vec<KeyChord> = self
            .order
            .iter()
            .filter(|(m, k)| *m == mode && self.map.get(&(*m, *k)) == Some(&action))
            .map(|(_, k)| *k)
            .collect();
        if mode != Mode::Filter && mode != Mode::Global {
            keys.extend(
                self.order
                    .iter()
                    .filter(|(m, k)| {
                        *m == Mode::Global
                            && self.map.get(&(*m, *k)) == Some(&action)
                            && !self.map.contains_key(&(mode, *k))
                    })
                    .map(|(_, k)| *k),
            );
        }
        sorted(keys)
    }
}

/// Display order: esc/enter/tab, arrows, other named keys, plain characters, then chords
/// with modifiers, so the hint bar shows `esc back`, `↑ up` and `q quit`.
fn sorted(mut keys: Vec<KeyChord>) -> Vec<KeyChord> {
    keys.sort_by_key(|k| match (k.mods.is_empty(), k.code) {
        (false, _) => 4,
        (true, KeyCode::Char(_)) => 3,
        (true, KeyCode::Esc | KeyCode::Enter | KeyCode::Tab | KeyCode::BackTab) => 0,
        (true, KeyCode::Up | KeyCode::Down | KeyCode::Left | KeyCode::Right) => 1,
        (true, _) => 2,
    });
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn an_unknown_action_keeps_the_default_binding() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.toml");
        std::fs::write(&path, "[global]\n\"q\" = \"explode\"\n\"x\" = \"quit\"\n").unwrap();
        let (km, w) = Keymap::load(Some(&path));
        let q = key(KeyCode::Char('q'), KeyModifiers::NONE);
        assert_eq!(km.lookup(Mode::Events, &q), Some(Action::Quit), "{w:?}");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("\"q\" stays quit"), "{w:?}");
    }

    #[test]
    fn every_shipped_keymap_binds_known_keys_to_known_actions() {
        for (name, _) in config::KEYMAPS {
            let (km, w) = Keymap::load(Some(std::path::Path::new(name)));
            assert!(w.is_empty(), "{name}: {w:?}");
            let q = key(KeyCode::Char('q'), KeyModifiers::NONE);
            assert_eq!(km.lookup(Mode::Events, &q), Some(Action::Quit), "{name}");
        }
        let (emacs, _) = Keymap::load(Some(std::path::Path::new("emacs")));
        let ctrl_n = key(KeyCode::Char('n'), KeyModifiers::CONTROL);
        assert_eq!(emacs.lookup(Mode::Keys, &ctrl_n), Some(Action::Down));
        let alt_gt = key(KeyCode::Char('>'), KeyModifiers::ALT);
        assert_eq!(emacs.lookup(Mode::Events, &alt_gt), Some(Action::Bottom));
    }

    #[test]
    fn shipped_default_keymap_has_no_warnings() {
        let (spec, mut w) = config::load_keymap(None);
        let km = Keymap::from_spec(&spec, &mut w);
        assert!(w.is_empty(), "{w:?}");
        let q = key(KeyCode::Char('q'), KeyModifiers::NONE);
        assert_eq!(km.lookup(Mode::Events, &q), Some(Action::Quit));
        assert_eq!(km.lookup(Mode::Filter, &q), None, "filter types text");
        let help = key(KeyCode::Char('?'), KeyModifiers::SHIFT);
        assert_eq!(km.lookup(Mode::Growth, &help), Some(Action::ToggleHelp));
        assert_eq!(km.lookup(Mode::Help, &help), Some(Action::Back));
        let bt = key(KeyCode::BackTab, KeyModifiers::SHIFT);
        assert_eq!(km.lookup(Mode::Keys, &bt), Some(Action::PrevPanel));
        let g = key(KeyCode::Char('G'), KeyModifiers::SHIFT);
        assert_eq!(km.lookup(Mode::Keys, &g), Some(Action::Bottom));
        let cc = key(KeyCode::Char('c'), KeyModifiers::CONTROL);
        // A prompt takes text, but ctrl-c still quits (the help: "everywhere").
        assert_eq!(km.lookup(Mode::Filter, &cc), Some(Action::Quit));
        assert_eq!(km.lookup(Mode::OpenedKey, &cc), Some(Action::Quit));
        let mut rel = q;
        rel.kind = KeyEventKind::Release;
        assert_eq!(km.lookup(Mode::Global, &rel), None);
    }

    #[test]
    fn key_names_parse_and_display() {
        for (s, shown) in [
            ("q", "q"),
            ("ctrl-c", "ctrl-c"),
            ("CTRL-C", "ctrl-c"),
            ("shift-tab", "shift-tab"),
            ("shift-g", "G"),
            ("pageup", "pgup"),
            ("space", "space"),
            ("f5", "f5"),
            ("-", "-"),
            ("alt--", "alt--"),
            ("up", "↑"),
        ] {
            let k = KeyChord::parse(s).unwrap_or_else(|| panic!("{s} parses"));
            assert_eq!(k.to_string(), shown, "{s}");
        }
        for bad in ["", "ctrl-", "hyper-x", "f13", "pagedownn", "ctrl-enterx"] {
            assert_eq!(KeyChord::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn bad_entries_warn_and_none_unbinds() {
        let (mut spec, _) = config::load_keymap(None);
        let mut over = KeymapSpec::new();
        over.entry("global".into())
            .or_default()
            .insert("q".into(), "none".into());
        over.entry("global".into())
            .or_default()
            .insert("x".into(), "quit".into());
        over.entry("global".into())
            .or_default()
            .insert("y".into(), "launch_rockets".into());
        over.entry("global".into())
            .or_default()
            .insert("hyper-z".into(), "quit".into());
        over.entry("nowhere".into()).or_default();
        config::merge_keymap(&mut spec, over);
        let mut w = Vec::new();
        let km = Keymap::from_spec(&spec, &mut w);
        assert_eq!(w.len(), 3, "{w:?}");
        let q = key(KeyCode::Char('q'), KeyModifiers::NONE);
        let x = key(KeyCode::Char('x'), KeyModifiers::NONE);
        assert_eq!(km.lookup(Mode::Global, &q), None);
        assert_eq!(km.lookup(Mode::Global, &x), Some(Action::Quit));
        let keys: Vec<String> = km
            .keys_for(Mode::Events, Action::Quit)
            .iter()
            .map(|k| k.to_string())
            .collect();
        assert_eq!(keys, ["x", "ctrl-c"]);
    }

    #[test]
    fn help_bindings_group_keys_in_action_order() {
        let km = Keymap::default();
        let b = km.bindings(Mode::Global);
        assert_eq!(b[0].action, Action::Quit);
        assert_eq!(b[0].keys.len(), 2);
        let events = km.bindings(Mode::Events);
        assert!(events.iter().any(|b| b.action == Action::ToggleFollow));
        // Pause, recording and the replay's timeline work on every panel.
        for a in [
            Action::TogglePause,
            Action::ToggleRecording,
            Action::SpeedUp,
            Action::StepEvent,
            Action::SeekPrompt,
            Action::NextMarker,
        ] {
            assert!(b.iter().any(|x| x.action == a), "{a} bound globally");
        }
    }
}
