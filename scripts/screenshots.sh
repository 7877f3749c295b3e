#!/usr/bin/env bash
# Regenerates every picture in screenshots/ from a real `regscope demo` run: the demo is
# driven in a detached tmux pane (140x42), each screen is opened and saved with the
# console's own `S` key (SVG in the theme's colours, plus the same cells as text). Then a
# kubeadm-like node is built under a temp dir (static pod manifests, certificates made with
# openssl, a TLS etcd and a TLS events etcd on loopback, written to with etcdctl as a
# kubelet and a controller would): `regscope doctor --root` on it is saved as doctor.txt
# and the console started as `sudo regscope` would be (`--root`) as node.svg/.txt. Last, the
# demo recording (recordings/demo.rgs, made by scripts/record-demo.sh) becomes the postmortem
# report, report.html, and headless Chromium takes a picture of it, report.png (the report
# follows the reader's light or dark scheme, not THEME; the picture is the light one).
#
#   scripts/screenshots.sh                  # release build, default theme
#   REGSCOPE_BIN=target/debug/regscope THEME=light scripts/screenshots.sh
#
# Needs etcd, etcdctl, openssl, tmux and chromium (scripts/setup.sh installs them).
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
pids=()
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
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
for _ in $(seq 1 20); do
  [ "$(tmux -L "$sock" display-message -p '#{pane_dead}' 2>/dev/null)" = 1 ] && break
  tmux -L "$sock" has-session 2>/dev/null || break
  sleep 0.25
done
tmux -L "$sock" kill-server 2>/dev/null || true

# --- A kubeadm-like node ------------------------------------------------------------
node="$tmp/node"
pki="$tmp/pki"
mkdir -p "$pki" "$node/etc/kubernetes/manifests" "$node/etc/kubernetes/pki/etcd"
ssl() { (cd "$pki" && openssl "$@" >/dev/null 2>&1); }
ssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout ca.key -out ca.crt -subj /CN=etcd-ca
leaf() { # name, extensions
  ssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$1"
  printf '%b' "$2" > "$pki/$1.ext"
  ssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -out "$1.crt" -extfile "$1.ext"
}
leaf server 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n'
leaf client 'extendedKeyUsage=clientAuth\n'
cp "$pki/ca.crt" "$node/etc/kubernetes/pki/etcd/ca.crt"
cp "$pki/client.crt" "$node/etc/kubernetes/pki/apiserver-etcd-client.crt"
cp "$pki/client.key" "$node/etc/kubernetes/pki/apiserver-etcd-client.key"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start_etcd() { # name; sets client_url and metrics_url (not in a subshell: its pid is kept)
  local c p m
  c=$(port); p=$(port); m=$(port)
  etcd --name "$1" --data-dir "$tmp/data-$1" \
    --listen-client-urls "https://127.0.0.1:$c" --advertise-client-urls "https://127.0.0.1:$c" \
    --listen-peer-urls "http://127.0.0.1:$p" --initial-advertise-peer-urls "http://127.0.0.1:$p" \
    --initial-cluster "$1=http://127.0.0.1:$p" --listen-metrics-urls "http://127.0.0.1:$m" \
    --cert-file "$pki/server.crt" --key-file "$pki/server.key" \
    --trusted-ca-file "$pki/ca.crt" --client-cert-auth >"$tmp/etcd-$1.log" 2>&1 &
  pids+=($!)
  client_url="https://127.0.0.1:$c"
  metrics_url="http://127.0.0.1:$m"
}
start_etcd main
main_url=$client_url main_metrics=$metrics_url
start_etcd events
events_url=$client_url
cat > "$node/etc/kubernetes/manifests/kube-apiserver.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: kube-apiserver, namespace: kube-system}
spec:
  containers:
  - name: kube-apiserver
    command:
    - kube-apiserver
    - --etcd-servers=$main_url
    - --etcd-servers-overrides=/events#$events_url
    - --etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt
    - --etcd-certfile=/etc/kubernetes/pki/apiserver-etcd-client.crt
    - --etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key
    - --watch-cache-sizes=secrets#0
YAML
cat > "$node/etc/kubernetes/manifests/etcd.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: etcd, namespace: kube-system}
spec:
  containers:
  - name: etcd
    command: [etcd, --data-dir=/var/lib/etcd, --listen-metrics-urls=$main_metrics, --quota-backend-bytes=8589934592]
YAML
ctl() { # endpoint, etcdctl args...
  local ep=$1; shift
  ETCDCTL_API=3 etcdctl --endpoints "$ep" --cacert "$pki/ca.crt" --cert "$pki/client.crt" \
    --key "$pki/client.key" "$@" >/dev/null
}
for _ in $(seq 1 50); do ctl "$main_url" endpoint health 2>/dev/null && ctl "$events_url" endpoint health 2>/dev/null && break; sleep 0.2; done
# JSON objects with managedFields, as kube-apiserver stores custom resources (built-in kinds
# are protobuf; these show the same panels): a controller updating ConfigMaps and a
# kubelet posting Events into the events etcd.
obj() { # kind, namespace/name, manager, operation
  printf '{"apiVersion":"v1","kind":"%s","metadata":{"name":"%s","namespace":"%s","managedFields":[{"manager":"%s","operation":"%s","apiVersion":"v1","time":"%s","fieldsType":"FieldsV1"}]}}' \
    "$1" "${2#*/}" "${2%%/*}" "$3" "$4" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}
writer() {
  local i=0
  while :; do
    i=$((i + 1))
    ctl "$main_url" put "/registry/configmaps/default/settings-$((i % 7))" "$(obj ConfigMap "default/settings-$((i % 7))" kube-controller-manager Update)" || true
    ctl "$events_url" put "/registry/events/default/pod-$i.event" "$(obj Event "default/pod-$i.event" kubelet Update)" || true
    sleep 0.3
  done
}
# The first writes before doctor looks, as on a node that has run for a while.
ctl "$main_url" put /registry/configmaps/default/settings-0 "$(obj ConfigMap default/settings-0 kube-controller-manager Update)" >/dev/null
ctl "$events_url" put /registry/events/default/pod-0.event "$(obj Event default/pod-0.event kubelet Update)" >/dev/null
writer &
pids+=($!)
env REGSCOPE_CONFIG= KUBECONFIG=/nonexistent "$REGSCOPE_BIN" doctor --root "$node" --informers none \
  | sed "s|$tmp|/tmp/regscope-node|g" > "$out/doctor.txt" || true
chmod 0644 "$out/doctor.txt"
echo "wrote $out/doctor.txt"
tmux -L "$sock" new-session -d -x 140 -y 42 \
  "env REGSCOPE_CONFIG= KUBECONFIG=/nonexistent $REGSCOPE_BIN --root $node --informers none --theme $theme --screenshot-dir $tmp"
tmux -L "$sock" set-option -s escape-time 0
for _ in $(seq 1 60); do
  if tmux -L "$sock" capture-pane -p | grep -q "events up"; then break; fi
  sleep 1
done
sleep "${NODE_WARMUP:-12}"
shot node 1
tmux -L "$sock" send-keys q
for _ in $(seq 1 20); do
  tmux -L "$sock" has-session 2>/dev/null || break
  sleep 0.25
done

# --- The postmortem report --------------------------------------------------------------
"$REGSCOPE_BIN" report recordings/demo.rgs -o "$out/report.html" --force
# A fresh profile under the temp dir; root in a container needs --no-sandbox. The window is
# the picture: 1280 wide, tall enough for the header, what stands out and the first charts.
chromium --headless --no-sandbox --disable-gpu --no-first-run --no-default-browser-check \
  --disable-background-networking --disable-component-update --disable-sync \
  --hide-scrollbars --user-data-dir="$tmp/chromium" --window-size=1280,"${REPORT_HEIGHT:-2400}" \
  --screenshot="$PWD/$out/report.png" "file://$PWD/$out/report.html" 2>/dev/null
chmod 0644 "$out/report.html" "$out/report.png"
echo "wrote $out/report.html and $out/report.png"
