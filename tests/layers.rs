//! The house rules of ARCHITECTURE.md, checked on the source tree: imports run only from a
//! higher layer to a lower one (or within a room), and no two modules import each other,
//! directly or round a circle. Test code (`tests.rs` files and everything after a file's
//! top-level `#[cfg(test)]`) and comments are left out: tests may reach anywhere.
//!
//! Imports are read as text: every `crate::a::b` and `super::x` path in code (including
//! `use` lists in braces), resolved to the longest module that exists. A module and its
//! ancestors are not edges of each other (a folder's `mod.rs` declares and re-exports its
//! children; the children use what it re-exports).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level room of `src/` and its layer (ARCHITECTURE.md's table).
const LAYERS: &[(&str, u8)] = &[
    ("model", 1),
    ("bbolt", 1),
    ("config", 1),
    ("decrypt", 1),
    ("decode", 2),
    ("metrics", 2),
    ("source", 2),
    ("store", 3),
    ("node", 3),
    ("demo", 3),
    ("derive", 4),
    ("record", 5),
    ("tui", 6),
    ("report", 6),
    ("exporter", 6),
    ("cli", 7),
];

/// One module of the library: its path (`["store", "replica", "read"]`) and its code
/// without tests and comments.
struct Module {
    path: Vec<String>,
    file: PathBuf,
    code: String,
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file up to its top-level `#[cfg(test)]`, comment lines and trailing
/// `//` comments dropped (a `//` inside a string literal is rare enough in this tree, and
/// dropping the rest of such a line can only hide an import, never invent one).
fn code_of(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

fn modules(src: &Path) -> Vec<Module> {
    let mut files = Vec::new();
    rs_files(src, &mut files);
    let mut out = Vec::new();
    for file in files {
        let rel = file.strip_prefix(src).expect("under src");
        let mut path: Vec<String> = rel
            .iter()
            .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if path.len() == 1 {
            // lib.rs and main.rs: the crate root, not a room.
            continue;
        }
        if path.last().is_some_and(|l| l == "tests") {
            continue;
        }
        if path.last().is_some_and(|l| l == "mod") {
            path.pop();
        }
        let text = std::fs::read_to_string(&file).expect("read source");
        out.push(Module {
            path,
            file: rel.to_path_buf(),
            code: code_of(&text),
        });
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The identifier at the start of `s`, if any.
fn ident(s: &str) -> &str {
    let end = s.find(|c: char| !is_ident(c)).unwrap_or(s.len());
    &s[..end]
}

/// Every path that follows `anchor` (`crate::` or `super::`) in `code`, as segments; a
/// brace list (`super::{a::X, b}`) gives one path per item (its first segments).
fn paths_after(code: &str, anchor: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(anchor) {
        let before = rest[..i].chars().last();
        rest = &rest[i + anchor.len()..];
        if before.is_some_and(|c| is_ident(c) || c == ':') && anchor == "crate::" {
            // `regscope::crate::` does not occur; `$crate::` in macros is not ours.
            continue;
        }
        if before.is_some_and(|c| c == ':') && anchor == "super::" {
            // `super::super::x`: counted from the first `super::`.
            continue;
        }
        let mut prefix = Vec::new();
        let mut s = rest;
        // `super::super::`: one more level up, recorded as a leading "super".
        while let Some(r) = s
            .strip_prefix(anchor.trim_end_matches("::"))
            .and_then(|r| r.strip_prefix("::"))
        {
            if anchor == "super::" {
                prefix.push("super".to_string());
            }
            s = r;
        }
        collect(s, prefix, &mut out);
    }
    out
}

/// Reads a path at the start of `s` (segments joined by `::`, possibly ending in a brace
/// list) onto `prefix` and pushes each complete path to `out`.
fn collect(mut s: &str, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    loop {
        if let Some(inner) = s.strip_prefix('{') {
            let mut depth = 1;
            let mut start = 0;
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            collect(inner[start..i].trim_start(), prefix.clone(), out);
                            return;
                        }
                    }
                    ',' if depth == 1 => {
                        collect(inner[start..i].trim_start(), prefix.clone(), out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            return;
        }
        let id = ident(s);
        if id.is_empty() {
            if !prefix.is_empty() {
                out.push(prefix);
            }
            return;
        }
        prefix.push(id.to_string());
        s = &s[id.len()..];
        match s.strip_prefix("::") {
            Some(r) => s = r,
            None => {
                out.push(prefix);
                return;
            }
        }
    }
}

/// The longest module of `known` that `path` starts with.
fn resolve(path: &[String], known: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| known.contains(p))
}

/// Module-to-module imports, ancestors and descendants left out.
fn edges(mods: &[Module]) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let known: BTreeSet<Vec<String>> = mods.iter().map(|m| m.path.clone()).collect();
    let mut out: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for m in mods {
        let mut targets = BTreeSet::new();
        for p in paths_after(&m.code, "crate::") {
            if let Some(t) = resolve(&p, &known) {
                targets.insert(t);
            }
        }
        // `super::` in a module is its parent folder's scope.
        for p in paths_after(&m.code, "super::") {
            let ups = 1 + p.iter().take_while(|s| *s == "super").count();
            if ups > m.path.len() {
                continue;
            }
            let mut full = m.path[..m.path.len() - ups].to_vec();
            full.extend(p.iter().skip_while(|s| *s == "super").cloned());
            if let Some(t) = resolve(&full, &known) {
                targets.insert(t);
            }
        }
        let related = |a: &[String], b: &[String]| a.starts_with(b) || b.starts_with(a);
        let e = out.entry(m.path.clone()).or_default();
        for t in targets {
            if !related(&m.path, &t) {
                e.insert(t);
            }
        }
    }
    out
}

fn layer(room: &str) -> Option<u8> {
    LAYERS.iter().find(|(r, _)| *r == room).map(|(_, l)| *l)
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn every_room_has_a_layer() {
    let rooms: BTreeSet<String> = modules(&src())
        .into_iter()
        .map(|m| m.path[0].clone())
        .collect();
    let missing: Vec<_> = rooms.iter().filter(|r| layer(r).is_none()).collect();
    assert!(
        missing.is_empty(),
        "rooms of src/ without a layer in ARCHITECTURE.md and this test's LAYERS: {missing:?}"
    );
}

#[test]
fn imports_run_only_down() {
    let mods = modules(&src());
    let files: BTreeMap<Vec<String>, PathBuf> = mods
        .iter()
        .map(|m| (m.path.clone(), m.file.clone()))
        .collect();
    let mut upward = Vec::new();
    for (from, tos) in edges(&mods) {
        let Some(lf) = layer(&from[0]) else { continue };
        for to in tos {
            let Some(lt) = layer(&to[0]) else { continue };
            if from[0] != to[0] && lt > lf {
                upward.push(format!(
                    "src/{} (layer {lf}) imports {} (layer {lt})",
                    files[&from].display(),
                    to.join("::")
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that run up:\n{}",
        upward.join("\n")
    );
}

#[test]
fn no_modules_import_each_other_in_a_circle() {
    let mods = modules(&src());
    let graph = edges(&mods);
    // Tarjan's strongly connected components; any of more than one module is a circle.
    struct State<'a> {
        graph: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on_stack: BTreeSet<&'a Vec<String>>,
        next: usize,
        circles: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Vec<String>) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(ws) = s.graph.get(v) {
            for w in ws {
                let Some((w, _)) = s.graph.get_key_value(w) else {
                    continue;
                };
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.push(w.join("::"));
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.circles.push(comp);
            }
        }
    }
    let mut s = State {
        graph: &graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        circles: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    let lines: Vec<String> = s
        .circles
        .iter()
        .map(|c| {
            let members: BTreeSet<&String> = c.iter().collect();
            let ties: Vec<String> = c
                .iter()
                .flat_map(|from| {
                    let key: Vec<String> = from.split("::").map(String::from).collect();
                    graph[&key]
                        .iter()
                        .map(|t| t.join("::"))
                        .filter(|t| members.contains(t))
                        .map(move |t| format!("{from} -> {t}"))
                        .collect::<Vec<_>>()
                })
                .collect();
            format!("{} modules: {}", c.len(), ties.join(", "))
        })
        .collect();
    assert!(
        lines.is_empty(),
        "modules that import each other round a circle:\n{}",
        lines.join("\n")
    );
}

#[test]
fn the_reader_sees_imports_in_every_form() {
    let code = "use super::{sync::{Emitter, take_kv}, connect::error_chain};\nuse crate::store::{Session, metrics::ScrapeDigest};\nlet x = crate::model::prefix_end(p);\nuse super::super::keyspace::Slot;\n";
    let sup = paths_after(code, "super::");
    assert!(
        sup.contains(&vec!["sync".into(), "Emitter".into()]),
        "{sup:?}"
    );
    assert!(
        sup.contains(&vec!["connect".into(), "error_chain".into()]),
        "{sup:?}"
    );
    assert!(
        sup.contains(&vec!["super".into(), "keyspace".into(), "Slot".into()]),
        "{sup:?}"
    );
    let cr = paths_after(code, "crate::");
    assert!(
        cr.contains(&vec!["store".into(), "Session".into()]),
        "{cr:?}"
    );
    assert!(
        cr.contains(&vec![
            "store".into(),
            "metrics".into(),
            "ScrapeDigest".into()
        ]),
        "{cr:?}"
    );
    assert!(
        cr.contains(&vec!["model".into(), "prefix_end".into()]),
        "{cr:?}"
    );
    assert_eq!(
        code_of("let a = 1; // crate::tui\n#[cfg(test)]\nuse crate::tui;\n"),
        "let a = 1; \n"
    );
}
