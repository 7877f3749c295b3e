//! Semantic colour themes: views ask for a [`Role`] ("border_focused", "delete", "alert"),
//! never for a colour.
//!
//! Built from a [`ThemeSpec`] (the embedded `themes/default.toml` with any user override
//! merged over it by [`crate::config`]), then adapted to the terminal's [`ColorDepth`]:
//! true colour is reduced to the 256-colour cube or the 16 ANSI colours, and `NO_COLOR`
//! (<https://no-color.org>) drops colours while keeping bold/reversed so selections stay
//! visible.

use std::path::Path;

use ratatui::style::{Color, Modifier, Style};

use crate::config::{self, StyleSpec, ThemeSpec};

/// A semantic style role. The names are the table names in theme files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// "regscope" in the header.
    Title,
    /// Header text.
    Header,
    /// Numbers in the header.
    HeaderValue,
    /// The selected panel tab.
    TabActive,
    /// Other panel tabs.
    TabInactive,
    /// Border of the focused pane.
    BorderFocused,
    /// Border of other panes.
    BorderUnfocused,
    /// Border of panes whose data is stale.
    BorderStale,
    /// Pane titles.
    PanelTitle,
    /// Table column headers.
    TableHeader,
    /// The selected row.
    Selection,
    /// Keys in the hint bar.
    HintKey,
    /// Labels in the hint bar.
    HintLabel,
    /// Connection healthy (watching).
    StatusOk,
    /// Connection in progress (connecting, listing, reconnecting).
    StatusWarn,
    /// Connection broken (not responding, failed).
    StatusError,
    /// The banner shown when data is stale.
    Alert,
    /// PUT events, added lines.
    Put,
    /// DELETE events, tombstones, removed lines.
    Delete,
    /// Secondary text (times, sizes).
    Muted,
    /// Ordinary text.
    Text,
    /// Filter prompt and labels.
    Filter,
    /// Head revision series.
    SeriesHead,
    /// Revisions-per-second series.
    SeriesRate,
    /// Configuration warnings.
    Warning,
    /// Notes and gaps.
    Note,
    /// Mapping keys in a decoded object.
    SyntaxKey,
    /// String values in a decoded object.
    SyntaxString,
    /// Numbers, booleans and null in a decoded object.
    SyntaxScalar,
    /// `#` notes above a decoded object (schema unknown, redaction).
    SyntaxNote,
    /// `<redacted: N bytes>` values.
    Redacted,
    /// Changed values in a diff (`~ path: old → new`).
    DiffChanged,
}

impl Role {
    /// Every role.
    pub const ALL: &'static [Role] = &[
        Role::Title,
        Role::Header,
        Role::HeaderValue,
        Role::TabActive,
        Role::TabInactive,
        Role::BorderFocused,
        Role::BorderUnfocused,
        Role::BorderStale,
        Role::PanelTitle,
        Role::TableHeader,
        Role::Selection,
        Role::HintKey,
        Role::HintLabel,
        Role::StatusOk,
        Role::StatusWarn,
        Role::StatusError,
        Role::Alert,
        Role::Put,
        Role::Delete,
        Role::Muted,
        Role::Text,
        Role::Filter,
        Role::SeriesHead,
        Role::SeriesRate,
        Role::Warning,
        Role::Note,
        Role::SyntaxKey,
        Role::SyntaxString,
        Role::SyntaxScalar,
        Role::SyntaxNote,
        Role::Redacted,
        Role::DiffChanged,
    ];

    /// The table name in theme files.
    pub fn name(self) -> &'static str {
        match self {
            Role::Title => "title",
            Role::Header => "header",
            Role::HeaderValue => "header_value",
            Role::TabActive => "tab_active",
            Role::TabInactive => "tab_inactive",
            Role::BorderFocused => "border_focused",
            Role::BorderUnfocused => "border_unfocused",
            Role::BorderStale => "border_stale",
            Role::PanelTitle => "panel_title",
            Role::TableHeader => "table_header",
            Role::Selection => "selection",
            Role::HintKey => "hint_key",
            Role::HintLabel => "hint_label",
            Role::StatusOk => "status_ok",
            Role::StatusWarn => "status_warn",
            Role::StatusError => "status_error",
            Role::Alert => "alert",
            Role::Put => "put",
            Role::Delete => "delete",
            Role::Muted => "muted",
            Role::Text => "text",
            Role::Filter => "filter",
            Role::SeriesHead => "series_head",
            Role::SeriesRate => "series_rate",
            Role::Warning => "warning",
            Role::Note => "note",
            Role::SyntaxKey => "syntax_key",
            Role::SyntaxString => "syntax_string",
            Role::SyntaxScalar => "syntax_scalar",
            Role::SyntaxNote => "syntax_note",
            Role::Redacted => "redacted",
            Role::DiffChanged => "diff_changed",
        }
    }

    fn from_name(s: &str) -> Option<Role> {
        Role::ALL.iter().copied().find(|r| r.name() == s)
    }

    fn index(self) -> usize {
        Role::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }
}

/// How many colours the terminal can show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorDepth {
    /// `NO_COLOR` is set: modifiers only.
    NoColor,
    /// The 16 ANSI colours.
    Ansi16,
    /// The xterm 256-colour palette.
    Ansi256,
    /// 24-bit colour.
    TrueColor,
}

impl ColorDepth {
    /// From the environment: `NO_COLOR` (non-empty) wins; `COLORTERM=truecolor|24bit` means
    /// true colour; a `TERM` containing `256color` means 256; anything else 16.
    pub fn detect() -> ColorDepth {
        let var = |k: &str| std::env::var(k).unwrap_or_default();
        Self::from_env(&var("NO_COLOR"), &var("COLORTERM"), &var("TERM"))
    }

    /// [`ColorDepth::detect`] over given values (for tests).
    pub fn from_env(no_color: &str, colorterm: &str, term: &str) -> ColorDepth {
        if !no_color.is_empty() {
            ColorDepth::NoColor
        } else if matches!(colorterm, "truecolor" | "24bit") {
            ColorDepth::TrueColor
        } else if term.contains("256") {
            ColorDepth::Ansi256
        } else {
            ColorDepth::Ansi16
        }
    }
}

/// Resolved styles, one per [`Role`].
#[derive(Clone, Debug)]
pub struct Theme {
    styles: Vec<Style>,
}

impl Default for Theme {
    /// The embedded default theme at true-colour depth.
    fn default() -> Self {
        let (spec, _) = config::load_theme(None);
        Theme::from_spec(&spec, ColorDepth::TrueColor, &mut Vec::new())
    }
}

impl Theme {
    /// Builds a theme; unknown roles and unparsable colours are skipped with a warning.
    pub fn from_spec(spec: &ThemeSpec, depth: ColorDepth, warnings: &mut Vec<String>) -> Theme {
        let mut styles = vec![Style::default(); Role::ALL.len()];
        for (name, s) in spec {
            let Some(role) = Role::from_name(name) else {
                warnings.push(format!("theme: unknown role [{name}] (ignored)"));
                continue;
            };
            styles[role.index()] = style_of(name, s, depth, warnings);
        }
        Theme { styles }
    }

    /// Loads the defaults with the optional user override, at the terminal's colour depth.
    pub fn load(user: Option<&Path>) -> (Theme, Vec<String>) {
        let (spec, mut warnings) = config::load_theme(user);
        let theme = Theme::from_spec(&spec, ColorDepth::detect(), &mut warnings);
        (theme, warnings)
    }

    /// The style of a role.
    pub fn get(&self, role: Role) -> Style {
        self.styles.get(role.index()).copied().unwrap_or_default()
    }
}

fn style_of(name: &str, s: &StyleSpec, depth: ColorDepth, warnings: &mut Vec<String>) -> Style {
    let mut st = Style::default();
    let mut colour = |c: &Option<String>, which: &str| -> Option<Color> {
        let c = c.as_deref()?;
        match parse_color(c) {
            Some(col) => adapt(col, depth),
            None => {
                warnings.push(format!(
                    "theme: [{name}] {which} = \"{c}\" is not a colour (ignored)"
                ));
                None
            }
        }
    };
    if let Some(fg) = colour(&s.fg, "fg") {
        st = st.fg(fg);
    }
    if let Some(bg) = colour(&s.bg, "bg") {
        st = st.bg(bg);
    }
    for (flag, m) in [
        (s.bold, Modifier::BOLD),
        (s.dim, Modifier::DIM),
        (s.italic, Modifier::ITALIC),
        (s.underlined, Modifier::UNDERLINED),
        (s.reversed, Modifier::REVERSED),
    ] {
        if flag == Some(true) {
            st = st.add_modifier(m);
        }
    }
    // Without colours a coloured background is what made the selection or the alert stand
    // out: keep it visible by reversing instead.
    if depth == ColorDepth::NoColor && s.bg.as_deref().is_some_and(|b| b != "reset") {
        st = st.add_modifier(Modifier::REVERSED);
    }
    st
}

const ANSI16: [(Color, (u8, u8, u8)); 16] = [
    (Color::Black, (0, 0, 0)),
    (Color::Red, (205, 0, 0)),
    (Color::Green, (0, 205, 0)),
    (Color::Yellow, (205, 205, 0)),
    (Color::Blue, (0, 0, 238)),
    (Color::Magenta, (205, 0, 205)),
    (Color::Cyan, (0, 205, 205)),
    (Color::Gray, (229, 229, 229)),
    (Color::DarkGray, (127, 127, 127)),
    (Color::LightRed, (255, 0, 0)),
    (Color::LightGreen, (0, 255, 0)),
    (Color::LightYellow, (255, 255, 0)),
    (Color::LightBlue, (92, 92, 255)),
    (Color::LightMagenta, (255, 0, 255)),
    (Color::LightCyan, (0, 255, 255)),
    (Color::White, (255, 255, 255)),
];

/// Parses a colour name, `#rrggbb` or a palette index 0–255.
pub fn parse_color(s: &str) -> Option<Color> {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix('#') {
        if hex.len() != 6 {
            return None;
        }
        let v = u32::from_str_radix(hex, 16).ok()?;
        return Some(Color::Rgb((v >> 16) as u8, (v >> 8) as u8, v as u8));
    }
    if let Ok(i) = s.parse::<u8>() {
        return Some(Color::Indexed(i));
    }
    let norm = s.to_ascii_lowercase().replace(['-', ' '], "_");
    Some(match norm.as_str() {
        "reset" | "default" => Color::Reset,
        "black" => Color::Black,
        "red" => Color::Red,
        "green" => Color::Green,
        "yellow" => Color::Yellow,
        "blue" => Color::Blue,
        "magenta" => Color::Magenta,
        "cyan" => Color::Cyan,
        "gray" | "grey" => Color::Gray,
        "dark_gray" | "dark_grey" | "darkgray" => Color::DarkGray,
        "light_red" => Color::LightRed,
        "light_green" => Color::LightGreen,
        "light_yellow" => Color::LightYellow,
        "light_blue" => Color::LightBlue,
        "light_magenta" => Color::LightMagenta,
        "light_cyan" => Color::LightCyan,
        "white" => Color::White,
        _ => return None,
    })
}

/// Reduces a colour to what `depth` can show; `None` means "no colour" (NO_COLOR).
pub fn adapt(c: Color, depth: ColorDepth) -> Option<Color> {
    match (depth, c) {
        (ColorDepth::NoColor, _) => None,
        (ColorDepth::TrueColor, c) => Some(c),
        (ColorDepth::Ansi256, Color::Rgb(r, g, b)) => Some(Color::Indexed(rgb_to_256(r, g, b))),
        (ColorDepth::Ansi16, Color::Rgb(r, g, b)) => Some(nearest16(r, g, b)),
        (ColorDepth::Ansi16, Color::Indexed(i)) if i >= 16 => {
            let (r, g, b) = index_to_rgb(i);
            Some(nearest16(r, g, b))
        }
        (_, c) => Some(c),
    }
}

fn rgb_to_256(r: u8, g: u8, b: u8) -> u8 {
    let q = |v: u8| -> u8 {
        if v < 48 {
            0
        } else if v < 115 {
            1
        } else {
            (v - 35) / 40
        }
    };
    let (qr, qg, qb) = (q(r), q(g), q(b));
    let cube = 16 + 36 * qr + 6 * qg + qb;
    // Prefer the grey ramp for near-greys.
    if r.abs_diff(g) < 10 && g.abs_diff(b) < 10 {
        let avg = (r as u16 + g as u16 + b as u16) / 3;
        if avg > 8 && avg < 238 {
            return 232 + ((avg - 8) / 10).min(23) as u8;
        }
    }
    cube
}

/// The RGB value of an xterm palette index (the 16 ANSI colours as xterm shows them, the
/// 6×6×6 cube, the grey ramp).
pub fn index_to_rgb(i: u8) -> (u8, u8, u8) {
    match i {
        0..=15 => ANSI16[i as usize].1,
        16..=231 => {
            let i = i - 16;
            let level = |v: u8| if v == 0 { 0 } else { 55 + v * 40 };
            (level(i / 36), level((i / 6) % 6), level(i % 6))
        }
        _ => {
            let v = 8 + (i - 232) * 10;
            (v, v, v)
        }
    }
}

fn nearest16(r: u8, g: u8, b: u8) -> Color {
    let dist = |(pr, pg, pb): (u8, u8, u8)| {
        let d = |a: u8, b: u8| (a as i32 - b as i32).pow(2);
        d(r, pr) + d(g, pg) + d(b, pb)
    };
    ANSI16
        .iter()
        .min_by_key(|(_, rgb)| dist(*rgb))
        .map_or(Color::Reset, |(c, _)| *c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_theme_loads_without_warnings_and_differs() {
        let mut seen = Vec::new();
        for (name, _) in config::THEMES {
            let (spec, mut w) = config::load_theme(Some(std::path::Path::new(name)));
            let theme = Theme::from_spec(&spec, ColorDepth::TrueColor, &mut w);
            assert!(w.is_empty(), "{name}: {w:?}");
            let sel = theme.get(Role::Selection);
            assert!(
                !seen.contains(&(sel, theme.get(Role::Header))),
                "{name} repeats another theme"
            );
            seen.push((sel, theme.get(Role::Header)));
        }
    }

    #[test]
    fn shipped_default_theme_has_every_role_and_no_warnings() {
        let (spec, mut w) = config::load_theme(None);
        for r in Role::ALL {
            assert!(
                spec.contains_key(r.name()),
                "default theme lacks [{}]",
                r.name()
            );
        }
        let t = Theme::from_spec(&spec, ColorDepth::TrueColor, &mut w);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(t.get(Role::Alert).bg, Some(Color::Red));
    }

    #[test]
    fn colours_parse_and_degrade() {
        assert_eq!(parse_color("#ff8000"), Some(Color::Rgb(255, 128, 0)));
        assert_eq!(parse_color("208"), Some(Color::Indexed(208)));
        assert_eq!(parse_color("Light-Blue"), Some(Color::LightBlue));
        assert_eq!(parse_color("#ff80"), None);
        assert_eq!(parse_color("mauve"), None);
        assert_eq!(parse_color("256"), None);
        let orange = Color::Rgb(255, 128, 0);
        assert_eq!(
            adapt(orange, ColorDepth::Ansi256),
            Some(Color::Indexed(208))
        );
        assert_eq!(adapt(orange, ColorDepth::Ansi16), Some(Color::Yellow));
        assert_eq!(adapt(orange, ColorDepth::NoColor), None);
        assert_eq!(adapt(Color::Red, ColorDepth::Ansi16), Some(Color::Red));
        assert_eq!(
            adapt(Color::Rgb(128, 128, 128), ColorDepth::Ansi256),
            Some(Color::Indexed(244))
        );
    }

    #[test]
    fn no_color_keeps_selection_visible() {
        assert_eq!(
            ColorDepth::from_env("1", "truecolor", ""),
            ColorDepth::NoColor
        );
        assert_eq!(ColorDepth::from_env("", "24bit", ""), ColorDepth::TrueColor);
        assert_eq!(
            ColorDepth::from_env("", "", "xterm-256color"),
            ColorDepth::Ansi256
        );
        assert_eq!(ColorDepth::from_env("", "", "vt100"), ColorDepth::Ansi16);
        let (spec, _) = config::load_theme(None);
        let t = Theme::from_spec(&spec, ColorDepth::NoColor, &mut Vec::new());
        let sel = t.get(Role::Selection);
        assert_eq!(sel.fg, None);
        assert_eq!(sel.bg, None);
        assert!(sel.add_modifier.contains(Modifier::REVERSED));
    }

    #[test]
    fn bad_roles_and_colours_warn() {
        let mut spec = ThemeSpec::new();
        spec.insert(
            "selection".into(),
            StyleSpec {
                fg: Some("mauve".into()),
                bold: Some(true),
                ..Default::default()
            },
        );
        spec.insert("sparkles".into(), StyleSpec::default());
        let mut w = Vec::new();
        let t = Theme::from_spec(&spec, ColorDepth::TrueColor, &mut w);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(t.get(Role::Selection).add_modifier.contains(Modifier::BOLD));
    }
}
