#!/usr/bin/env bash
# Soak benchmark (not a CI test): runs `regscope demo` in a tmux pane for MINUTES minutes
# (default 60) and prints, once a minute, the console's resident memory, its CPU time, the
# revision its header shows, etcd's head revision and the difference (lag, revisions).
#
#   cargo build --release && scripts/soak.sh [MINUTES] [extra demo flags...]
#
# Needs tmux and etcdctl. The console's revision is read from the header row of the pane
# (`rev N`), etcd's head with `etcdctl endpoint status` against the demo's private etcd.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes="${1:-60}"
shift || true
bin="${REGSCOPE_BIN:-target/release/regscope}"
session="regscope-soak-$$"
tmux new-session -d -s "$session" -x 160 -y 48 "$bin demo $*"
trap 'tmux kill-session -t "$session" 2>/dev/null || true' EXIT
sleep 5
pid="$(tmux list-panes -t "$session" -F '#{pane_pid}')"
# The pane's shell may have exec'd regscope or be its parent.
if [ "$(cat "/proc/$pid/comm")" != regscope ]; then pid="$(pgrep -P "$pid" -x regscope | head -1)"; fi
# The pane runs regscope directly; its private etcd is a child process.
etcd_pid="$(pgrep -P "$pid" -x etcd | head -1)"
endpoint="$(tr '\0' '\n' < "/proc/$etcd_pid/cmdline" | grep -A1 -- '--advertise-client-urls' | tail -1)"
ticks="$(getconf CLK_TCK)"
echo "minute,rss_mib,cpu_s,console_rev,etcd_head,lag_revisions"
for m in $(seq 0 "$minutes"); do
  rss_kib="$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")"
  cpu="$(awk -v t="$ticks" '{printf "%.1f", ($14 + $15) / t}' "/proc/$pid/stat")"
  rev="$(tmux capture-pane -pt "$session" | sed -n 's/.* rev \([0-9,]*\).*/\1/p' | head -1 | tr -d ,)"
  head="$(ETCDCTL_API=3 etcdctl --endpoints "$endpoint" endpoint status -w json \
    | sed -n 's/.*"revision":\([0-9]*\).*/\1/p')"
  echo "$m,$((rss_kib / 1024)),$cpu,${rev:-?},${head:-?},$(( ${head:-0} - ${rev:-0} ))"
  [ "$m" -lt "$minutes" ] && sleep 60
done
tmux send-keys -t "$session" q
sleep 2
