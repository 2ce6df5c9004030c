#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# doc-snippets.sh - every C snippet of the documentation compiles and links.
#
#   doc-snippets.sh [--cc CC] [--cflags FLAGS] [--libs FLAGS]
#                   [--adapter NAME=FLAGS]... FILE.md...
#   doc-snippets.sh --self-test [same options]
#
# A fenced block opened by a line that is exactly "```c" is a complete
# program: it is written to a file of its own, compiled with
# `CC -std=gnu11 -Wall -Wextra -Werror FLAGS` and linked with the --libs
# flags (the core library).  A snippet that includes an adapter's header
# (<rota/uv.h>, <rota/ev.h>, <rota/event.h>, <rota/uring.h>,
# <rota/sdevent.h>) is linked with that adapter too: --adapter uv=FLAGS
# gives the adapter's library, and the loop library's own flags come from
# pkg-config (libev has no .pc file: -lev).  Without an --adapter for it,
# the snippet is skipped (the build did not make that adapter).
#
# A block opened by "```c fragment" is a part of a program, shown on
# purpose; it is counted, not compiled.  Any other block whose info string
# starts with "c" or "C" ("```C", "```c frag", "```c-fragment") is an
# error, so a typo cannot exempt a snippet from the check.
#
# Exit status: 0 when every complete snippet compiled and there was at
# least one; 1 otherwise; 77 when every snippet was skipped.  The last line
# says "N compiled, N failed, N skipped, N fragments".
#
# --self-test runs the checker on tests/docs/doc-snippets/*.md, fixtures with a
# planted broken snippet and a planted typo, and passes only when the good
# fixture passes and each planted fault is reported at its line.
set -uo pipefail

cc=${CC:-cc}
cflags=""
libs=""
declare -A adapter=()
self_test=0
files=()

while (($# > 0)); do
    case $1 in
    --cc) cc=$2; shift 2 ;;
    --cflags) cflags=$2; shift 2 ;;
    --libs) libs=$2; shift 2 ;;
    --adapter) adapter[${2%%=*}]=${2#*=}; shift 2 ;;
    --self-test) self_test=1; shift ;;
    -h | --help) sed -n '3,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "doc-snippets.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
    esac
done

# loop_flags NAME: the link flags of the loop library adapter NAME sits on.
loop_flags()
{
    case $1 in
    uv) pkg-config --libs libuv ;;
    event) pkg-config --libs libevent_core ;;
    uring) pkg-config --libs liburing ;;
    sdevent) pkg-config --libs libsystemd ;;
    ev) echo -lev ;;
    esac
}

# check FILE...: extract and build every snippet of the files.
check()
{
    local tmp compiled=0 failed=0 skipped=0 fragments=0 file nfile=0
    tmp=$(mktemp -d) || return 1
    for file in "$@"; do
        if [[ ! -r $file ]]; then
            echo "$file: cannot read" >&2
            failed=$((failed + 1))
            continue
        fi
        # awk writes each complete snippet to $tmp/N.c and prints one line
        # per block: "code LINE N", "fragment LINE" or "bad LINE INFO".
        local listing
        nfile=$((nfile + 1))
        listing=$(awk -v dir="$tmp" -v base="f$nfile" '
            BEGIN { inside = 0; n = 0 }
            inside == 0 && /^```/ {
                info = substr($0, 4)
                inside = 1; out = ""
                if (info == "c") {
                    n++; out = dir "/" base "_" n ".c"
                    printf "code %d %s\n", NR, out
                    printf "" > out
                } else if (info == "c fragment") {
                    printf "fragment %d\n", NR
                } else if (info ~ /^[cC]([^a-zA-Z+#]|$)/) {
                    printf "bad %d %s\n", NR, info
                }
                next
            }
            inside == 1 && /^```[ \t]*$/ { inside = 0; if (out != "") close(out); next }
            inside == 1 && out != "" { print > out }
        ' "$file")
        local kind line src rest
        while read -r kind line src rest; do
            case $kind in
            fragment) fragments=$((fragments + 1)) ;;
            bad)
                echo "$file:$line: fenced block '\`\`\`$src${rest:+ $rest}': a C snippet is '\`\`\`c' (a whole program) or '\`\`\`c fragment'"
                failed=$((failed + 1))
                ;;
            code)
                local extra="" skip="" name
                for name in $(sed -nE 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*<rota/(uv\|ev\|event\|uring\|sdevent)\.h>.*|\1|p' "$src"); do
                    if [[ -z ${adapter[$name]+set} ]]; then
                        skip=$name
                    else
                        extra+=" ${adapter[$name]} $(loop_flags "$name")"
                    fi
                done
                if [[ -n $skip ]]; then
                    echo "$file:$line: skipped (this build has no rota/$skip.h adapter)"
                    skipped=$((skipped + 1))
                    continue
                fi
                # shellcheck disable=SC2086 # the flags are word lists
                if out=$("$cc" -std=gnu11 -Wall -Wextra -Werror $cflags \
                    -o "${src%.c}" "$src" $extra $libs 2>&1); then
                    echo "$file:$line: ok"
                    compiled=$((compiled + 1))
                else
                    echo "$file:$line: the snippet does not build:"
                    sed "s|$src|$file (snippet at line $line)|g" <<<"$out"
                    failed=$((failed + 1))
                fi
                ;;
            esac
        done <<<"$listing"
    done
    rm -rf "$tmp"
    echo "$compiled compiled, $failed failed, $skipped skipped, $fragments fragments"
    if ((failed > 0)); then
        return 1
    fi
    if ((compiled == 0 && skipped > 0)); then
        return 77
    fi
    if ((compiled == 0)); then
        echo "no complete C snippet found: nothing was checked"
        return 1
    fi
    return 0
}

if ((self_test == 0)); then
    if ((${#files[@]} == 0)); then
        echo "doc-snippets.sh: no files given (see --help)" >&2
        exit 2
    fi
    check "${files[@]}"
    exit $?
fi

# ------------------------------------------------------------- self-test
fixtures=$(cd "$(dirname "$0")/doc-snippets" && pwd) || exit 1
ok=1
log=$(check "$fixtures/good.md")
rc=$?
printf '%s\n' "$log"
if ((rc != 0)) || ! grep -q '^1 compiled, 0 failed, 0 skipped, 1 fragments$' <<<"$log"; then
    echo "self-test: the good fixture (one program, one fragment) should pass"
    ok=0
fi
log=$(check "$fixtures/good.md" "$fixtures/broken.md")
rc=$?
printf '%s\n' "$log"
# broken.md's second block (line 14) calls rota_timer_arm_in() with a
# missing argument; its first block (line 3) is fine.
if ((rc != 1)) || ! grep -q "broken.md:14: the snippet does not build" <<<"$log" ||
    ! grep -q "broken.md:3: ok" <<<"$log"; then
    echo "self-test: the planted broken snippet (broken.md:14) was not caught"
    ok=0
fi
log=$(check "$fixtures/typo.md")
rc=$?
printf '%s\n' "$log"
if ((rc != 1)) || ! grep -q "typo.md:3: fenced block" <<<"$log"; then
    echo "self-test: the planted typo in an info string (typo.md:3) was not caught"
    ok=0
fi
log=$(check "$fixtures/empty.md")
rc=$?
printf '%s\n' "$log"
if ((rc != 1)); then
    echo "self-test: a file with no snippet at all should fail"
    ok=0
fi
if ((ok)); then
    echo "self-test: every planted fault was caught"
    exit 0
fi
exit 1
