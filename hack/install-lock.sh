#!/usr/bin/env bash
# Installs a hashed lock (pip-compile --generate-hashes) into a venv without resolving anything:
#   hack/install-lock.sh VENV LOCK [PIP_LOCK]
# PIP_LOCK (default LOCK) is the lock whose pip is installed first: requirements-image.lock pins
# none (the image needs no pip of its own), so a venv of it takes requirements.lock's.
# The venv's bundled pip may be old: pip 23.2.1 (Python 3.11.7's) reads an extra that a locked
# package asks for (CacheControl[filecache]>=0.13.0) as a requirement of its own, and refuses the
# lock as unpinned as soon as the index holds a newer release than the pin. So the lock's own pip
# goes in first, hashed, then every pin with --no-deps, then `pip check` proves the set consistent.
# pip's usual environment (PIP_INDEX_URL, PIP_FIND_LINKS, ...) passes through.
set -euo pipefail
venv=$1
lock=$2
pip_lock=${3:-$2}
pip_pin=$(mktemp)
trap 'rm -f "$pip_pin"' EXIT
# The pip requirement with its hash lines: from `pip==` to the first line not ending in a backslash.
awk '/^pip==/ {on = 1} on {print; if ($0 !~ /\\$/) exit}' "$pip_lock" >"$pip_pin"
if [ ! -s "$pip_pin" ]; then
  echo "install-lock: $pip_lock pins no pip (lock it with --allow-unsafe)" >&2
  exit 1
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes --no-deps -r "$pip_pin"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes --no-deps -r "$lock"
"$venv/bin/python" -m pip check
