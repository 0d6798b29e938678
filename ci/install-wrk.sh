#!/usr/bin/env bash
# Install the `wrk` HTTP benchmarking tool (used by bench/) if it is not already on PATH.
# Idempotent: does nothing when wrk is present. Uses apt-get (Debian/Ubuntu); runs it directly
# as root, through sudo otherwise (when sudo exists). Exits non-zero with a message on failure.
set -euo pipefail

if command -v wrk >/dev/null 2>&1; then
  echo "install-wrk: wrk already installed at $(command -v wrk)"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-wrk: wrk is missing and apt-get is not available; install wrk by hand" >&2
  exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "install-wrk: wrk is missing, not running as root and sudo is not available; run as root: apt-get install wrk" >&2
    exit 1
  fi
fi

echo "install-wrk: installing wrk with apt-get"
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get update -qq; then
  echo "install-wrk: apt-get update failed" >&2
  exit 1
fi
if ! $SUDO apt-get install -y -qq wrk; then
  echo "install-wrk: apt-get install wrk failed" >&2
  exit 1
fi

if ! command -v wrk >/dev/null 2>&1; then
  echo "install-wrk: apt-get reported success but wrk is still not on PATH" >&2
  exit 1
fi
echo "install-wrk: installed $(command -v wrk)"
