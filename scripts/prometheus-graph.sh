#!/usr/bin/env bash
# Makes screenshots/prometheus-informer-lag.png: Prometheus' own graph of regscope's
# informer lag against the compaction window, from a real run. Starts `regscope demo
# --listen` with a slow events watcher (its lag grows past the window), Debian's
# prometheus scraping it every 2 s with deploy/prometheus/regscope-rules.yml loaded, waits
# DURATION seconds (default 240), then has headless chromium draw Prometheus' graph page.
# Needs etcd, prometheus and chromium (scripts/setup.sh); builds the release binary.
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${DURATION:-240}"
cargo build --release --quiet
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rs_port="$(free_port)"
prom_port="$(free_port)"
target/release/regscope demo --listen "127.0.0.1:$rs_port" --slow-watcher events \
  --watch-cache-capacity 99999 --compact-interval 30 2>"$work/demo.log" &
pids+=($!)
cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 2s
  evaluation_interval: 2s
rule_files:
  - $PWD/deploy/prometheus/regscope-rules.yml
scrape_configs:
  - job_name: regscope
    static_configs:
      - targets: ['127.0.0.1:$rs_port']
YAML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address="127.0.0.1:$prom_port" 2>"$work/prometheus.log" &
pids+=($!)
echo "prometheus-graph: running for ${duration}s (Prometheus on 127.0.0.1:$prom_port)" >&2
sleep "$duration"
expr='regscope_compaction_window_revisions or regscope_informer_lag_revisions{resource=~"events|pods|leases"}'
enc="$(python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$expr")"
url="http://127.0.0.1:$prom_port/graph?g0.expr=$enc&g0.tab=0&g0.stacked=0&g0.show_exemplars=0&g0.range_input=$((duration / 60 + 1))m"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1000 \
  --virtual-time-budget=15000 --screenshot="$PWD/screenshots/prometheus-informer-lag.png" "$url" \
  2>/dev/null
echo "prometheus-graph: wrote screenshots/prometheus-informer-lag.png" >&2
