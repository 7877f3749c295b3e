//! `regscope decode` on bytes in memory: input forms, output forms, headers, errors and
//! the guards of `-o raw`.

use serde_json::Value;

use super::input::parse_hex;
use super::*;
use base64::Engine as _;

const POD: &str = "6b3873000a090a0276311203506f64120f0a0d0a0270311a0764656661756c741a002200";

fn unhex(s: &str) -> Vec<u8> {
    parse_hex(s.as_bytes()).unwrap().unwrap()
}

fn req(output: DecodeOutput) -> Request<'static> {
    Request {
        output,
        show_secrets: false,
        keyring: None,
        verbose: true,
        stdout_is_terminal: false,
        key_given: false,
    }
}

fn run_on(bytes: &[u8], key: &[u8], r: &Request<'_>) -> (u8, String, String) {
    let input = match parse_input(bytes, key) {
        Ok(i) => i,
        Err(e) => return (1, String::new(), e),
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = write_decoded(&input, r, &mut out, &mut err).unwrap();
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[test]
fn input_forms() {
    let i = parse_input(POD.as_bytes(), b"/registry/pods/default/p1").unwrap();
    assert_eq!(i.form, InputForm::Hex);
    assert_eq!(i.kvs[0].value.len(), 36);
    assert_eq!(i.kvs[0].key, b"/registry/pods/default/p1");
    let spaced = format!("0x{}\n", POD.replace("0a", "0A ").replace("00", "00\n"));
    assert_eq!(
        parse_input(spaced.as_bytes(), b"").unwrap().kvs[0].value,
        unhex(POD)
    );
    let raw = unhex(POD);
    let i = parse_input(&raw, b"").unwrap();
    assert_eq!((i.form, i.kvs[0].value.clone()), (InputForm::Raw, raw));
    // A stored JSON object is a value, not etcdctl output.
    let w = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"header":1}"#;
    assert_eq!(parse_input(w, b"").unwrap().form, InputForm::Raw);
    assert!(parse_input(b"abc", b"").unwrap_err().contains("odd number"));
    assert!(parse_input(b"", b"").unwrap_err().starts_with("no input"));
    assert!(parse_input(b" \n", b"")
        .unwrap_err()
        .starts_with("no input"));
}

#[test]
fn etcdctl_json_fields() {
    let json = format!(
        r#"{{"header":{{"cluster_id":14841639068965178418,"revision":9}},"kvs":[{{"key":"{}","create_revision":"2","mod_revision":7,"version":3,"value":"{}","lease":7587}}],"count":1}}"#,
        base64::engine::general_purpose::STANDARD.encode("/registry/pods/default/p1"),
        base64::engine::general_purpose::STANDARD.encode(unhex(POD)),
    );
    let i = parse_input(json.as_bytes(), b"").unwrap();
    assert_eq!(i.form, InputForm::EtcdctlJson);
    let kv = &i.kvs[0];
    assert_eq!(
        (kv.create_revision, kv.mod_revision, kv.version, kv.lease),
        (Some(2), Some(7), Some(3), Some(7587))
    );
    for (bad, want) in [
        (
            r#"{"kvs":[{"key":1}]}"#,
            "kvs[0].key: expected a base64 string, found 1",
        ),
        (r#"{"kvs":[{"key":"!!"}]}"#, "kvs[0].key: not base64"),
        (
            r#"{"kvs":[{"key":"YQ==","value":"YQ==","mod_revision":true}]}"#,
            "kvs[0].mod_revision: expected an integer, found true",
        ),
        (r#"{"kvs":{}}"#, "kvs: expected an array, found an object"),
        (r#"{"kvs":[3]}"#, "kvs[0]: expected an object, found 3"),
        (
            r#"{"header":{"revision":1},"kvs":["#,
            "etcdctl JSON: not valid JSON",
        ),
    ] {
        let e = parse_input(bad.as_bytes(), b"").unwrap_err();
        assert!(e.contains(want), "{bad}: {e}");
    }
    let (code, out, err) = run_on(
        br#"{"header":{"revision":5},"count":0}"#,
        b"",
        &req(DecodeOutput::Yaml),
    );
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.contains("holds no kvs"), "{err}");
}

#[test]
fn yaml_json_and_errors() {
    let (code, out, err) = run_on(
        POD.as_bytes(),
        b"/registry/pods/default/p1",
        &req(DecodeOutput::Yaml),
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("kind: Pod") && out.contains("name: p1"),
        "{out}"
    );
    assert!(err.contains("# input     hex text (36 bytes)"), "{err}");
    assert!(err.contains("# resource  pods"), "{err}");
    let (code, out, _) = run_on(POD.as_bytes(), b"", &req(DecodeOutput::Json));
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["metadata"]["namespace"], "default");
    // Not a Kubernetes encoding: exit 1, the message and a hex dump on stderr.
    let (code, out, err) = run_on(b"hello world\x00\x01", b"", &req(DecodeOutput::Yaml));
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(
        err.contains("regscope: value: not a Kubernetes encoding"),
        "{err}"
    );
    assert!(err.contains("#   00000000  68 65 6c 6c 6f"), "{err}");
    // Invalid JSON value.
    let (code, _, err) = run_on(
        b"{\"kind\":",
        b"/registry/example.com/widgets/default/w1",
        &req(DecodeOutput::Json),
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("regscope: /registry/example.com/widgets/default/w1: JSON: EOF"),
        "{err}"
    );
}

#[test]
fn non_utf8_key_is_escaped_in_the_header() {
    // Not UTF-8: /registry/configmaps/default/cm followed by a stray byte 0xff.
    let key = unhex("2f72656769737472792f636f6e6669676d6170732f64656661756c742f636dff");
    let (code, _, err) = run_on(POD.as_bytes(), &key, &req(DecodeOutput::Yaml));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("# key       /registry/configmaps/default/cm\\xff"),
        "{err}"
    );
    assert!(err.contains("# resource  configmaps"), "{err}");
}

#[test]
fn raw_output_guards() {
    let pod = unhex(POD);
    let (code, out, _) = run_on(POD.as_bytes(), b"", &req(DecodeOutput::Raw));
    assert_eq!((code, out.as_bytes()), (0, pod.as_slice()));
    let tty = Request {
        stdout_is_terminal: true,
        ..req(DecodeOutput::Raw)
    };
    let (code, out, err) = run_on(POD.as_bytes(), b"", &tty);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.contains("binary bytes to a terminal"), "{err}");
    // An unencrypted Secret is plaintext: only with --show-secrets.
    let s3 = "6b3873000a0c0a0276311206536563726574120f0a0d0a0273331a0764656661756c741a002200";
    let (code, out, err) = run_on(s3.as_bytes(), b"", &req(DecodeOutput::Raw));
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.contains("--show-secrets"), "{err}");
    let show = Request {
        show_secrets: true,
        ..req(DecodeOutput::Raw)
    };
    assert_eq!(run_on(s3.as_bytes(), b"", &show).0, 0);
}

#[test]
fn secret_bytes_never_dumped() {
    // Under secrets/ but not decodable: the error, no hex dump of the bytes.
    let (code, _, err) = run_on(
        b"top secret",
        b"/registry/secrets/default/x",
        &req(DecodeOutput::Yaml),
    );
    assert_eq!(code, 1);
    assert!(!err.contains("74 6f 70"), "{err}");
    assert!(err.contains("redacted whole"), "{err}");
}
