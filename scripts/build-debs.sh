#!/usr/bin/env bash
# Builds the Debian packages with Debian's own tooling (dpkg-buildpackage,
# debhelper, dh-sequence-nginx from nginx-dev) from a copy of this tree:
#
#   libnginx-mod-http-veto-sandbox_<v>_<arch>.deb   the nginx module
#   veto-sandbox-helper_<v>_<arch>.deb              helper, unit, tools
#
# into build-pkg/ (VETO_DEB_OUT), then runs lintian on them (printed; an
# error fails the script, warnings do not) and checks that "make install"
# (PREFIX=/usr) installs the same files the packages hold.
#
# The copy is the files git tracks plus untracked ones it does not ignore,
# as they are in the working tree (outside git: everything but the build
# directories), so build output never enters the package.  The version is
# debian/changelog's plus "+git<commits>.<hash>" (".dirty" with local
# changes), so each commit's packages upgrade its ancestors'.
#
# Needs: scripts/install-deps.sh (the build and test sets) for debhelper,
# dpkg-dev, lintian, nginx-dev and the -dev libraries.  Time on the 2-core
# dev host: about 2 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
OUT=${VETO_DEB_OUT:-$REPO/build-pkg}

die() { echo "build-debs: $*" >&2; exit 1; }
say() { echo "build-debs: $*"; }

for tool in dpkg-buildpackage dpkg-checkbuilddeps dh lintian; do
    command -v "$tool" >/dev/null \
        || die "$tool missing (sudo scripts/install-deps.sh)"
done

# --- 1. a copy of the sources -------------------------------------------

rm -rf "$OUT"
mkdir -p "$OUT/src"
SRC=$OUT/src

if git -C "$REPO" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # tracked and new files; a tracked file deleted in the tree is skipped
    git -C "$REPO" ls-files -z --cached --others --exclude-standard \
        | while IFS= read -r -d '' f; do
              if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
          done \
        | tar -C "$REPO" --null -T - -cf - | tar -C "$SRC" -xf -
    sha=$(git -C "$REPO" rev-parse --short=7 HEAD)
    count=$(git -C "$REPO" rev-list --count HEAD)
    when=$(git -C "$REPO" log -1 --format=%ct HEAD)
    dirty=
    if [ -n "$(git -C "$REPO" status --porcelain)" ]; then
        dirty=.dirty
    fi
    suffix="+git$count.$sha$dirty"
else
    tar -C "$REPO" --exclude='./build' --exclude='./build-*' \
        --exclude='./.git' -cf - . | tar -C "$SRC" -xf -
    when=$(date +%s)
    suffix=
fi

base=$(cd "$SRC" && dpkg-parsechangelog -S Version)
version=$base$suffix
if [ -n "$suffix" ]; then
    # a changelog entry for this build, in the copy only
    {
        printf 'veto-sandbox (%s) unstable; urgency=medium\n\n' "$version"
        printf '  * Built from commit %s%s.\n\n' "$sha" \
            "${dirty:+ with local changes}"
        printf ' -- %s  %s\n\n' \
            "$(cd "$SRC" && dpkg-parsechangelog -S Maintainer)" \
            "$(date -u -R -d "@$when")"
        cat "$SRC/debian/changelog"
    } > "$SRC/debian/changelog.new"
    mv "$SRC/debian/changelog.new" "$SRC/debian/changelog"
fi
say "building $version in $SRC"

# --- 2. the build -------------------------------------------------------

(cd "$SRC" && dpkg-checkbuilddeps) \
    || die "build dependencies missing (sudo scripts/install-deps.sh)"

if ! (cd "$SRC" && dpkg-buildpackage -b -us -uc -j"$(nproc)") \
        >"$OUT/build.log" 2>&1; then
    tail -n 60 "$OUT/build.log" >&2
    die "dpkg-buildpackage failed (log: $OUT/build.log)"
fi

arch=$(dpkg-architecture -qDEB_HOST_ARCH)
MOD_DEB=$OUT/libnginx-mod-http-veto-sandbox_${version}_$arch.deb
HELPER_DEB=$OUT/veto-sandbox-helper_${version}_$arch.deb
CHANGES=$OUT/veto-sandbox_${version}_$arch.changes
for f in "$MOD_DEB" "$HELPER_DEB" "$CHANGES"; do
    [ -f "$f" ] || die "dpkg-buildpackage made no $(basename "$f")"
done

for deb in "$MOD_DEB" "$HELPER_DEB"; do
    echo "--- $(basename "$deb")"
    dpkg-deb -f "$deb" Package Version Architecture Depends Recommends
done

# --- 3. lintian -----------------------------------------------------------

echo "--- lintian"
lintian_rc=0
lintian --info --display-info --pedantic --suppress-tags \
        debian-changelog-line-too-short "$CHANGES" \
    > "$OUT/lintian.txt" 2>&1 || lintian_rc=$?
cat "$OUT/lintian.txt"
if grep -q '^E: ' "$OUT/lintian.txt"; then
    die "lintian reports errors (above; $OUT/lintian.txt)"
fi
[ "$lintian_rc" -le 1 ] || die "lintian failed to run (status $lintian_rc)"
say "lintian: $(grep -c '^E: ' "$OUT/lintian.txt" || true) errors," \
    "$(grep -c '^W: ' "$OUT/lintian.txt" || true) warnings," \
    "$(grep -c '^[IP]: ' "$OUT/lintian.txt" || true) info/pedantic"

# --- 4. make install installs what the packages hold --------------------

# the packages' files; documentation normalised to its basename under
# doc/, man pages without .gz (dh_compress), lintian overrides are the
# packages' own; the modules-enabled link is the maintainer scripts'
# (dh_nginx), make install makes it itself
list_deb() {
    dpkg-deb -c "$1" | awk '$1 !~ /^d/ { print $6 }' | sed -e 's|^\./||' \
        -e 's|^usr/share/doc/[^/]*/|doc/|' -e 's|\.gz$||' \
        -e '/^doc\/\(changelog\|copyright\)$/d' \
        -e '/^doc\/[^/]*\.md$/d' -e '/^usr\/share\/lintian\//d'
}
TMP=$(mktemp -d "/tmp/veto-debs-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
{ list_deb "$MOD_DEB"; list_deb "$HELPER_DEB"; } | sort > "$TMP/debs.txt"

dpkg-deb -x "$MOD_DEB" "$TMP/mod"
make -s -C "$SRC" BUILD=build-deb install DESTDIR="$TMP/root" PREFIX=/usr \
    UNITDIR=/lib/systemd/system \
    MODULE_SO="$TMP/mod/usr/lib/nginx/modules/ngx_http_veto_sandbox_module.so" \
    >"$TMP/install.log" 2>&1 \
    || { cat "$TMP/install.log" >&2; die "make install failed"; }
(cd "$TMP/root" && find . ! -type d | sed -e 's|^\./||' \
    -e 's|^usr/share/doc/[^/]*/|doc/|' \
    -e '/^etc\/nginx\/modules-enabled\//d') | sort > "$TMP/make.txt"
if ! diff -u "$TMP/debs.txt" "$TMP/make.txt"; then
    die "make install and the packages install different files (above:" \
        "- only in the packages, + only from make install)"
fi
[ -L "$TMP/root/etc/nginx/modules-enabled/50-mod-http-veto-sandbox.conf" ] \
    || die "make install made no modules-enabled link"
say "make install installs the packages' $(wc -l < "$TMP/make.txt") files"

echo "$MOD_DEB"
echo "$HELPER_DEB"
