#!/usr/bin/env bash
# build.sh — build vramtrace, installing what a fresh Debian machine lacks.
#
#   ./build.sh          build only
#   ./build.sh demo     build, then run `vramtrace demo`: the example
#                       vLLM-shaped server on the fake GPU (no GPU
#                       needed), once per OOM verdict, each diagnosed
#   ./build.sh test     build, then run the whole test suite
#   ./build.sh sanitize sanitizer builds, each running its suites:
#                       $BUILD_DIR-asan (address,undefined: unit,
#                       preload, cli, fuzz) and $BUILD_DIR-tsan (thread:
#                       unit, cli)
#   ./build.sh scenarios [NAME...]
#                       build, then run the scenario corpus
#                       (tests/scenarios/*.scn: recorded runs of the
#                       example servers, each with the verdict it
#                       deserves) and print one row per scenario —
#                       expected, got, right/wrong — and the count right;
#                       exits 1 when one is wrong
#   ./build.sh bench [ARGS]
#                       build, then print every performance figure in one
#                       table, vramtrace beside heaptrack, with targets
#                       and verdicts (tests/bench/run_all.py; ARGS go to
#                       it: --quick for a fast look, --pairs N,
#                       --events N, --runs N; docs/performance.md)
#
# Packages come from Debian; run as root (or with them already installed).
# BUILD_DIR (default: build) picks the build directory.
set -euo pipefail
cd "$(dirname "$0")"
build=${BUILD_DIR:-build}
mode=${1:-build}
[ $# -gt 0 ] && shift

case "$mode" in
build|demo|test|sanitize|bench|scenarios) ;;
-h|--help) sed -n '2,28p' "$0"; exit 0 ;;
*) echo "build.sh: unknown mode '$mode' (build, demo, test, sanitize, scenarios or bench)" >&2; exit 2 ;;
esac
if [ "$mode" != bench ] && [ "$mode" != scenarios ] && [ $# -gt 0 ]; then
    echo "build.sh: mode '$mode' takes no arguments" >&2
    exit 2
fi

# libamdhip64-5: the real HIP runtime, for the test that runs it under the
# preload (it needs no AMD GPU; the test is skipped without the package).
# tmux: drives `vramtrace live` in a terminal for its test (skipped without it).
# curl: scrapes the metrics endpoint (VRAMTRACE_METRICS) in its test.
# libjansson-dev: parses Hugging Face config.json (analyze --model-config).
# chromium, chromium-driver: open the HTML report headless in its test
# (skipped without them).
packages=(gcc pkg-config meson ninja-build libzstd-dev libunwind-dev libjansson-dev python3 python3-dev zstd
          libamdhip64-5 tmux curl chromium chromium-driver)
# bench: heaptrack (the profiler it is measured against; its column reads
# n/a without it), util-linux (taskset pins the analyzers to one core),
# time (/usr/bin/time -v reports their peak RSS).
if [ "$mode" = bench ]; then
    packages+=(heaptrack util-linux time)
fi
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

if [ "$mode" = sanitize ]; then
    # A sanitizer report fails the test that printed it: UBSan stops at
    # the first error instead of printing and going on, and LeakSanitizer
    # reads the suppressions file (each entry says why it is not ours).
    # The preload tests put the sanitized libvramtrace.so first in
    # LD_PRELOAD, ahead of the ASan runtime it needs (the clients are
    # built in the same build, so the runtime is loaded and intercepts
    # malloc before libc); verify_asan_link_order=0 lets that start.
    export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
    export ASAN_OPTIONS=verify_asan_link_order=0:halt_on_error=1:abort_on_error=1
    export LSAN_OPTIONS=suppressions=$PWD/tests/sanitizer/lsan.supp:print_suppressions=0
    status=0
    for san in asan tsan; do
        dir="$build-$san"
        if [ "$san" = asan ]; then
            opts=(-Db_sanitize=address,undefined -Db_lundef=false)
            suites=(--suite unit --suite preload --suite cli --suite fuzz)
        else
            opts=(-Db_sanitize=thread -Db_lundef=false)
            suites=(--suite unit --suite cli)
        fi
        [ -f "$dir/build.ninja" ] || meson setup "$dir" "${opts[@]}" >/dev/null
        ninja -C "$dir"
        meson test -C "$dir" --print-errorlogs "${suites[@]}" || status=1
    done
    exit $status
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
scenarios)
    python3 tests/scenarios/run_scenarios.py --format table \
        --vramtrace "$build/analyzer/vramtrace" \
        --preload "$build/preload/libvramtrace.so" \
        --fake-dir "$build/tests/fake" \
        --bin-dir "$build/examples" \
        --tmp-root "$build/tests/scenarios/tmp" "$@"
    ;;
bench)
    python3 tests/bench/run_all.py \
        --bench "$build/tests/bench/bench_alloc" \
        --python-bench tests/bench/bench_python.py \
        --preload "$build/preload/libvramtrace.so" \
        --fake-dir "$build/tests/fake" \
        --gen "$build/tests/bench/gen_trace" \
        --vramtrace "$build/analyzer/vramtrace" "$@"
    ;;
esac
