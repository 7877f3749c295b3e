#!/usr/bin/env bash
# The project's test command: installs what the tests need (etcd from Debian's etcd-server,
# protoc, tmux) when missing, then builds and runs every test (unit, integration against real
# etcd processes on loopback, TUI snapshots, end-to-end in tmux).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo test --locked -- --test-threads=2
