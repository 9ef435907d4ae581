#!/usr/bin/env bash
# Runs the whole product on this machine for a demo or manual testing:
# Redis on 127.0.0.1:6390 (append-only file in the state directory), the
# sandbox-helper with network egress on (it runs the egress proxy), nginx
# with the module on 127.0.0.1:8080 serving the API, the approval page
# (/review/), MCP (/v1/mcp) and Prometheus metrics (/metrics), all with
# generated configs in one state directory.  Installs only the runtime and
# build packages (a no-op check when they are there) and builds only what
# it runs (no sanitizer builds, no test tools; output in STATE/build-*.log).
# Prints demo tokens and a walkthrough, then stays in the foreground until
# Ctrl-C (or SIGTERM) and stops everything it started.
#
# Egress: the demo policy's network allowlist holds the package registries
# this machine's npm (npm config get registry) and apt (/etc/apt/sources.list
# and sources.list.d/*.list, *.sources) are configured for; a registry whose
# address lies in a special range (private, documentation, ...) that the
# proxy refuses by default gets exactly that address as an
# egress_allow_range, and the script says so.  The proxy runs as the
# unprivileged user veto-egress, created (system user, no login) if missing.
#
#   --no-egress    VETO_EGRESS=0    helper with egress = off (network "none")
#   --no-mcp       VETO_MCP=0       no /v1/mcp
#   --no-metrics   VETO_METRICS=0   no /metrics
#   --no-page      VETO_PAGE=0      no approval page (/review/)
#   VETO_STACK_DIR=/tmp/veto-stack  where configs, logs and state go
#   VETO_HTTP_PORT=8080  VETO_REDIS_PORT=6390  VETO_STACK_CGROUP=veto-stack
#   VETO_EGRESS_USER=veto-egress    the proxy's user
#   VETO_ALLOW_HOSTS="a.example b.example:8443"   more allowlist entries
#   JOBS=N                          parallel compile jobs (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
START=$SECONDS

EGRESS=${VETO_EGRESS:-1}
MCP=${VETO_MCP:-1}
METRICS=${VETO_METRICS:-1}
PAGE=${VETO_PAGE:-1}
for arg in "$@"; do
    case $arg in
        --no-egress)  EGRESS=0 ;;
        --no-mcp)     MCP=0 ;;
        --no-metrics) METRICS=0 ;;
        --no-page)    PAGE=0 ;;
        -h|--help)    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
                      exit 0 ;;
        *) echo "run-stack: unknown argument '$arg' (--help)" >&2; exit 2 ;;
    esac
done

STATE=${VETO_STACK_DIR:-/tmp/veto-stack}
HTTP_PORT=${VETO_HTTP_PORT:-8080}
REDIS_PORT=${VETO_REDIS_PORT:-6390}
CGROUP_NAME=${VETO_STACK_CGROUP:-veto-stack}
EGRESS_USER=${VETO_EGRESS_USER:-veto-egress}
WORKER_USER=www-data
ISSUER=veto-dev
AUDIENCE=veto-sandbox

if [ "$(id -u)" -ne 0 ]; then
    echo "run-stack: the sandbox-helper needs root (sudo $0)" >&2
    exit 1
fi

mkdir -p "$STATE"/{redis,helper,nginx/logs,nginx/tmp,keys}

bash scripts/install-deps.sh runtime build

# --- build: output to log files, one progress line ------------------------
# Only the two binaries it runs and the module, no tools.  The helper and
# the module (configure, make modules) build at the same time: the
# module's configure runs on one core while make uses the others.  Up to
# date, both take about a second.
JOBS=${JOBS:-$(nproc)}
echo "run-stack: building the helper and the module (logs: $STATE/build-*.log)"
build_start=$SECONDS
make -j"$JOBS" build/sandbox-helper build/egress-proxy \
    > "$STATE/build-helper.log" 2>&1 &
make_pid=$!
JOBS=$JOBS bash scripts/build-module.sh > "$STATE/build-module.log" 2>&1 &
module_pid=$!
build_failed=
wait "$make_pid" || build_failed+=" helper"
wait "$module_pid" || build_failed+=" module"
if [ -n "$build_failed" ]; then
    for what in $build_failed; do
        echo "run-stack: the $what build failed; the end of $STATE/build-$what.log:" >&2
        tail -25 "$STATE/build-$what.log" >&2
    done
    exit 1
fi
echo "run-stack: built in $((SECONDS - build_start)) s"

MODULE="$ROOT/build-module/ngx_veto_sandbox_module.so"
[ -x build/sandbox-helper ] || { echo "run-stack: build/sandbox-helper missing" >&2; exit 1; }
[ -f "$MODULE" ] || { echo "run-stack: $MODULE missing" >&2; exit 1; }
id "$WORKER_USER" >/dev/null 2>&1 || { echo "run-stack: no user $WORKER_USER" >&2; exit 1; }

# nginx workers (www-data) must reach the helper socket's directory.
chmod 0755 "$STATE" "$STATE/helper"
chmod 0700 "$STATE/keys" "$STATE/redis"

pids=()
stop_all() {
    trap - INT TERM EXIT
    echo
    echo "run-stack: stopping"
    if [ -f "$STATE/nginx/nginx.pid" ]; then
        nginx -p "$STATE/nginx" -c "$STATE/nginx/nginx.conf" -s quit 2>/dev/null || true
    fi
    # reverse start order: nginx, helper (destroys its sandboxes and stops
    # the egress proxy), redis
    local i
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        kill -TERM "${pids[$i]}" 2>/dev/null || true
        wait "${pids[$i]}" 2>/dev/null || true
    done
    echo "run-stack: stopped (logs in $STATE)"
}
trap stop_all EXIT
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM

# --- egress: the registries this machine uses, and their addresses -------
ALLOW=()        # policy network.allow entries
RANGES=()       # helper egress_allow_range lines
NPM_REGISTRY=
url_host() {    # scheme://[user@]host[:port]/... -> host[:port], http(s) only
    printf '%s\n' "$1" | sed -nE 's#^https?://([^@/]*@)?([^/]+).*#\2#p'
}
if [ "$EGRESS" = 1 ]; then
    if command -v npm >/dev/null 2>&1; then
        NPM_REGISTRY=$(timeout 10 npm config get registry 2>/dev/null || true)
        [ -n "$NPM_REGISTRY" ] && ALLOW+=("$(url_host "$NPM_REGISTRY")")
    fi
    # apt: one-line "deb [opts] URI suite ..." lists and deb822 "URIs:"
    apt_uris=$( { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
                    | sed -nE 's/^[[:space:]]*deb(-src)?[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\3/p'
                  cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
                    | sed -nE 's/^URIs:[[:space:]]*(.*)/\1/p' | tr ' ' '\n'; } | sort -u)
    for u in $apt_uris; do
        h=$(url_host "$u")
        [ -n "$h" ] && ALLOW+=("$h")
    done
    for h in ${VETO_ALLOW_HOSTS:-}; do ALLOW+=("$h"); done
    mapfile -t ALLOW < <(printf '%s\n' "${ALLOW[@]}" | sed '/^$/d' | sort -u)
    # host[:port] only (the policy's own parser checks the rest at nginx
    # -t); anything else (an address literal, a typo) is left out, said
    valid=()
    for entry in "${ALLOW[@]}"; do
        if [[ $entry =~ ^[A-Za-z0-9*][A-Za-z0-9.*-]*(:[0-9]+)?$ ]]; then
            valid+=("$entry")
        else
            echo "run-stack: '$entry' is not host[:port]: left out of the allowlist" >&2
        fi
    done
    ALLOW=("${valid[@]}")

    # A name that resolves here to a special-range address (a mirror on a
    # private or documentation address) is refused by the proxy unless an
    # operator range allows it: allow exactly those addresses, and say so.
    for entry in "${ALLOW[@]}"; do
        for a in $(getent ahosts "${entry%%:*}" 2>/dev/null | awk '{print $1}' | sort -u); do
            # the IANA special-purpose registries, as the proxy's
            # egress-proxy/addr.c has them (and IPv6 outside 2000::/3)
            if python3 -c 'import ipaddress as i, sys; a = i.ip_address(sys.argv[1]); sys.exit(0 if not a.is_global or (a.version == 6 and a not in i.ip_network("2000::/3")) else 1)' "$a"; then
                case $a in *:*) r="$a/128" ;; *) r="$a/32" ;; esac
                [[ " ${RANGES[*]} " == *" $r "* ]] || RANGES+=("$r")
                echo "run-stack: ${entry%%:*} resolves to $a, a special-range address the egress proxy refuses by default: allowed with egress_allow_range = $r"
            fi
        done
    done

    if ! id "$EGRESS_USER" >/dev/null 2>&1; then
        useradd --system --no-create-home --home-dir /nonexistent \
                --shell /usr/sbin/nologin "$EGRESS_USER"
        echo "run-stack: created the system user $EGRESS_USER for the egress proxy"
    fi
    [ -x build/egress-proxy ] || { echo "run-stack: build/egress-proxy missing" >&2; exit 1; }
fi

# --- Redis ---------------------------------------------------------------
# Revocations, quota slots, approvals and the audit trail live here: they
# must survive a Redis restart (docs/operations.md: Redis persistence), so every write
# goes to the append-only file, fsynced each second; no eviction, ever (an
# evicted revocation is an unrevoked token).
cat > "$STATE/redis/redis.conf" <<EOF
bind 127.0.0.1
port $REDIS_PORT
protected-mode yes
daemonize no
dir $STATE/redis
appendonly yes
appendfsync everysec
save ""
maxmemory-policy noeviction
logfile $STATE/redis/redis.log
EOF
redis-server "$STATE/redis/redis.conf" &
pids+=($!)

# --- sandbox-helper -----------------------------------------------------
HELPER_SOCK="$STATE/helper/helper.sock"
if [ "$EGRESS" = 1 ]; then
    # the operator's credentials directory (docs/operations.md,
    # "Credentials"): root's, no secret in it; add bindings and
    # secrets/ files to it and restart
    install -d -m 0700 "$STATE/credentials" "$STATE/credentials/secrets"
    [ -e "$STATE/credentials/bindings" ] \
        || install -m 0600 /dev/null "$STATE/credentials/bindings"
fi
{
    cat <<EOF
# generated by scripts/run-stack.sh
socket = $HELPER_SOCK
socket_group = $WORKER_USER
socket_mode = 0660
allowed_uids = $WORKER_USER
state_dir = $STATE/helper/state
cgroup_name = $CGROUP_NAME
log_level = info
EOF
    if [ "$EGRESS" = 1 ]; then
        echo "egress = on"
        echo "egress_proxy = $ROOT/build/egress-proxy"
        echo "egress_user = $EGRESS_USER"
        for r in "${RANGES[@]}"; do echo "egress_allow_range = $r"; done
        # credentials: no operator secret; the proxy's CA and
        # interception, for the secrets agents bind to agent_hosts
        echo "egress_credentials = $STATE/credentials"
    else
        echo "egress = off"
    fi
} > "$STATE/helper/sandbox-helper.conf"
build/sandbox-helper -t -c "$STATE/helper/sandbox-helper.conf"
build/sandbox-helper -c "$STATE/helper/sandbox-helper.conf" \
    2>>"$STATE/helper/helper.log" &
pids+=($!)

# --- identity: an HS256 development key ----------------------------------
SECRET_FILE="$STATE/keys/dev-hs256.key"
[ -s "$SECRET_FILE" ] || openssl rand -hex 32 | tr -d '\n' > "$SECRET_FILE"
chmod 0600 "$SECRET_FILE"

# --- policy: the demo tenant, within the helper's default ceilings -------
json_list() {   # JSON array of the arguments (plain host[:port] entries)
    local out= e
    for e in "$@"; do out+="${out:+, }\"$e\""; done
    printf '[%s]' "$out"
}
NETWORK='{}'
[ "$EGRESS" = 1 ] && [ ${#ALLOW[@]} -gt 0 ] && NETWORK="{\"allow\": $(json_list "${ALLOW[@]}")}"
CREDENTIALS=
[ "$EGRESS" = 1 ] && CREDENTIALS='"credentials": {"agent_hosts": ["api.example.com"]},'

POLICY="$STATE/nginx/policy.json"
cat > "$POLICY" <<EOF
{
  "version": 1,
  "tenants": {
    "demo": {
      "profiles": ["default"],
      "default_profile": "default",
      "ceilings": {"memory_mb": 1024, "pids": 256, "cpu_percent": 200,
                   "disk_mb": 1024, "timeout_s": 600,
                   "output_bytes": 4194304, "ttl_s": 7200,
                   "file_bytes": 16777216},
      "defaults": {"memory_mb": 256, "pids": 128, "cpu_percent": 100,
                   "disk_mb": 256, "timeout_s": 60, "ttl_s": 1800},
      "network": $NETWORK,
      $CREDENTIALS
      "approvals": {"exec_argv": ["*curl*", "*wget*", "git push*"],
                    "ttl_s": 3600},
      "quotas": {"concurrent_sandboxes": 10, "execs_per_minute": 120}
    }
  }
}
EOF

# --- the approval page: its files, and the example config's location ----
PAGE_CONF=
if [ "$PAGE" = 1 ]; then
    PAGE_DIR="$STATE/approval-page"
    rm -rf "$PAGE_DIR"
    cp -R approval-page "$PAGE_DIR"
    chmod -R a+rX "$PAGE_DIR"
    PAGE_CONF=$(sed -n '/# BEGIN approval page/,/# END approval page/p' \
                    conf/nginx-veto.conf.example \
                | sed "s|^\( *alias \+\)[^ ;]*;|\1$PAGE_DIR/;|")
fi

# --- MCP and metrics (README: "MCP endpoint", "Monitor") -----------------
MCP_CONF=
MCP_LOCATION=
if [ "$MCP" = 1 ]; then
    MCP_CONF="veto_sandbox_mcp on;
        veto_sandbox_mcp_sessions zone=veto_mcp:1m;"
    MCP_LOCATION="location /.well-known/oauth-protected-resource {
            veto_sandbox_mcp_metadata;
        }"
fi
METRICS_LOCATION=
if [ "$METRICS" = 1 ]; then
    METRICS_LOCATION="location = /metrics {
            veto_sandbox_metrics;
            allow 127.0.0.1;
            allow ::1;
            deny all;
        }"
fi

# --- nginx with the module (directives: docs/operations.md) ----------
cat > "$STATE/nginx/nginx.conf" <<EOF
# generated by scripts/run-stack.sh (see conf/nginx-veto.conf.example)
load_module $MODULE;
user $WORKER_USER;
worker_processes 2;
daemon off;
pid $STATE/nginx/nginx.pid;
error_log $STATE/nginx/logs/error.log info;
# connection capacity and slow clients: conf/nginx-veto.conf.example and
# docs/operations.md "Connection limits and slowloris"
worker_rlimit_nofile 65536;
events { worker_connections 16384; }
http {
    log_format veto '\$remote_addr [\$time_local] "\$request" \$status '
                    'agent=\$veto_agent tenant=\$veto_tenant '
                    'decision=\$veto_decision sandbox=\$veto_sandbox '
                    'rt=\$request_time';
    access_log $STATE/nginx/logs/access.log veto;
    client_body_temp_path $STATE/nginx/tmp/body;
    proxy_temp_path $STATE/nginx/tmp/proxy;
    fastcgi_temp_path $STATE/nginx/tmp/fastcgi;
    uwsgi_temp_path $STATE/nginx/tmp/uwsgi;
    scgi_temp_path $STATE/nginx/tmp/scgi;
    client_max_body_size 16m;

    client_header_timeout 10s;
    client_body_timeout 10s;
    send_timeout 30s;
    keepalive_timeout 15s;
    reset_timedout_connection on;
    limit_conn_zone \$binary_remote_addr zone=veto_conn_addr:10m;
    limit_conn_status 429;
    limit_conn_log_level warn;

    # approvals, quotas, revocation and audit (docs/approvals.md)
    veto_sandbox_redis 127.0.0.1:$REDIS_PORT;

    server {
        listen 127.0.0.1:$HTTP_PORT;
        limit_conn veto_conn_addr 64;

        veto_sandbox_helper unix:$HELPER_SOCK;
        veto_sandbox_helper_read_timeout 120s;
        veto_sandbox_jwt_key dev HS256 $SECRET_FILE;
        veto_sandbox_jwt_issuer $ISSUER;
        veto_sandbox_jwt_audience $AUDIENCE;
        veto_sandbox_jwt_cache zone=veto_jwt:1m;
        veto_sandbox_policy $POLICY;
        $MCP_CONF

        location /v1/ {
            veto_sandbox_api;
        }
        $MCP_LOCATION
        $METRICS_LOCATION

$PAGE_CONF
    }
}
EOF

# Redis and the helper start meanwhile; nginx -t reads the policy and the
# key but needs neither.
nginx -q -t -p "$STATE/nginx" -c "$STATE/nginx/nginx.conf"
redis_ok=
for _ in $(seq 100); do
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1 && { redis_ok=1; break; }
    sleep 0.05
done
[ -n "$redis_ok" ] \
    || { echo "run-stack: redis did not start (see $STATE/redis/redis.log)" >&2; exit 1; }
for _ in $(seq 200); do
    [ -S "$HELPER_SOCK" ] && break
    sleep 0.05
done
[ -S "$HELPER_SOCK" ] \
    || { echo "run-stack: helper did not start (see $STATE/helper/helper.log)" >&2; exit 1; }
nginx -p "$STATE/nginx" -c "$STATE/nginx/nginx.conf" &
pids+=($!)
BASE="http://127.0.0.1:$HTTP_PORT"
# ready when health says the helper answers and the worker reached Redis,
# and, with egress on, the proxy is up
healthy() {
    [[ $health == *'"status":"ok"'* && $health == *'"redis":"up"'* ]] || return 1
    [ "$EGRESS" = 0 ] || [[ $health == *'"egress":{"available":true'* ]]
}
health=
for _ in $(seq 200); do
    health=$(curl -s --max-time 1 "$BASE/v1/health" || true)
    healthy && break
    sleep 0.05
done
if ! healthy; then
    if [ "$EGRESS" = 1 ] && [[ $health == *'"status":"ok"'* ]]; then
        echo "run-stack: egress is not available: $health" >&2
        echo "run-stack: (see $STATE/helper/helper.log; --no-egress runs without it)" >&2
    else
        echo "run-stack: /v1/health answers '$health' (see $STATE/nginx/logs)" >&2
    fi
    exit 1
fi

# --- the demo identities: an agent, a human reviewer, an auditor ---------
mint() {    # mint SUB SCOPES
    SECRET_FILE="$SECRET_FILE" ISSUER="$ISSUER" AUDIENCE="$AUDIENCE" \
    SUB="$1" SCOPES="$2" perl -MCrypt::JWT=encode_jwt -e '
        open(my $f, "<", $ENV{SECRET_FILE}) or die "read $ENV{SECRET_FILE}: $!";
        my $key = <$f>;
        my $now = time;
        print encode_jwt(alg => "HS256", key => $key,
            extra_headers => { kid => "dev" },
            payload => { iss => $ENV{ISSUER}, aud => $ENV{AUDIENCE},
                         sub => $ENV{SUB}, tenant => "demo",
                         scope => $ENV{SCOPES},
                         iat => $now, nbf => $now, exp => $now + 24 * 3600,
                         jti => sprintf("%s-%d", $ENV{SUB}, $now) });'
}
TOKEN=$(mint demo-agent "sandbox:create sandbox:exec sandbox:files sandbox:network")
REVIEWER=$(mint demo-reviewer "approvals:review")
AUDITOR=$(mint demo-auditor "audit:read")
printf 'export TOKEN=%s\nexport REVIEWER=%s\nexport AUDITOR=%s\nexport API=%s\n' \
    "$TOKEN" "$REVIEWER" "$AUDITOR" "$BASE" > "$STATE/env"
chmod 0600 "$STATE/env"

on_off() { [ "$1" = 1 ] && echo "$2" || echo "off ($3)"; }
REG_HOST=
[ -n "$NPM_REGISTRY" ] && REG_HOST=$(url_host "$NPM_REGISTRY")
cat <<EOF

Veto Sandbox is running, started in $((SECONDS - START)) s (state, configs and logs in $STATE)
  health    $health
  api       $BASE/v1/   (logs: $STATE/nginx/logs)
  approvals $(on_off "$PAGE" "$BASE/review/   (paste the REVIEWER token)" "--no-page")
  mcp       $(on_off "$MCP" "$BASE/v1/mcp" "--no-mcp")
  metrics   $(on_off "$METRICS" "$BASE/metrics" "--no-metrics")
  egress    $(on_off "$EGRESS" "on: allowlist ${ALLOW[*]:-(none)}${RANGES[*]:+; egress_allow_range ${RANGES[*]}}" "--no-egress")
  secrets   $(on_off "$EGRESS" "agents' own, for api.example.com (PATCH {\"secret\"}); the operator's: $STATE/credentials" "--no-egress")
  helper    $HELPER_SOCK   (log: $STATE/helper/helper.log)
  redis     127.0.0.1:$REDIS_PORT

Demo identities in tenant "demo", valid 24 h (also in $STATE/env):
an agent, a human reviewer, an auditor.

export TOKEN='$TOKEN'
export REVIEWER='$REVIEWER'
export AUDITOR='$AUDITOR'
export API=$BASE
A="Authorization: Bearer \$TOKEN"; J='Content-Type: application/json'
EOF

if [ "$EGRESS" = 1 ] && [ -n "$REG_HOST" ]; then
cat <<EOF

# 1. a project with a dependency and a test, uploaded as one archive
mkdir -p /tmp/veto-demo && cd /tmp/veto-demo
echo '{"name":"veto-demo","version":"1.0.0","scripts":{"test":"node test.js"},"dependencies":{"is-number":"^7.0.0"}}' > package.json
echo 'const n = require("is-number"); if (!n(5) || n("x")) process.exit(1); console.log("tests pass")' > test.js
git init -q && git add -A && git -c user.name=demo -c user.email=demo@example.test commit -qm init
tar czf /tmp/veto-demo.tar.gz .
ID=\$(curl -s -X POST \$API/v1/sandboxes -H "\$A" -H "\$J" \\
     -d '{"network":{"allow":["$REG_HOST"]},"limits":{"memory_mb":1024,"disk_mb":512}}' | jq -r .id)
curl -s -X PUT "\$API/v1/sandboxes/\$ID/archive" -H "\$A" --data-binary @/tmp/veto-demo.tar.gz

# 2. install its dependencies from the registry (the only host it may reach), run its tests
curl -s -X POST \$API/v1/sandboxes/\$ID/exec -H "\$A" -H "\$J" \\
     -d '{"argv":["npm","install","--no-audit","--no-fund","--registry","$NPM_REGISTRY"],"timeout_s":300}' \\
     | jq '{exit_code, stdout, network: [.network.attempts[] | {host, decision}]}'
curl -s -X POST \$API/v1/sandboxes/\$ID/exec -H "\$A" -H "\$J" -d '{"argv":["npm","test"]}' | jq -r .stdout

# 3. the agent changes a file; read the patch back
curl -s -X PUT "\$API/v1/sandboxes/\$ID/files?path=test.js" -H "\$A" \\
     --data-binary 'const n = require("is-number"); if (!n(5) || n("x") || n(null)) process.exit(1); console.log("tests pass")'
curl -s -X POST \$API/v1/sandboxes/\$ID/exec -H "\$A" -H "\$J" -d '{"argv":["git","diff"]}' | jq -r .stdout
# adding a host to its allowlist (scope sandbox:network): one the policy does not allow is 422
curl -s -X PATCH \$API/v1/sandboxes/\$ID -H "\$A" -H "\$J" -d '{"network":{"add":["example.com"]}}' | jq .
EOF
else
cat <<EOF

# 1. a sandbox, a file, a run (egress is off: network "none")
ID=\$(curl -s -X POST \$API/v1/sandboxes -H "\$A" -H "\$J" \\
     -d '{"limits":{"memory_mb":256}}' | jq -r .id)
curl -s -X PUT "\$API/v1/sandboxes/\$ID/files?path=hello.py" -H "\$A" --data-binary 'print("hello")'
curl -s -X POST \$API/v1/sandboxes/\$ID/exec -H "\$A" -H "\$J" -d '{"argv":["python3","hello.py"]}' | jq -r .stdout
EOF
fi

cat <<EOF

# 4. a command that needs a human: 202 with an approval id
APPROVAL=\$(curl -s -X POST \$API/v1/sandboxes/\$ID/exec -H "\$A" -H "\$J" \\
     -d '{"argv":["curl","--version"]}' | jq -r .approval_id)
EOF
if [ "$PAGE" = 1 ]; then
cat <<EOF
echo "review it at \$API/review/#/approval/\$APPROVAL (paste the REVIEWER token there), or:"
EOF
fi
cat <<EOF
curl -s -X POST \$API/v1/approvals/\$APPROVAL/approve -H "Authorization: Bearer \$REVIEWER" \\
     -H "\$J" -d '{"reason":"looked at it"}' | jq -r .state
# the agent repeats the same request with the approval, once
curl -s -X POST \$API/v1/sandboxes/\$ID/exec -H "\$A" -H "\$J" -H "Veto-Approval: \$APPROVAL" \\
     -d '{"argv":["curl","--version"]}' | jq -r .stdout | head -1
EOF
if [ "$MCP" = 1 ]; then
cat <<EOF

# 5. MCP (Streamable HTTP) with the same token: initialize, then tools/list
M=(-H "\$A" -H "\$J" -H 'Accept: application/json, text/event-stream')
SESSION=\$(curl -s -D - -o /dev/null "\${M[@]}" \$API/v1/mcp \\
     -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}' \\
     | tr -d '\r' | awk -F': ' 'tolower(\$1) == "mcp-session-id" {print \$2}')
curl -s "\${M[@]}" -H "Mcp-Session-Id: \$SESSION" -H 'MCP-Protocol-Version: 2025-11-25' \$API/v1/mcp \\
     -d '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' | jq -r '.result.tools[].name'
EOF
fi
if [ "$METRICS" = 1 ]; then
cat <<EOF

# 6. Prometheus metrics (loopback only)
curl -s \$API/metrics | grep '^veto_sandbox_requests_total' | head -5
EOF
fi
cat <<EOF

# 7. the audit trail, and the end of the sandbox
curl -s "\$API/v1/audit?limit=5" -H "Authorization: Bearer \$AUDITOR" | jq -c '.records[] | [.action, .outcome]'
curl -s -X DELETE \$API/v1/sandboxes/\$ID -H "\$A" | jq .

Press Ctrl-C to stop everything.
EOF

# Stay up until Ctrl-C or until one of the services dies.
wait -n "${pids[@]}" || true
echo "run-stack: a service exited; see the logs in $STATE" >&2
