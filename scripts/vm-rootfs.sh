#!/usr/bin/env bash
# Builds (or reuses) the Debian rootfs that both qemu VM tests boot
# (scripts/lib/vm.sh: VM_PKGS, the cache in VETO_VM_CACHE, default
# build-vm/), and nothing else.  scripts/test.sh starts it in the
# background right after the dependencies, so debootstrap (mostly
# downloads and unpacking) runs while the host builds and tests do; the
# VM scripts then find it ready.  vm_rootfs holds a lock on the cache,
# so a VM script that starts before this one ends waits for it instead
# of building a second copy.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
VM_NAME=vm-rootfs
. scripts/lib/vm.sh

vm_host_check tcg
vm_rootfs "$VM_CACHE" "$VM_SUITE" "${VM_PKGS[@]}"
vm_say "ready: $VM_ROOTFS"
