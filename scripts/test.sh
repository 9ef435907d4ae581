#!/usr/bin/env bash
# THE test command (README, .ci/run): installs dependencies, builds, runs
# the cmocka unit tests (normal and ASan builds), builds the fuzzers and
# runs each briefly, then the integration tests with prove: everything
# with the normal helper (two files at a time: scripts/prove-parallel), the helper tests (t/helper/) again with the ASan
# helper, the image store and profile tests (t/images/) with
# the ASan sandbox-imagectl and helper, and the module tests (t/module/
# but floors.t, t/approval/, t/hosts/, t/redis/ but its Lua-script tests
# t/redis/lua/, and t/egress/api.t) again with the ASan+UBSan
# module (build-module-asan/) and the ASan helper; there any sanitizer
# report from nginx fails the test (t/lib/VetoNginx.pm); the egress tests
# (t/egress/) run again with the ASan+UBSan egress proxy and helper;
# while those ASan passes run, in the background: the helper's cgroup
# tests on a pure cgroup v2 host in a qemu VM
# (scripts/test-cgroup-v2-vm.sh), then the Debian packages, built and
# installed on a systemd + cgroup v2 VM (scripts/test-packages-vm.sh),
# their output printed after the passes; last, scripts/bench --quick,
# which must run (its figures are not judged).
# Both VMs boot one Debian rootfs, built on the first run and cached in
# build-vm/ (scripts/vm-rootfs.sh, started in the background right after
# the dependencies, so it is built while the host tests run).
# Exits non-zero
# if anything failed; the last line is "N passed, N failed" over the
# prove test files and unit binaries.
#
#   FUZZ_SECONDS=10   time per fuzz target
#   PROVE_ARGS=...    extra prove flags (e.g. -v; the first pass, run by
#                     scripts/prove-parallel, takes -v only)
set -uo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS=${FUZZ_SECONDS:-10}
PROVE_ARGS=${PROVE_ARGS:-}
passed=0
failed=0
step_failures=()
# what failed, named again in the summary (CI shows only the tail)
failures=()

say() { printf '\n=== %s\n' "$*"; }
fail_step() { step_failures+=("$1"); }

if [ "$(id -u)" -ne 0 ]; then
    echo "test.sh: the integration tests need root (sudo $0)" >&2
    exit 1
fi

# t/helper/hostile-peer.t opens over a thousand connections to one
# helper: lift the soft descriptor limit to the hard one (no-op where it
# already is).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

say "dependencies"
bash scripts/install-deps.sh runtime build test bench \
    || fail_step "install-deps"

# The VMs' Debian rootfs (debootstrap: downloads and unpacking, a few
# minutes on a fresh machine) is built in the background while the host
# builds and tests run; the VM steps below wait for it.
mkdir -p build
bash scripts/vm-rootfs.sh >build/vm-rootfs.log 2>&1 &
vm_rootfs_pid=$!

say "build"
bash scripts/build.sh || fail_step "build"

# The browser tests' driver (playwright-core, pinned by t/browser's lock
# file; it drives Debian's chromium and downloads no browser).
say "browser test tooling (npm ci in t/browser)"
(cd t/browser && npm ci --no-audit --no-fund) || fail_step "npm ci in t/browser"

# The MCP client tests' client: the official MCP TypeScript SDK, pinned by
# t/mcp's lock file (t/module/mcp-client.t).
say "MCP client test tooling (npm ci in t/mcp)"
(cd t/mcp && npm ci --no-audit --no-fund) || fail_step "npm ci in t/mcp"

# The OpenAPI checks' validator: Ajv (JSON Schema 2020-12) with ajv-formats
# and the OpenAPI 3.1 schema, pinned by t/openapi's lock file
# (t/module/openapi.t).
say "OpenAPI test tooling (npm ci in t/openapi)"
(cd t/openapi && npm ci --no-audit --no-fund) || fail_step "npm ci in t/openapi"

# Unit binaries, one by one so each counts (this is what `make unit`
# runs, for the normal and the ASan build).
units=()
for src in t/unit/test_*.c; do
    [ -e "$src" ] || continue
    units+=("$(basename "$src" .c)")
done
for variant in normal asan; do
    if [ "$variant" = normal ]; then
        build=build; makeargs=()
    else
        build=build-asan; makeargs=(SAN=1 BUILD=build-asan)
    fi
    say "unit tests ($variant build, ${#units[@]} binaries)"
    # built together first (both cores); one that fails to build is named
    # by its own make below
    targets=()
    for u in "${units[@]}"; do
        targets+=("$build/unit/$u")
    done
    make -s -k -j"$(nproc)" "${makeargs[@]}" "${targets[@]}" >/dev/null 2>&1 || true
    for u in "${units[@]}"; do
        if ! make -s "${makeargs[@]}" "$build/unit/$u"; then
            echo "not ok - $build/unit/$u does not build"
            failures+=("$build/unit/$u does not build")
            failed=$((failed + 1))
            continue
        fi
        if "$build/unit/$u"; then
            echo "ok - $build/unit/$u"
            passed=$((passed + 1))
        else
            echo "not ok - $build/unit/$u"
            failures+=("$build/unit/$u")
            failed=$((failed + 1))
        fi
    done
done

say "fuzz targets (seeds up to date, build, regression inputs, then ${FUZZ_SECONDS}s each)"
# The helper's seeds are generated (t/fuzz/gen-corpus.py): stale ones would
# fuzz yesterday's protocol.
if python3 t/fuzz/gen-corpus.py --check; then
    echo "ok - fuzz seeds match t/fuzz/gen-corpus.py"
else
    fail_step "fuzz seeds out of date"
fi
# Generated files: t/README.md from the tests' opening comments, the README's
# endpoint table and the module's request field lists from docs/openapi.json.
if python3 scripts/gen-test-index --check; then
    echo "ok - t/README.md matches the tests' opening comments"
else
    fail_step "t/README.md out of date (scripts/gen-test-index)"
fi
if python3 scripts/gen-endpoint-table --check; then
    echo "ok - README.md's endpoint table matches docs/openapi.json"
else
    fail_step "README.md endpoint table out of date (scripts/gen-endpoint-table)"
fi
if python3 scripts/gen-op-fields --check; then
    echo "ok - the module's field lists match docs/openapi.json"
else
    fail_step "ngx_http_veto_sandbox_fields.h out of date (scripts/gen-op-fields)"
fi
# One target: its committed inputs once, then FUZZ_SECONDS from its seeds.
# Runs in the background (two at a time: one core each); what it says
# goes to build-fuzz/results/NAME.out, a failure to NAME.fail.
fuzz_one() {
    local name=$1 f=build-fuzz/$1 out=build-fuzz/results/$1
    local corpus seeds=() dict=()
    corpus=$(mktemp -d "/tmp/veto-fuzz-$name-XXXXXX")
    [ -d "t/fuzz/corpus/$name" ] && seeds=("t/fuzz/corpus/$name")
    [ -f "t/fuzz/dict/$name.dict" ] && dict=("-dict=t/fuzz/dict/$name.dict")
    mkdir -p "build-fuzz/crashers/$name"
    {
        # Every committed input (seeds and regress-* crashers) once: a
        # regression test per file.
        if [ ${#seeds[@]} -gt 0 ]; then
            if "$f" -runs=0 -artifact_prefix="build-fuzz/crashers/$name/" \
                    "${seeds[@]}" >"$corpus.log" 2>&1; then
                echo "ok - $name: $(find "${seeds[@]}" -type f | wc -l) committed inputs"
            else
                echo "not ok - $name crashes on a committed input:"
                tail -n 40 "$corpus.log"
                echo "fuzz $name corpus" >>"$out.fail"
            fi
        fi
        if "$f" -max_total_time="$FUZZ_SECONDS" -timeout=10 \
                -print_final_stats=0 \
                -artifact_prefix="build-fuzz/crashers/$name/" \
                ${dict[@]+"${dict[@]}"} \
                "$corpus" ${seeds[@]+"${seeds[@]}"} >"$corpus.log" 2>&1; then
            echo "ok - $name (${FUZZ_SECONDS}s)"
        else
            echo "not ok - $name found a crash (kept in build-fuzz/crashers/$name/):"
            tail -n 40 "$corpus.log"
            echo "fuzz $name" >>"$out.fail"
        fi
    } >"$out.out"
    rm -rf "$corpus" "$corpus.log"
}

if make -s fuzz; then
    rm -rf build-fuzz/results
    mkdir -p build-fuzz/results
    names=()
    # by source, so a stale binary of a removed target is not run
    for src in t/fuzz/fuzz_*.c; do
        names+=("$(basename "$src" .c)")
    done
    # two at a time, the oldest waited for first (only these pids: the
    # rootfs build runs in the background too)
    pids=()
    for name in "${names[@]}"; do
        if [ ${#pids[@]} -ge 2 ]; then
            wait "${pids[0]}"
            pids=("${pids[@]:1}")
        fi
        fuzz_one "$name" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do
        wait "$pid"
    done
    for name in "${names[@]}"; do
        if [ -f "build-fuzz/results/$name.out" ]; then
            cat "build-fuzz/results/$name.out"
        else
            echo "not ok - $name: no result"
            fail_step "fuzz $name (no result)"
        fi
        if [ -f "build-fuzz/results/$name.fail" ]; then
            while read -r what; do
                fail_step "$what"
            done <"build-fuzz/results/$name.fail"
        fi
    done
else
    fail_step "make fuzz"
fi

# Runs prove and adds its per-file results to the totals.
run_prove() {
    local label=$1; shift
    say "prove: $label"
    local out
    out=$(mktemp /tmp/veto-prove-XXXXXX)
    ${RUNNER:-prove -I t/lib} $PROVE_ARGS "$@" 2>&1 | tee "$out"
    local files bad
    files=$(sed -n 's/^Files=\([0-9]*\),.*/\1/p' "$out" | tail -n 1)
    # every failing file has one "name (Wstat: ...)" line in the summary
    bad=$(sed -n '/^Test Summary Report/,$p' "$out" | grep -c ' (Wstat: [0-9]')
    files=${files:-0}
    bad=${bad:-0}
    if [ "$files" -eq 0 ]; then
        echo "prove ($label) ran no test file"
        bad=1
        files=1
    fi
    passed=$((passed + files - bad))
    failed=$((failed + bad))
    if [ "$bad" -gt 0 ]; then
        local line
        while IFS= read -r line; do
            failures+=("$label: $line")
        done < <(sed -n '/^Test Summary Report/,/^Files=/p' "$out" \
                     | grep -E ' \(Wstat: |Failed tests?: ' ;
                 grep -E '^#   Failed test' "$out" | head -n 20)
    fi
    rm -f "$out"
}

# Two test files at a time (scripts/prove-parallel): most of a test's
# time is spent waiting on the things it started (a helper, nginx, Redis,
# a workload's deadline), so two share the two cores well, and every
# file starts its own instances (free ports, its own temp dirs, cgroups
# and network namespaces named by its pid); the Sentinel files (t/hosts/,
# t/redis/) run one after another, beside the rest.
RUNNER="scripts/prove-parallel" \
    run_prove "all tests, helper build/sandbox-helper" t/
# The VM steps (each a qemu guest under TCG: one core, mostly waiting on
# emulation) run in the background while the ASan passes run on the
# host; their output is printed, and their results counted, after them.
vm_steps() {
    # the rootfs built in the background since the dependencies: the VM
    # scripts wait for its lock (or build it, if that build failed)
    say "the VMs' rootfs (built in the background since the dependencies)"
    tail -n 1 build/vm-rootfs.log

    # The helper on a pure cgroup v2 host (this one may be hybrid v1): a
    # qemu VM running the cgroup unit test and the helper tests that
    # exercise cgroups, some also with the ASan helper.
    say "helper on a pure cgroup v2 host (qemu VM)"
    if bash scripts/test-cgroup-v2-vm.sh; then
        echo "ok - cgroup v2 VM"
    else
        echo "not ok - cgroup v2 VM"
        echo "cgroup v2 VM" >>build/vm-steps.failed
    fi

    # The Debian packages on a systemd host with pure cgroup v2 (qemu VM):
    # built from this tree, installed next to the archive's nginx and
    # Redis, the API driven end to end through them, nothing left after a
    # stop.
    say "Debian packages on a systemd + cgroup v2 host (qemu VM)"
    if bash scripts/test-packages-vm.sh; then
        echo "ok - packages on a systemd VM"
    else
        echo "not ok - packages on a systemd VM"
        echo "packages on a systemd VM" >>build/vm-steps.failed
    fi
}

rm -f build/vm-steps.failed
vm_steps >build/vm-steps.log 2>&1 &
vm_steps_pid=$!

# The ASan passes, two files at a time too (scripts/prove-parallel): the
# helper, image store and egress tests with the sanitized helper,
# sandbox-imagectl and proxy, in one run.
RUNNER="scripts/prove-parallel" \
VSB_IMAGECTL="$PWD/build-asan/sandbox-imagectl" \
VETO_EGRESS=build-asan/egress-proxy VETO_HELPER=build-asan/sandbox-helper \
    run_prove "helper, image store and egress tests, ASan+UBSan helper, sandbox-imagectl and proxy (build-asan/)" \
        t/helper/ t/images/ t/egress/
# (t/module/floors.t reads the module's sources and loads no module: not
# again)
module_asan=()
for f in t/module/*.t; do
    [ "$f" = t/module/floors.t ] || module_asan+=("$f")
done
RUNNER="scripts/prove-parallel" \
VETO_MODULE="$PWD/build-module-asan/ngx_veto_sandbox_module.so" \
VETO_HELPER=build-asan/sandbox-helper VETO_TOKEN=build-asan/veto-token \
    run_prove "module tests, ASan+UBSan module build-module-asan/, ASan helper and veto-token" \
        "${module_asan[@]}" t/approval/ t/hosts/ t/redis/*.t t/egress/api.t

wait "$vm_steps_pid"
wait "$vm_rootfs_pid" || echo "(the background rootfs build failed: build/vm-rootfs.log)"
cat build/vm-steps.log
passed=$((passed + 2))
if [ -f build/vm-steps.failed ]; then
    while read -r what; do
        failures+=("$what")
        failed=$((failed + 1))
        passed=$((passed - 1))
    done <build/vm-steps.failed
fi


# Every benchmark still runs (its figures are printed, never judged: a
# shared CI machine is not quiet).
say "benchmarks: scripts/bench --quick (that they run; no figure judged)"
if ./scripts/bench --quick --json build/bench-quick.json; then
    echo "ok - scripts/bench --quick"
    passed=$((passed + 1))
else
    echo "not ok - scripts/bench --quick"
    failures+=("scripts/bench --quick")
    failed=$((failed + 1))
fi

say "summary"
for f in "${failures[@]+"${failures[@]}"}"; do
    echo "failed: $f"
done
for s in "${step_failures[@]+"${step_failures[@]}"}"; do
    echo "step failed: $s"
done
if [ ${#step_failures[@]} -eq 0 ]; then
    echo "$passed passed, $failed failed"
else
    echo "$passed passed, $failed failed, ${#step_failures[@]} step(s) failed"
fi
[ "$failed" -eq 0 ] && [ ${#step_failures[@]} -eq 0 ]
