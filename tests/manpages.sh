#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Every function a library of the package exports has its manual page, and
# every page names an exported function (the pages are made from the
# headers, so a function documented but not exported, or exported but not
# documented, fails here).  Pages must render without groff warnings where
# groff is installed.  Run from the top build directory (make check).
set -u
status=0
libs="lib/.libs/liblinattn.so ${LINATTN_EXTRA_LIBS:-}"
for lib in $libs; do
    if [ ! -f "$lib" ]; then
        echo "manpages: $lib not built (--disable-shared?): skipped"
        exit 77
    fi
done
exported=$(for lib in $libs; do
               nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }'
           done | grep '^linattn' | sort -u)
pages=$(ls man/man3/*.3 | sed 's|.*/||; s|\.3$||' | sort -u)
# the overview pages, one per header, are not functions
overviews="linattn linattn_mpi"
for sym in $exported; do
    if ! echo "$pages" | grep -qx "$sym"; then
        echo "manpages: $sym is exported but has no page" >&2
        status=1
    fi
done
for page in $pages; do
    case " $overviews " in *" $page "*) continue ;; esac
    if ! echo "$exported" | grep -qx "$page"; then
        echo "manpages: man3/$page.3 names no exported function" >&2
        status=1
    fi
done
[ -f man/linattn-scaling.1 ] || { echo "manpages: no linattn-scaling.1" >&2; status=1; }
n=$(echo "$exported" | wc -w)
echo "manpages: $n exported functions, $(echo "$pages" | wc -w) section-3 pages"
if command -v groff >/dev/null 2>&1; then
    for page in man/man3/*.3 man/linattn-scaling.1; do
        # .so pages are resolved by man(1) from the man3 directory
        head -n 1 "$page" | grep -q '^\.so ' && continue
        warn=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
        if [ -n "$warn" ]; then
            echo "manpages: $page: $warn" >&2
            status=1
        fi
    done
else
    echo "manpages: groff not installed: rendering not checked"
fi
[ "$n" -gt 0 ] || status=1
exit $status
