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
#                       deserves; and tests/data/logs: server logs
#                       diagnosed alone, the "log:" rows) and print one
#                       row per scenario — expected, got, right/wrong —
#                       and the count right; exits 1 when one is wrong
#   ./build.sh bench [ARGS]
#                       build, then print every performance figure in one
#                       table, vramtrace beside heaptrack, with targets
#                       and verdicts (tests/bench/run_all.py; ARGS go to
#                       it: --quick for a fast look, --pairs N,
#                       --events N, --runs N; docs/performance.md)
#   ./build.sh install [PREFIX]
#                       build, then `meson install`: vramtrace in
#                       PREFIX/bin, the preload (and the demo's parts) in
#                       PREFIX/<libdir>/vramtrace, the annotation header,
#                       a pkg-config file and the docs (default PREFIX:
#                       the configured one, /usr/local)
#   ./build.sh bundle [DIR]
#                       build, then make the portable bundle for containers
#                       (docs/deploy.md): DIR/vramtrace-VERSION-linux-ARCH
#                       .tar.gz (default DIR: $BUILD_DIR), needing nothing
#                       but glibc (tools/make_bundle.py)
#   ./build.sh gpu-bundle [DIR]
#                       build (with nvcc where the CUDA toolkit is), then
#                       put vramtrace, the preload, the GPU suite's
#                       programs and the libraries they need into DIR
#                       (default: $BUILD_DIR/gpu-bundle), for a GPU machine
#                       that has only the NVIDIA driver and python3
#   ./build.sh gpu-test [DIR]
#                       the GPU suite (tests/gpu/run_gpu.py): with DIR, on
#                       that bundle, building nothing and installing
#                       nothing; without, builds here and bundles first
#                       when the build tools are here, else uses
#                       $BUILD_DIR/gpu-bundle. Prints a table; exit 1 on a
#                       mismatch, 77 when the machine has no GPU
#
# Packages come from Debian; run as root (or with them already installed).
# BUILD_DIR (default: build) picks the build directory.
set -euo pipefail
cd "$(dirname "$0")"
build=${BUILD_DIR:-build}
mode=${1:-build}
[ $# -gt 0 ] && shift

case "$mode" in
build|demo|test|sanitize|scenarios|bench|install|bundle|gpu-bundle|gpu-test) ;;
-h|--help) sed -n '2,53p' "$0"; exit 0 ;;
*) echo "build.sh: unknown mode '$mode' (build, demo, test, sanitize, scenarios, bench, install, bundle, gpu-bundle or gpu-test)" >&2; exit 2 ;;
esac
case "$mode" in
bench|scenarios) ;;
install|bundle|gpu-bundle|gpu-test)
    if [ $# -gt 1 ]; then
        echo "build.sh: mode '$mode' takes one directory at most" >&2
        exit 2
    fi ;;
*)
    if [ $# -gt 0 ]; then
        echo "build.sh: mode '$mode' takes no arguments" >&2
        exit 2
    fi ;;
esac

# Whether this machine can build vramtrace without installing anything.
can_build() {
    command -v meson >/dev/null && command -v ninja >/dev/null &&
        command -v cc >/dev/null && command -v pkg-config >/dev/null &&
        pkg-config --exists libzstd libunwind jansson &&
        [ -f /usr/include/Zydis/Zydis.h ]
}

# gpu-test on a machine that has a bundle and no build tools (a GPU host
# with the driver only): nothing to install, nothing to build.
if [ "$mode" = gpu-test ]; then
    bundle=${1:-}
    if [ -z "$bundle" ] && ! can_build; then
        bundle=$build/gpu-bundle
        if [ ! -x "$bundle/bin/vramtrace" ]; then
            echo "build.sh: gpu-test: cannot build here (meson, ninja, cc, pkg-config and the libzstd, libunwind, jansson headers are needed) and there is no bundle in $bundle: make one where they are (./build.sh gpu-bundle DIR), copy it here and run ./build.sh gpu-test DIR" >&2
            exit 2
        fi
    fi
    if [ -n "$bundle" ]; then
        command -v python3 >/dev/null ||
            { echo "build.sh: gpu-test needs python3" >&2; exit 2; }
        exec python3 tests/gpu/run_gpu.py --bundle "$bundle" \
            --tmp-root "${TMPDIR:-/tmp}"
    fi
fi

# libamdhip64-5: the real HIP runtime, for the test that runs it under the
# preload (it needs no AMD GPU; the test is skipped without the package).
# tmux: drives `vramtrace live` in a terminal for its test (skipped without it).
# curl: scrapes the metrics endpoint (VRAMTRACE_METRICS) in its test.
# libjansson-dev: parses Hugging Face config.json (analyze --model-config).
# chromium, chromium-driver: open the HTML report headless in its test
# (skipped without them).
# python3-yaml: parses the Kubernetes recipes of docs/deploy.md (the
# bundle's test).
# libssl-dev, openssl: the example servers' HTTPS (--protocol tls) and the
# TLS records of the connection tests. python3-h2: checks the example
# servers' own HTTP/2 frames and feeds real HTTP/2 to the request counter.
# libzydis-dev: the x86-64 decoder `vramtrace attach` moves the first
# instructions of the functions it hooks with (headers at build time; the
# command opens libZydis.so.4.0, which it brings, when it attaches).
# gdb: attach's fallback injector (its test is skipped without it).
packages=(gcc pkg-config meson ninja-build libzstd-dev libunwind-dev libjansson-dev python3 python3-dev zstd
          libamdhip64-5 tmux curl chromium chromium-driver python3-yaml
          libssl-dev openssl python3-h2 libzydis-dev gdb)
# bench: heaptrack (the profiler it is measured against; its column reads
# n/a without it), util-linux (taskset pins the analyzers to one core),
# time (/usr/bin/time -v reports their peak RSS).
if [ "$mode" = bench ]; then
    packages+=(heaptrack util-linux time)
fi
# The GPU suite builds vramtrace and its programs only: no test packages.
# So do install and bundle (the bundle also runs objdump and strip, from
# binutils, which gcc brings).
if [ "$mode" = gpu-bundle ] || [ "$mode" = gpu-test ] ||
   [ "$mode" = install ] || [ "$mode" = bundle ]; then
    packages=(gcc pkg-config meson ninja-build libzstd-dev libunwind-dev libjansson-dev python3
              libzydis-dev)
fi
missing=()
for p in "${packages[@]}"; do
    # gpu-test only gets here when can_build found everything it needs.
    [ "$mode" = gpu-test ] && break
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
if [ "$mode" = install ] && [ -n "${1:-}" ]; then
    meson configure "$build" --prefix "$(realpath -m "$1")" >/dev/null
fi
ninja -C "$build"

# The GPU suite's bundle: binaries built here, run where the GPU is.
make_bundle() {
    local dir=$1 f so
    rm -rf "$dir"
    mkdir -p "$dir/bin" "$dir/lib"
    cp "$build/analyzer/vramtrace" "$build/tests/gpu/gpu_driver" "$dir/bin/"
    cp "$build/preload/libvramtrace.so" "$build/preload/libvramtrace_agent.so" "$dir/lib/"
    # attach's check: its target and checker, and the decoder it opens.
    cp "$build/tests/attach/attach_target" "$build/tests/attach/dump_events" "$dir/bin/"
    so=$(ldconfig -p | awk '/libZydis\.so\.4\.0 / {print $NF; exit}')
    if [ -n "$so" ]; then cp -L "$so" "$dir/lib/"; fi
    for f in "$build"/tests/realcuda/cudart_mem-* "$build/tests/gpu/gpu_runtime"; do
        if [ -f "$f" ]; then cp "$f" "$dir/bin/"; fi
    done
    # libcudart.so.13 for the programs built with the dynamic runtime
    # (NVIDIA lets applications ship it); the static ones need none.
    if [ -f "$build/tests/realcuda/cudart_mem-shared" ]; then
        so=$(ldd "$build/tests/realcuda/cudart_mem-shared" | awk '/libcudart\.so/ {print $3}')
        if [ -n "$so" ]; then mkdir -p "$dir/cudart" && cp -L "$so" "$dir/cudart/"; fi
    fi
    # What vramtrace and the preload link besides glibc, for a host that
    # lacks them (run_gpu.py adds lib/ to the search path only then).
    ldd "$dir/bin/vramtrace" "$dir/lib/libvramtrace.so" |
        awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
        while read -r so; do
            case "${so##*/}" in
            libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*) ;;
            *) cp -L "$so" "$dir/lib/" ;;
            esac
        done
    {
        echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm), $(ldd --version | head -1)"
        echo "source $(git describe --always --dirty 2>/dev/null || echo unknown)"
        if command -v nvcc >/dev/null; then nvcc --version | tail -1; else echo "no nvcc: the CUDA runtime programs are not in this bundle"; fi
        (cd "$dir" && find . -type f ! -name MANIFEST | sort)
    } > "$dir/MANIFEST"
    echo "build.sh: GPU bundle in $dir ($(du -sh "$dir" | cut -f1)); on the GPU machine: ./build.sh gpu-test $dir" >&2
}

case "$mode" in
demo)
    "$build/analyzer/vramtrace" demo
    ;;
test)
    meson test -C "$build" --print-errorlogs
    ;;
install)
    meson install -C "$build" --no-rebuild
    prefix=$(meson introspect --buildoptions "$build" |
             python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
    echo "build.sh: installed into $prefix (vramtrace in $prefix/bin; try: $prefix/bin/vramtrace demo)" >&2
    ;;
bundle)
    tgz=$(python3 tools/make_bundle.py --build "$build" --out "${1:-$build}")
    echo "build.sh: bundle $tgz ($(du -h "$tgz" | cut -f1)); unpack it anywhere, e.g. tar -xzf $tgz -C /opt (docs/deploy.md)" >&2
    ;;
gpu-bundle)
    make_bundle "${1:-$build/gpu-bundle}"
    ;;
gpu-test)
    make_bundle "$build/gpu-bundle"
    exec python3 tests/gpu/run_gpu.py --bundle "$build/gpu-bundle" \
        --tmp-root "${TMPDIR:-/tmp}"
    ;;
scenarios)
    python3 tests/scenarios/run_scenarios.py --format table \
        --vramtrace "$build/analyzer/vramtrace" \
        --preload "$build/preload/libvramtrace.so" \
        --fake-dir "$build/tests/fake" \
        --bin-dir "$build/examples" \
        --logs tests/data/logs \
        --tmp-root "$build/tests/scenarios/tmp" "$@"
    ;;
bench)
    python3 tests/bench/run_all.py \
        --bench "$build/tests/bench/bench_alloc" \
        --io-bench "$build/tests/bench/bench_io" \
        --python-bench tests/bench/bench_python.py \
        --preload "$build/preload/libvramtrace.so" \
        --fake-dir "$build/tests/fake" \
        --gen "$build/tests/bench/gen_trace" \
        --vramtrace "$build/analyzer/vramtrace" "$@"
    ;;
esac
