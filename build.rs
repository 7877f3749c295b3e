//! Compiles the Kubernetes `generated.proto` files shipped inside the `k8s-rs-pb` crate
//! (Kubernetes 1.30–1.35, Apache-2.0) into protobuf descriptor sets with `protox`, so that
//! `src/decode/schema.rs` can resolve every built-in kind without hand-written field tables
//! and without copying any .proto file into this repository.
//!
//! Outputs in `OUT_DIR`:
//! - `k8s-<version>.fds`: an encoded `FileDescriptorSet` per Kubernetes minor version
//!   (source info stripped);
//! - `k8s-optional.txt`: one `package.Message.field` per line for every field whose comment
//!   carries the `+optional` marker in any version (the Kubernetes API convention that goes
//!   with `omitempty` in the Go struct tag);
//! - `k8s-named-slices.txt`: one `package.Message` per line for messages marked
//!   `+protobuf.nullable=true`, which go-to-protobuf generates for named Go slice types
//!   (`type Verbs []string`) whose JSON form is the bare array.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Schema versions compiled, oldest first. Each is a folder `src/v1_NN` of k8s-rs-pb.
const VERSIONS: [&str; 6] = ["v1_30", "v1_31", "v1_32", "v1_33", "v1_34", "v1_35"];
const CRATE_DIR: &str = "k8s-rs-pb-0.5.0";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let root = find_k8s_rs_pb().unwrap_or_else(|e| {
        panic!("cannot find the k8s-rs-pb sources ({e}); run `cargo fetch` first")
    });
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let mut optional = BTreeSet::new();
    let mut slices = BTreeSet::new();
    for version in VERSIONS {
        let dir = root.join("src").join(version);
        let mut files = Vec::new();
        collect_protos(&dir, &dir, &mut files);
        files.sort();
        let mut compiler = protox::Compiler::new([&dir]).expect("protox include path");
        compiler.include_source_info(true).include_imports(true);
        compiler
            .open_files(&files)
            .unwrap_or_else(|e| panic!("compiling Kubernetes {version} protos: {e}"));
        let mut set = compiler.file_descriptor_set();
        for file in &mut set.file {
            collect_optional(file, &mut optional);
            collect_named_slices(file, &mut slices);
            file.source_code_info = None;
        }
        let bytes = prost::Message::encode_to_vec(&set);
        std::fs::write(out.join(format!("k8s-{version}.fds")), bytes).expect("write fds");
    }
    let text: String = optional.into_iter().map(|s| s + "\n").collect();
    std::fs::write(out.join("k8s-optional.txt"), text).expect("write optional list");
    let text: String = slices.into_iter().map(|s| s + "\n").collect();
    std::fs::write(out.join("k8s-named-slices.txt"), text).expect("write named slices");
}

/// `package.Message` for top-level messages whose leading comment holds
/// `+protobuf.nullable=true`.
fn collect_named_slices(file: &prost_types::FileDescriptorProto, out: &mut BTreeSet<String>) {
    let Some(info) = &file.source_code_info else {
        return;
    };
    for loc in &info.location {
        if let [4, m] = loc.path[..] {
            let marked = loc
                .leading_comments
                .as_deref()
                .is_some_and(|c| c.lines().any(|l| l.trim() == "+protobuf.nullable=true"));
            if marked {
                let msg = &file.message_type[m as usize];
                out.insert(format!("{}.{}", file.package(), msg.name()));
            }
        }
    }
}

/// `package.Message.field` for every top-level message field whose leading comment holds
/// `+optional`.
fn collect_optional(file: &prost_types::FileDescriptorProto, out: &mut BTreeSet<String>) {
    let Some(info) = &file.source_code_info else {
        return;
    };
    let pkg = file.package();
    for loc in &info.location {
        // [4, message index, 2, field index] = a field of a top-level message.
        if let [4, m, 2, f] = loc.path[..] {
            let optional = loc
                .leading_comments
                .as_deref()
                .is_some_and(|c| c.lines().any(|l| l.trim() == "+optional"));
            if !optional {
                continue;
            }
            let msg = &file.message_type[m as usize];
            let field = &msg.field[f as usize];
            out.insert(format!("{pkg}.{}.{}", msg.name(), field.name()));
        }
    }
}

fn collect_protos(base: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            collect_protos(base, &path, out);
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path.strip_prefix(base).expect("under base").to_path_buf());
        }
    }
}

/// The unpacked k8s-rs-pb package: first `cargo metadata` (works with vendored sources),
/// then the default registry cache under `$CARGO_HOME`.
fn find_k8s_rs_pb() -> Result<PathBuf, String> {
    if let Some(dir) = from_registry_cache() {
        return Ok(dir);
    }
    from_cargo_metadata()
}

fn from_registry_cache() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let src = home.join("registry").join("src");
    let mut found: Vec<PathBuf> = std::fs::read_dir(src)
        .ok()?
        .flatten()
        .map(|e| e.path().join(CRATE_DIR))
        .filter(|p| p.join("src").join(VERSIONS[0]).is_dir())
        .collect();
    found.sort();
    found.pop()
}

fn from_cargo_metadata() -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = std::env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?;
    let output = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--manifest-path",
        ])
        .arg(Path::new(&manifest).join("Cargo.toml"))
        .output()
        .map_err(|e| format!("running cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&output.stdout);
    // Find `"manifest_path":"…/k8s-rs-pb-0.5.0/Cargo.toml"` without a JSON parser.
    let needle = format!("{CRATE_DIR}/Cargo.toml");
    let end = text
        .find(&needle)
        .ok_or("k8s-rs-pb is not in cargo metadata")?;
    let start = text[..end].rfind('"').ok_or("malformed cargo metadata")? + 1;
    Ok(PathBuf::from(&text[start..end + CRATE_DIR.len()]))
}
