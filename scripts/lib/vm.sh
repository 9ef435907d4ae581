# shellcheck shell=bash
# Shared machinery of the qemu VM tests (scripts/test-cgroup-v2-vm.sh,
# scripts/test-packages-vm.sh); sourced, not run.  The caller sets
# VM_NAME (message prefix) and uses:
#
#   vm_host_check ACCEL          root, qemu, /dev/kvm for kvm; installs
#                                debootstrap and e2fsprogs when missing
#   VM_CACHE, VM_SUITE, VM_PKGS  the one rootfs both VMs boot: its cache
#                                (VETO_VM_CACHE, default build-vm/ in the
#                                tree), Debian suite and package list
#   vm_rootfs CACHE SUITE PKG... a Debian rootfs with PKGs, built once with
#                                debootstrap and kept in CACHE/rootfs until
#                                the suite or the list changes (or
#                                VETO_VM_REBUILD=1; the stamp file is
#                                VM_STAMP_NAME, default .veto-vm-stamp);
#                                sets VM_ROOTFS, VM_KERNEL, VM_INITRD
#   vm_run_dir CACHE             a new run directory (older ones pruned, the
#                                last five kept); sets VM_RUN
#   vm_stage                     VM_RUN/stage: a hard-linked copy of the
#                                rootfs to add files to (replace files,
#                                never write into one: they are the
#                                cache's); sets VM_STAGE
#   vm_boot SIZE TIMEOUT ACCEL CMDLINE
#                                an ext4 image of the stage, booted with
#                                the rootfs's kernel; the serial console
#                                goes to VM_RUN/console.log, and without
#                                carriage returns to VM_LOG
#
# The VMs have no network: whatever they need is in the rootfs or the
# stage.  An EXIT trap (vm_cleanup) stops qemu and removes the image.

# One rootfs for both VMs, so a fresh machine builds it once: what the
# cgroup v2 VM's tests need (the libraries of the host-built helper, the
# ASan runtime, gcc and libc6-dev for the probes the tests compile, Perl,
# python3 and redis-server for workloads, the cmocka runtime) and what the
# packages VM installs next to the packages (systemd as init, nginx,
# redis-server, curl, jq, umoci for t/images/profile.t's image, nftables for
# egress). The packages' own dependencies must be among them
# (test-packages-vm.sh checks).  Booted with init=/sbin/veto-v2-init, systemd
# stays unused.
VM_CACHE=${VETO_VM_CACHE:-$REPO/build-vm}
VM_SUITE=bookworm
VM_PKGS=(
    linux-image-amd64 initramfs-tools kmod udev systemd systemd-sysv
    nginx redis-server
    curl jq openssl ca-certificates perl libjson-pp-perl python3
    procps psmisc iproute2 util-linux mount e2fsprogs
    umoci nftables
    gcc libc6-dev make libasan8 libubsan1
    libjansson4 libseccomp2 libssl3 libc-ares2 zlib1g libhiredis0.14
    libcmocka0
)

vm_die() { echo "$VM_NAME: $*" >&2; exit 1; }
vm_say() { echo "$VM_NAME: $*"; }

VM_QEMU_PID=
VM_RUN=

vm_cleanup() {
    if [ -n "$VM_QEMU_PID" ] && kill -0 "$VM_QEMU_PID" 2>/dev/null; then
        kill "$VM_QEMU_PID" 2>/dev/null || true
    fi
    if [ -n "$VM_RUN" ]; then
        rm -rf "$VM_RUN/stage" "$VM_RUN/disk.img"
    fi
}

vm_need_tool() {
    command -v "$1" >/dev/null && return 0
    vm_say "installing $2"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends "$2" >/dev/null \
        || vm_die "apt-get install $2 failed"
}

vm_host_check() {
    [ "$(id -u)" -eq 0 ] || vm_die "needs root (debootstrap, mkfs)"
    [ "$1" != kvm ] || [ -c /dev/kvm ] || vm_die "/dev/kvm missing"
    command -v qemu-system-x86_64 >/dev/null \
        || vm_die "qemu-system-x86_64 missing"
    vm_need_tool debootstrap debootstrap
    vm_need_tool mkfs.ext4 e2fsprogs
}

# The Debian mirror this host uses (deb822 or one-line sources).  A grep
# that matches nothing is not an error here (|| true: pipefail).
vm_mirror() {
    local m
    m=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources \
            /etc/apt/sources.list 2>/dev/null \
        | awk '{print $2}' | grep -v security | grep -i debian \
        | head -n 1 || true)
    if [ -z "$m" ]; then
        m=$(grep -hs '^deb ' /etc/apt/sources.list \
                /etc/apt/sources.list.d/*.list 2>/dev/null \
            | awk '{print $2}' | grep -v security | grep -i debian \
            | head -n 1 || true)
    fi
    echo "${m:-http://deb.debian.org/debian}"
}

# vm_newest GLOB-PREFIX: the highest version of a boot file
vm_newest() {
    local f all=()
    for f in "$1"*; do [ -e "$f" ] && all+=("$f"); done
    [ ${#all[@]} -gt 0 ] || vm_die "no $1* (rebuild: VETO_VM_REBUILD=1)"
    printf '%s\n' "${all[@]}" | sort -V | tail -n 1
}

vm_rootfs() {
    local cache=$1 suite=$2
    shift 2
    local stamp="$suite $*" pkgs mirror
    local name=${VM_STAMP_NAME:-.veto-vm-stamp}
    mkdir -p "$cache"
    VM_ROOTFS=$cache/rootfs

    # one builder at a time; concurrent runs only share the finished rootfs
    exec 9>"$cache/.lock"
    flock -w 1800 9 || vm_die "another run holds $cache/.lock"

    if [ "${VETO_VM_REBUILD:-0}" = 1 ] \
            || [ "$(cat "$VM_ROOTFS/$name" 2>/dev/null)" != "$stamp" ]
    then
        mirror=$(vm_mirror)
        vm_say "building the rootfs ($suite from $mirror) in $VM_ROOTFS"
        rm -rf "$VM_ROOTFS.new" "$VM_ROOTFS"
        pkgs=$(IFS=,; echo "$*")
        if ! timeout 1800 debootstrap --variant=minbase --include="$pkgs" \
                "$suite" "$VM_ROOTFS.new" "$mirror" \
                >"$cache/debootstrap.log" 2>&1
        then
            tail -n 30 "$cache/debootstrap.log" >&2
            vm_die "debootstrap failed (log: $cache/debootstrap.log)"
        fi
        ls "$VM_ROOTFS.new"/boot/vmlinuz-* >/dev/null 2>&1 \
            || vm_die "no kernel in $VM_ROOTFS.new/boot"
        ls "$VM_ROOTFS.new"/boot/initrd.img-* >/dev/null 2>&1 \
            || vm_die "no initrd in $VM_ROOTFS.new/boot"
        rm -rf "$VM_ROOTFS.new"/var/cache/apt/archives/*.deb
        echo "$stamp" > "$VM_ROOTFS.new/$name"
        mv "$VM_ROOTFS.new" "$VM_ROOTFS"
    else
        vm_say "reusing the rootfs in $VM_ROOTFS"
    fi
    flock -u 9
    exec 9>&-

    VM_KERNEL=$(vm_newest "$VM_ROOTFS/boot/vmlinuz-")
    VM_INITRD=$(vm_newest "$VM_ROOTFS/boot/initrd.img-")
}

# The console logs of the last five runs are kept, older run dirs go.  No
# pipeline over "ls": under pipefail an ls of a glob that matches nothing
# (the first run) fails the script.
vm_run_dir() {
    local cache=$1 runs=() r
    for r in "$cache"/run.*; do
        [ -d "$r" ] && runs+=("$r")
    done
    if [ ${#runs[@]} -gt 4 ]; then
        # newest first; run dir names are mktemp's (no spaces or newlines)
        ls -dt -- "${runs[@]}" | tail -n +5 | while read -r r; do
            rm -rf -- "$r"
        done
    fi
    VM_RUN=$(mktemp -d "$cache/run.XXXXXX")
    trap vm_cleanup EXIT
}

# The rootfs copied with hard links: cheap, and the cache stays untouched
# as long as files are replaced, not written into (mkfs only reads).
vm_stage() {
    VM_STAGE=$VM_RUN/stage
    cp -al "$VM_ROOTFS" "$VM_STAGE"
}

vm_boot() {
    local size=$1 timeout_s=$2 accel=$3 cmdline=$4 accel_args

    vm_say "making the ext4 image"
    truncate -s "$size" "$VM_RUN/disk.img"
    mkfs.ext4 -q -F -L veto-vm -d "$VM_STAGE" "$VM_RUN/disk.img" \
        || vm_die "mkfs.ext4 -d $VM_STAGE failed"
    rm -rf "$VM_STAGE"

    case $accel in
        kvm) accel_args=(-enable-kvm -machine pc -cpu qemu64) ;;
        tcg) accel_args=(-machine pc -accel tcg,thread=multi -cpu qemu64) ;;
        *)   vm_die "accelerator '$accel': kvm or tcg" ;;
    esac

    vm_say "booting $(basename "$VM_KERNEL") (timeout ${timeout_s}s," \
           "log $VM_RUN/console.log)"
    timeout --kill-after=10 "$timeout_s" qemu-system-x86_64 \
        "${accel_args[@]}" -m 2048 -smp 2 -nographic -no-reboot \
        -kernel "$VM_KERNEL" -initrd "$VM_INITRD" \
        -drive file="$VM_RUN/disk.img",format=raw,if=virtio \
        -nic none -append "$cmdline" \
        </dev/null >"$VM_RUN/console.log" 2>&1 &
    VM_QEMU_PID=$!
    wait "$VM_QEMU_PID" || vm_say "qemu exited with status $? (124: timed out)"
    VM_QEMU_PID=

    VM_LOG=$VM_RUN/console.log.txt
    tr -d '\r' < "$VM_RUN/console.log" > "$VM_LOG"
}
