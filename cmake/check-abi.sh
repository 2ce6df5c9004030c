#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check-abi.sh - the symbols a built shared library exports are exactly the
# ones its checked-in list (abi/<library>.symbols) says.
#
#   check-abi.sh NM LIBRARY LIST            compare; exit 1 on a difference
#   check-abi.sh NM LIBRARY LIST --update   rewrite LIST from LIBRARY
#   check-abi.sh NM LIBRARY LIST --self-test
#                                           prove a removed and an added
#                                           symbol are both caught
#
# A library exporting a symbol its list lacks, or lacking one its list has,
# has changed its ABI: either the change is a mistake (a helper that lost
# its `static`, a function that lost ROTA_API), or it is deliberate, and
# then the list is regenerated in the same commit, where a reviewer sees it
# (CONTRIBUTING.md, "ABI", says what a change means for the version).  To
# regenerate every list after a deliberate change:
#
#   cmake --build build --target abi-update      (or: make abi-update)
#
# The exported set is every defined, global, dynamic symbol (nm -D
# --defined-only, upper-case types), one name a line, sorted by byte value.
# Lines of LIST starting with # are comments.
set -eu

if [ $# -lt 3 ]; then
    echo "usage: check-abi.sh NM LIBRARY LIST [--update | --self-test]" >&2
    exit 2
fi
nm=$1 lib=$2 list=$3 mode=${4-}

exported()
{
    "$nm" -D --defined-only "$1" |
        awk 'NF >= 3 && $(NF-1) ~ /^[A-Z]$/ { print $NF }' |
        sed 's/@.*//' | LC_ALL=C sort -u
}

# listed FILE: the names in a list, without comments or blank lines.
listed()
{
    grep -v '^#' "$1" | grep -v '^[[:space:]]*$' | LC_ALL=C sort -u
}

name=$(basename "$list" .symbols)

# compare LIST-FILE ACTUAL-FILE: print the differences; 1 if any.
compare()
{
    listed "$1" >"$tmp/want"
    if cmp -s "$tmp/want" "$2"; then
        return 0
    fi
    echo "check-abi.sh: $lib exports a different set of symbols than $1:"
    LC_ALL=C comm -13 "$tmp/want" "$2" | sed 's/^/  + exported, not listed: /'
    LC_ALL=C comm -23 "$tmp/want" "$2" | sed 's/^/  - listed, not exported: /'
    return 1
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rota-abi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

exported "$lib" >"$tmp/actual"
if [ ! -s "$tmp/actual" ]; then
    echo "check-abi.sh: $nm found no exported symbol in $lib" >&2
    exit 1
fi

case $mode in
--update)
    {
        echo "# SPDX-License-Identifier: MIT"
        echo "# Symbols $name exports: its ABI's names (see CONTRIBUTING.md, \"ABI\")."
        echo "# Checked by the CTest test abi_$name; regenerate with"
        echo "# \`make abi-update\` after a deliberate change."
        cat "$tmp/actual"
    } >"$list"
    echo "check-abi.sh: wrote $list ($(wc -l <"$tmp/actual") symbols)"
    ;;
--self-test)
    # Planted faults: the list missing its first symbol (a new export) and
    # the list with a symbol the library lacks (a lost export).
    listed "$list" >"$tmp/base"
    tail -n +2 "$tmp/base" >"$tmp/fewer"
    { cat "$tmp/base"; echo "rota_no_such_symbol"; } >"$tmp/more"
    if compare "$tmp/fewer" "$tmp/actual" >"$tmp/out1"; then
        echo "self-test: a symbol missing from the list was not caught"
        exit 1
    fi
    if compare "$tmp/more" "$tmp/actual" >"$tmp/out2"; then
        echo "self-test: a listed symbol the library lacks was not caught"
        exit 1
    fi
    grep -q "exported, not listed: $(head -n 1 "$tmp/base")\$" "$tmp/out1" &&
        grep -q 'listed, not exported: rota_no_such_symbol$' "$tmp/out2" || {
        echo "self-test: the report does not name the planted symbols"
        cat "$tmp/out1" "$tmp/out2"
        exit 1
    }
    echo "self-test: ok (an added and a removed symbol both caught)"
    ;;
"")
    if [ ! -f "$list" ]; then
        echo "check-abi.sh: no list $list; create it with \`make abi-update\`"
        exit 1
    fi
    if compare "$list" "$tmp/actual"; then
        echo "check-abi.sh: $lib exports the $(wc -l <"$tmp/actual") symbols of $list"
    else
        echo "If the change is deliberate, run \`make abi-update\` and commit the list."
        exit 1
    fi
    ;;
*)
    echo "check-abi.sh: unknown mode '$mode'" >&2
    exit 2
    ;;
esac
