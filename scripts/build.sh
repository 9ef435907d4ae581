#!/usr/bin/env bash
# Builds the helper (with its client and the egress proxy: "make") and
# the nginx module.  Run from anywhere.
#
#   scripts/build.sh             all four: the helper (build/) and the module
#                                (build-module/), each also under ASan+UBSan
#                                (build-asan/, build-module-asan/): what
#                                scripts/test.sh runs
#   scripts/build.sh --runtime   only build/ and build-module/ (run-stack.sh
#                                builds the two binaries it runs and the
#                                module itself, logged, in parallel)
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-$(nproc)}
sanitized=1
for arg in "$@"; do
    case $arg in
        --runtime) sanitized=0 ;;
        *) echo "build: unknown argument '$arg' (--runtime)" >&2; exit 2 ;;
    esac
done

echo "build: helper (build/)"
make -j"$JOBS"
if [ "$sanitized" = 1 ]; then
    echo "build: helper under ASan+UBSan (build-asan/)"
    make -j"$JOBS" SAN=1 BUILD=build-asan
fi

if [ -f scripts/build-module.sh ]; then
    echo "build: nginx module (build-module/)"
    bash scripts/build-module.sh
    if [ "$sanitized" = 1 ]; then
        echo "build: nginx module under ASan+UBSan (build-module-asan/)"
        bash scripts/build-module.sh --asan
    fi
else
    echo "build: scripts/build-module.sh not present, nginx module skipped"
fi
