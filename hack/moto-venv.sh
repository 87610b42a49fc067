#!/usr/bin/env bash
# The bed's S3-compatible server, moto in server mode, in a venv of its own (it cannot share the
# project's: botocore pins python-dateutil<3, the kubernetes client needs >=3), installed once from
# hack/moto/requirements.lock (hashed) and cached like the bed's Go binaries:
#   ${MODELGATE_CACHE:-~/.cache/modelgate}/moto-<version>-<lock hash>/
# A venv that finished installing has a .installed mark; one without it is rebuilt. Prints the path.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${MODELGATE_CACHE:-$HOME/.cache/modelgate}
lock=$here/moto/requirements.lock
version=$(awk -F'[=[ ]+' '$1 == "moto" {print $2}' "$lock")
venv=$cache/moto-$version-$(sha256sum <"$lock" | cut -c1-8)
if [ -f "$venv/.installed" ]; then
  echo "moto-venv: moto $version cached in $venv" >&2
else
  start=$SECONDS
  rm -rf "$venv"
  python3 -m venv "$venv"
  bash "$here/install-lock.sh" "$venv" "$lock"
  touch "$venv/.installed"
  echo "moto-venv: moto $version installed in $((SECONDS - start))s in $venv" >&2
fi
echo "$venv"
