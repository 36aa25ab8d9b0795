#!/usr/bin/env bash
# build.sh — build vramtrace, installing what a fresh Debian machine lacks.
#
#   ./build.sh          build only
#   ./build.sh demo     build, then run `vramtrace demo`: the example
#                       vLLM-shaped server on the fake GPU (no GPU
#                       needed), once per OOM verdict, each diagnosed
#   ./build.sh test     build, then run the whole test suite
#
# Packages come from Debian; run as root (or with them already installed).
# BUILD_DIR (default: build) picks the build directory.
set -euo pipefail
cd "$(dirname "$0")"
build=${BUILD_DIR:-build}
mode=${1:-build}

case "$mode" in
build|demo|test) ;;
-h|--help) sed -n '2,12p' "$0"; exit 0 ;;
*) echo "build.sh: unknown mode '$mode' (build, demo or test)" >&2; exit 2 ;;
esac

# libamdhip64-5: the real HIP runtime, for the test that runs it under the
# preload (it needs no AMD GPU; the test is skipped without the package).
# tmux: drives `vramtrace live` in a terminal for its test (skipped without it).
# curl: scrapes the metrics endpoint (VRAMTRACE_METRICS) in its test.
# libjansson-dev: parses Hugging Face config.json (analyze --model-config).
# chromium, chromium-driver: open the HTML report headless in its test
# (skipped without them).
packages=(gcc pkg-config meson ninja-build libzstd-dev libunwind-dev libjansson-dev python3 python3-dev zstd
          libamdhip64-5 tmux curl chromium chromium-driver)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "build.sh: missing packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
        exit 1
    fi
    echo "build.sh: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ -f "$build/build.ninja" ] || meson setup "$build" >/dev/null
ninja -C "$build"

case "$mode" in
demo)
    "$build/analyzer/vramtrace" demo
    ;;
test)
    meson test -C "$build" --print-errorlogs
    ;;
esac
