#!/usr/bin/env bash
# Builds a Debian base image from the Debian archive, without any
# container registry, as an OCI image layout the image store imports:
#
#   scripts/build-debian-base.sh [-s SUITE] [-v VARIANT] [-m MIRROR]
#                                [-c CACHE_DIR] [PACKAGE ...]
#
#   e.g. scripts/build-debian-base.sh python3 python3-venv build-essential \
#            git nodejs npm
#
# mmdebstrap builds the root file system (unshare mode: as an unprivileged
# user namespace, no root needed; root mode where user namespaces are not
# available), umoci turns its tarball into a one-layer OCI image.  The
# result is cached under CACHE_DIR (default /var/tmp/veto-sandbox-bases),
# keyed by suite, variant, mirror, architecture and the sorted package
# list: a second run with the same inputs builds nothing.
#
# Prints one line on stdout: "<layout directory> <manifest digest>", the
# two arguments of `sandbox-imagectl import`.  Progress goes to stderr.
set -euo pipefail

SUITE=bookworm
VARIANT=apt
MIRROR=http://deb.debian.org/debian
CACHE=${VSB_BASE_CACHE:-/var/tmp/veto-sandbox-bases}
FORMAT=1        # bump when the image this script makes changes shape

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

while getopts "s:v:m:c:h" opt; do
    case $opt in
        s) SUITE=$OPTARG ;;
        v) VARIANT=$OPTARG ;;
        m) MIRROR=$OPTARG ;;
        c) CACHE=$OPTARG ;;
        *) usage ;;
    esac
done
shift $((OPTIND - 1))

for tool in mmdebstrap umoci jq sha256sum; do
    command -v "$tool" >/dev/null || {
        echo "build-debian-base: $tool is missing (scripts/install-deps.sh" \
             "installs it)" >&2
        exit 1
    }
done

case $VARIANT in
    extract|custom|essential|apt|minbase|buildd|required|important|standard)
        ;;
    *) echo "build-debian-base: unknown variant '$VARIANT'" >&2; exit 2 ;;
esac

for p in "$@"; do
    [[ $p =~ ^[a-z0-9][a-z0-9+.-]+$ ]] || {
        echo "build-debian-base: '$p' is not a Debian package name" >&2
        exit 2
    }
done

ARCH=$(dpkg --print-architecture)
PKGS=$(printf '%s\n' "$@" | sort -u | paste -sd, -)
KEY=$(printf 'format=%s\nsuite=%s\nvariant=%s\nmirror=%s\narch=%s\npkgs=%s\n' \
          "$FORMAT" "$SUITE" "$VARIANT" "$MIRROR" "$ARCH" "$PKGS" \
      | sha256sum | cut -c1-24)
OUT=$CACHE/$SUITE-$VARIANT-$KEY

if [ -f "$OUT/digest" ] && [ -f "$OUT/oci/index.json" ]; then
    echo "build-debian-base: cached: $OUT" >&2
    echo "$OUT/oci $(cat "$OUT/digest")"
    exit 0
fi

mkdir -p "$CACHE"
TMP=$(mktemp -d "$CACHE/.build.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# the unshared build user must be able to write its tarball here
chmod 0755 "$TMP"

# unshare mode needs user namespaces; root mode needs root
MODE=unshare
if ! unshare --user --map-root-user true 2>/dev/null; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "build-debian-base: user namespaces are unavailable and this" \
             "is not root: cannot run mmdebstrap" >&2
        exit 1
    fi
    MODE=root
fi

INCLUDE=()
[ -n "$PKGS" ] && INCLUDE=(--include="$PKGS")

echo "build-debian-base: mmdebstrap --mode=$MODE --variant=$VARIANT" \
     "$SUITE ${PKGS:-(no extra packages)}" >&2

# no apt lists, no caches, no host resolv.conf or hostname in the image;
# a fixed SOURCE_DATE_EPOCH keeps the tarball's times reproducible
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(date -d 2024-01-01 +%s)} \
mmdebstrap --mode="$MODE" --variant="$VARIANT" --format=tar \
    "${INCLUDE[@]}" \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    --customize-hook='rm -f "$1"/etc/resolv.conf "$1"/etc/hostname' \
    "$SUITE" "$TMP/rootfs.tar" "$MIRROR" >&2

echo "build-debian-base: OCI layout with umoci" >&2
umoci init --layout "$TMP/oci"
umoci new --image "$TMP/oci:base"
umoci raw add-layer --image "$TMP/oci:base" \
    --history.created_by "scripts/build-debian-base.sh $SUITE $VARIANT $PKGS" \
    "$TMP/rootfs.tar"
umoci config --image "$TMP/oci:base" \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.env LANG=C.UTF-8 \
    --config.workingdir /workspace \
    --config.cmd /bin/bash \
    --manifest.annotation "org.opencontainers.image.description=Debian $SUITE ($VARIANT) ${PKGS:-}"
umoci gc --layout "$TMP/oci"
rm -f "$TMP/rootfs.tar"

DIGEST=$(jq -r '.manifests[]
                | select(.annotations["org.opencontainers.image.ref.name"]
                         == "base") | .digest' "$TMP/oci/index.json")
[[ $DIGEST =~ ^sha256:[0-9a-f]{64}$ ]] || {
    echo "build-debian-base: no digest for the image in index.json" >&2
    exit 1
}
echo "$DIGEST" > "$TMP/digest"
printf '%s\n' "$@" | sort -u > "$TMP/packages"

rm -rf "$OUT"
mv "$TMP" "$OUT"
trap - EXIT
chmod 0755 "$OUT"

echo "build-debian-base: built $OUT ($DIGEST)" >&2
echo "$OUT/oci $DIGEST"
