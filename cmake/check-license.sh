#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check-license.sh - every source, header, script and build file of rota
# starts with an `SPDX-License-Identifier: MIT` line (within its first five
# lines, so a shebang can come first).  This lists the files that do not.
#
#   sh cmake/check-license.sh            check the repository this script is in
#   sh cmake/check-license.sh DIR        check the tree at DIR
#   sh cmake/check-license.sh --fix [DIR]
#                                        add the line to each file lacking it,
#                                        in the file's comment syntax, then
#                                        check again
#   sh cmake/check-license.sh --self-test
#                                        prove the check fails on a planted
#                                        file without the line (CTest runs it)
#
# Which files: in a git checkout, every tracked file plus every untracked one
# that .gitignore does not hide (so a file is caught before it is committed);
# elsewhere (a release tarball), every file below DIR outside build trees.
# Nothing is skipped by type except what cannot or need not carry a comment,
# listed in skipped() below: a new kind of file is checked until someone
# decides otherwise here.
#
# Exit status: 0 when every file has the line, 1 when some lack it (they are
# listed, one a line), 2 on a usage error.
set -eu

tag='SPDX-License-Identifier: MIT'

# skipped PATH: true for files that are not source.  Markdown is prose (the
# licence covers it through LICENSE); the fuzz corpus is binary input data.
skipped()
{
    case $1 in
    LICENSE | *.md | *.png | *.svg | *.json | fuzz/corpus/*) return 0 ;;
    *) return 1 ;;
    esac
}

# list_files DIR: the files to check, relative to DIR, one a line.
list_files()
{
    if git -C "$1" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git -C "$1" ls-files --cached --others --exclude-standard
    else
        (cd "$1" && find . -path ./.git -prune -o -path './build' -prune \
            -o -path './build-*' -prune -o -type f -print | sed 's|^\./||')
    fi
}

# comment_style PATH: how the line is written in this kind of file:
# "c" (/* */), "hash" (#), or nothing when the script does not know.
comment_style()
{
    case $1 in
    *.c | *.h | *.h.in) echo c ;;
    *.sh | *.cmake | *.cmake.in | *.pc.in | *.py | *.txt | *.symbols | \
        Makefile | */Makefile | .clang-format | .gitignore | */.gitignore | \
        .ci/*)
        echo hash
        ;;
    *)
        if head -n 1 "$2" | grep -q '^#!'; then echo hash; fi
        ;;
    esac
}

# add_line PATH FILE: insert the line at the top (after a shebang).
add_line()
{
    style=$(comment_style "$1" "$2")
    case $style in
    c) line="/* $tag */" ;;
    hash) line="# $tag" ;;
    *)
        echo "check-license.sh: $1: unknown comment syntax; add the line by hand" >&2
        return 1
        ;;
    esac
    tmp=$2.spdx-tmp
    if head -n 1 "$2" | grep -q '^#!'; then
        { head -n 1 "$2"; echo "$line"; tail -n +2 "$2"; } >"$tmp"
    else
        { echo "$line"; cat "$2"; } >"$tmp"
    fi
    # Keep the mode (a script stays executable).
    cat "$tmp" >"$2"
    rm -f "$tmp"
}

# check DIR FIX: print the files under DIR lacking the line; 1 if any.
check()
{
    dir=$1 fix=$2 missing=0 unfixed=0
    list=$(list_files "$dir")
    # A here-document, not a pipe, so the counters survive the loop.
    while IFS= read -r f; do
        [ -n "$f" ] || continue
        [ -f "$dir/$f" ] || continue # deleted but still tracked
        skipped "$f" && continue
        if head -n 5 "$dir/$f" | grep -q "$tag"; then
            continue
        fi
        if [ "$fix" = 1 ]; then
            if add_line "$f" "$dir/$f"; then
                echo "added: $f"
                continue
            fi
            unfixed=$((unfixed + 1))
        fi
        echo "$f"
        missing=$((missing + 1))
    done <<EOF
$list
EOF
    if [ "$missing" -gt 0 ]; then
        echo "check-license.sh: $missing file(s) lack '$tag' in their first 5 lines" >&2
        [ "$fix" = 1 ] || echo "check-license.sh: 'sh cmake/check-license.sh --fix' adds it" >&2
        return 1
    fi
    return 0
}

# The planted fault: a tree with one good file, one bad file per comment
# style and one skipped file.  The check must fail and name exactly the bad
# files; --fix must then make it pass with the line in the right place.
self_test()
{
    t=$(mktemp -d "${TMPDIR:-/tmp}/rota-spdx.XXXXXX")
    trap 'rm -rf "$t"' EXIT INT TERM
    mkdir -p "$t/tree/src" "$t/tree/fuzz/corpus"
    printf '/* %s */\nint good;\n' "$tag" >"$t/tree/src/good.c"
    printf 'int bad;\n' >"$t/tree/src/bad.c"
    printf '#!/bin/sh\necho hi\n' >"$t/tree/run.sh"
    printf 'project(x C)\n' >"$t/tree/CMakeLists.txt"
    printf '# notes\n' >"$t/tree/README.md"
    printf '\001\002' >"$t/tree/fuzz/corpus/seed"

    if check "$t/tree" 0 >"$t/out" 2>/dev/null; then
        echo "self-test: the check passed a tree with unlicensed files" >&2
        return 1
    fi
    if [ "$(sort "$t/out" | tr '\n' ' ')" != "CMakeLists.txt run.sh src/bad.c " ]; then
        echo "self-test: expected CMakeLists.txt, run.sh, src/bad.c; got:" >&2
        cat "$t/out" >&2
        return 1
    fi
    check "$t/tree" 1 >/dev/null 2>&1 || {
        echo "self-test: --fix left files unlicensed" >&2
        return 1
    }
    check "$t/tree" 0 >/dev/null 2>&1 || {
        echo "self-test: the check fails after --fix" >&2
        return 1
    }
    if [ "$(sed -n 2p "$t/tree/run.sh")" != "# $tag" ] ||
        [ "$(sed -n 1p "$t/tree/src/bad.c")" != "/* $tag */" ]; then
        echo "self-test: --fix put the line in the wrong place" >&2
        return 1
    fi
    echo "self-test: ok (3 planted files caught, --fix repaired them)"
}

here=$(cd "$(dirname "$0")/.." && pwd)
fix=0
case ${1-} in
--self-test)
    self_test
    exit $?
    ;;
--fix)
    fix=1
    shift
    ;;
-h | --help)
    sed -n '3,24p' "$0"
    exit 0
    ;;
-*)
    echo "usage: check-license.sh [--fix] [DIR] | --self-test" >&2
    exit 2
    ;;
esac
dir=${1:-$here}
if check "$dir" "$fix"; then
    [ "$fix" = 1 ] || echo "check-license.sh: every file carries '$tag'"
    exit 0
fi
[ "$fix" = 1 ] && check "$dir" 0 >/dev/null 2>&1 && exit 0
exit 1
