//! Screenshots of the console (`S`): the terminal's cells as SVG, in the theme's colours,
//! with every character kept as text (so the picture can be read, searched and diffed),
//! and the same cells as plain text.
//!
//! The SVG is a grid of one monospace `<text>` per row, split into `<tspan>` runs of one
//! style, over `<rect>` backgrounds. Cell size: 8.4 × 17 px (a 14 px monospace font).
//! Named ANSI colours are drawn with xterm's default palette, indexed colours with the
//! xterm 256-colour cube; `Reset` is the terminal's default ([`Canvas`]: light grey on
//! near-black, or near-black on white for a theme made for light terminals).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

const CELL_W: f64 = 8.4;
const CELL_H: f64 = 17.0;
/// The terminal's own colours (what `Reset` draws), dark or light.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Canvas {
    pub fg: &'static str,
    pub bg: &'static str,
}

/// A dark terminal: light grey on near-black.
pub const DARK: Canvas = Canvas {
    fg: "#d0d0d0",
    bg: "#1c1c1c",
};
/// A light terminal: near-black on near-white.
pub const LIGHT: Canvas = Canvas {
    fg: "#1c1c1c",
    bg: "#fafafa",
};

impl Canvas {
    /// The canvas a theme is made for: light when its header text is dark (the `light`
    /// theme writes black on the terminal's background), else dark.
    pub fn for_theme(theme: &super::theme::Theme) -> Canvas {
        let fg = theme.get(super::theme::Role::Header).fg.and_then(hex);
        let dark_text = fg.as_deref().and_then(luminance).is_some_and(|l| l < 0.35);
        if dark_text {
            LIGHT
        } else {
            DARK
        }
    }
}

/// Relative luminance (0 black .. 1 white) of `#rrggbb`.
fn luminance(hex: &str) -> Option<f64> {
    let h = hex.strip_prefix('#')?;
    let c = |i: usize| u8::from_str_radix(h.get(i..i + 2)?, 16).ok().map(f64::from);
    Some((0.2126 * c(0)? + 0.7152 * c(2)? + 0.0722 * c(4)?) / 255.0)
}

/// The 16 ANSI colours as xterm draws them by default.
const ANSI: [&str; 16] = [
    "#000000", "#cd0000", "#00cd00", "#cdcd00", "#0000ee", "#cd00cd", "#00cdcd", "#e5e5e5",
    "#7f7f7f", "#ff0000", "#00ff00", "#ffff00", "#5c5cff", "#ff00ff", "#00ffff", "#ffffff",
];

/// A colour as `#rrggbb`; `None` for `Reset` (the default).
pub fn hex(c: Color) -> Option<String> {
    let ansi = |i: usize| Some(ANSI[i].to_string());
    match c {
        Color::Reset => None,
        Color::Black => ansi(0),
        Color::Red => ansi(1),
        Color::Green => ansi(2),
        Color::Yellow => ansi(3),
        Color::Blue => ansi(4),
        Color::Magenta => ansi(5),
        Color::Cyan => ansi(6),
        Color::Gray => ansi(7),
        Color::DarkGray => ansi(8),
        Color::LightRed => ansi(9),
        Color::LightGreen => ansi(10),
        Color::LightYellow => ansi(11),
        Color::LightBlue => ansi(12),
        Color::LightMagenta => ansi(13),
        Color::LightCyan => ansi(14),
        Color::White => ansi(15),
        Color::Rgb(r, g, b) => Some(format!("#{r:02x}{g:02x}{b:02x}")),
        Color::Indexed(i) => Some(indexed(i)),
    }
}

/// xterm's 256-colour palette: 16 ANSI, a 6×6×6 cube, 24 greys.
fn indexed(i: u8) -> String {
    match i {
        0..=15 => ANSI[i as usize].to_string(),
        16..=231 => {
            let n = i - 16;
            let level = |v: u8| if v == 0 { 0 } else { 55 + 40 * v };
            format!(
                "#{:02x}{:02x}{:02x}",
                level(n / 36),
                level((n / 6) % 6),
                level(n % 6)
            )
        }
        _ => {
            let g = 8 + 10 * (i - 232);
            format!("#{g:02x}{g:02x}{g:02x}")
        }
    }
}

fn escape(s: &str, out: &mut String) {
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c if (c as u32) < 0x20 => out.push(' '),
            c => out.push(c),
        }
    }
}

/// The buffer as an SVG document on `canvas`.
pub fn svg(buf: &Buffer, canvas: Canvas) -> String {
    let (default_fg, default_bg) = (canvas.fg, canvas.bg);
    let (w, h) = (buf.area.width, buf.area.height);
    let (pw, ph) = (f64::from(w) * CELL_W, f64::from(h) * CELL_H);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{pw:.0}" height="{ph:.0}" viewBox="0 0 {pw:.1} {ph:.1}" font-family="'DejaVu Sans Mono', 'Menlo', 'Consolas', monospace" font-size="14">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="100%" height="100%" fill="{default_bg}"/>"#
    );
    // Backgrounds: runs of one colour per row.
    for y in 0..h {
        let mut x = 0;
        while x < w {
            let bg = cell_colors(buf, x, y, canvas).1;
            let start = x;
            while x < w && cell_colors(buf, x, y, canvas).1 == bg {
                x += 1;
            }
            if let Some(bg) = bg {
                let _ = writeln!(
                    s,
                    r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{CELL_H:.1}" fill="{bg}"/>"#,
                    f64::from(start) * CELL_W,
                    f64::from(y) * CELL_H,
                    f64::from(x - start) * CELL_W
                );
            }
        }
    }
    // Text: one element per row, a tspan per run of one style.
    for y in 0..h {
        let _ = write!(
            s,
            r#"<text y="{:.1}" xml:space="preserve">"#,
            f64::from(y) * CELL_H + CELL_H * 0.78
        );
        let mut x = 0;
        while x < w {
            let key = text_style(buf, x, y, canvas);
            let start = x;
            let mut run = String::new();
            while x < w && text_style(buf, x, y, canvas) == key {
                let sym = buf[(x, y)].symbol();
                run.push_str(if sym.is_empty() { " " } else { sym });
                x += 1;
            }
            if run.trim().is_empty() {
                continue;
            }
            let (fg, bold, italic, underline, dim) = &key;
            let _ = write!(
                s,
                r#"<tspan x="{:.1}" fill="{}"{}{}{}{}>"#,
                f64::from(start) * CELL_W,
                fg.as_deref().unwrap_or(default_fg),
                if *bold { r#" font-weight="bold""# } else { "" },
                if *italic {
                    r#" font-style="italic""#
                } else {
                    ""
                },
                if *underline {
                    r#" text-decoration="underline""#
                } else {
                    ""
                },
                if *dim { r#" opacity="0.6""# } else { "" },
            );
            escape(&run, &mut s);
            s.push_str("</tspan>");
        }
        s.push_str("</text>\n");
    }
    s.push_str("</svg>\n");
    s
}

/// (fg, bg) of a cell after `REVERSED`, `None` for the defaults.
fn cell_colors(buf: &Buffer, x: u16, y: u16, canvas: Canvas) -> (Option<String>, Option<String>) {
    let c = &buf[(x, y)];
    let (fg, bg) = (hex(c.fg), hex(c.bg));
    if c.modifier.contains(Modifier::REVERSED) {
        (
            Some(bg.unwrap_or_else(|| canvas.bg.into())),
            Some(fg.unwrap_or_else(|| canvas.fg.into())),
        )
    } else {
        (fg, bg)
    }
}

type TextStyle = (Option<String>, bool, bool, bool, bool);

fn text_style(buf: &Buffer, x: u16, y: u16, canvas: Canvas) -> TextStyle {
    let m = buf[(x, y)].modifier;
    (
        cell_colors(buf, x, y, canvas).0,
        m.contains(Modifier::BOLD),
        m.contains(Modifier::ITALIC),
        m.contains(Modifier::UNDERLINED),
        m.contains(Modifier::DIM),
    )
}

/// The buffer as plain text, one line per row, trailing spaces trimmed.
pub fn text(buf: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        for x in 0..buf.area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Writes `regscope-<UTC time>.svg` and `.txt` into `dir` (created when missing), mode
/// 0600 like recordings: a screenshot shows cluster data. Returns the SVG's path.
/// Errors: the directory or a file cannot be written.
pub fn save(
    buf: &Buffer,
    canvas: Canvas,
    dir: &Path,
    now: std::time::SystemTime,
) -> std::io::Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(dir)?;
    let stamp = humantime::format_rfc3339_seconds(now)
        .to_string()
        .replace([':', '-'], "")
        .trim_end_matches('Z')
        .to_string();
    let mut base = dir.join(format!("regscope-{stamp}"));
    // Two in the same second get a counter.
    let mut n = 1;
    while base.with_extension("svg").exists() {
        n += 1;
        base = dir.join(format!("regscope-{stamp}-{n}"));
    }
    for (ext, body) in [("svg", svg(buf, canvas)), ("txt", text(buf))] {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(base.with_extension(ext))?;
        f.write_all(body.as_bytes())?;
    }
    Ok(base.with_extension("svg"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::layout::Rect;
    use ratatui::style::Style;

    fn sample() -> Buffer {
        let mut b = Buffer::empty(Rect::new(0, 0, 12, 2));
        b.set_string(0, 0, "rev <42> & ", Style::default().fg(Color::LightCyan));
        b.set_string(
            0,
            1,
            "PUT",
            Style::default()
                .fg(Color::Black)
                .bg(Color::Rgb(0x12, 0x34, 0x56))
                .add_modifier(Modifier::BOLD),
        );
        b.set_string(
            4,
            1,
            "sel",
            Style::default().add_modifier(Modifier::REVERSED),
        );
        b
    }

    #[test]
    fn svg_keeps_text_and_colours() {
        insta::assert_snapshot!(svg(&sample(), DARK));
        let light = svg(&sample(), LIGHT);
        assert!(light.contains(r##"fill="#fafafa"/>"##), "{light}");
        let t = |name: &str| {
            let (spec, _) = crate::config::load_theme(Some(Path::new(name)));
            super::super::theme::Theme::from_spec(
                &spec,
                super::super::theme::ColorDepth::TrueColor,
                &mut Vec::new(),
            )
        };
        assert_eq!(Canvas::for_theme(&t("light")), LIGHT);
        assert_eq!(Canvas::for_theme(&t("default")), DARK);
        assert_eq!(Canvas::for_theme(&t("high-contrast")), DARK);
        assert_eq!(text(&sample()), "rev <42> &\nPUT sel\n");
        assert_eq!(hex(Color::Indexed(196)).as_deref(), Some("#ff0000"));
        assert_eq!(hex(Color::Indexed(244)).as_deref(), Some("#808080"));
        assert_eq!(hex(Color::Reset), None);
    }

    #[test]
    fn saved_files_are_private_and_not_overwritten() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
        let a = save(&sample(), DARK, &dir.path().join("shots"), t).unwrap();
        let b = save(&sample(), DARK, &dir.path().join("shots"), t).unwrap();
        assert_ne!(a, b);
        assert!(a.ends_with("regscope-20270115T080000.svg"), "{a:?}");
        let mode = std::fs::metadata(&a).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let txt = std::fs::read_to_string(a.with_extension("txt")).unwrap();
        assert!(txt.starts_with("rev <42> &"));
    }
}
