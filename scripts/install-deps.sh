#!/usr/bin/env bash
# Installs everything Veto Sandbox needs to build, test and run on Debian 12.
# Idempotent: runs apt-get update and install only when a package is missing.
set -euo pipefail

PKGS=(
    build-essential pkg-config clang libclang-rt-14-dev
    nginx nginx-dev
    libjansson-dev libjwt-dev libseccomp-dev libhiredis-dev libssl-dev
    zlib1g-dev      # the image store's layer reader (gzip)
    redis-server libcmocka-dev
    libcrypt-jwt-perl libredis-perl libjson-pp-perl
    iproute2 curl jq wrk hyperfine openssl procps psmisc
    perl python3    # prove; workloads in t/05, t/0a, t/0c run python3
    libc-ares-dev nftables nodejs    # egress proxy (resolver), its tests
    git python3-venv python3-pytest    # tooling under the filter: t/0f (and nodejs)
    qemu-system-x86 debootstrap e2fsprogs    # scripts/test-cgroup-v2-vm.sh
    chromium    # t/50-approval-page.t: the approval page in a headless browser
    mmdebstrap uidmap gpg umoci    # Debian bases (build-debian-base.sh),
                                   # test images (t/52-54)
)
# npm installs the browser tests' driver (t/browser, npm ci); Debian's npm
# package only where nodejs does not bring its own (NodeSource's nodejs
# includes npm and conflicts with Debian's)
command -v npm >/dev/null 2>&1 || PKGS+=(npm)

missing=()
for p in "${PKGS[@]}"; do
    # "install ok installed" only for a fully installed package
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null \
            | grep -q '^install ok installed$'; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#PKGS[@]} packages present"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages: ${missing[*]}" >&2
    echo "install-deps: run as root (sudo $0) to install them" >&2
    exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
