#!/usr/bin/env bash
# Installs what Veto Sandbox needs on Debian 12, by purpose:
#
#   scripts/install-deps.sh                 everything (runtime build test
#                                           bench)
#   scripts/install-deps.sh runtime build   what scripts/run-stack.sh needs
#   scripts/install-deps.sh runtime         to run binaries built elsewhere
#
#   runtime  nginx, redis-server, the shared libraries, nftables (the
#            helper's egress links), and the tools the demo uses
#            (openssl and Crypt::JWT mint its tokens, curl and jq,
#            python3 and git for the example workload)
#   build    compilers and -dev packages: the helper, the egress proxy
#            and the nginx module
#   test     everything scripts/test.sh needs on top: clang for the
#            fuzzers, cmocka, the Perl test modules, the benchmark tools,
#            node and the tooling the tests run in sandboxes, chromium
#            for the approval page, qemu + debootstrap for the VM tests,
#            and debhelper, dpkg-dev and lintian for the Debian packages
#   bench    what scripts/bench runs and measures against: wrk,
#            hyperfine, and the peers bubblewrap and runc
#
# Idempotent: runs apt-get update and install only when a package is
# missing.
set -euo pipefail

RUNTIME=(
    nginx redis-server
    libjansson4 libseccomp2 libhiredis0.14 libssl3 libc-ares2
    nftables    # the helper's egress links (nft -f)
    openssl libcrypt-jwt-perl perl curl jq
    python3     # the demo's and the tests' workloads run python3 (host /usr)
    git         # the demo's walkthrough reads a patch back (git diff)
)
BUILD=(
    build-essential pkg-config nginx-dev
    libjansson-dev libseccomp-dev libhiredis-dev libssl-dev
    libc-ares-dev    # the egress proxy's resolver
    zlib1g-dev       # the image store's layer reader (gzip)
)
TEST=(
    clang libclang-rt-14-dev libcmocka-dev
    libjwt-dev  # t/fuzz/fuzz_module_jwt_diff.c: libjwt, the oracle
    llvm-14     # llvm-profdata, llvm-cov: scripts/fuzz-coverage.sh
    libredis-perl libjson-pp-perl
    libcpanel-json-xs-perl    # t/lib/VetoStream.pm: ndjson streams of MBs
    redis-sentinel    # t/redis/sentinel.t, failover.t, t/hosts/: three
                      # sentinels, failovers (Debian's package; the
                      # gateway host itself needs none)
    iproute2 procps psmisc util-linux
    nodejs    # the egress tests' node fetch
    git python3-venv python3-pytest    # t/helper/tooling.t (and nodejs)
    tar gzip zstd xz-utils    # t/helper/archive.t: tar, compressors
    qemu-system-x86 debootstrap e2fsprogs    # scripts/test-cgroup-v2-vm.sh
    chromium    # t/ui/approval-page.t: the approval page in a headless browser
    prometheus  # promtool: t/module/metrics.t checks every scrape with it
    nghttp2-client    # nghttp: t/module/http2.t, many streams on one
                      # HTTP/2 connection
    mmdebstrap uidmap gpg umoci    # Debian bases (build-debian-base.sh),
                                   # test images (t/images/)
    debhelper dpkg-dev lintian    # scripts/build-debs.sh (Debian packages)
)

BENCH=(
    wrk hyperfine    # HTTP throughput, process latency
    bubblewrap runc  # the peers a sandbox's life is measured against
)

[ $# -gt 0 ] || set -- runtime build test bench
PKGS=()
want_test=0
for set in "$@"; do
    case $set in
        runtime) PKGS+=("${RUNTIME[@]}") ;;
        build)   PKGS+=("${BUILD[@]}") ;;
        test)    PKGS+=("${TEST[@]}"); want_test=1 ;;
        bench)   PKGS+=("${BENCH[@]}") ;;
        *) echo "install-deps: unknown set '$set' (runtime, build, test, bench)" >&2
           exit 2 ;;
    esac
done
# npm installs the browser tests' driver (t/browser, npm ci); Debian's npm
# package only where nodejs does not bring its own (NodeSource's nodejs
# includes npm and conflicts with Debian's)
if [ "$want_test" = 1 ] && ! command -v npm >/dev/null 2>&1; then
    PKGS+=(npm)
fi

# One dpkg-query for all of them (a few ms): "install ok installed" only
# for a fully installed package; a package dpkg does not know prints
# nothing for it.
declare -A ok=()
while read -r name status; do
    [ "$status" = "install ok installed" ] && ok[$name]=1
done < <(dpkg-query -W -f='${Package} ${Status}\n' "${PKGS[@]}" 2>/dev/null || true)
missing=()
for p in "${PKGS[@]}"; do
    [ -n "${ok[$p]:-}" ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#PKGS[@]} packages present ($*)"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages: ${missing[*]}" >&2
    echo "install-deps: run as root (sudo $0 $*) to install them" >&2
    exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"

# The tests need only promtool from the prometheus package, not the
# server it enables: on a systemd host, stop it and keep it off.
for p in "${missing[@]}"; do
    if [ "$p" = prometheus ] && [ -d /run/systemd/system ]; then
        systemctl disable --now prometheus.service || true
    fi
done
