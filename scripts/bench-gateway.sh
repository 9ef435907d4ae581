#!/usr/bin/env bash
# Benchmarks the gateway (nginx + ngx_veto_sandbox_module + helper) with
# wrk, against a baseline measured in the same run on the same nginx: a
# plain `return 200` location.  Prints requests/s and ratios, never a
# pass/fail threshold (machines are noisy).
#
#   plain          location { return 200; }                   (baseline)
#   health         GET /v1/health: no token, one helper round trip
#   list cached    GET /v1/sandboxes, RS256 token, verification cached
#   list uncached  the same on a server without the cache: RSA verify
#                  on every request
#
# Usage: sudo scripts/bench-gateway.sh [seconds] [connections]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

secs=${1:-5}
conns=${2:-32}
for c in wrk nginx openssl perl; do
    command -v "$c" >/dev/null || { echo "$c missing: run scripts/install-deps.sh" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "bench-gateway: needs root (the helper)" >&2; exit 1; }

make -s
[ -f build-module/ngx_veto_sandbox_module.so ] || bash scripts/build-module.sh >/dev/null

dir=$(mktemp -d /tmp/veto-bench-gw.XXXXXX)
chmod 755 "$dir"     # sandbox uids traverse it to their files
mkdir -p "$dir/nginx/logs" "$dir/nginx/tmp"
port_c=${VETO_BENCH_PORT:-18481}
port_u=$((port_c + 1))

helper=
cleanup() {
    [ -f "$dir/nginx/nginx.pid" ] && nginx -p "$dir/nginx" -c "$dir/nginx/nginx.conf" -s stop 2>/dev/null || true
    if [ -n "$helper" ]; then
        kill -TERM "$helper" 2>/dev/null || true
        wait "$helper" 2>/dev/null || true
    fi
    rm -rf "$dir"
}
trap cleanup EXIT

cat > "$dir/helper.conf" <<EOF
socket = $dir/helper.sock
allowed_uids = 0
state_dir = $dir/state
cgroup_name = veto-bench-gw-$$
EOF
build/sandbox-helper -c "$dir/helper.conf" 2>"$dir/helper.log" &
helper=$!
for _ in $(seq 50); do [ -S "$dir/helper.sock" ] && break; sleep 0.1; done

openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$dir/rsa.key" 2>/dev/null
openssl pkey -in "$dir/rsa.key" -pubout -out "$dir/rsa.pub"
cat > "$dir/policy.json" <<EOF
{"version": 1, "tenants": {"bench": {}}}
EOF

server() {    # server PORT CACHE-DIRECTIVE
    cat <<EOF
    server {
        listen 127.0.0.1:$1;
        veto_sandbox_helper unix:$dir/helper.sock;
        veto_sandbox_jwt_key bench RS256 $dir/rsa.pub;
        veto_sandbox_jwt_issuer bench;
        veto_sandbox_jwt_audience veto-sandbox;
        $2
        veto_sandbox_policy $dir/policy.json;
        location /v1/ { veto_sandbox_api; }
        location = /plain { return 200 "ok\n"; }
    }
EOF
}

cat > "$dir/nginx/nginx.conf" <<EOF
load_module $ROOT/build-module/ngx_veto_sandbox_module.so;
user root;
worker_processes 1;
pid $dir/nginx/nginx.pid;
error_log $dir/nginx/logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $dir/nginx/tmp;
$(server "$port_c" "veto_sandbox_jwt_cache zone=bench_jwt:1m;")
$(server "$port_u" "")
}
EOF
nginx -p "$dir/nginx" -c "$dir/nginx/nginx.conf"

token=$(KEY="$dir/rsa.key" perl -MCrypt::JWT=encode_jwt -e '
    open(my $f, "<", $ENV{KEY}) or die "$ENV{KEY}: $!";
    my $pem = do { local $/; <$f> };
    my $now = time;
    print encode_jwt(alg => "RS256", key => \$pem, extra_headers => { kid => "bench" },
        payload => { iss => "bench", aud => "veto-sandbox", sub => "bench-agent",
                     tenant => "bench", scope => "sandbox:create sandbox:exec",
                     iat => $now, exp => $now + 3600 });')

for _ in $(seq 50); do
    curl -sf "http://127.0.0.1:$port_c/plain" >/dev/null && break
    sleep 0.1
done
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
       "http://127.0.0.1:$port_c/v1/sandboxes")
[ "$code" = 200 ] || { echo "bench-gateway: list answered $code, not 200" >&2; exit 1; }

rps() {    # rps URL [header]
    local out
    if [ $# -gt 1 ]; then
        out=$(wrk -t2 -c"$conns" -d"${secs}s" -H "$2" "$1")
    else
        out=$(wrk -t2 -c"$conns" -d"${secs}s" "$1")
    fi
    if grep -q 'Non-2xx' <<<"$out"; then
        echo "bench-gateway: non-2xx answers from $1" >&2
        exit 1
    fi
    awk '/^Requests\/sec:/ { print $2 }' <<<"$out"
}

plain=$(rps "http://127.0.0.1:$port_c/plain")
health=$(rps "http://127.0.0.1:$port_c/v1/health")
cached=$(rps "http://127.0.0.1:$port_c/v1/sandboxes" "Authorization: Bearer $token")
uncached=$(rps "http://127.0.0.1:$port_u/v1/sandboxes" "Authorization: Bearer $token")

awk -v p="$plain" -v h="$health" -v c="$cached" -v u="$uncached" 'BEGIN {
    printf "plain return 200             %10.0f req/s (baseline)\n", p
    printf "GET /v1/health (helper ping) %10.0f req/s  %.3fx of baseline\n", h, h / p
    printf "GET /v1/sandboxes, cached    %10.0f req/s  %.3fx of baseline\n", c, c / p
    printf "GET /v1/sandboxes, uncached  %10.0f req/s  %.3fx of baseline\n", u, u / p
    printf "JWT cache speed-up           %10.2fx\n", c / u
}'
