//! Helpers shared by the `regscope decode` tests of both binaries: the binary, the Widget
//! custom resource's key, and reading the command's exit code and output.
#![allow(dead_code)]

use std::process::Output;

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_regscope");

pub const WIDGET_KEY: &str = "/registry/example.com/widgets/default/w1";

pub fn finish(out: Output) -> (i32, Vec<u8>, String) {
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn json(stdout: &[u8]) -> Value {
    serde_json::from_slice(stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON: {e}\n{}",
            String::from_utf8_lossy(stdout)
        )
    })
}
