#!/usr/bin/env bash
# Runs the helper's cgroup tests on a pure cgroup v2 host: a qemu virtual
# machine (TCG by default, KVM optional) booting Debian 12's own kernel
# (6.1) with cgroup2 mounted at /sys/fs/cgroup and the memory, pids and
# cpu controllers enabled at its root, as systemd would leave it.  The
# development hosts are hybrid (v1 controllers), so this is the only place
# the v2 limit code (memory.max, pids.max, cpu.max, memory.oom.group,
# memory.events, cgroup.kill, subtree delegation, leaf move) really runs.
#
# Only the tests that exercise cgroups run here (an emulated CPU is 10-20
# times slower, so the whole of t/helper/ no longer fits): the cgroup unit
# test (t/unit/test_cgroup.c, against the real cgroupfs), then, in t/helper/,
#   basic.t            create/exec/destroy, the cgroup mode, cgroups confirmed
#   timeout.t          a timed-out exec's whole tree killed (cgroup.kill)
#   resources.t        memory, pids, cpu limits; OOM reported
#   confinement.t      v2's whole-exec OOM, no cgroupfs inside
#   seccomp.t          the filter on Debian 12's kernel, which lacks some
#                      syscalls the dev host's has
#   lifecycle.t        nothing leaks: cycles, TTL, restart cleanup
#   hostile-workload.t fork bombs, memory hogs, the cgroup namespace
#   teardown.t         stopped, SIGTERM-proof and forking trees (freeze, kill)
#   layers.t           the ping's isolation layers (what GET /v1/about
#                      serves) say v2 here and hold against the VM
# with the helper built on this host (make), then basic.t, resources.t and
# teardown.t (and the unit test) with the ASan+UBSan helper (build-asan/),
# then the "systemd-like" case (helper
# started from a service cgroup that already holds a sleeping sibling) and
# the "container" case (helper at the root of a private cgroup namespace),
# each with t/helper/basic.t and t/helper/resources.t.  The binaries are the
# ones scripts/test.sh built and tested on the host (Debian 12 too); the VM
# runs them, it does not build.  Results come back on the serial console
# between BEGIN/END markers; this script exits 0 only if every step
# passed, and prints the prove summary.  Inside, VETO_TIME_SCALE=3 gives
# workloads that walk big trees (hostile-workload.t), a fork loop's start
# (teardown.t) and the deadline timeout.t kills a tree at
# three times their time.
#
# Time on the busy 2-core dev host (TCG): see docs/testing.md ("Tests").
#
#   VETO_VM_CACHE=build-vm           rootfs cache (kept between runs;
#                                    the packages VM's too)
#   VETO_V2VM_TIMEOUT=2400           seconds the VM may run
#   VETO_V2VM_PROVE="t/helper/basic.t ..."  test files to run inside
#   VETO_V2VM_ASAN=1                 run the ASan helper's tests too
#   VETO_V2VM_ASAN_PROVE="t/helper/basic.t ..."  which ones
#   VETO_V2VM_REBUILD=1              rebuild the cached rootfs
#                                    (or VETO_VM_REBUILD=1)
#   VETO_V2VM_ACCEL=tcg              or kvm: on the nested-virt dev
#                                    host a KVM guest hangs in the kernel
#                                    decompressor; TCG boots in ~15 s
#
# Needs root, qemu-system-x86, debootstrap, e2fsprogs and the
# Debian archive (packages only; the VM itself has no network).  The
# rootfs cache, the image and the boot are scripts/lib/vm.sh's, shared
# with scripts/test-packages-vm.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
VM_NAME=test-cgroup-v2-vm
. scripts/lib/vm.sh

TIMEOUT=${VETO_V2VM_TIMEOUT:-2400}
PROVE_FILES=${VETO_V2VM_PROVE:-t/helper/basic.t t/helper/timeout.t t/helper/resources.t t/helper/confinement.t t/helper/seccomp.t t/helper/lifecycle.t t/helper/hostile-workload.t t/helper/teardown.t t/helper/layers.t}
ASAN=${VETO_V2VM_ASAN:-1}
ASAN_FILES=${VETO_V2VM_ASAN_PROVE:-t/helper/basic.t t/helper/resources.t t/helper/teardown.t}
ACCEL=${VETO_V2VM_ACCEL:-tcg}
export VETO_VM_REBUILD=${VETO_V2VM_REBUILD:-${VETO_VM_REBUILD:-0}}

vm_host_check "$ACCEL"

# --- 1. the binaries, built here ---------------------------------------

# Incremental: under scripts/test.sh these are built and tested already.
vm_say "building the helper and the cgroup unit test (make)"
mkdir -p "$VM_CACHE"
make -j2 build/sandbox-helper build/sandbox-helperctl build/unit/test_cgroup >"$VM_CACHE/v2vm-make.log" 2>&1 \
    || { tail -n 40 "$VM_CACHE/v2vm-make.log" >&2; vm_die "make failed (log: $VM_CACHE/v2vm-make.log)"; }
if [ "$ASAN" = 1 ]; then
    make -j2 SAN=1 BUILD=build-asan build-asan/sandbox-helper \
        build-asan/unit/test_cgroup >>"$VM_CACHE/v2vm-make.log" 2>&1 \
        || { tail -n 40 "$VM_CACHE/v2vm-make.log" >&2; vm_die "make SAN=1 failed (log: $VM_CACHE/v2vm-make.log)"; }
fi

# --- 2. the cached rootfs ----------------------------------------------

vm_rootfs "$VM_CACHE" "$VM_SUITE" "${VM_PKGS[@]}"
vm_run_dir "$VM_CACHE"

# --- 3. the tree under test and the VM's init ---------------------------

# The rootfs is copied (vm_stage: hard links) and the tests, the binaries
# and init are added to the copy.
vm_stage
STAGE=$VM_STAGE
mkdir -p "$STAGE/opt/veto/build/unit" "$STAGE/opt/veto/build-asan/unit"
vm_say "copying t/ and the binaries of the working tree"
tar -C "$REPO" --exclude=./t/tmp --exclude=./t/browser/node_modules \
    --exclude=./t/mcp/node_modules --exclude=./t/fuzz -cf - ./t \
    | tar -C "$STAGE/opt/veto" -xf -
cp build/sandbox-helper build/sandbox-helperctl "$STAGE/opt/veto/build/"
cp build/unit/test_cgroup "$STAGE/opt/veto/build/unit/"
if [ "$ASAN" = 1 ]; then
    cp build-asan/sandbox-helper "$STAGE/opt/veto/build-asan/"
    cp build-asan/unit/test_cgroup "$STAGE/opt/veto/build-asan/unit/"
fi

rm -f "$STAGE/sbin/veto-v2-init"   # a hard link into the cache: replace
cat > "$STAGE/sbin/veto-v2-init" <<'INIT'
#!/bin/bash
# PID 1 of the test VM: a pure cgroup v2 host, then the helper's tests.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb

step() { echo "VETO-STEP $*"; }
halt() { sync; echo o > /proc/sysrq-trigger; sleep 5; poweroff -f; }

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null || true
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=755 tmpfs /run
mount -t tmpfs -o mode=1777,size=1200m tmpfs /tmp
mount -o remount,rw /
hostname veto-v2vm
ulimit -n 20000     # as on the dev host: hostile-peer.t opens 1100 connections
ip link set lo up

# Pure v2, as systemd mounts it; PID 1 goes to a leaf first ("no internal
# processes"), then the controllers are enabled at the root.
mount -t cgroup2 -o nsdelegate,memory_recursiveprot cgroup2 /sys/fs/cgroup \
    || mount -t cgroup2 cgroup2 /sys/fs/cgroup
mkdir -p /sys/fs/cgroup/init.scope
echo $$ > /sys/fs/cgroup/init.scope/cgroup.procs
echo "+memory +pids +cpu" > /sys/fs/cgroup/cgroup.subtree_control
# every test in here runs on pure v2: t/helper/layers.t holds the helper's
# ping (what GET /v1/about serves) to it, and to the layers this VM has
export VETO_EXPECT_CGROUP=v2

echo "VETO-BEGIN"
echo "VETO-INFO kernel $(uname -r)"
echo "VETO-INFO mounts $(grep cgroup /proc/self/mounts | tr '\n' ';')"
echo "VETO-INFO controllers $(cat /sys/fs/cgroup/cgroup.controllers)"
echo "VETO-INFO subtree $(cat /sys/fs/cgroup/cgroup.subtree_control)"

cd /opt/veto
status=0
VETO_PROVE_FILES=${VETO_PROVE_FILES//,/ }
VETO_SIBLING_FILES=${VETO_SIBLING_FILES//,/ }
VETO_ASAN_FILES=${VETO_ASAN_FILES//,/ }
# an emulated CPU: heavy workloads get this many times their exec budget
export VETO_TIME_SCALE=3
t_start=$(cut -d. -f1 /proc/uptime)
elapsed() { echo "VETO-INFO $1 took $(( $(cut -d. -f1 /proc/uptime) - t_start ))s (since boot's start of tests)"; }

# Each step runs in a service-like cgroup of its own, as the helper would
# under systemd (PID 1 stays alone in init.scope).
step unit
mkdir -p /sys/fs/cgroup/veto-unit.service
if ( echo $BASHPID > /sys/fs/cgroup/veto-unit.service/cgroup.procs
     build/unit/test_cgroup ) >/tmp/unit.log 2>&1; then
    echo "VETO-RESULT unit ok"
else
    status=1; echo "VETO-RESULT unit FAIL"; cat /tmp/unit.log
fi
grep -E '^\[  (PASSED|FAILED|SKIPPED) ' /tmp/unit.log | sed 's/^/VETO-UNIT /'
elapsed unit

mkdir -p /sys/fs/cgroup/veto-tests.service
step prove
echo "VETO-PROVE-BEGIN"
( echo $BASHPID > /sys/fs/cgroup/veto-tests.service/cgroup.procs
  prove --timer -I t/lib $VETO_PROVE_FILES 2>&1 ) | tee /tmp/prove.log
echo "VETO-PROVE-END"
elapsed prove
if grep -q '^Result: PASS' /tmp/prove.log; then
    echo "VETO-RESULT prove ok"
else
    echo "VETO-RESULT prove FAIL"; status=1
fi

# The cgroup code again under ASan+UBSan (the v2 paths run nowhere else):
# create, limits, OOM, kills and teardown.
if [ "${VETO_ASAN:-0}" = 1 ]; then
    step asan
    mkdir -p /sys/fs/cgroup/veto-asan.service
    ( echo $BASHPID > /sys/fs/cgroup/veto-asan.service/cgroup.procs
      build-asan/unit/test_cgroup 2>&1
      echo "unit exit $?"
      VETO_HELPER=build-asan/sandbox-helper \
          prove --timer -I t/lib $VETO_ASAN_FILES 2>&1 ) | tee /tmp/asan.log
    grep -q '^unit exit 0$' /tmp/asan.log \
        || { echo "VETO-RESULT asan-unit FAIL"; status=1; }
    elapsed asan
    if grep -q '^Result: PASS' /tmp/asan.log 2>/dev/null; then
        echo "VETO-RESULT asan ok"
    else
        echo "VETO-RESULT asan FAIL"; status=1
    fi
fi

# Systemd-like case: the helper starts in a service cgroup that already
# holds another process (a sleeping sibling); it must move itself into a
# leaf below and still create, limit and remove sandboxes.
step sibling
mkdir -p /sys/fs/cgroup/veto.service
sleep 100000 &
sib=$!
echo $sib > /sys/fs/cgroup/veto.service/cgroup.procs
( echo $BASHPID > /sys/fs/cgroup/veto.service/cgroup.procs
  prove --timer -I t/lib $VETO_SIBLING_FILES 2>&1 ) | tee /tmp/sibling.log
elapsed sibling
echo "VETO-INFO sibling cgroup tree after:"
find /sys/fs/cgroup/veto.service -name cgroup.procs | while read -r f; do
    echo "VETO-INFO   ${f%/cgroup.procs}: $(tr '\n' ' ' < "$f")"
done
# the sibling lives on, still inside the service (moved to its leaf)
sibcg=$(sed -n 's/^0:://p' /proc/$sib/cgroup 2>/dev/null)
echo "VETO-INFO sibling $sib now in ${sibcg:-(gone)}"
if grep -q '^Result: PASS' /tmp/sibling.log \
        && case $sibcg in /veto.service|/veto.service/*) true;; *) false;; esac
then
    echo "VETO-RESULT sibling ok"
else
    echo "VETO-RESULT sibling FAIL"; status=1
fi
kill $sib 2>/dev/null
wait $sib 2>/dev/null

# Container-like case: the helper at the root of its own cgroup namespace
# (cgroup2 mounted inside it, as with a private cgroupns), which holds
# processes: the namespace root is not the host's root, so it too must be
# emptied into a leaf before controllers can be enabled.
step container
mkdir -p /sys/fs/cgroup/veto-ct.service
( echo $BASHPID > /sys/fs/cgroup/veto-ct.service/cgroup.procs
  exec unshare --cgroup --mount --propagation private --fork sh -c '
    umount -l /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup \
        || exit 99
    echo "VETO-INFO container: /proc/self/cgroup $(cat /proc/self/cgroup)"
    exec prove -I t/lib '"$VETO_SIBLING_FILES" 2>&1 ) | tee /tmp/container.log
echo "VETO-INFO container cgroup tree after:"
find /sys/fs/cgroup/veto-ct.service -name cgroup.procs | while read -r f; do
    echo "VETO-INFO   ${f%/cgroup.procs}: $(tr '\n' ' ' < "$f")"
done
if grep -q '^Result: PASS' /tmp/container.log; then
    echo "VETO-RESULT container ok"
else
    echo "VETO-RESULT container FAIL"; status=1
fi

elapsed container
echo "VETO-STATUS $status"
echo "VETO-END"
halt
INIT
chmod 755 "$STAGE/sbin/veto-v2-init"

# Parameters for init, on the kernel command line's environment.
PROVE_ENV="VETO_PROVE_FILES=$(cd "$STAGE/opt/veto" && echo $PROVE_FILES)"
SIB_ENV="VETO_SIBLING_FILES=${VETO_V2VM_SIBLING:-t/helper/basic.t,t/helper/resources.t}"
ASAN_ENV="VETO_ASAN=$ASAN VETO_ASAN_FILES=${ASAN_FILES// /,}"

# --- 4. the disk image and the boot ---------------------------------------

# kernel parameters are passed to init as environment when they have '='
# and are unknown to the kernel; spaces cannot appear, so commas are used.
start=$(date +%s)
vm_boot 6G "$TIMEOUT" "$ACCEL" \
    "root=/dev/vda rw console=ttyS0 panic=-1 quiet nokaslr init=/sbin/veto-v2-init systemd.unified_cgroup_hierarchy=1 ${PROVE_ENV// /,} $SIB_ENV $ASAN_ENV"

vm_say "the VM ran $(( $(date +%s) - start ))s"

# --- 5. the verdict ---------------------------------------------------

if ! grep -a -q '^VETO-END' "$VM_LOG"; then
    tail -n 60 "$VM_LOG"
    vm_die "the VM did not finish (no VETO-END); console: $VM_LOG"
fi

echo "----- inside the VM -----"
grep -a -E '^VETO-(INFO|RESULT|UNIT|STATUS)' "$VM_LOG" || true
echo "----- prove (pure cgroup v2) -----"
sed -n '/^VETO-PROVE-BEGIN/,/^VETO-PROVE-END/p' "$VM_LOG" \
    | grep -a -vE '^VETO-PROVE' | grep -vE '^\s*$' | grep -E '\.t \.|^(Files|Result|Test Summary|  Failed|t/)' || true
echo "----- console: $VM_LOG"

if grep -a -q '^VETO-STATUS 0$' "$VM_LOG" \
        && ! grep -a -q '^VETO-RESULT .* FAIL' "$VM_LOG"; then
    vm_say "PASS"
    exit 0
fi
vm_say "FAIL"
exit 1
