#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check-self-contained.sh - nothing in rota points outside the repository.
# A user has the repository and nothing else, so no file may send them to
# documents that are not in it, to a tracker's numbers that mean nothing
# without the tracker, or to paths of the machine it was written on.
#
#   sh cmake/check-self-contained.sh [DIR]   check the tree (default: this repo)
#   sh cmake/check-self-contained.sh --self-test
#                                            prove each rule catches a
#                                            planted file (CTest runs it)
#
# Rules, over every tracked and untracked-but-not-ignored file (text only;
# the fuzz corpus and images are data):
#   1. no reference to a sibling folder or an outside document:
#      "../shared", "shared/BENCH.md", "DESIGN-NOTES", "STYLE.md", "/work/"
#   2. no bare tracker numbers: "issue 6", "issues 4 and 6" (links to
#      other projects' issues, github.com/.../issues/N or repo#N, are fine)
#   3. no property or bug-class codes without a name: "P3", "P12",
#      "bug class 7" (docs/DESIGN.md names them; cite the name)
#   4. every relative link in a Markdown file, [text](path), names a file
#      or directory that exists inside the repository
# Exit status: 0 when clean, 1 when something points outside (each hit is
# listed as FILE:LINE: text), 2 on a usage error.
set -eu

list_files()
{
    if git -C "$1" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git -C "$1" ls-files --cached --others --exclude-standard
    else
        (cd "$1" && find . -path ./.git -prune -o -path './build' -prune \
            -o -path './build-*' -prune -o -type f -print | sed 's|^\./||')
    fi
}

# The rules' patterns (extended regular expressions), one a line.  This
# file is the one place they may appear, so it is not checked against them.
patterns()
{
    cat <<'EOF'
\.\./shared
shared/(BENCH|STYLE|DESIGN)
DESIGN-NOTES
STYLE\.md
/work/
[Ii]ssues? #?[0-9]+
(^|[^A-Za-z0-9_])P([1-9]|1[0-2])([^0-9A-Za-z_]|$)
[Bb]ug class(es)? [0-9]
EOF
}

check()
{
    dir=$1 bad=0
    pat=$(patterns | paste -sd '|' -)
    list=$(list_files "$dir")
    while IFS= read -r f; do
        [ -n "$f" ] && [ -f "$dir/$f" ] || continue
        case $f in
        fuzz/corpus/* | *.png | cmake/check-self-contained.sh) continue ;;
        esac
        # Text files only.
        grep -Iq . "$dir/$f" 2>/dev/null || continue
        if hits=$(grep -nE "$pat" "$dir/$f"); then
            printf '%s\n' "$hits" | sed "s|^|$f:|"
            bad=1
        fi
        case $f in
        *.md) ;;
        *) continue ;;
        esac
        # Relative links: ](target) with no scheme and no leading #.
        links=$(grep -no '](\([^)#][^)]*\))' "$dir/$f" |
            sed 's/^\([0-9]*\):](\(.*\))$/\1 \2/' |
            grep -vE '^[0-9]+ ([a-z]+:|#)' || true)
        [ -n "$links" ] || continue
        base=$(dirname "$f")
        while read -r line target; do
            target=${target%%#*}
            [ -n "$target" ] || continue
            path=$base/$target
            # Normalise without following anything outside: the link must
            # exist and must not climb above the repository root.
            real=$(cd "$dir" && realpath -m --relative-to=. "$path" 2>/dev/null || echo "../")
            case $real in
            ../* | ..) ok=0 ;;
            *) if [ -e "$dir/$real" ]; then ok=1; else ok=0; fi ;;
            esac
            if [ "$ok" = 0 ]; then
                echo "$f:$line: link to '$target', which is not in the repository"
                bad=1
            fi
        done <<EOF
$links
EOF
    done <<EOF
$list
EOF
    return $bad
}

self_test()
{
    t=$(mktemp -d "${TMPDIR:-/tmp}/rota-selfcontained.XXXXXX")
    trap 'rm -rf "$t"' EXIT INT TERM
    mkdir -p "$t/clean/docs" "$t/dirty/docs"
    printf '# ok\nSee [the design](docs/D.md) and libuv#4773, P99 latency,\nhttps://github.com/libuv/libuv/issues/4773.\n' >"$t/clean/README.md"
    printf 'design\n' >"$t/clean/docs/D.md"
    sh "$0" "$t/clean" >"$t/out" 2>&1 || {
        echo "self-test: a clean tree was rejected:"
        cat "$t/out"
        return 1
    }
    n=0
    for planted in 'see ../shared/BENCH.md' 'as DESIGN-NOTES.md says' \
        'per STYLE.md' 'fixed in issue 6' 'holds P12' 'bug class 7' \
        'in /work/main' 'printf("\\nissue 4 targets")'; do
        n=$((n + 1))
        printf '/* %s */\n' "$planted" >"$t/dirty/f$n.c"
    done
    printf '[gone](docs/missing.md) and [up](../../outside.md)\n' >"$t/dirty/README.md"
    if sh "$0" "$t/dirty" >"$t/out" 2>&1; then
        echo "self-test: a tree with outside references passed"
        return 1
    fi
    for i in $(seq 1 "$n"); do
        grep -q "^f$i.c:1:" "$t/out" || {
            echo "self-test: the planted reference in f$i.c was not caught:"
            cat "$t/out"
            return 1
        }
    done
    grep -q "README.md:1: link to 'docs/missing.md'" "$t/out" &&
        grep -q "README.md:1: link to '../../outside.md'" "$t/out" || {
        echo "self-test: a broken or outside link was not caught:"
        cat "$t/out"
        return 1
    }
    echo "self-test: ok ($n planted references and 2 bad links caught)"
}

case ${1-} in
--self-test)
    self_test
    exit $?
    ;;
-h | --help)
    sed -n '3,26p' "$0"
    exit 0
    ;;
-*)
    echo "usage: check-self-contained.sh [DIR] | --self-test" >&2
    exit 2
    ;;
esac
dir=${1:-$(cd "$(dirname "$0")/.." && pwd)}
if check "$dir"; then
    echo "check-self-contained.sh: nothing points outside the repository"
    exit 0
fi
echo "check-self-contained.sh: the lines above point outside the repository (see docs/DESIGN.md for bug-class and property names)" >&2
exit 1
