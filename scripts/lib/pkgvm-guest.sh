#!/bin/bash
# The guest side of scripts/test-packages-vm.sh: runs inside the VM as a
# systemd oneshot unit after boot, prints VETO-* lines on the serial
# console, and powers the VM off.  Every step ends with
# "VETO-RESULT <step> ok|FAIL"; a failed check prints "VETO-FAIL".
set -uo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LANG=C.UTF-8

UNIT=veto-sandbox-helper.service
SVC_CG=/sys/fs/cgroup/system.slice/$UNIT
ETC=/etc/veto-sandbox
STATE=/var/lib/veto-sandbox
API=https://127.0.0.1
status=0
T0=$(date +%s)

# --- checks ------------------------------------------------------------

begin() { CUR=$1; STEP_OK=1; STEP_T0=$(date +%s); echo "VETO-STEP $1"; }
end() {
    local secs=$(( $(date +%s) - STEP_T0 ))
    if [ "$STEP_OK" = 1 ]; then
        echo "VETO-RESULT $CUR ok (${secs}s)"
    else
        echo "VETO-RESULT $CUR FAIL (${secs}s)"
        status=1
    fi
}
pass() { echo "VETO-OK $CUR: $1"; }
fail() { echo "VETO-FAIL $CUR: $1"; STEP_OK=0; }
# check DESCRIPTION COMMAND...: the command's success is the check
check() {
    local d=$1
    shift
    if "$@"; then pass "$d"; else fail "$d"; fi
}
# is DESCRIPTION GOT WANT
is() {
    if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: got '$2', want '$3'"; fi
}
info() { echo "VETO-INFO $*"; }
diag() { sed 's/^/VETO-DIAG /' "$@"; }

# api METHOD PATH TOKEN [BODY [CURL-ARGS...]]: the status code on
# stdout; the body in /tmp/body (or $API_OUT), the headers in /tmp/headers
api() {
    local m=$1 p=$2 tok=$3 body=${4-}
    shift 3
    [ $# -gt 0 ] && shift
    local args=(-sk -o "${API_OUT:-/tmp/body}" -D /tmp/headers
                -w '%{http_code}' -X "$m" --max-time 120)
    [ -n "$tok" ] && args+=(-H "Authorization: Bearer $tok")
    [ -n "$body" ] && args+=(-H 'Content-Type: application/json'
                             --data-binary "$body")
    curl "${args[@]}" "$@" "$API$p" || true
}
jbody() { jq -r "$1" /tmp/body 2>/dev/null; }

# wait_for SECONDS COMMAND...: until the command succeeds (a deadline,
# not a count: under TCG one try can take a second)
wait_for() {
    local until=$(( $(date +%s) + $1 ))
    shift
    while :; do
        "$@" && return 0
        [ "$(date +%s)" -lt "$until" ] || return 1
        sleep 0.2
    done
}

helper_pid() { systemctl show -p MainPID --value "$UNIT"; }
health_is() { [ "$(api GET /v1/health '')" = "$1" ]; }

# cgroup dirs of sandboxes anywhere in the hierarchy
sandbox_cgroups() { find /sys/fs/cgroup -type d -name 'sb-*' 2>/dev/null; }
# processes running as a sandbox's host uids (uid_base 1000000000)
sandbox_procs() { ps -e -o pid=,uid= | awk '$2 >= 1000000000'; }

finish() {
    info "guest total $(( $(date +%s) - T0 ))s"
    echo "VETO-STATUS $status"
    echo "VETO-END"
    systemctl --no-block poweroff
    exit 0
}

echo "VETO-BEGIN"
info "up $(cut -d ' ' -f 1 /proc/uptime)s when the test starts"
info "kernel $(uname -r), systemd $(systemctl --version | head -n 1)"
info "cgroup fs $(stat -f -c %T /sys/fs/cgroup), controllers $(cat /sys/fs/cgroup/cgroup.controllers)"

# --- install -----------------------------------------------------------

begin install
check "nginx and redis run from boot" systemctl is-active -q nginx redis-server
if dpkg -i /opt/veto/debs/*.deb >/tmp/dpkg.log 2>&1; then
    pass "dpkg -i of both packages"
else
    fail "dpkg -i"; diag /tmp/dpkg.log
fi
abi=$(dpkg-query -W -f='${Depends}' libnginx-mod-http-veto-sandbox \
      | tr ',' '\n' | grep -o 'nginx-abi-[^ ]*' || true)
info "module depends on ${abi:-?}; nginx provides $(dpkg-query -W -f='${Provides}' nginx)"
check "the module depends on an nginx ABI the archive's nginx provides" \
    sh -c "[ -n '$abi' ] && dpkg-query -W -f='\${Provides}' nginx | grep -qw -- '$abi'"
check "module enabled the Debian way" \
    test -L /etc/nginx/modules-enabled/50-mod-http-veto-sandbox.conf
check "nginx -t with the module loaded" nginx -t -q
check "the egress proxy's user exists" getent passwd veto-egress
is "helper unit enabled" "$(systemctl is-enabled $UNIT)" enabled
is "helper unit started by the package" "$(systemctl is-active $UNIT)" active
check "helper answers a ping" sandbox-helperctl '{"op":"ping"}'
is "socket group" "$(stat -c %G /run/veto-sandbox/helper.sock)" www-data
is "socket mode" "$(stat -c %a /run/veto-sandbox/helper.sock)" 660
check "allowed_uids names www-data" grep -q '^allowed_uids = 0 www-data$' $ETC/sandbox-helper.conf
check "the egress proxy where the helper looks for it" \
    test -x /usr/lib/veto-sandbox/egress-proxy
end

# --- configure, as docs/operations.md says -----------------------------

begin configure
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
    -out /root/issuer.key 2>/dev/null
openssl pkey -in /root/issuer.key -pubout -out $ETC/issuer.pub
check "veto-token jwks" sh -c "veto-token jwks $ETC/issuer.pub > $ETC/jwks.json"
cat > $ETC/policy.json <<'EOF'
{"version": 1,
 "tenants": {"acme": {"profiles": ["default"],
                      "ceilings": {"memory_mb": 256, "timeout_s": 60,
                                   "ttl_s": 3600},
                      "network": {"allow": ["registry.example.com"],
                                  "ask": ["git.example.com"]},
                      "approvals": {"exec_argv": ["echo deploy*"]}}}}
EOF
cat >> /etc/redis/redis.conf <<'EOF'
# Veto Sandbox: a unix socket for nginx, and persistence
unixsocket /run/redis/redis-server.sock
unixsocketperm 770
appendonly yes
appendfsync everysec
maxmemory-policy noeviction
EOF
adduser -q www-data redis
systemctl restart redis-server
is "redis persists (AOF)" \
    "$(redis-cli -s /run/redis/redis-server.sock config get appendonly | tail -n 1)" yes
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout /etc/ssl/private/sandbox.example.com.key \
    -out /etc/ssl/certs/sandbox.example.com.pem -days 2 \
    -subj /CN=sandbox.example.com 2>/dev/null
cp /usr/share/doc/libnginx-mod-http-veto-sandbox/examples/veto-sandbox-site.conf \
    /etc/nginx/sites-available/veto-sandbox
ln -s ../sites-available/veto-sandbox /etc/nginx/sites-enabled/
if nginx -t >/tmp/nginx-t.log 2>&1; then
    pass "nginx -t with the example site, unchanged"
else
    fail "nginx -t"; diag /tmp/nginx-t.log
fi
check "nginx restarted" systemctl restart nginx
end

# --- the API through the packages ---------------------------------------

mint() {
    veto-token mint --key /root/issuer.key --iss https://idp.example.com/ \
        --aud veto-sandbox --tenant acme "$@"
}
AGENT=$(mint --sub ci-bot --role agent --ttl 1h)
REVIEWER=$(mint --sub alice --role reviewer)
AUDITOR=$(mint --sub auditor-1 --role auditor)

begin api
is "health" "$(api GET /v1/health '')" 200
info "health $(cat /tmp/body)"
is "health: the helper on cgroup v2" "$(jbody .helper.cgroup)" v2
is "health: Redis up" "$(jbody .redis)" up

is "create" "$(api POST /v1/sandboxes "$AGENT" '{"ttl_s": 600}')" 201
SB=$(jbody .id)
info "sandbox $SB"
is "write a file" "$(api PUT "/v1/sandboxes/$SB/files?path=run.sh" "$AGENT" '' \
    --data-binary 'echo "hello from $(id -u)"; cat /proc/self/cgroup; sleep 3')" 200

# an exec that runs 3 s: meanwhile, where its processes are
API_OUT=/tmp/exec.json api POST "/v1/sandboxes/$SB/exec" "$AGENT" \
    '{"argv": ["sh", "run.sh"]}' > /tmp/exec.code &
exec_bg=$!
if wait_for 20 sh -c "grep -l '$SB' /proc/[0-9]*/cgroup >/tmp/procs 2>/dev/null"
then
    bad=0
    for f in $(cat /tmp/procs); do
        cg=$(sed -n 's/^0:://p' "$f" 2>/dev/null) || continue
        [ -n "$cg" ] || continue
        info "exec process ${f#/proc/}: $cg"
        case $cg in
            /system.slice/$UNIT/veto-sandbox/$SB/e*) ;;
            *) bad=1 ;;
        esac
    done
    is "every process of the exec in <service>/veto-sandbox/$SB/e<n>" "$bad" 0
else
    fail "no process of the exec found"
fi
info "sandbox cgroups: $(sandbox_cgroups | tr '\n' ' ')"
is "no sandbox cgroup outside the helper's service" \
    "$(sandbox_cgroups | grep -v "^$SVC_CG/veto-sandbox/" | wc -l)" 0
is "the helper itself in <service>/helper" \
    "$(sed -n 's/^0:://p' /proc/"$(helper_pid)"/cgroup)" "/system.slice/$UNIT/helper"
wait $exec_bg
is "exec" "$(cat /tmp/exec.code)" 200
is "exec: exit 0" "$(jq -r .exit_code /tmp/exec.json)" 0
is "exec: runs as the sandbox's uid 1000" \
    "$(jq -r .stdout /tmp/exec.json | head -n 1)" "hello from 1000"
is "exec: its own cgroup namespace" \
    "$(jq -r .stdout /tmp/exec.json | sed -n 2p)" "0::/"

# the approval story
req='{"argv": ["echo", "deploy", "prod"]}'
is "exec that needs a human: 202" "$(api POST "/v1/sandboxes/$SB/exec" "$AGENT" "$req")" 202
APR=$(jbody .approval_id)
check "Location names the approval" grep -qi "^location: /v1/approvals/$APR" /tmp/headers
is "reviewer lists it" "$(api GET '/v1/approvals?state=pending' "$REVIEWER")" 200
is "it is pending" "$(jbody ".approvals[] | select(.id == \"$APR\") | .state")" pending
is "the agent cannot approve" "$(api POST "/v1/approvals/$APR/approve" "$AGENT" '{}')" 403
is "reviewer approves" "$(api POST "/v1/approvals/$APR/approve" "$REVIEWER" '{"reason": "release"}')" 200
is "approved" "$(jbody .state)" approved
is "retry with the approval runs" "$(api POST "/v1/sandboxes/$SB/exec" "$AGENT" "$req" -H "Veto-Approval: $APR")" 200
is "retry output" "$(jbody .stdout)" "deploy prod"
is "a second use is refused" "$(api POST "/v1/sandboxes/$SB/exec" "$AGENT" "$req" -H "Veto-Approval: $APR")" 403
is "... as used" "$(jbody .type)" urn:veto-sandbox:problem:approval_used
is "auditor reads the trail" "$(api GET '/v1/audit?agent=ci-bot' "$AUDITOR")" 200
check "the approved exec is on record" \
    sh -c "jq -e '.records[] | select(.approval == \"$APR\" and .outcome == \"exec_finished\")' /tmp/body >/dev/null"
is "the approval page" "$(api GET /review/ '')" 200
check "... with its CSP" grep -qi "^content-security-policy: default-src 'self'" /tmp/headers
# the example site's metrics location, for the loopback scraper
is "metrics" "$(api GET /metrics '')" 200
check "... the helper up (its stats op through the module)" \
    grep -Eq '^veto_sandbox_helper_up(\{[^}]*\})? 1$' /tmp/body
check "... the requests counted" grep -q '^veto_sandbox_requests_total{' /tmp/body

# a pids limit an exec runs into (cgroup v2 here): the exec is told, the
# sandbox goes on
is "a sandbox of 8 pids" "$(api POST /v1/sandboxes "$AGENT" '{"limits": {"pids": 8}}')" 201
SBP=$(jbody .id)
is "a bounded fork bomb" "$(api POST "/v1/sandboxes/$SBP/exec" "$AGENT" \
    '{"argv": ["sh", "-c", "for i in $(seq 1 20); do sleep 1 & done; wait"]}')" 200
is "... limits_hit names pids" "$(jbody '.limits_hit | tostring')" '["pids"]'
is "the next exec in it" "$(api POST "/v1/sandboxes/$SBP/exec" "$AGENT" \
    '{"argv": ["sh", "-c", "sleep 0.1 & wait; echo alive"]}')" 200
is "... runs" "$(jbody .stdout)" alive
is "... hitting no limit" "$(jbody '.limits_hit | tostring')" '[]'
is "delete it" "$(api DELETE "/v1/sandboxes/$SBP" "$AGENT")" 200

is "delete" "$(api DELETE "/v1/sandboxes/$SB" "$AGENT")" 200
is "terminated" "$(jbody .state)" terminated
# deleted: the helper put its ENDED record on file before it answered the
# delete, and keeps it for ended_retention_s (1 day here): a GET right
# after answers the end, never 404 and never live
code=$(api GET "/v1/sandboxes/$SB" "$AGENT")
is "gone: answered as ended, deleted" \
    "$code:$(jbody 'if .state then .state + " " + .end_reason else "none" end')" \
    "200:ended deleted"
is "its cgroup gone" "$(sandbox_cgroups | grep -c "$SB")" 0
end

# --- restart on failure ---------------------------------------------------

begin restart
is "create" "$(api POST /v1/sandboxes "$AGENT" '{"ttl_s": 600}')" 201
SB2=$(jbody .id)
is "exec" "$(api POST "/v1/sandboxes/$SB2/exec" "$AGENT" '{"argv": ["true"]}')" 200
old=$(helper_pid)
kill -KILL "$old"
check "systemd restarts the helper (Restart=on-failure)" \
    wait_for 30 sh -c "[ \"\$(systemctl show -p MainPID --value $UNIT)\" != $old ] \
                       && [ \"\$(systemctl show -p MainPID --value $UNIT)\" != 0 ] \
                       && systemctl is-active -q $UNIT"
info "NRestarts $(systemctl show -p NRestarts --value $UNIT)"
check "health after the restart" wait_for 10 health_is 200
# it ended with the helper: the restarted helper put its end on record
# before its socket opened (the health check above went through it)
code=$(api GET "/v1/sandboxes/$SB2" "$AGENT")
is "the killed helper's sandbox: answered as ended, helper_restart" \
    "$code:$(jbody 'if .state then .state + " " + .end_reason else "none" end')" \
    "200:ended helper_restart"
is "its cgroup removed" "$(sandbox_cgroups | grep -c "$SB2")" 0
check "its directory removed" test ! -e "$STATE/sb/$SB2"
is "no process of a sandbox uid" "$(sandbox_procs | wc -l)" 0
end

# --- egress: the packaged proxy, started by the helper -------------------

begin egress
sed -i 's/^egress = off$/egress = on/' $ETC/sandbox-helper.conf
check "egress = on" grep -q '^egress = on$' $ETC/sandbox-helper.conf
check "helper restarted with egress on" systemctl restart $UNIT
is "health" "$(api GET /v1/health '')" 200
info "health $(cat /tmp/body)"
is "the helper's egress is available" "$(jbody .helper.egress.available)" true
proxy=$(pgrep -x egress-proxy | head -n 1)
if [ -n "$proxy" ]; then
    is "the proxy runs as veto-egress" "$(ps -o user= -p "$proxy")" veto-egress
    is "the packaged binary" "$(readlink /proc/"$proxy"/exe)" /usr/lib/veto-sandbox/egress-proxy
    cg=$(sed -n 's/^0:://p' /proc/"$proxy"/cgroup)
    info "proxy cgroup $cg"
    check "its cgroup is below the helper's service" \
        sh -c "case '$cg' in /system.slice/$UNIT/*) true;; *) false;; esac"
else
    fail "no egress-proxy process"
fi
is "create with an allowlist" \
    "$(api POST /v1/sandboxes "$AGENT" '{"network": {"allow": ["registry.example.com"]}}')" 201
SBE=$(jbody .id)
is "a host outside the allowlist, through the proxy" \
    "$(api POST "/v1/sandboxes/$SBE/exec" "$AGENT" \
       '{"argv": ["curl", "-sS", "-m", "20", "http://git.example.com/"]}')" 200
info "exec: $(head -c 600 /tmp/body)"
check "the proxy's refusal reached the workload" \
    sh -c "jq -r .stdout /tmp/body | grep -q 'blocked by Veto Sandbox egress policy: git.example.com:80 is not allowed'"
is "the attempt is in the exec's result" \
    "$(jbody '.network.attempts[] | select(.host == "git.example.com") | .decision')" refused
is "delete" "$(api DELETE "/v1/sandboxes/$SBE" "$AGENT")" 200
end

# --- the helper's tests under the unit's hardening -------------------------

begin hardening
# every [Service] line of the installed unit but how it starts and stops
sed -n '/^\[Service\]/,/^\[/p' /lib/systemd/system/$UNIT \
    | grep -E '^[A-Za-z]+=' \
    | grep -vE '^(Type|Exec[A-Za-z]*|Restart[A-Za-z]*|KillMode|TimeoutStopSec|RuntimeDirectory[A-Za-z]*|StateDirectory[A-Za-z]*)=' \
    > /tmp/hardening
info "options: $(tr '\n' ' ' < /tmp/hardening)"

# hardened_prove LOG FILES [OPTION]: prove in a service with the unit's
# options (and OPTION); status of prove
hardened_prove() {
    {
        echo "[Service]"
        echo "Type=oneshot"
        echo "TimeoutStartSec=infinity"
        echo "WorkingDirectory=/opt/veto"
        # an emulated CPU: walks of big trees get 3 times their time
        # (t/helper/hostile-workload.t)
        echo "Environment=VETO_HELPER=/usr/sbin/sandbox-helper VSB_IMAGECTL=/usr/sbin/sandbox-imagectl VETO_TIME_SCALE=3"
        echo "ExecStart=/usr/bin/prove --timer -I t/lib $2"
        echo "StandardOutput=file:$1"
        echo "StandardError=inherit"
        cat /tmp/hardening
        [ -z "${3-}" ] || echo "$3"
    } > /run/systemd/system/veto-hardening-test.service
    rm -f "$1"
    systemctl daemon-reload
    systemctl start veto-hardening-test.service
    grep -q '^Result: PASS' "$1"
}

hardened_prove /var/log/veto-hardening-prove.log "$VETO_PROVE_FILES"
rc=$?
echo "VETO-PROVE-BEGIN"
cat /var/log/veto-hardening-prove.log
echo "VETO-PROVE-END"
is "$VETO_PROVE_FILES pass in a service with the unit's options" "$rc" 0

# VETO_TRY_OPTIONS="A=x;B=y": each option alone with t/helper/basic.t, on top
# of the unit's options, or with VETO_TRY_ALONE=1 on top of the unit's
# options without its hardening block (a developer's tool for the next
# hardening option; reported, never a failure)
if [ "${VETO_TRY_ALONE:-0}" = 1 ]; then
    sed -n '/^\[Service\]/,/^\[/p' /lib/systemd/system/$UNIT \
        | sed '/^# --- hardening/,/^# --- end of hardening/d' \
        | grep -E '^[A-Za-z]+=' \
        | grep -vE '^(Type|Exec[A-Za-z]*|Restart[A-Za-z]*|KillMode|TimeoutStopSec|RuntimeDirectory[A-Za-z]*|StateDirectory[A-Za-z]*)=' \
        > /tmp/hardening
    info "tries on top of: $(tr '\n' ' ' < /tmp/hardening)"
fi
IFS=';' read -r -a tries <<< "${VETO_TRY_OPTIONS-}"
for opt in "${tries[@]}"; do
    [ -n "$opt" ] || continue
    if hardened_prove /var/log/veto-try.log t/helper/basic.t "$opt"; then
        info "try $opt: t/helper/basic.t passes"
    else
        info "try $opt: t/helper/basic.t FAILS: $(grep -a -m 4 -E "detail|error|Failed test|^sandbox: |got: '[^']" /var/log/veto-try.log | tr '\n' ' ')"
    fi
done
end

# --- stop: nothing left ----------------------------------------------------

begin stop
is "create" "$(api POST /v1/sandboxes "$AGENT" '{"ttl_s": 600}')" 201
SB3=$(jbody .id)
API_OUT=/tmp/exec3.json api POST "/v1/sandboxes/$SB3/exec" "$AGENT" \
    '{"argv": ["sleep", "30"]}' > /tmp/exec3.code &
exec_bg=$!
check "the exec runs" wait_for 20 sh -c "[ -n \"\$(ps -e -o uid= | awk '\$1 >= 1000000000')\" ]"
t=$(date +%s%N)
systemctl stop $UNIT
info "systemctl stop took $(( ($(date +%s%N) - t) / 1000000 )) ms"
is "stopped cleanly" "$(systemctl show -p Result --value $UNIT)" success
check "the service cgroup is gone" test ! -e "$SVC_CG"
is "no sandbox cgroup anywhere" "$(sandbox_cgroups | wc -l)" 0
is "no process of a sandbox uid" "$(sandbox_procs | wc -l)" 0
is "no mount under $STATE" "$(grep -c " $STATE" /proc/self/mountinfo)" 0
is "no sandbox directory" "$(ls -A $STATE/sb 2>/dev/null | wc -l)" 0
is "no egress proxy left" "$(pgrep -c -u veto-egress || true)" 0
wait $exec_bg
info "the running exec's answer: $(cat /tmp/exec3.code) $(head -c 300 /tmp/exec3.json)"
check "the running exec was ended, not completed (a signal, or an error)" \
    sh -c "[ \"\$(cat /tmp/exec3.code)\" != 200 ] || jq -e '.signal != null' /tmp/exec3.json >/dev/null"
is "health: helper down" "$(api GET /v1/health '')" 503
check "starts again" systemctl start $UNIT
check "health back" wait_for 10 health_is 200
end

finish
