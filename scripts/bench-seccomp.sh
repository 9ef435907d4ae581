#!/usr/bin/env bash
# Benchmarks the workload's boundary against the same program on the host
# in the same run, and prints ratios (never pass/fail thresholds).
#
#   allowed syscall:  getppid() in a loop, inside a sandbox (seccomp
#                     allowlist + argument filter) vs on the host
#   path syscall:     openat()+close() of a file in /usr (Landlock walks
#                     its rules on each open) vs on the host
#   refused syscall:  an unreviewed number in a loop, answered by the
#                     sandbox's init through the seccomp listener, vs
#                     the host kernel's own ENOSYS
#   exec:             `exec true` (now with Landlock and the listener
#                     hand-over) vs `sh -c true` on the host
#
# Usage: sudo scripts/bench-seccomp.sh [iterations]   (default 200000)
set -euo pipefail
cd "$(dirname "$0")/.."

n=${1:-200000}
command -v hyperfine >/dev/null || { echo "hyperfine missing: run scripts/install-deps.sh" >&2; exit 1; }
make -s BUILD=${BUILD:-build}

dir=$(mktemp -d /tmp/veto-bench.XXXXXX)
chmod 755 "$dir"
cat > "$dir/helper.conf" <<EOF
socket = $dir/helper.sock
allowed_uids = 0
state_dir = $dir/state
cgroup_name = veto-bench-sc-$$
max_sandboxes = 4
EOF

cat > "$dir/loop.c" <<'EOF'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static double now(void)
{ struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv)
{
    long i, n = atol(argv[2]);
    double t = now();
    for (i = 0; i < n; i++) {
        if (strcmp(argv[1], "allowed") == 0) syscall(SYS_getppid);
        else if (strcmp(argv[1], "open") == 0) close(open("/usr/bin/true", O_RDONLY));
        else syscall(1000, 0, 0, 0);
    }
    printf("%.1f\n", (now() - t) * 1e9 / n);
    return 0;
}
EOF
gcc -O2 -static -o "$dir/loop" "$dir/loop.c"

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
$ctl -i "$dir/loop" '{"op":"write_file","tenant":"bench","agent":"bench","id":"'"$id"'","path":"loop","mode":493}' >/dev/null

inside() {
    $ctl -o "$dir/out" '{"op":"exec","tenant":"bench","agent":"bench","id":"'"$id"'","argv":["/workspace/loop","'"$1"'","'"$n"'"]}' >/dev/null
    head -1 "$dir/out"
}

for kind in allowed open refused; do
    host=$("$dir/loop" "$kind" "$n")
    sb=$(inside "$kind")
    awk -v k="$kind" -v h="$host" -v s="$sb" 'BEGIN {
        printf "%-8s syscall  host %8.1f ns  sandbox %8.1f ns  ratio %.2fx\n", k, h, s, s / h }'
done

exec_req='{"op":"exec","tenant":"bench","agent":"bench","id":"'"$id"'","argv":["true"]}'
hyperfine -N --warmup 3 --runs 30 --export-json "$dir/h.json" \
    -n host-true "sh -c true" \
    -n sandbox-exec-true "$ctl '$exec_req'" >"$dir/hyperfine.out"
mean() { jq -r --arg n "$1" '.results[] | select(.command == $n) | .mean' "$dir/h.json"; }
awk -v h="$(mean host-true)" -v e="$(mean sandbox-exec-true)" 'BEGIN {
    printf "exec true         host %8.2f ms  sandbox %8.2f ms  ratio %.2fx\n", h * 1000, e * 1000, e / h }'
