#!/usr/bin/env bash
# Regenerates every picture in screenshots/ from a real `regscope demo` run: the demo is
# driven in a detached tmux pane (140x42), each screen is opened and saved with the
# console's own `S` key (SVG in the theme's colours, plus the same cells as text).
#
#   scripts/screenshots.sh                  # release build, default theme
#   REGSCOPE_BIN=target/debug/regscope THEME=light scripts/screenshots.sh
#
# Needs etcd and tmux (scripts/setup.sh installs both).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${REGSCOPE_BIN:-}" ]; then
  cargo build --release --quiet
  REGSCOPE_BIN=target/release/regscope
fi
theme="${THEME:-default}"
out=screenshots
tmp=$(mktemp -d)
sock="regscope-shots-$$"
cleanup() { tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
# No user config file: the pictures show the defaults.
tmux -L "$sock" new-session -d -x 140 -y 42 \
  "env REGSCOPE_CONFIG= $REGSCOPE_BIN demo --theme $theme --screenshot-dir $tmp"
tmux -L "$sock" set-option -s escape-time 0
# Let the simulated control plane run: writes, a compaction and scrapes on screen 4.
for _ in $(seq 1 60); do
  if tmux -L "$sock" capture-pane -p | grep -q "watching"; then break; fi
  sleep 1
done
sleep "${WARMUP:-20}"
keys() { for k in "$@"; do tmux -L "$sock" send-keys "$k"; sleep 0.4; done; }
shot() { # name, then the keys that open the screen
  name=$1; shift
  keys "$@"
  sleep 1.5
  before=$(ls "$tmp" | wc -l)
  tmux -L "$sock" send-keys S
  for _ in $(seq 1 20); do
    [ "$(ls "$tmp" | wc -l)" -gt "$before" ] && break
    sleep 0.25
  done
  sleep 0.5
  newest=$(ls -t "$tmp"/*.svg | head -1)
  cp "$newest" "$out/$name.svg"
  cp "${newest%.svg}.txt" "$out/$name.txt"
  chmod 0644 "$out/$name.svg" "$out/$name.txt"
  echo "wrote $out/$name.svg and .txt"
}
shot growth 1
shot events 2
shot keys 3
# A Deployment (the second resource), decoded, then the diff with its previous revision.
shot deployment j l Enter
shot diff d
keys Escape Escape
shot apiserver 4
tmux -L "$sock" send-keys q
