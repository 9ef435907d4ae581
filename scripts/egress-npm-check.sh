#!/usr/bin/env bash
# A real client end to end through the egress proxy: "npm install" of a
# small package inside a sandbox network namespace whose allowlist names
# only the registry this machine's npm is configured for (read from
# "npm config get registry", never written down here).  Until the helper
# creates sandboxes with egress, this drives the seam directly: a fresh
# namespace configured by build/egress-linkctl (routes, nftables, sockets
# handed to the proxy) and build/egress-proxy running unprivileged in the
# host's namespace with the host's resolver.  Prints what it did and the
# proxy's attempt records.  Needs root, npm, and a build (make egress).
#
#   scripts/egress-npm-check.sh [package]     (default: is-number)
#   EGRESS_NO_RANGES=1 ...   do not allow the registry's own addresses when
#                            they are in a special range (shows the refusal)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

pkg=${1:-is-number}
[ "$(id -u)" -eq 0 ] || { echo "egress-npm-check: run as root" >&2; exit 1; }
for b in build/egress-proxy build/egress-linkctl; do
    [ -x "$b" ] || { echo "egress-npm-check: $b missing (make egress)" >&2; exit 1; }
done
command -v npm >/dev/null || { echo "egress-npm-check: npm missing" >&2; exit 1; }

registry=$(npm config get registry)
host=$(printf '%s' "$registry" | sed -E 's#^[a-z]+://([^/:]+).*#\1#')
scheme=$(printf '%s' "$registry" | sed -E 's#^([a-z]+)://.*#\1#')
port=$( [ "$scheme" = https ] && echo 443 || echo 80 )
echo "registry (from npm config): $registry -> allow $host:$port"

dir=$(mktemp -d /tmp/veto-npm-check-XXXXXX)
chmod 0755 "$dir"
ns="veg-npm-$$"
proxy_pid=
cleanup() {
    [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null && wait "$proxy_pid" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns" "$dir"
}
trap cleanup EXIT INT TERM

# Where the registry resolves to a special range (a mirror on a private
# or documentation address, as on some build machines), the proxy refuses
# it unless an operator range allows it: say so, and allow exactly those
# addresses (/32, /128), as an operator would with allow_range.
ranges=""
for a in $(getent ahosts "$host" | awk '{print $1}' | sort -u); do
    case "$a" in *:*) ranges+="allow_range = $a/128"$'\n' ;;
                 *)   ranges+="allow_range = $a/32"$'\n' ;; esac
done
echo "registry addresses as this host resolves them (operator ranges for the proxy):"
printf '%s' "$ranges" | sed 's/^/  /'

cat > "$dir/egress.conf" <<CONF
control_socket = $dir/egress.sock
allowed_uids = 0
user = nobody
log_level = info
${EGRESS_NO_RANGES:+#}$(printf '%s' "$ranges" | head -n 1)
$(printf '%s' "$ranges" | tail -n +2 | sed "s/^/${EGRESS_NO_RANGES:+#}/")
CONF
build/egress-proxy -c "$dir/egress.conf" 2> "$dir/proxy.log" &
proxy_pid=$!
for _ in $(seq 100); do grep -q 'ready:' "$dir/proxy.log" && break; sleep 0.05; done
echo "proxy: $(grep -o 'ready:.*' "$dir/proxy.log")"

ip netns add "$ns"
mkdir -p "/etc/netns/$ns"
build/egress-linkctl resolv > "/etc/netns/$ns/resolv.conf"
echo "sandbox namespace $ns: $(build/egress-linkctl setup --netns /run/netns/$ns \
    --proxy "$dir/egress.sock" --sandbox npm-check --allow "$host:$port")"

mkdir -p "$dir/project" "$dir/cache"
chmod -R 0777 "$dir/project" "$dir/cache"
echo '{"name":"egress-check","version":"1.0.0"}' > "$dir/project/package.json"

run() {   # in the sandbox namespace, with the proxy variables the helper sets
    ip netns exec "$ns" env $("$root/build/egress-linkctl" env | tr '\n' ' ') \
        npm_config_cache="$dir/cache" timeout 180 "$@"
}

echo
echo "== explicit (HTTPS_PROXY): npm install $pkg"
set +e
(cd "$dir/project" && run npm install --no-audit --no-fund --registry "$registry" "$pkg")
rc=$?
set -e
echo "npm exit status: $rc"
ls "$dir/project/node_modules" 2>/dev/null | sed 's/^/installed: /' || true

echo
echo "== a host outside the allowlist, through the proxy (no traffic leaves)"
ip netns exec "$ns" curl -sS -i -x http://127.0.0.1:3128 http://not-allowed.invalid/ | head -n 8 || true
echo
echo "== transparent (no proxy variables): node fetch of the package's metadata"
ip netns exec "$ns" timeout 60 node -e "fetch('$registry$pkg').then(r => r.json()).then(j => console.log('fetched', j.name, 'latest', j['dist-tags'].latest)).catch(e => console.log('error', e.cause ? e.cause.code : e))" || true
echo "== a name outside the allowlist through the sandbox's DNS stub"
ip netns exec "$ns" getent hosts not-allowed.invalid || echo "getent: not found (NXDOMAIN from the stub)"

echo
echo "== attempt records (as the helper will receive them)"
build/egress-linkctl records --proxy "$dir/egress.sock" --wait 300 | grep '"event"' || true
exit "$rc"
