#!/usr/bin/env bash
# Builds the helper (normal and ASan/UBSan) and, when its build script is
# present, the nginx module (normal and ASan/UBSan).  Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-$(nproc)}

echo "build: helper (build/)"
make -j"$JOBS"
echo "build: helper under ASan+UBSan (build-asan/)"
make -j"$JOBS" SAN=1 BUILD=build-asan

if [ -f scripts/build-module.sh ]; then
    echo "build: nginx module (build-module/)"
    bash scripts/build-module.sh
    echo "build: nginx module under ASan+UBSan (build-module-asan/)"
    bash scripts/build-module.sh --asan
else
    echo "build: scripts/build-module.sh not present, nginx module skipped"
fi
