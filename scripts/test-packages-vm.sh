#!/usr/bin/env bash
# The Debian packages on a real systemd host with pure cgroup v2: a qemu
# VM boots Debian 12 with systemd as init, installs the two packages
# (scripts/build-debs.sh) next to nginx and redis-server from the archive,
# configures them as docs/operations.md's "Install into an existing nginx" says,
# and drives the API end to end with tokens from veto-token.  The guest's
# side is scripts/lib/pkgvm-guest.sh; what it checks:
#
#   install   dpkg -i of both packages: the nginx-abi dependency met by
#             the archive's nginx, the module enabled, the egress user
#             made, the helper unit enabled and started, ready
#   cgroups   the helper in <its service cgroup>/helper (Delegate=yes),
#             every sandbox's and exec's cgroup below the service's
#   api       health (cgroup v2, Redis up) over TLS; create, write, exec;
#             an approval story (202, a reviewer approves, the retry runs,
#             a second use is refused); audit; delete; the approval page
#   restart   SIGKILL of the helper: systemd restarts it
#             (Restart=on-failure) and it removes the dead one's sandboxes
#   egress    egress = on: the helper starts the packaged proxy as
#             veto-egress in its service cgroup; a sandbox with an
#             allowlist gets the proxy's refusal for another host, and the
#             attempt is in the exec's result
#   hardening the helper's tests t/helper/basic.t t/helper/resources.t
#   t/helper/confinement.t t/helper/hostile-workload.t t/images/profile.t in a
#   service
#             with the unit's very options (every line of its [Service]
#             section but how it starts and stops): namespaces, mounts,
#             cgroup limits, confinement and image profiles (an overlay
#             root over an image of the store) work under them
#   stop      systemctl stop with a live sandbox and a running exec:
#             nothing left (service cgroup, processes of sandbox uids,
#             the proxy, mounts, files), health 503
#
# Results come back on the serial console; this script exits 0 only if
# every step passed.  Times on the busy 2-core dev host: docs/testing.md ("Tests").
#
#   VETO_PKGVM_DEBS=dir       use the .debs in dir (default: build them)
#   VETO_VM_CACHE=build-vm    rootfs cache (kept; the cgroup v2 VM's too)
#   VETO_PKGVM_TIMEOUT=1200   seconds the VM may run
#   VETO_PKGVM_PROVE="t/helper/basic.t,..."    helper tests under the hardening
#   VETO_PKGVM_ACCEL=tcg      or kvm
#   VETO_PKGVM_TRY="ProtectProc=invisible;..."  each option alone on top of
#                             the unit's, with t/helper/basic.t: reported only
#   VETO_PKGVM_TRY_ALONE=1    ... on top of the unit without its hardening
#   VETO_VM_REBUILD=1         rebuild the cached rootfs
#
# Needs root, qemu-system-x86, debootstrap, e2fsprogs, what build-debs.sh
# needs, and the Debian archive (packages only; the VM has no network).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
VM_NAME=test-packages-vm
. scripts/lib/vm.sh

TIMEOUT=${VETO_PKGVM_TIMEOUT:-1200}
ACCEL=${VETO_PKGVM_ACCEL:-tcg}
PROVE=${VETO_PKGVM_PROVE:-t/helper/basic.t,t/helper/resources.t,t/helper/confinement.t,t/helper/hostile-workload.t,t/images/profile.t}

vm_host_check "$ACCEL"

# --- 1. the packages ----------------------------------------------------

if [ -n "${VETO_PKGVM_DEBS:-}" ]; then
    DEBS=$VETO_PKGVM_DEBS
else
    vm_say "building the packages (scripts/build-debs.sh)"
    bash scripts/build-debs.sh >"$REPO/build-pkg.log" 2>&1 || {
        tail -n 40 "$REPO/build-pkg.log" >&2
        vm_die "scripts/build-debs.sh failed (log: $REPO/build-pkg.log)"
    }
    mv "$REPO/build-pkg.log" "$REPO/build-pkg/build-debs.log"
    DEBS=$REPO/build-pkg
fi
MOD_DEB=
HELPER_DEB=
for f in "$DEBS"/libnginx-mod-http-veto-sandbox_*.deb; do
    [ -e "$f" ] && MOD_DEB=$f
done
for f in "$DEBS"/veto-sandbox-helper_*.deb; do
    [ -e "$f" ] && HELPER_DEB=$f
done
if [ -z "$MOD_DEB" ] || [ -z "$HELPER_DEB" ]; then
    vm_die "no packages in $DEBS"
fi
vm_say "packages: $(basename "$MOD_DEB") $(basename "$HELPER_DEB")"

# --- 2. the cached rootfs -----------------------------------------------

vm_rootfs "$VM_CACHE" "$VM_SUITE" "${VM_PKGS[@]}"

# The packages' dependencies (first alternative, no versions; nginx-abi-*
# is provided by nginx) must be in the rootfs, so that dpkg -i finds them
# in the VM: scripts/lib/vm.sh's VM_PKGS pulls them in.
mapfile -t deps < <( { dpkg-deb -f "$MOD_DEB" Depends; echo ,
                       dpkg-deb -f "$HELPER_DEB" Depends; } \
    | tr ',' '\n' | sed -e 's/|.*//' -e 's/(.*)//' -e 's/[[:space:]]//g' \
    | grep -v -e '^$' -e '^nginx-abi-' | sort -u)
for d in "${deps[@]}"; do
    grep -qx "Package: $d" "$VM_ROOTFS/var/lib/dpkg/status" \
        || vm_die "the packages depend on $d, which the VM's rootfs lacks:" \
                  "add it to VM_PKGS in scripts/lib/vm.sh"
done

# --- 3. the stage: packages, tests, the test unit -------------------------

vm_run_dir "$VM_CACHE"
vm_stage
mkdir -p "$VM_STAGE/opt/veto/debs"
cp "$MOD_DEB" "$HELPER_DEB" "$VM_STAGE/opt/veto/debs/"
# the helper's tests run against the installed helper; only t/ is needed
tar -C "$REPO" --exclude=./t/tmp --exclude=./t/browser -cf - ./t \
    | tar -C "$VM_STAGE/opt/veto" -xf -
install -m 0755 scripts/lib/pkgvm-guest.sh "$VM_STAGE/opt/veto/pkgvm-guest.sh"
{
    printf 'VETO_PROVE_FILES=%s\n' "${PROVE//,/ }"
    printf 'VETO_TRY_OPTIONS=%s\n' "${VETO_PKGVM_TRY:-}"
    printf 'VETO_TRY_ALONE=%s\n' "${VETO_PKGVM_TRY_ALONE:-0}"
} > "$VM_STAGE/opt/veto/env"

rm -f "$VM_STAGE/etc/hostname"
echo veto-pkgvm > "$VM_STAGE/etc/hostname"
# the console is the test's: no getty on it
ln -sf /dev/null "$VM_STAGE/etc/systemd/system/serial-getty@ttyS0.service"
cat > "$VM_STAGE/etc/systemd/system/veto-pkgtest.service" <<'EOF'
[Unit]
Description=Veto Sandbox package test
After=multi-user.target

[Service]
Type=oneshot
TimeoutStartSec=infinity
EnvironmentFile=/opt/veto/env
ExecStart=/opt/veto/pkgvm-guest.sh
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
TTYReset=no
TTYVHangup=no

[Install]
WantedBy=multi-user.target
EOF
mkdir -p "$VM_STAGE/etc/systemd/system/multi-user.target.wants"
ln -sf /etc/systemd/system/veto-pkgtest.service \
    "$VM_STAGE/etc/systemd/system/multi-user.target.wants/veto-pkgtest.service"

# --- 4. boot ------------------------------------------------------------

start=$(date +%s)
vm_boot 4G "$TIMEOUT" "$ACCEL" \
    "root=/dev/vda rw console=ttyS0 panic=-1 quiet nokaslr systemd.unified_cgroup_hierarchy=1 systemd.show_status=0"
vm_say "the VM ran $(( $(date +%s) - start ))s"

# --- 5. the verdict -------------------------------------------------------

if ! grep -a -q '^VETO-END' "$VM_LOG"; then
    tail -n 80 "$VM_LOG"
    vm_die "the VM did not finish (no VETO-END); console: $VM_LOG"
fi
echo "----- inside the VM -----"
grep -a -E '^VETO-(INFO|RESULT|STATUS)' "$VM_LOG" || true
echo "----- prove under the unit's hardening -----"
sed -n '/^VETO-PROVE-BEGIN/,/^VETO-PROVE-END/p' "$VM_LOG" \
    | grep -a -E '\.t \.|^(Files|Result|Test Summary|  Failed|t/)' || true
if grep -a -q '^VETO-RESULT .* FAIL' "$VM_LOG"; then
    echo "----- failures -----"
    grep -a -E '^VETO-(FAIL|DIAG)' "$VM_LOG" || true
fi
echo "----- console: $VM_LOG"

if grep -a -q '^VETO-STATUS 0$' "$VM_LOG" \
        && ! grep -a -q '^VETO-RESULT .* FAIL' "$VM_LOG"; then
    vm_say "PASS"
    exit 0
fi
vm_say "FAIL"
exit 1
