#!/usr/bin/env bash
# Build otel-loopguard's OpenTelemetry Collector distribution (collector/distribution/: the
# components the shipped configurations use) into .build/otelcol-loopguard, or reuse the
# build of the same inputs. The binary's path is the last line of the output.
set -euo pipefail
exec bash "$(dirname "$0")/go-build.sh" collector/distribution . otelcol-loopguard
