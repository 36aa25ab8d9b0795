#!/usr/bin/env bash
# build.sh — build vramtrace, installing what a fresh Debian machine lacks.
#
#   ./build.sh          build only
#   ./build.sh demo     build, then record and analyse the example
#                       llama.cpp-shaped server on the fake GPU (no GPU
#                       needed): once fitting, once out of memory
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
packages=(gcc pkg-config meson ninja-build libzstd-dev libunwind-dev python3 python3-dev zstd
          libamdhip64-5)
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
    vt="$build/analyzer/vramtrace"
    export LD_LIBRARY_PATH="$PWD/$build/tests/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export FAKECUDA_MEM=80G
    out=$(mktemp -d "${TMPDIR:-/tmp}/vramtrace-demo.XXXXXX")
    echo
    echo "== 1. a llama.cpp-shaped server on a fake 80 GiB GPU: 32 GiB of weights, 32 GiB of KV cache, 4 requests at once"
    "$vt" record -o "$out/fits" -- "$build/examples/llama_sim" -ngl 32 --layer-mib 1024 \
        -c 8192 --kv-kib-per-token 4096 --act-mib 2048 -np 4 || true
    "$vt" analyze "$out/fits"
    echo
    echo "== 2. the same server with 12 requests at once: CUDA out of memory"
    "$vt" record -o "$out/oom" -- "$build/examples/llama_sim" -ngl 32 --layer-mib 1024 \
        -c 8192 --kv-kib-per-token 4096 --act-mib 2048 -np 12 || true
    "$vt" analyze "$out/oom"
    echo
    echo "traces kept in $out (vramtrace analyze --format json $out/oom)"
    ;;
test)
    meson test -C "$build" --print-errorlogs
    ;;
esac
