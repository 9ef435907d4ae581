#!/usr/bin/env bash
# Line coverage that each fuzz target reaches from its seed corpus alone.
#
#   scripts/fuzz-coverage.sh [--missing] [target ...]
#
# Builds every t/fuzz/fuzz_*.c with clang's source-based coverage
# (make fuzz-cov -> build-fuzz-cov/), runs it once over
# t/fuzz/corpus/<target>/ (-runs=0: no mutation, only the committed
# inputs), and prints the line coverage of the file(s) the target names
# on its "FUZZ-COVERS:" line, each "path" or "path:REGEX" (only the
# functions whose name matches; when it names none: every file it
# reached, unchecked).  --missing also lists the lines no input reached.
#
# Exits 1 if a target crashes on its corpus or a file it names is below
# FUZZ_COV_MIN percent (default 80).
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_COV_MIN=${FUZZ_COV_MIN:-80}
missing=0
want=()
for a in "$@"; do
    case $a in
    --missing) missing=1 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "fuzz-coverage: unknown option $a" >&2; exit 2 ;;
    *) want+=("$a") ;;
    esac
done

tool() {
    local t
    for t in "$1-14" "$1"; do
        if command -v "$t" >/dev/null 2>&1; then
            echo "$t"
            return 0
        fi
    done
    echo "fuzz-coverage: $1 not found (Debian package llvm-14; run" \
         "scripts/install-deps.sh)" >&2
    exit 1
}
PROFDATA=$(tool llvm-profdata)
COV=$(tool llvm-cov)

make -s -j"$(nproc)" fuzz-cov >/dev/null

work=$(mktemp -d /tmp/veto-fuzz-cov-XXXXXX)
trap 'rm -rf "$work"' EXIT

status=0
printf '%-16s %-44s %7s %7s %7s\n' target file lines reached percent
for src in t/fuzz/fuzz_*.c; do
    name=$(basename "$src" .c)
    if [ ${#want[@]} -gt 0 ] && [[ " ${want[*]} " != *" $name "* ]]; then
        continue
    fi
    bin=build-fuzz-cov/$name
    corpus=t/fuzz/corpus/$name
    if [ ! -d "$corpus" ]; then
        echo "fuzz-coverage: $name has no corpus ($corpus)" >&2
        status=1
        continue
    fi

    if ! LLVM_PROFILE_FILE="$work/$name.profraw" \
            "$bin" -runs=0 "$corpus" >"$work/$name.log" 2>&1; then
        echo "fuzz-coverage: $name crashed on its corpus:" >&2
        tail -n 30 "$work/$name.log" >&2
        status=1
        continue
    fi
    "$PROFDATA" merge -sparse -o "$work/$name.profdata" "$work/$name.profraw"

    # FUZZ-COVERS: path ... or path:REGEX (only the functions whose whole
    # name matches, for files that mix a parser with other code)
    # (read, not $(...) unquoted: the regexes must not be globbed)
    read -r -a covers <<<"$(sed -n 's/.*FUZZ-COVERS:\(.*\)/\1/p' "$src" \
                             | tr '\n' ' ')"
    : >"$work/$name.tsv"
    if [ ${#covers[@]} -gt 0 ]; then
        checked=1
        for c in "${covers[@]}"; do
            file=${c%%:*}
            re=
            [ "$file" != "$c" ] && re=${c#*:}
            if [ ! -f "$file" ]; then
                echo "fuzz-coverage: $name names $file, which does not exist" >&2
                status=1
                continue
            fi
            "$COV" report -show-functions -instr-profile="$work/$name.profdata" \
                "$bin" "$PWD/$file" >"$work/$name.report" 2>/dev/null || true
            # rows: name regions miss cover lines miss cover ...; static
            # functions are named file.c:name
            awk -v re="$re" -v label="$c" '
                /^TOTAL / && re == "" { n = $5; m = $6; found = 1 }
                re != "" && NF >= 7 && $2 ~ /^[0-9]+$/ {
                    f = $1; sub(/^[^:]*:/, "", f)
                    if (f ~ ("^(" re ")$")) { n += $5; m += $6; found = 1 }
                }
                END { if (found) printf "%s\t%d\t%d\n", label, n, n - m }
            ' "$work/$name.report" >>"$work/$name.tsv"
        done
    else
        # No FUZZ-COVERS line: every file the target reached, unchecked.
        checked=0
        "$COV" export -summary-only -instr-profile="$work/$name.profdata" \
            "$bin" >"$work/$name.json"
        jq -r --arg root "$PWD/" '.data[0].files[]
              | select(.summary.lines.covered > 0)
              | [(.filename | ltrimstr($root)), .summary.lines.count,
                 .summary.lines.covered] | @tsv' "$work/$name.json" \
            >"$work/$name.tsv"
    fi
    if [ ! -s "$work/$name.tsv" ]; then
        echo "fuzz-coverage: $name: no coverage data for ${covers[*]:-any file}" >&2
        status=1
        continue
    fi

    while IFS=$'\t' read -r file count covered; do
        pct=$(awk -v c="$covered" -v n="$count" \
                  'BEGIN { printf "%.1f", n ? 100 * c / n : 100 }')
        flag=
        if [ "$checked" = 0 ]; then
            flag="  (no FUZZ-COVERS line: not checked)"
        elif awk -v p="$pct" -v m="$FUZZ_COV_MIN" 'BEGIN { exit !(p < m) }'
        then
            flag="  < $FUZZ_COV_MIN%"
            status=1
        fi
        printf '%-16s %-44s %7s %7s %6s%%%s\n' \
            "$name" "$file" "$count" "$covered" "$pct" "$flag"
        if [ "$missing" = 1 ]; then
            # "  line|  count|source": lines with code that ran 0 times
            re=
            [ "${file%%:*}" != "$file" ] && re=${file#*:}
            "$COV" show -instr-profile="$work/$name.profdata" "$bin" \
                ${re:+-name-regex="^([^:]*:)?($re)\$"} \
                "$PWD/${file%%:*}" 2>/dev/null \
                | awk -F'|' '$2 ~ /^ *0$/ { sub(/^ +/, "", $1);
                                           print "    " $1 ":" $3 }'
        fi
    done <"$work/$name.tsv"
done
exit $status
