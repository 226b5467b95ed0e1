#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Every source, build and script file of the tree carries the project's
# SPDX license identifier in its first three lines.  Runs on the source
# directory (a clone or an unpacked tarball); files that autotools
# generate are not ours and are skipped.
set -u
src=${srcdir:-.}/
missing=0
checked=0
# shellcheck disable=SC2044
for f in $(find "$src" \( -name .git -o -name autom4te.cache -o -name build-aux \
                          -o -name '_*' -o -name 'linattn-[0-9]*' \) -prune -o \
                   -type f \( -name '*.c' -o -name '*.h' -o -name '*.f90' -o -name '*.F90' \
                          -o -name '*.sh' -o -name '*.am' -o -name '*.ac' -o -name '*.gp' \
                          -o -name '*.in' -o -name '*.m4' -o -name '*.pl' -o -name '*.cmake' \
                          -o -name '*.lua' -o -name '*.tcl' -o -name 'bootstrap' -o -name run \
                          -o -name '*.slurm' -o -name 'CMakeLists.txt' -o -name '*.mk' -o -name '*.list' \) -print); do
    rel=${f#"$src"}
    case $rel in
    Makefile.in|*/Makefile.in|aclocal.m4|configure|config.h.in|m4/libtool.m4|m4/lt*.m4) continue ;;
    esac
    # generated from a .in of ours, or a build product
    [ -f "$f.in" ] && continue
    checked=$((checked + 1))
    if ! head -n 3 "$f" | grep -q 'SPDX-License-Identifier: BSD-3-Clause'; then
        echo "spdx: no SPDX-License-Identifier in $rel" >&2
        missing=$((missing + 1))
    fi
done
echo "spdx: $checked files checked, $missing without the identifier"
[ "$checked" -gt 50 ] && [ "$missing" = 0 ]
