#!/usr/bin/env bash
# Build one Go program of a module in this repository into .build/ (git-ignored), or reuse
# the binary built before when nothing it depends on changed; print its path on the last line.
# Usage: bash scripts/go-build.sh MODULE_DIR PACKAGE NAME
#   MODULE_DIR  the Go module (go.mod, go.sum and its .go files), relative to the repository
#   PACKAGE     what `go build` builds in it (".", or a tool's import path)
#   NAME        the binary's name under .build/ (LOOPGUARD_BUILD_DIR overrides the folder)
# The key of a build is a hash of the module's files and of `go version`, GOOS and GOARCH:
# the Go module proxy serves a version's content once and go.sum pins it, so equal keys
# mean an equal binary. Two runs at once (scripts/test.sh starts the builds in the
# background and the tests call this again) take a lock: the second waits and reuses.
# Exit status: 0 built or reused, 3 no Go toolchain (the message says what to install),
# 1 the build failed (its output is on stderr).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
module="$root/$1"
package="$2"
name="$3"
out_dir="${LOOPGUARD_BUILD_DIR:-$root/.build}"

if ! command -v go >/dev/null 2>&1; then
  echo "no Go toolchain: install Go 1.26 or newer (https://go.dev/dl/, or apt-get install golang-go) to build $name" >&2
  exit 3
fi
mkdir -p "$out_dir"
binary="$out_dir/$name"
exec 9>"$out_dir/$name.lock"
flock 9

key="$(
  {
    go version
    go env GOOS GOARCH
    echo "$package"
    (cd "$module" && find . -maxdepth 1 -type f \( -name go.mod -o -name go.sum -o -name '*.go' \) |
      LC_ALL=C sort | xargs sha256sum)
  } | sha256sum | cut -d' ' -f1
)"
if [ -x "$binary" ] && [ "$(cat "$binary.key" 2>/dev/null)" = "$key" ]; then
  echo "$name: reusing the build of the same inputs" >&2
  echo "$binary"
  exit 0
fi
echo "$name: building $package in ${module#"$root"/} (minutes on a fresh machine)..." >&2
start=$(date +%s)
rm -f "$binary.key"
(cd "$module" && go build -mod=readonly -trimpath -o "$binary.partial" "$package") >&2 || exit 1
mv -f "$binary.partial" "$binary"
echo "$key" >"$binary.key"
echo "$name: built in $(($(date +%s) - start))s" >&2
echo "$binary"
