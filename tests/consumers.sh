#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make installcheck: programs outside the tree built against the installed
# prefix the three ways the README gives -- pkg-config, CMake's
# find_package (with version constraints that must hold and one that must
# fail), and the environment modules (Lmod's .lua and the Tcl file, loaded
# by Lmod), checking that a loaded module alone finds the library, its
# pkg-config file, its CMake package and its manual pages.
# Needs: prefix, top_srcdir.  CMake and Lmod are optional (skipped with a
# message when absent; CI installs both).
set -eu
: "${prefix:?}" "${top_srcdir:?}"
work=$(mktemp -d "${TMPDIR:-/tmp}/linattn-consumers.XXXXXX")
trap 'rm -rf "$work"' EXIT
app=$top_srcdir/tests/consumer/app.c
# nothing of the caller's environment may help
unset PKG_CONFIG_PATH CMAKE_PREFIX_PATH MANPATH LD_LIBRARY_PATH 2>/dev/null || true
cc=${CC:-cc}
libdir=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --variable=libdir linattn)

echo "== pkg-config"
# shellcheck disable=SC2046
$cc -o "$work/app_pc" "$app" $(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs linattn)
LD_LIBRARY_PATH=$libdir "$work/app_pc"

if command -v cmake >/dev/null 2>&1; then
    echo "== CMake find_package"
    for want in "" 0.1 "$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --modversion linattn)"; do
        rm -rf "$work/cm"
        cmake -S "$top_srcdir/tests/consumer" -B "$work/cm" -DCMAKE_PREFIX_PATH="$prefix" \
            -DCMAKE_C_COMPILER="$cc" -DLINATTN_WANT="$want" > "$work/cmake.log" 2>&1 ||
            { cat "$work/cmake.log"; echo "consumers: find_package(linattn $want) failed" >&2; exit 1; }
        cmake --build "$work/cm" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
        LD_LIBRARY_PATH=$libdir "$work/cm/app"
    done
    # versions this installation does not satisfy must be refused
    for want in 9.0 0.99; do
        rm -rf "$work/cm"
        if cmake -S "$top_srcdir/tests/consumer" -B "$work/cm" -DCMAKE_PREFIX_PATH="$prefix" \
                -DLINATTN_WANT="$want" > "$work/cmake.log" 2>&1; then
            echo "consumers: find_package(linattn $want) accepted version" \
                 "$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --modversion linattn)" >&2
            exit 1
        fi
        echo "find_package(linattn $want): refused, as it must be"
    done
else
    echo "consumers: cmake not installed: the CMake package is not checked"
fi

# liblinattn_mpi, where it was installed: pkg-config linattn-mpi and
# CMake's linattn::mpi, run on 2 ranks
if [ -f "$libdir/pkgconfig/linattn-mpi.pc" ]; then
    launch=$top_srcdir/tests/mpi/launch.sh
    echo "== pkg-config linattn-mpi"
    # shellcheck disable=SC2046
    $cc -o "$work/app_mpi_pc" "$top_srcdir/tests/consumer/app_mpi.c" \
        $(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs linattn-mpi)
    LD_LIBRARY_PATH=$libdir sh "$launch" 2 "$work/app_mpi_pc"
    if command -v cmake >/dev/null 2>&1; then
        echo "== CMake linattn::mpi"
        rm -rf "$work/cmpi"
        cmake -S "$top_srcdir/tests/consumer/mpi" -B "$work/cmpi" \
            -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" > "$work/cmake.log" 2>&1 ||
            { cat "$work/cmake.log"; echo "consumers: linattn::mpi not found" >&2; exit 1; }
        cmake --build "$work/cmpi" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
        LD_LIBRARY_PATH=$libdir sh "$launch" 2 "$work/cmpi/app_mpi"
    fi
fi

# module linattn_mpi, where it was installed: pkg-config
# linattn-mpi-fortran and CMake's linattn::mpi_fortran, run on 2 ranks
if [ -f "$libdir/pkgconfig/linattn-mpi-fortran.pc" ]; then
    launch=$top_srcdir/tests/mpi/launch.sh
    fc=${FC:-gfortran}
    echo "== pkg-config linattn-mpi-fortran"
    # shellcheck disable=SC2046
    $fc -o "$work/app_mpi_f" "$top_srcdir/tests/consumer/app_mpi.f90" \
        $(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs linattn-mpi-fortran)
    LD_LIBRARY_PATH=$libdir sh "$launch" 2 "$work/app_mpi_f"
    if command -v cmake >/dev/null 2>&1; then
        echo "== CMake linattn::mpi_fortran"
        rm -rf "$work/cmpif"
        cmake -S "$top_srcdir/tests/consumer/mpi_fortran" -B "$work/cmpif" \
            -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_Fortran_COMPILER="$fc" > "$work/cmake.log" 2>&1 ||
            { cat "$work/cmake.log"; echo "consumers: linattn::mpi_fortran not found" >&2; exit 1; }
        cmake --build "$work/cmpif" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
        LD_LIBRARY_PATH=$libdir sh "$launch" 2 "$work/cmpif/app_mpi_f"
    fi
fi

lmod_init=
for f in /usr/share/lmod/lmod/init/bash /usr/share/lmod/*/init/bash; do
    [ -f "$f" ] && { lmod_init=$f; break; }
done
if [ -n "$lmod_init" ] && command -v bash >/dev/null 2>&1; then
    for kind in "lmod:$prefix/share/lmod" "tcl:$prefix/share/modulefiles"; do
        echo "== module load linattn (${kind%%:*} modulefile, by Lmod)"
        # The loaded module alone must find everything.
        MODULEPATH= LMOD_CMD= bash -c '
            set -eu
            . "$1"
            module use "$2"
            module load linattn
            work=$3 app=$4 src=$5 cc=$6
            pkg-config --modversion linattn
            # shellcheck disable=SC2046
            $cc -o "$work/app_mod" "$app" $(pkg-config --cflags --libs linattn)
            "$work/app_mod"
            man -w linattn_d_attention >/dev/null 2>&1 || {
                [ -f "$(echo "$MANPATH" | cut -d: -f1)/man3/linattn_d_attention.3" ] ||
                    { echo "consumers: MANPATH does not reach the pages" >&2; exit 1; }
            }
            linattn-scaling --version
            if command -v cmake >/dev/null 2>&1; then
                rm -rf "$work/cmm"
                cmake -S "$src/tests/consumer" -B "$work/cmm" > "$work/cmm.log" 2>&1 ||
                    { cat "$work/cmm.log"; exit 1; }
                cmake --build "$work/cmm" > "$work/cmm.log" 2>&1 || { cat "$work/cmm.log"; exit 1; }
                "$work/cmm/app"
            fi
        ' sh "$lmod_init" "${kind#*:}" "$work" "$app" "$top_srcdir" "$cc"
    done
else
    echo "consumers: Lmod not installed: the modulefiles are not checked"
fi
echo "consumers: all passed"
