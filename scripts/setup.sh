#!/usr/bin/env bash
# Installs what regscope needs to build, run the demo and run its tests, when missing:
#   etcd (Debian etcd-server), etcdctl (etcd-client, used by the sync benchmark),
#   protoc (protobuf-compiler, needed by etcd-client's build), tmux (end-to-end tests),
#   openssl (certificates for the TLS and node-discovery tests and scripts/screenshots.sh),
#   chromium (headless, for the tests that open the report's HTML and its screenshot),
#   prometheus with promtool (the exporter's tests scrape `regscope serve` with a real
#   Prometheus and check and unit-test the rules in deploy/prometheus/), systemd-analyze
#   (systemd: `systemd-analyze verify` checks deploy/systemd/regscope.service).
# Uses apt-get (via sudo when not root). Safe to run repeatedly: it installs only what is absent.
set -euo pipefail

need=()
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || need+=(etcd-client)
command -v protoc >/dev/null 2>&1 || need+=(protobuf-compiler)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
{ command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; } || need+=(prometheus)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)

if [ ${#need[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "regscope setup: missing ${need[*]} and no apt-get here; install them with your package manager" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  echo "regscope setup: installing ${need[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
# Debian's etcd-server package starts a system etcd on 127.0.0.1:2379; regscope's demo and
# tests use private etcd processes on random ports, so it does not matter to them. The same
# holds for the system Prometheus that Debian's prometheus package starts on :9090.
command -v etcd >/dev/null && command -v protoc >/dev/null
