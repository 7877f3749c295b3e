//! `regscope decode` end to end: the real binary on the field cases (value bytes altered on the
//! way in, custom resources stored as JSON, kinds the decoder does not know, mixed encrypted
//! and plain Secrets), on `etcdctl get -w json` output from a real etcd, and on bad input.
//! stdout must carry only the object (parsed here with serde_json / serde_norway); the header
//! and every error go to stderr.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine as _;
use serde_json::Value;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

// Value bytes altered on the way in: a Pod, and the same Pod after CR LF translation.
const POD_P1: &str = "6b3873000a090a0276311203506f64120f0a0d0a0270311a0764656661756c741a002200";
const POD_P1_CRLF: &str =
    "6b3873000d0a090d0a0276311203506f64120f0d0a0d0d0a0270311a0764656661756c741a0022000d0a";
// A kind the decoder does not know: an OpenShift Build.
const BUILD_B1: &str = "6b3873000a1e0a156275696c642e6f70656e73686966742e696f2f763112054275696c64120b0a090a0262311a036e73311a002200";
// Secrets left mixed encrypted and plain (s1 aescbc, s2 aesgcm, s3 identity).
use fixtures::{
    KEY_A, KEY_B, KEY_G, MIXED_SECRET_S1 as S1, MIXED_SECRET_S2 as S2, MIXED_SECRET_S3 as S3,
    WIDGET_W1,
};
/// A plain Secret default/s4 with `data: {password: hunter2}` (the mixed-encryption s1–s3 hold
/// no data).
const S4_WITH_DATA: &str = "6b3873000a0c0a02763112065365637265741224\
0a0d0a0273341a0764656661756c74\
12130a0870617373776f7264120768756e74657232\
1a002200";
use crate::common::fixtures;
use crate::common::require;

use crate::common::decode_cli::{finish, json, BIN, WIDGET_KEY};
use fixtures::hex as unhex;

/// Runs `regscope decode <args>` with `stdin` and returns (exit code, stdout, stderr).
fn decode(args: &[&str], stdin: &[u8]) -> (i32, Vec<u8>, String) {
    let mut child = Command::new(BIN)
        .arg("decode")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run regscope");
    let mut sin = child.stdin.take().unwrap();
    // Written from a thread: regscope writes etcdctl JSON's objects while it still reads
    // the input, and a pipe holds only 64 KiB either way. Errors are ignored: regscope
    // may exit without reading stdin (a FILE argument, a usage error).
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = sin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    finish(out)
}

fn yaml(stdout: &[u8]) -> Value {
    serde_norway::from_slice(stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not YAML: {e}\n{}",
            String::from_utf8_lossy(stdout)
        )
    })
}

/// All YAML documents in stdout (separated by `---`).
fn yaml_docs(stdout: &[u8]) -> Vec<Value> {
    use serde::Deserialize;
    serde_norway::Deserializer::from_slice(stdout)
        .map(|d| Value::deserialize(d).expect("YAML document"))
        .collect()
}

fn write_temp(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The mixed-encryption EncryptionConfiguration: aescbc key1 (= `key1`), aesgcm key2 = G,
/// identity.
fn enc_config(dir: &Path, name: &str, key1: &str) -> PathBuf {
    write_temp(
        dir,
        name,
        fixtures::mixed_encryption_config(key1).as_bytes(),
    )
}

#[test]
fn pod_hex_decodes_to_yaml() {
    let (code, out, err) = decode(&["--key", "/registry/pods/default/p1"], POD_P1.as_bytes());
    assert_eq!(code, 0, "{err}");
    let text = String::from_utf8(out.clone()).unwrap();
    assert!(text.contains("kind: Pod"), "{text}");
    assert!(text.contains("name: p1"), "{text}");
    let v = yaml(&out);
    assert_eq!(v["apiVersion"], "v1");
    assert_eq!(v["metadata"]["namespace"], "default");
    assert!(err.contains("# resource  pods"), "{err}");
    assert!(err.contains("# format    protobuf"), "{err}");
    assert!(err.contains("# schema    Kubernetes 1."), "{err}");
    assert!(err.contains("api.core.v1.Pod"), "{err}");
    // The header goes to stderr only; no input form is named without -v.
    assert!(!err.contains("hex text"), "{err}");
    let (_, _, err) = decode(&["-v"], POD_P1.as_bytes());
    assert!(err.contains("# input     hex text (36 bytes)"), "{err}");
    // The same bytes raw, from a FILE, and as `0x` hex with line breaks.
    let dir = tempfile::tempdir().unwrap();
    let f = write_temp(dir.path(), "p1.bin", &unhex(POD_P1));
    let (code, out, err) = decode(&[f.to_str().unwrap(), "-v"], b"");
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("raw value bytes (36 bytes)"), "{err}");
    assert_eq!(yaml(&out)["metadata"]["name"], "p1");
    let wrapped = format!("0x{}\n{}\n", &POD_P1[..40], &POD_P1[40..]);
    let (code, out, _) = decode(&["-o", "json"], wrapped.as_bytes());
    assert_eq!(code, 0);
    assert_eq!(json(&out)["metadata"]["name"], "p1");
}

#[test]
fn crlf_mangled_value_is_a_precise_error() {
    for input in [POD_P1_CRLF.as_bytes().to_vec(), unhex(POD_P1_CRLF)] {
        let (code, out, err) = decode(&[], &input);
        assert_eq!(code, 1, "{err}");
        assert!(out.is_empty(), "stdout: {}", String::from_utf8_lossy(&out));
        assert!(
            err.contains("offset 4, field 1: unexpected wire type 5"),
            "{err}"
        );
        assert!(err.contains("CR LF"), "{err}");
        // The raw bytes stay visible as hex.
        assert!(err.contains("6b 38 73 00 0d 0a 09 0d"), "{err}");
        let error_lines: Vec<&str> = err.lines().filter(|l| l.starts_with("regscope:")).collect();
        assert_eq!(error_lines.len(), 1, "{err}");
    }
}

#[test]
fn json_custom_resource_in_every_output_mode() {
    assert_eq!(WIDGET_W1.len(), 201, "the exact text of field-cases.md");
    let (code, out, err) = decode(&["--key", WIDGET_KEY], WIDGET_W1.as_bytes());
    assert_eq!(code, 0, "{err}");
    let v = yaml(&out);
    assert_eq!(v["kind"], "Widget");
    assert_eq!(v["apiVersion"], "example.com/v1");
    assert_eq!(v["metadata"]["name"], "w1");
    assert_eq!(v["spec"]["size"], 3);
    assert!(err.contains("# resource  widgets.example.com"), "{err}");
    assert!(err.contains("# format    json"), "{err}");

    let (code, out, err) = decode(&["--key", WIDGET_KEY, "-o", "json"], WIDGET_W1.as_bytes());
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    assert_eq!(v["metadata"]["namespace"], "default");
    assert_eq!(v["spec"]["size"], 3);
    assert!(err.contains("widgets.example.com"), "{err}");

    // raw: the bytes exactly as received (stdout is a pipe here).
    let (code, out, err) = decode(&["--key", WIDGET_KEY, "-o", "raw"], WIDGET_W1.as_bytes());
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, WIDGET_W1.as_bytes());

    // An invalid JSON value is an error, not an empty object.
    let (code, out, err) = decode(&["--key", WIDGET_KEY], &WIDGET_W1.as_bytes()[..100]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty());
    assert!(
        err.contains(&format!("regscope: {WIDGET_KEY}: JSON: ")),
        "{err}"
    );
}

#[test]
fn unknown_kind_is_not_an_error() {
    let (code, out, err) = decode(
        &["--key", "/kubernetes.io/builds/ns1/b1"],
        BUILD_B1.as_bytes(),
    );
    assert_eq!(code, 0, "{err}");
    let v = yaml(&out);
    assert_eq!(v["apiVersion"], "build.openshift.io/v1");
    assert_eq!(v["kind"], "Build");
    assert_eq!(v["metadata"]["name"], "b1");
    assert_eq!(v["metadata"]["namespace"], "ns1");
    assert!(err.contains("schema unknown"), "{err}");
    assert!(!err.contains("regscope:"), "no error line: {err}");
    let (code, out, _) = decode(&["-o", "json"], BUILD_B1.as_bytes());
    assert_eq!(code, 0);
    assert_eq!(json(&out)["metadata"]["name"], "b1");
}

#[test]
fn mixed_encrypted_and_plain_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = enc_config(dir.path(), "enc.yaml", KEY_A);
    let cfg = cfg.to_str().unwrap();
    for (name, hex, label) in [
        ("s1", S1, "encrypted aescbc:key1, decrypted"),
        ("s2", S2, "encrypted aesgcm:key2, decrypted"),
        ("s3", S3, "not encrypted (identity)"),
    ] {
        let key = format!("/registry/secrets/default/{name}");
        let (code, out, err) = decode(&["--key", &key, "--encryption-config", cfg], hex.as_bytes());
        assert_eq!(code, 0, "{name}: {err}");
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.contains("kind: Secret"), "{text}");
        assert!(text.contains(&format!("name: {name}")), "{text}");
        assert_eq!(yaml(&out)["metadata"]["namespace"], "default");
        assert!(err.contains(label), "{name}: {err}");
        assert!(err.contains("# resource  secrets"), "{err}");
    }

    // The s2 bytes under another key: aesgcm authenticated the path they were written under.
    let (code, out, err) = decode(
        &[
            "--key",
            "/registry/secrets/default/s2-copy",
            "--encryption-config",
            cfg,
        ],
        S2.as_bytes(),
    );
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty());
    assert!(
        err.contains("authentication failed: ciphertext is bound to a different key path"),
        "{err}"
    );

    // key1 = B: aescbc "decrypts" into noise, which must not pass as a value.
    let cfg_b = enc_config(dir.path(), "enc-b.yaml", KEY_B);
    let (code, out, err) = decode(
        &[
            "--key",
            "/registry/secrets/default/s1",
            "--encryption-config",
            cfg_b.to_str().unwrap(),
        ],
        S1.as_bytes(),
    );
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty());
    assert!(
        err.contains("key1 is configured but does not match the key that wrote this value"),
        "{err}"
    );

    // No configuration at all.
    let (code, out, err) = decode(&["--key", "/registry/secrets/default/s1"], S1.as_bytes());
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("--encryption-config"), "{err}");
    assert!(
        err.contains("encrypted aescbc:key1, not decrypted"),
        "{err}"
    );

    // -o raw prints the stored ciphertext, never the plaintext.
    let (code, out, err) = decode(
        &[
            "--key",
            "/registry/secrets/default/s1",
            "--encryption-config",
            cfg,
            "-o",
            "raw",
        ],
        S1.as_bytes(),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, unhex(S1));
}

/// Secret data is `<redacted: N bytes>` unless --show-secrets, plain or encrypted, in YAML,
/// JSON and raw output.
#[test]
fn secret_data_is_redacted_unless_asked() {
    use aes_gcm::aead::{Aead, KeyInit, Payload};
    let key = "/registry/secrets/default/s4";
    let plain = unhex(S4_WITH_DATA);
    // aesgcm with key G, as kube-apiserver writes it: prefix, 12-byte nonce, sealed payload
    // with the etcd key as authenticated data.
    let cipher = aes_gcm::Aes256Gcm::new_from_slice(&B64.decode(KEY_G).unwrap()).unwrap();
    let nonce = [7u8; 12];
    let sealed = cipher
        .encrypt(
            aes_gcm::Nonce::from_slice(&nonce),
            Payload {
                msg: &plain,
                aad: key.as_bytes(),
            },
        )
        .unwrap();
    let mut encrypted = b"k8s:enc:aesgcm:v1:key2:".to_vec();
    encrypted.extend_from_slice(&nonce);
    encrypted.extend_from_slice(&sealed);

    let dir = tempfile::tempdir().unwrap();
    let cfg = enc_config(dir.path(), "enc.yaml", KEY_A);
    let cfg = cfg.to_str().unwrap();
    for value in [plain.clone(), encrypted] {
        let (code, out, err) = decode(&["--key", key, "--encryption-config", cfg], &value);
        assert_eq!(code, 0, "{err}");
        let text = String::from_utf8_lossy(&out);
        assert!(!text.contains("aHVudGVyMg=="), "{text}");
        assert_eq!(yaml(&out)["data"]["password"], "<redacted: 7 bytes>");
        assert!(
            !err.contains("hunter2") && !err.contains("68 75 6e"),
            "{err}"
        );
        let (code, out, _) = decode(
            &["--key", key, "--encryption-config", cfg, "-o", "json"],
            &value,
        );
        assert_eq!(code, 0);
        assert_eq!(json(&out)["data"]["password"], "<redacted: 7 bytes>");
        let (code, out, err) = decode(
            &[
                "--key",
                key,
                "--encryption-config",
                cfg,
                "-o",
                "json",
                "--show-secrets",
            ],
            &value,
        );
        assert_eq!(code, 0, "{err}");
        assert_eq!(json(&out)["data"]["password"], B64.encode("hunter2"));
    }
    // The plain Secret's stored bytes hold the data in the clear: -o raw needs --show-secrets.
    let (code, out, err) = decode(&["--key", key, "-o", "raw"], &plain);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("--show-secrets"), "{err}");
    let (code, out, _) = decode(&["--key", key, "-o", "raw", "--show-secrets"], &plain);
    assert_eq!(code, 0);
    assert_eq!(out, plain);
    // Under secrets/ but not a Secret: redacted whole, and no hex dump of its bytes.
    let (code, out, err) = decode(&["--key", key], b"password=hunter2");
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(err.contains("redacted whole"), "{err}");
    assert!(
        !err.contains("hunter2") && !err.contains("68 75 6e"),
        "{err}"
    );
}

#[test]
fn bad_encryption_config_is_exit_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write_temp(
        dir.path(),
        "bad-enc.yaml",
        b"apiVersion: v1\nkind: ConfigMap\n",
    );
    let (code, out, err) = decode(
        &["--encryption-config", bad.to_str().unwrap()],
        S1.as_bytes(),
    );
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("bad-enc.yaml"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let missing = dir.path().join("missing.yaml");
    let (code, _, err) = decode(
        &["--encryption-config", missing.to_str().unwrap()],
        S1.as_bytes(),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("missing.yaml"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn bad_input_is_exit_1_with_a_clear_message() {
    let (code, out, err) = decode(&[], b"");
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty());
    assert!(err.starts_with("regscope: no input"), "{err}");

    let (code, out, err) = decode(&[], br#"{"kvs":[{"key":1}]}"#);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty());
    assert!(
        err.contains("etcdctl JSON: kvs[0].key: expected a base64 string, found 1"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    let (code, _, err) = decode(
        &[],
        br#"{"header":{"revision":3},"kvs":[{"key":"L3g=","value":"%%"}]}"#,
    );
    assert_eq!(code, 1);
    assert!(err.contains("kvs[0].value: not base64"), "{err}");

    let (code, _, err) = decode(&[], br#"{"header":{"revision":3},"count":0}"#);
    assert_eq!(code, 1);
    assert!(err.contains("holds no kvs"), "{err}");

    let (code, _, err) = decode(&[], b"\x01\x02 not kubernetes");
    assert_eq!(code, 1);
    assert!(err.contains("not a Kubernetes encoding"), "{err}");

    let (code, _, err) = decode(&["/nonexistent/value.bin"], b"");
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/value.bin"), "{err}");

    // Connection flags belong to the console, snapshot and verify, not to decode.
    let (code, _, err) = decode(&["--endpoints", "http://127.0.0.1:1"], POD_P1.as_bytes());
    assert_eq!(code, 2, "{err}");
}

/// etcdctl JSON as etcdctl 3.4/3.5 writes it, with several kvs.
fn etcdctl_json(kvs: &[(&str, &[u8], i64)]) -> Vec<u8> {
    let kvs: Vec<Value> = kvs
        .iter()
        .map(|(k, v, rev)| {
            serde_json::json!({
                "key": B64.encode(k), "create_revision": rev, "mod_revision": rev,
                "version": 1, "value": B64.encode(v),
            })
        })
        .collect();
    let n = kvs.len();
    serde_json::to_vec(&serde_json::json!({
        "header": {"cluster_id": 14841639068965178418u64, "member_id": 10276657743932975437u64,
                   "revision": 20, "raft_term": 2},
        "kvs": kvs, "count": n,
    }))
    .unwrap()
}

#[test]
fn etcdctl_json_several_kvs_some_failing() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = enc_config(dir.path(), "enc.yaml", KEY_A);
    let s2 = unhex(S2);
    let input = etcdctl_json(&[
        ("/registry/pods/default/p1", &unhex(POD_P1), 5),
        ("/registry/secrets/default/s2", &s2, 6),
        ("/registry/secrets/default/s2-copy", &s2, 7),
        (WIDGET_KEY, WIDGET_W1.as_bytes(), 8),
    ]);
    let args = ["--encryption-config", cfg.to_str().unwrap()];
    let (code, out, err) = decode(&[&args[..], &["-o", "json"]].concat(), &input);
    assert_eq!(code, 1, "s2-copy fails: {err}");
    let v = json(&out);
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["p1", "s2", "w1"]);
    assert_eq!(v[0]["metadata"]["resourceVersion"], "5");
    assert_eq!(v[2]["metadata"]["resourceVersion"], "8");
    // The copy is recognised as such thanks to the other kv with the same bytes.
    assert!(
        err.contains(
            "regscope: /registry/secrets/default/s2-copy: authentication failed: ciphertext is \
             bound to a different key path (written under /registry/secrets/default/s2)"
        ),
        "{err}"
    );
    assert!(
        err.contains("# revision  create 7, mod 7, version 1"),
        "{err}"
    );
    assert!(err.contains("1 of 4 values not decoded"), "{err}");

    let (code, out, err) = decode(&args, &input);
    assert_eq!(code, 1, "{err}");
    let docs = yaml_docs(&out);
    assert_eq!(docs.len(), 3, "{}", String::from_utf8_lossy(&out));
    assert_eq!(docs[1]["kind"], "Secret");
    assert_eq!(docs[2]["kind"], "Widget");

    // -o raw takes exactly one value.
    let (code, out, err) = decode(&[&args[..], &["-o", "raw"]].concat(), &input);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(err.contains("-o raw writes one value"), "{err}");
}

/// A big `etcdctl get -w json` export goes through as a stream: every kv comes out, in
/// order, in each output form; a document cut short keeps what came before it (a JSON
/// array still closed) and says where it broke.
#[test]
fn etcdctl_json_export_streams_in_every_output_form() {
    require!(TESTDATA);
    let td = fixtures::testdata();
    let pod = std::fs::read(td.join("k8s-api/head/core.v1.Pod.pb")).unwrap();
    // 13.5 KB each: every field of a Pod filled in.
    let n = 400;
    let keys: Vec<String> = (0..n)
        .map(|i| format!("/registry/pods/ns{}/p{i:05}", i % 7))
        .collect();
    let kvs: Vec<(&str, &[u8], i64)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), pod.as_slice(), i as i64 + 2))
        .collect();
    let input = etcdctl_json(&kvs);

    let (code, out, err) = decode(&["-o", "jsonl"], &input);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Value> = out
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(lines.len(), n);
    assert!(lines.iter().all(|o| o["kind"] == "Pod"));
    assert_eq!(lines[0]["metadata"]["resourceVersion"], "2");
    assert_eq!(
        lines[n - 1]["metadata"]["resourceVersion"],
        (n + 1).to_string()
    );

    let (code, out, err) = decode(&["-o", "json", "-v"], &input);
    assert_eq!(code, 0, "{err}");
    let arr = json(&out);
    assert_eq!(arr.as_array().map(Vec::len), Some(n));
    assert_eq!(arr[17], lines[17]);
    assert!(
        err.contains(&format!("# input     etcdctl get -w json output ({n} kvs)")),
        "{err}"
    );

    let (code, out, err) = decode(&[], &input);
    assert_eq!(code, 0, "{err}");
    let docs = yaml_docs(&out);
    assert_eq!(docs.len(), n);
    assert_eq!(docs[n - 1], lines[n - 1]);

    // Cut in the middle of the 301st kv.
    let mut cut_at = 0;
    let mut seen = 0;
    for (i, w) in input.windows(6).enumerate() {
        if w == b"\"key\":" {
            seen += 1;
            if seen == 301 {
                cut_at = i + 20;
                break;
            }
        }
    }
    // An empty value (etcdctl leaves `value` out) is that kv's failure alone.
    let mut holed: Value = serde_json::from_slice(&input).unwrap();
    holed["kvs"][5].as_object_mut().unwrap().remove("value");
    let (code, out, err) = decode(&["-o", "jsonl"], &serde_json::to_vec(&holed).unwrap());
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        out.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count(),
        n - 1
    );
    assert!(err.contains("p00005: empty value"), "{err}");
    assert!(
        err.contains(&format!("1 of {n} values not decoded")),
        "{err}"
    );

    let cut = &input[..cut_at];
    let (code, out, err) = decode(&["-o", "json"], cut);
    assert_eq!(code, 1, "{err}");
    assert_eq!(json(&out).as_array().map(Vec::len), Some(300));
    assert!(err.contains("etcdctl JSON: not valid JSON: "), "{err}");
    assert!(
        err.contains("stopped after 300 kv(s) (0 not decoded)"),
        "{err}"
    );
}

/// Shell completions and the manual page are made from the command-line definitions: every
/// subcommand and flag appears, and each shell's script is in that shell's form.
#[test]
fn completions_and_the_man_page_come_from_the_flags() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_regscope"))
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    for (shell, form) in [
        ("bash", "complete -F _regscope"),
        ("zsh", "#compdef regscope"),
        ("fish", "complete -c regscope"),
    ] {
        let script = run(&["completions", shell]);
        assert!(script.contains(form), "{shell}: {script:.200}");
        for word in ["replay", "endpoints", "etcd-metrics-url"] {
            assert!(script.contains(word), "{shell} lacks {word}");
        }
    }
    let man = run(&["man"]);
    assert!(man.contains(".TH regscope 1"), "{man:.200}");
    for word in ["replay", "record", "ETCDCTL_ENDPOINTS", "Examples"] {
        assert!(man.contains(word), "the man page lacks {word}");
    }
    // An unknown shell is a usage error naming the choices.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_regscope"))
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bash"));
}
