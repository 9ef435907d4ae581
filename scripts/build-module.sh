#!/bin/sh
# Builds build-module/ngx_veto_sandbox_module.so against the distribution's
# nginx (Debian nginx-dev, /usr/share/nginx/src) so that `load_module` in the
# installed nginx accepts it: same version, --with-compat, same configure
# flags and the same --with-cc-opt/--with-ld-opt as `nginx -V` reports.
#
#   scripts/build-module.sh            build (incremental)
#   scripts/build-module.sh clean      start over
#   scripts/build-module.sh --asan     (or SAN=1) the same under ASan+UBSan,
#                                      in build-module-asan/, with its own
#                                      copy of the nginx tree
#
# The sanitized module needs libasan first in the process: load it into
# the system nginx with LD_PRELOAD=$(gcc -print-file-name=libasan.so), as
# t/lib/VetoNginx.pm does when VETO_MODULE names such a build.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
ngx_src=${NGX_SRC:-/usr/share/nginx/src}
nginx_bin=${NGINX:-nginx}
san=${SAN:-0}
clean=0

for arg in "$@"; do
    case "$arg" in
    clean) clean=1 ;;
    --asan) san=1 ;;
    *) echo "build-module: unknown argument '$arg'" >&2; exit 2 ;;
    esac
done

# Only the module's own objects are compiled by "make modules", so these
# flags instrument our code; nginx itself stays the distribution's binary.
if [ "$san" = 1 ]; then
    out="$root/build-module-asan"
    san_cc="-O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
    san_ld="-fsanitize=address,undefined"
else
    out="$root/build-module"
    san_cc=""
    san_ld=""
fi
src="$out/nginx-src"

if [ "$clean" = 1 ]; then
    rm -rf "$out"
fi

if [ ! -f "$ngx_src/configure" ]; then
    echo "build-module: $ngx_src/configure not found (apt-get install nginx-dev)" >&2
    exit 1
fi

# The configure flags nginx itself was built with; cc-opt/ld-opt carry
# spaces, so take them apart with the shell's own quoting.
flags=$("$nginx_bin" -V 2>&1 | sed -n 's/^configure arguments: //p')
if [ -z "$flags" ]; then
    echo "build-module: cannot read configure arguments from '$nginx_bin -V'" >&2
    exit 1
fi

# Our sources get the strict warnings; nginx's own headers pass them too.
strict="-Wall -Wextra -Werror -Wno-unused-parameter"

mkdir -p "$out"
if [ ! -f "$src/objs/Makefile" ] || [ "$root/config" -nt "$src/objs/Makefile" ] \
   || [ "$0" -nt "$src/objs/Makefile" ]
then
    rm -rf "$src"
    cp -a "$ngx_src" "$src"
    # Dynamic modules of the distribution (--with-*=dynamic, --add-dynamic-
    # module) are not ours to build; drop them, keep everything else.
    eval "set -- $flags"
    keep=""
    for a in "$@"; do
        case "$a" in
        --with-*=dynamic|--add-dynamic-module=*|--add-module=*) continue ;;
        --with-cc-opt=*) a="$a $strict${san_cc:+ $san_cc}" ;;
        --with-ld-opt=*) a="$a${san_ld:+ $san_ld}" ;;
        esac
        keep="$keep '$(printf '%s' "$a" | sed "s/'/'\\\\''/g")'"
    done
    eval "set -- $keep"
    (cd "$src" && ./configure "$@" --add-dynamic-module="$root") \
        > "$out/configure.log" 2>&1 || {
        tail -30 "$out/configure.log" >&2
        echo "build-module: configure failed, see $out/configure.log" >&2
        exit 1
    }
fi

make -j"${JOBS:-$(nproc)}" -C "$src" -f objs/Makefile modules
# replace, never overwrite in place: a running nginx has the old file mapped
cp "$src/objs/ngx_http_veto_sandbox_module.so" "$out/.ngx_veto_sandbox_module.so.new"
mv -f "$out/.ngx_veto_sandbox_module.so.new" "$out/ngx_veto_sandbox_module.so"
echo "built $out/ngx_veto_sandbox_module.so"
