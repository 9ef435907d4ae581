#!/usr/bin/env bash
# Benchmarks the sandbox-helper against baselines measured in the same run,
# and prints ratios (never absolute pass/fail thresholds: machines are noisy).
#
#   exec overhead:  `exec true` in a sandbox  vs  `sh -c true` on the host
#   protocol cost:  `ping` round trip          vs  `sh -c true` on the host
#   create+destroy: one sandbox made and ended (two client runs and a jq)
#                   vs  `sh -c true` on the host
#   netns cost:     `unshare -n true` (a network namespace made and freed)
#                   vs `sh -c true`, and its share of create+destroy
#   memory:         helper RSS with N idle sandboxes vs with none
#
# Usage: sudo scripts/bench-helper.sh [runs]   (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-30}
command -v hyperfine >/dev/null || { echo "hyperfine missing: run scripts/install-deps.sh" >&2; exit 1; }
make -s BUILD=${BUILD:-build}

dir=$(mktemp -d /tmp/veto-bench.XXXXXX)
chmod 755 "$dir"    # sandbox uids must traverse it to reach their files
cat > "$dir/helper.conf" <<EOF
socket = $dir/helper.sock
allowed_uids = 0
state_dir = $dir/state
cgroup_name = veto-bench-$$
max_sandboxes = 64
EOF

${BUILD:-build}/sandbox-helper -c "$dir/helper.conf" 2>"$dir/helper.log" &
helper=$!
cleanup() {
    kill -TERM "$helper" 2>/dev/null || true
    wait "$helper" 2>/dev/null || true
    [ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT

ctl="${BUILD:-build}/sandbox-helperctl -s $dir/helper.sock"
for _ in $(seq 50); do [ -S "$dir/helper.sock" ] && break; sleep 0.1; done

id=$($ctl '{"op":"create","tenant":"bench","agent":"bench"}' | jq -r .sandbox.id)
exec_req='{"op":"exec","tenant":"bench","agent":"bench","id":"'"$id"'","argv":["true"]}'

{
    echo '#!/bin/sh'
    echo 'set -e'
    echo "id=\$($ctl '{\"op\":\"create\",\"tenant\":\"bench\",\"agent\":\"cycle\"}' | jq -r .sandbox.id)"
    echo "$ctl '{\"op\":\"destroy\",\"tenant\":\"bench\",\"agent\":\"cycle\",\"id\":\"'\$id'\"}' >/dev/null"
} > "$dir/cycle.sh"
chmod +x "$dir/cycle.sh"

hyperfine -N --warmup 3 --runs "$runs" --export-json "$dir/h.json" \
    -n host-true "sh -c true" \
    -n helper-ping "$ctl '{\"op\":\"ping\"}'" \
    -n sandbox-exec-true "$ctl '$exec_req'" \
    -n host-unshare-net "unshare -n true" \
    -n sandbox-create-destroy "$dir/cycle.sh" >"$dir/hyperfine.out"

mean() { jq -r --arg n "$1" '.results[] | select(.command == $n) | .mean' "$dir/h.json"; }
host=$(mean host-true); ping=$(mean helper-ping); ex=$(mean sandbox-exec-true)
netns=$(mean host-unshare-net); cycle=$(mean sandbox-create-destroy)

rss() { awk '/VmRSS/ { print $2 }' "/proc/$helper/status"; }
rss0=$(rss)
for _ in $(seq 20); do $ctl '{"op":"create","tenant":"bench","agent":"bench"}' >/dev/null; done
rss20=$(rss)

awk -v h="$host" -v p="$ping" -v e="$ex" -v n="$netns" -v c="$cycle" \
    -v r0="$rss0" -v r20="$rss20" 'BEGIN {
    printf "host sh -c true            %8.2f ms (baseline)\n", h * 1000
    printf "helper ping round trip     %8.2f ms  ratio %.2fx\n", p * 1000, p / h
    printf "sandbox exec true          %8.2f ms  ratio %.2fx\n", e * 1000, e / h
    printf "sandbox create + destroy   %8.2f ms  ratio %.2fx\n", c * 1000, c / h
    printf "host unshare -n true       %8.2f ms  ratio %.2fx, %.0f%% of create + destroy\n", n * 1000, n / h, 100 * (n - h) / c
    printf "helper RSS idle %d KiB, with 21 sandboxes %d KiB  ratio %.2fx\n", r0, r20, r20 / r0
}'
