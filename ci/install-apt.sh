#!/usr/bin/env bash
# Installs Debian packages the tests or benchmarks use, when their command is missing.
# Usage: ci/install-apt.sh COMMAND PACKAGE [PACKAGE...]   e.g. ci/install-apt.sh chromium chromium
# Idempotent: does nothing when COMMAND is on PATH. Runs apt-get directly as root, through sudo
# otherwise. Exits non-zero with a message on failure; the caller decides whether that is fatal.
set -euo pipefail
cmd="$1"; shift
if command -v "$cmd" >/dev/null 2>&1; then
  echo "install-apt: $cmd already installed at $(command -v "$cmd")"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-apt: $cmd is missing and apt-get is not available; install $* by hand" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-apt: $cmd is missing, not running as root and sudo is not available; run as root: apt-get install $*" >&2
    exit 1
  fi
fi
echo "install-apt: installing $* with apt-get"
export DEBIAN_FRONTEND=noninteractive
# one apt-get update per CI run is enough: skip it when the lists are fresh (under 1 hour)
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -60 2>/dev/null | head -1)" ]; then
  $SUDO apt-get update -qq || { echo "install-apt: apt-get update failed" >&2; exit 1; }
fi
$SUDO apt-get install -y -qq --no-install-recommends "$@" || { echo "install-apt: apt-get install $* failed" >&2; exit 1; }
command -v "$cmd" >/dev/null 2>&1 || { echo "install-apt: apt-get reported success but $cmd is still not on PATH" >&2; exit 1; }
echo "install-apt: installed $(command -v "$cmd")"
