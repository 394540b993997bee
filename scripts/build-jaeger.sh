#!/usr/bin/env bash
# Build Jaeger v2 (the `jaeger` command at the release collector/jaeger/go.mod pins) into
# .build/jaeger, or reuse the build of the same inputs. The binary's path is the last line.
# Without a config it runs all-in-one: in-memory storage, OTLP in on 4317/4318, the query
# API on 16686 (the UI there is a placeholder: its assets come from jaeger-ui's JavaScript
# build, which no Go module carries).
set -euo pipefail
exec bash "$(dirname "$0")/go-build.sh" collector/jaeger github.com/jaegertracing/jaeger/cmd/jaeger jaeger
