#!/usr/bin/env bash
# What an image profile's overlay root costs, as ratios against the
# host-/usr profile measured in the same run by the same helper:
#
#   create+destroy: a sandbox of an image (image held, idmapped clone,
#                   overlay mounted, /etc written; at destroy the overlay
#                   unmounted) vs one of the default profile
#   exec true:      `true` in an image sandbox vs in a default sandbox
#                   (both run the host's /usr/bin/true, the image a copy)
#
# The image is made here with umoci (a shell, coreutils' true, their C
# library): no registry, no network.
#
# Usage: sudo scripts/bench-profiles.sh [runs]   (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-30}
for t in hyperfine umoci jq; do
    command -v "$t" >/dev/null || { echo "$t missing: run scripts/install-deps.sh" >&2; exit 1; }
done
make -s BUILD=${BUILD:-build}
build=${BUILD:-build}

dir=$(mktemp -d /tmp/veto-bench-prof.XXXXXX)
chmod 755 "$dir"
mkdir -m 700 "$dir/store"

# the image: /bin/sh, /usr/bin/true and the C library they need
lay=$dir/layout
umoci init --layout "$lay" >/dev/null
umoci new --image "$lay:t" >/dev/null
for f in /bin/dash:/bin/sh /usr/bin/true:/usr/bin/true \
         /lib64/ld-linux-x86-64.so.2:/lib64/ld-linux-x86-64.so.2 \
         /lib/x86_64-linux-gnu/libc.so.6:/lib/x86_64-linux-gnu/libc.so.6; do
    cp -L "${f%%:*}" "$dir/file"
    umoci insert --image "$lay:t" "$dir/file" "${f#*:}" >/dev/null
done
digest=$(jq -r '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == "t") | .digest' "$lay/index.json")
"$build/sandbox-imagectl" -S "$dir/store" -u 1899999999 import "$lay" "$digest" >/dev/null

cat > "$dir/helper.conf" <<EOF
socket = $dir/helper.sock
allowed_uids = 0
state_dir = $dir/state
cgroup_name = veto-bench-prof-$$
uid_base = 1900000000
max_sandboxes = 16
image_store = $dir/store
image_profile = img $digest
EOF

"$build/sandbox-helper" -c "$dir/helper.conf" 2>"$dir/helper.log" &
helper=$!
cleanup() {
    kill -TERM "$helper" 2>/dev/null || true
    wait "$helper" 2>/dev/null || true
    [ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT

ctl="$build/sandbox-helperctl -s $dir/helper.sock"
for _ in $(seq 50); do [ -S "$dir/helper.sock" ] && break; sleep 0.1; done

for p in default img; do
    {
        echo '#!/bin/sh'
        echo 'set -e'
        echo "id=\$($ctl '{\"op\":\"create\",\"tenant\":\"b\",\"agent\":\"c\",\"profile\":\"$p\"}' | jq -r .sandbox.id)"
        echo "$ctl '{\"op\":\"destroy\",\"tenant\":\"b\",\"agent\":\"c\",\"id\":\"'\$id'\"}' >/dev/null"
    } > "$dir/cycle-$p.sh"
    chmod +x "$dir/cycle-$p.sh"
    id=$($ctl '{"op":"create","tenant":"b","agent":"e","profile":"'$p'"}' | jq -r .sandbox.id)
    echo "{\"op\":\"exec\",\"tenant\":\"b\",\"agent\":\"e\",\"id\":\"$id\",\"argv\":[\"/usr/bin/true\"]}" > "$dir/exec-$p.json"
done

hyperfine -N --warmup 3 --runs "$runs" --export-json "$dir/h.json" \
    -n default-create-destroy "$dir/cycle-default.sh" \
    -n image-create-destroy "$dir/cycle-img.sh" \
    -n default-exec-true "$ctl '$(cat "$dir/exec-default.json")'" \
    -n image-exec-true "$ctl '$(cat "$dir/exec-img.json")'" >"$dir/hyperfine.out"

jq -r '
  (.results | map({(.command): .mean}) | add) as $m
  | "create+destroy, image vs default profile: \($m["image-create-destroy"] * 1000 | floor) ms vs \($m["default-create-destroy"] * 1000 | floor) ms = \($m["image-create-destroy"] / $m["default-create-destroy"] * 100 | floor / 100)x",
    "exec true, image vs default profile:      \($m["image-exec-true"] * 1000 | floor) ms vs \($m["default-exec-true"] * 1000 | floor) ms = \($m["image-exec-true"] / $m["default-exec-true"] * 100 | floor / 100)x"
' "$dir/h.json"
