#!/usr/bin/env bash
# A real client end to end through the real helper: a private
# sandbox-helper with egress on starts the egress proxy, creates a sandbox
# whose allowlist names only the registry this machine's npm is
# configured for (read from "npm config get registry", never written down
# here), and runs "npm install" of a small package inside it.  Prints what
# it did, the exec's result and its "network" field (every attempt,
# allowed or refused).  Needs root, npm, and a build (make).
#
#   scripts/egress-npm-check.sh [package]     (default: is-number)
#   EGRESS_NO_RANGES=1 ...   do not allow the registry's own addresses when
#                            they are in a special range (shows the refusal)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

pkg=${1:-is-number}
[ "$(id -u)" -eq 0 ] || { echo "egress-npm-check: run as root" >&2; exit 1; }
for b in build/sandbox-helper build/sandbox-helperctl build/egress-proxy; do
    [ -x "$b" ] || { echo "egress-npm-check: $b missing (make)" >&2; exit 1; }
done
command -v npm >/dev/null || { echo "egress-npm-check: npm missing" >&2; exit 1; }

registry=$(npm config get registry)
host=$(printf '%s' "$registry" | sed -E 's#^[a-z]+://([^/:]+).*#\1#')
scheme=$(printf '%s' "$registry" | sed -E 's#^([a-z]+)://.*#\1#')
port=$( [ "$scheme" = https ] && echo 443 || echo 80 )
echo "registry (from npm config): $registry -> allowlist [\"$host:$port\"]"

dir=$(mktemp -d /tmp/veto-npm-check-XXXXXX)
chmod 0755 "$dir"
helper_pid=
cleanup() {
    if [ -n "$helper_pid" ]; then
        kill -TERM "$helper_pid" 2>/dev/null || true
        wait "$helper_pid" 2>/dev/null || true
    fi
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM

# Where the registry resolves to a special range (a mirror on a private
# or documentation address, as on some build machines), the proxy refuses
# it unless an operator range allows it: say so, and allow exactly those
# addresses (/32, /128), as an operator would with egress_allow_range.
ranges=""
for a in $(getent ahosts "$host" | awk '{print $1}' | sort -u); do
    case "$a" in *:*) ranges+="egress_allow_range = $a/128"$'\n' ;;
                 *)   ranges+="egress_allow_range = $a/32"$'\n' ;; esac
done
echo "registry addresses as this host resolves them (operator ranges):"
printf '%s' "$ranges" | sed 's/^/  /'
[ -n "${EGRESS_NO_RANGES:-}" ] && ranges=""

sock="$dir/helper.sock"
cat > "$dir/helper.conf" <<CONF
socket = $sock
state_dir = $dir/state
cgroup_name = veto-npm-check-$$
uid_base = $((1500000000 + ($$ % 1000) * 262144))
max_sandboxes = 2
max_timeout_s = 600
max_memory_mb = 2048
max_disk_mb = 1024
log_level = info
egress = on
egress_proxy = $root/build/egress-proxy
egress_user = nobody
$ranges
CONF
build/sandbox-helper -c "$dir/helper.conf" 2> "$dir/helper.log" &
helper_pid=$!

ctl() { build/sandbox-helperctl -s "$sock" "$@"; }
field() { python3 -c 'import json,sys; o=json.load(sys.stdin); print(eval("o"+sys.argv[1]))' "$1"; }

for _ in $(seq 200); do
    [ -S "$sock" ] && ctl '{"op":"ping"}' 2>/dev/null | grep -q '"available":true' && break
    sleep 0.05
done
echo "helper: $(ctl '{"op":"ping"}' | field '["egress"]')"

created=$(ctl "{\"op\":\"create\",\"tenant\":\"check\",\"agent\":\"npm\",\"limits\":{\"memory_mb\":1024,\"disk_mb\":512,\"timeout_s\":300},\"network\":{\"allow\":[\"$host:$port\"]}}")
id=$(printf '%s' "$created" | field '["sandbox"]["id"]')
echo "sandbox $id, network: $(printf '%s' "$created" | field '["sandbox"]["network"]')"

run() {   # exec in the sandbox: prints output, exit code and the network field
    local argv=$1
    ctl -o "$dir/out" "{\"op\":\"exec\",\"tenant\":\"check\",\"agent\":\"npm\",\"id\":\"$id\",\"argv\":$argv}" > "$dir/reply" || true
    python3 - "$dir/reply" "$dir/out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
out = open(sys.argv[2], "rb").read().decode(errors="replace") if r.get("ok") else ""
if not r.get("ok"):
    print("exec failed:", r.get("error"), r.get("detail")); sys.exit(0)
so, se = out[:r["stdout_len"]], out[r["stdout_len"]:]
for name, text in (("stdout", so), ("stderr", se)):
    lines = text.strip().splitlines()
    for l in lines[-12:]:
        print(f"  {name}: {l}")
print(f"  exit code: {r['exit_code']}, wall {r['usage']['wall_ms']} ms")
net = r.get("network", {})
print(f"  network: {len(net.get('attempts', []))} attempts, dropped {net.get('dropped')}, complete {net.get('complete')}")
for a in net.get("attempts", []):
    print("    {kind:8} {decision:8} {host}:{port} {address} out {bytes_out} in {bytes_in} {duration_ms} ms {reason}".format(
        **{**{"port": "", "address": "", "reason": ""}, **a}))
PY
}

echo '{"name":"egress-check","version":"1.0.0"}' | ctl -i - "{\"op\":\"write_file\",\"tenant\":\"check\",\"agent\":\"npm\",\"id\":\"$id\",\"path\":\"package.json\"}" >/dev/null

echo
echo "== npm install $pkg (HTTPS_PROXY as the helper sets it)"
run "[\"npm\",\"install\",\"--no-audit\",\"--no-fund\",\"--registry\",\"$registry\",\"$pkg\"]"
echo "installed: $(run '["ls","node_modules"]' | grep stdout | sed 's/  stdout: //' | tr '\n' ' ')"

echo
echo "== a host outside the allowlist, through the proxy (nothing leaves)"
run '["curl","-sS","-i","http://not-allowed.invalid/"]'

echo
echo "== transparent (no proxy variables): node fetch of the package's metadata"
run "[\"env\",\"-u\",\"HTTPS_PROXY\",\"-u\",\"https_proxy\",\"node\",\"-e\",\"fetch('$registry$pkg').then(r => r.json()).then(j => console.log('fetched', j.name, 'latest', j['dist-tags'].latest)).catch(e => console.log('error', e.cause ? e.cause.code : e))\"]"

echo
echo "destroy: $(ctl "{\"op\":\"destroy\",\"tenant\":\"check\",\"agent\":\"npm\",\"id\":\"$id\"}" | field '["confirmed"]')"
