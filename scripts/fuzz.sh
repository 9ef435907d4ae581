#!/usr/bin/env bash
# Long fuzzing runs, outside CI.
#
#   scripts/fuzz.sh [minutes] [target ...]     (default: 10 minutes, all)
#
# Builds the libFuzzer targets (make fuzz) and runs every target of
# t/fuzz/fuzz_*.c (build-fuzz/fuzz_*) for the given time, each from its
# seeds (t/fuzz/corpus/<target>/, read only) with its dictionary
# (t/fuzz/dict/<target>.dict), at most FUZZ_JOBS at a time (default: the
# number of CPUs).  Everything goes to FUZZ_OUT (default
# build-fuzz/runs/<date>):
#
#   crashers/<target>/   crash-*, timeout-*, oom-*, leak-* inputs
#   corpus/<target>/     inputs the run found that add coverage
#   logs/<target>.log    libFuzzer's output
#
# A single input running longer than FUZZ_TIMEOUT seconds (default 10)
# counts as a hang.  FUZZ_ARGS adds libFuzzer flags to every run.  Prints
# one line per target and exits 1 if any target found something: each
# crasher must become t/fuzz/corpus/<target>/regress-<what> and a test
# (docs/testing.md, "Fuzzing").
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

minutes=10
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then
    minutes=$1
    shift
fi
if [ "$minutes" -lt 1 ]; then
    echo "fuzz.sh: minutes must be at least 1" >&2
    exit 2
fi
FUZZ_JOBS=${FUZZ_JOBS:-$(nproc)}
FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-10}
FUZZ_OUT=${FUZZ_OUT:-build-fuzz/runs/$(date +%Y%m%d-%H%M%S)}
read -r -a extra <<<"${FUZZ_ARGS:-}"

if ! make -s -j"$(nproc)" fuzz; then
    echo "fuzz.sh: make fuzz failed" >&2
    exit 1
fi

targets=()
if [ $# -gt 0 ]; then
    for t in "$@"; do
        if [ ! -x "build-fuzz/$t" ]; then
            echo "fuzz.sh: no target build-fuzz/$t" >&2
            exit 2
        fi
        targets+=("$t")
    done
else
    for src in t/fuzz/fuzz_*.c; do
        [ -e "$src" ] && targets+=("$(basename "$src" .c)")
    done
fi
if [ ${#targets[@]} -eq 0 ]; then
    echo "fuzz.sh: no fuzz target built" >&2
    exit 1
fi

mkdir -p "$FUZZ_OUT/logs" || exit 1
echo "fuzz.sh: ${#targets[@]} target(s), $minutes min each," \
     "$FUZZ_JOBS at a time, output in $FUZZ_OUT"

run_one() {
    local name=$1 seeds=() dict=()
    mkdir -p "$FUZZ_OUT/crashers/$name" "$FUZZ_OUT/corpus/$name"
    [ -d "t/fuzz/corpus/$name" ] && seeds=("t/fuzz/corpus/$name")
    [ -f "t/fuzz/dict/$name.dict" ] && dict=("-dict=t/fuzz/dict/$name.dict")
    # new inputs go to the first directory, never into the seeds
    "build-fuzz/$name" -max_total_time=$((minutes * 60)) \
        -timeout="$FUZZ_TIMEOUT" -print_final_stats=1 \
        -artifact_prefix="$FUZZ_OUT/crashers/$name/" \
        ${dict[@]+"${dict[@]}"} ${extra[@]+"${extra[@]}"} \
        "$FUZZ_OUT/corpus/$name" ${seeds[@]+"${seeds[@]}"} \
        >"$FUZZ_OUT/logs/$name.log" 2>&1
    echo $? >"$FUZZ_OUT/logs/$name.rc"
}

running=0
for name in "${targets[@]}"; do
    if [ "$running" -ge "$FUZZ_JOBS" ]; then
        wait -n
        running=$((running - 1))
    fi
    echo "fuzz.sh: $name started"
    run_one "$name" &
    running=$((running + 1))
done
wait

found=0
printf '\n%-16s %12s %9s %6s %7s %7s  %s\n' \
    target execs exec/s edges corpus rss_mb result
for name in "${targets[@]}"; do
    log=$FUZZ_OUT/logs/$name.log
    rc=$(cat "$FUZZ_OUT/logs/$name.rc" 2>/dev/null || echo '?')
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
    last=$(grep -E '^#[0-9]+.* cov: ' "$log" | tail -n 1)
    edges=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$last")
    arts=$(find "$FUZZ_OUT/crashers/$name" -type f | sort)
    if [ -n "$arts" ] || [ "$rc" != 0 ]; then
        result="FOUND (exit $rc)"
        found=1
    else
        result=ok
    fi
    printf '%-16s %12s %9s %6s %7s %7s  %s\n' "$name" "${execs:-?}" \
        "${speed:-?}" "${edges:-?}" "${corp:-?}" "${rss:-?}" "$result"
    for a in $arts; do
        echo "    $a"
    done
done

if [ "$found" = 1 ]; then
    cat <<EOF

fuzz.sh: findings above (log: $FUZZ_OUT/logs/<target>.log).  Reproduce with
  build-fuzz/<target> <file>
minimise with
  build-fuzz/<target> -minimize_crash=1 -runs=100000 <file>
then keep it as t/fuzz/corpus/<target>/regress-<what> with a test.
EOF
    exit 1
fi
echo
echo "fuzz.sh: no crash, hang or leak; new inputs in $FUZZ_OUT/corpus/"
