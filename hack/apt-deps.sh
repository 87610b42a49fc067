#!/usr/bin/env bash
# Installs the system tools a make target needs, each a Debian package named as the command it gives:
#   hack/apt-deps.sh TARGET COMMAND...
# A command already on PATH serves, however it got there (a Prometheus from its release tarball, a
# chromium from another distribution): apt runs only for what is missing. Without apt, or without
# root and sudo, it installs nothing and says in one sentence what to install (docs/setup.md).
set -euo pipefail
target=$1; shift

missing=()
for tool in "$@"; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
  echo "make $target needs ${missing[*]} on PATH and this system has no apt-get:" \
    "install ${missing[*]} with its package manager (docs/setup.md says how) and run make $target again" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" != 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "make $target needs ${missing[*]} on PATH and cannot install it without root or sudo:" \
      "install ${missing[*]} yourself (docs/setup.md says how) and run make $target again" >&2
    exit 1
  fi
  sudo=(sudo)
fi
echo "apt: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
