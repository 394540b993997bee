#!/usr/bin/env bash
# Install what the tests need on a fresh machine and run every suite.
# Usage: bash scripts/test.sh [SUITE ...] [-- PYTEST ARGS]
set -euo pipefail
cd "$(dirname "$0")/.."

# A real Prometheus scrapes the plugin in the end-to-end metrics test; its promtool checks
# and unit-tests the alerting rules (Debian's package carries both).
if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's prometheus (for the real-Prometheus test)..."
    if ! { apt-get update -qq >/dev/null &&
           DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null; }; then
      echo "warning: could not install prometheus; the real-Prometheus and alert-rule tests will be skipped"
    fi
  else
    echo "note: prometheus/promtool not found; their tests will be skipped (apt-get install prometheus)"
  fi
fi

# The run store's tests start real redis-servers on free loopback ports (tests/store/).
if ! command -v redis-server >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's redis-server (for the run store's tests)..."
    if ! { apt-get update -qq >/dev/null &&
           DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }; then
      echo "warning: could not install redis-server; the run store's tests will be skipped"
    fi
  else
    echo "note: redis-server not found; the run store's tests will be skipped (apt-get install redis-server)"
  fi
fi

# The `compiled` suite builds the mypyc wheel: it needs a C compiler (and Python's headers,
# which python.org, pyenv and Debian's python3-dev installs carry).
if ! command -v cc >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's gcc (for the compiled build's suite)..."
    apt-get update -qq >/dev/null &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc >/dev/null ||
      echo "warning: could not install gcc; the compiled suite will fail to build"
  else
    echo "note: no C compiler found; the compiled suite will fail to build (apt-get install gcc)"
  fi
fi

# ...and Python.h: a Debian python3 has it only with python3-dev
if ! python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' 2>/dev/null; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's python3-dev (Python's headers, for the compiled build's suite)..."
    apt-get update -qq >/dev/null &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-dev >/dev/null ||
      echo "warning: could not install python3-dev; the compiled suite will fail to build"
  else
    echo "note: Python's headers not found; the compiled suite will fail to build"
  fi
fi

# The serve tests' Node.js agent: the OpenTelemetry JS SDK from npm, at the lock file's
# versions (under CI its test fails when node or these packages are missing)
if ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's nodejs and npm (for serve's Node.js agent test)..."
  apt-get update -qq >/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null ||
    echo "warning: could not install nodejs/npm; the Node.js agent test will fail under CI"
fi
if command -v npm >/dev/null 2>&1; then
  (cd tests/serve/node_agent && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
    echo "warning: npm ci in tests/serve/node_agent failed; the Node.js agent test will fail"
else
  echo "note: node/npm not found; the Node.js agent test of serve is skipped (fails under CI)"
fi

# The collector suite runs the real OpenTelemetry Collector and Jaeger, built with Go
# (collector/distribution/, collector/jaeger/). Both builds start now, niced, in the
# background, so they overlap the Python suites; the suite (run last) calls the same
# scripts, which wait for these builds and reuse them. Log: .build/go-builds.log
wants_collector=true
for arg in "$@"; do
  [ "$arg" = "--" ] && break
  case "$arg" in -*) ;; collector) wants_collector=true; break ;; *) wants_collector=false ;; esac
done
if [ "$wants_collector" = true ]; then
  if command -v go >/dev/null 2>&1; then
    mkdir -p .build
    (nice -n 10 bash scripts/build-collector.sh && nice -n 10 bash scripts/build-jaeger.sh) \
      >.build/go-builds.log 2>&1 &
  else
    echo "note: no Go toolchain; the collector suite is skipped (fails under CI): install Go 1.26 or newer"
  fi
fi

python3 -m pip install -q uv >/dev/null 2>&1 || python3 -m pip install uv
exec python3 scripts/run_tests.py "$@"
