#!/usr/bin/env bash
# Regenerates recordings/demo.rgs: a real `regscope demo` session recorded headless for
# 90 s, with compactions every 20 s (through compact_rev_key, as kube-apiserver does), a
# slow events watcher that falls out of the simulated apiserver's watch cache and gets
# 410 Gone, and the private etcd killed and restarted after 45 s.
# Usage: scripts/record-demo.sh [OUT]   (default recordings/demo.rgs)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-recordings/demo.rgs}"
mkdir -p "$(dirname "$out")"
scripts/setup.sh
cargo run --release --locked -- demo \
  --record "$out" --duration 90s \
  --rate 40 --compact-interval 20 \
  --slow-watcher events --slow-watcher-delay 400ms \
  --restart-etcd-after 45s \
  --scrape-interval 5s
cargo run --release --locked -- replay --check "$out"
