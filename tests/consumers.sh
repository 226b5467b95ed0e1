#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make installcheck: what a new user meets in the installed prefix.
#  - The documents: every document and example directory the installed
#    README names is installed (doc/NAME.md as DOCDIR/NAME.md).
#  - Programs outside the tree built the ways the README gives:
#    pkg-config (run with LD_LIBRARY_PATH, and with the library directory
#    recorded by -Wl,-rpath and nothing set), CMake's find_package (with
#    version constraints that must hold and ones that must fail; a
#    serial project with MPI made unfindable, which must not need it;
#    the MPI components, refused when MPI cannot be found), and the
#    environment modules (Lmod's .lua and the Tcl file, loaded by Lmod),
#    checking that a loaded module alone finds the library, its
#    pkg-config file, its CMake package and its manual pages, and that
#    its help names every pkg-config module installed.
#  - The installed examples, C, Fortran, MPI C and MPI Fortran (as far as
#    they were built), built by the installed Makefiles and run with
#    nothing set (the Makefiles record the library directory).
# Needs: prefix, top_srcdir; optional: docdir (default
# PREFIX/share/doc/linattn), CC, FC.  CMake, Lmod and an MPI launcher are
# optional (skipped with a message when absent; CI installs them).
set -eu
: "${prefix:?}" "${top_srcdir:?}"
docdir=${docdir:-$prefix/share/doc/linattn}
top_srcdir=$(cd "$top_srcdir" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/linattn-consumers.XXXXXX")
trap 'rm -rf "$work"' EXIT
app=$top_srcdir/tests/consumer/app.c
launch=$top_srcdir/tests/mpi/launch.sh
# nothing of the caller's environment may help
unset PKG_CONFIG_PATH CMAKE_PREFIX_PATH MANPATH LD_LIBRARY_PATH 2>/dev/null || true
cc=${CC:-cc}
fc=${FC:-gfortran}
libdir=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --variable=libdir linattn)
pc() { PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config "$@"; }
fail() { echo "consumers: $*" >&2; exit 1; }
have_fortran=false have_mpi=false have_mpif=false
[ -f "$libdir/pkgconfig/linattn-fortran.pc" ] && have_fortran=true
[ -f "$libdir/pkgconfig/linattn-mpi.pc" ] && have_mpi=true
[ -f "$libdir/pkgconfig/linattn-mpi-fortran.pc" ] && have_mpif=true
have_launcher=false
command -v "${MPIEXEC:-mpiexec}" >/dev/null 2>&1 && have_launcher=true
have_cmake=false
command -v cmake >/dev/null 2>&1 && have_cmake=true

echo "== the documents the installed README names, under $docdir"
readme=$docdir/README.md
[ -f "$readme" ] || fail "no README.md in $docdir"
names=$(grep -oE '(doc/[A-Za-z0-9_-]+\.md|benchmarks/README\.md|examples/[A-Za-z0-9_/.-]*[A-Za-z0-9_]/?|NEWS|LICENSE)' \
    "$readme" | sed 's|/$||' | sort -u)
[ -n "$names" ] || fail "the installed README names no document"
missing=
for name in $names; do
    case $name in
        doc/*) file=$docdir/${name#doc/} ;;
        examples/mpi*) $have_mpi || continue; file=$docdir/$name ;;
        examples/fortran*) $have_fortran || continue; file=$docdir/$name ;;
        *) file=$docdir/$name ;;
    esac
    # an example program is installed as its source
    if [ -e "$file" ] || [ -e "$file.c" ] || [ -e "$file.f90" ]; then
        echo "  $name"
    else
        missing="$missing $name"
    fi
done
[ -z "$missing" ] || fail "the installed README names what is not installed in $docdir:$missing"

echo "== pkg-config"
# shellcheck disable=SC2046
$cc -o "$work/app_pc" "$app" $(pc --cflags --libs linattn)
LD_LIBRARY_PATH=$libdir "$work/app_pc"
echo "== pkg-config, the library directory recorded (-Wl,-rpath), nothing set"
# shellcheck disable=SC2046
$cc -o "$work/app_rpath" "$app" $(pc --cflags --libs linattn) \
    -Wl,-rpath,"$(pc --variable=libdir linattn)"
"$work/app_rpath"

cmake_consumer() { # source directory, build directory, cmake arguments...
    src=$1 bld=$2
    shift 2
    rm -rf "$bld"
    cmake -S "$src" -B "$bld" -DCMAKE_PREFIX_PATH="$prefix" "$@" > "$work/cmake.log" 2>&1
}
if $have_cmake; then
    echo "== CMake find_package"
    for want in "" 0.1 "$(pc --modversion linattn)"; do
        cmake_consumer "$top_srcdir/tests/consumer" "$work/cm" -DCMAKE_C_COMPILER="$cc" \
            -DLINATTN_WANT="$want" ||
            { cat "$work/cmake.log"; fail "find_package(linattn $want) failed"; }
        cmake --build "$work/cm" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
        LD_LIBRARY_PATH=$libdir "$work/cm/app"
        # a serial project does not look for MPI, even where there is one
        if grep -q '^MPI_C_COMPILER' "$work/cm/CMakeCache.txt"; then
            fail "find_package(linattn $want) looked for MPI"
        fi
    done
    # versions this installation does not satisfy must be refused
    for want in 9.0 0.99; do
        if cmake_consumer "$top_srcdir/tests/consumer" "$work/cm" -DLINATTN_WANT="$want"; then
            fail "find_package(linattn $want) accepted version $(pc --modversion linattn)"
        fi
        echo "find_package(linattn $want): refused, as it must be"
    done
    # A serial project needs no MPI: with MPI unfindable it configures,
    # builds and runs (CMake records the library directory in the build).
    echo "== CMake find_package, serial, MPI unfindable (-DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON)"
    cmake_consumer "$top_srcdir/tests/consumer" "$work/cm" -DCMAKE_C_COMPILER="$cc" \
        -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON ||
        { cat "$work/cmake.log"; fail "a serial find_package(linattn) needs MPI"; }
    cmake --build "$work/cm" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
    "$work/cm/app"
    # a component linattn does not have
    if cmake_consumer "$top_srcdir/tests/consumer" "$work/cm" \
            -DLINATTN_WANT="0.1;COMPONENTS;nosuch"; then
        fail "find_package(linattn COMPONENTS nosuch) accepted"
    fi
    grep -q 'unknown component nosuch' "$work/cmake.log" ||
        { cat "$work/cmake.log"; fail "no reason given for an unknown component"; }
    echo "find_package(linattn COMPONENTS nosuch): refused, with the reason"
    if ! $have_mpi; then
        if cmake_consumer "$top_srcdir/tests/consumer/mpi" "$work/cm"; then
            fail "find_package(linattn COMPONENTS mpi) accepted without liblinattn_mpi"
        fi
        echo "find_package(linattn COMPONENTS mpi): refused (no liblinattn_mpi), as it must be"
    fi
else
    echo "consumers: cmake not installed: the CMake package is not checked"
fi

# liblinattn_mpi, where it was installed: pkg-config linattn-mpi and
# CMake's component mpi (linattn::mpi), run on 2 ranks
if $have_mpi; then
    echo "== pkg-config linattn-mpi"
    # shellcheck disable=SC2046
    $cc -o "$work/app_mpi_pc" "$top_srcdir/tests/consumer/app_mpi.c" \
        $(pc --cflags --libs linattn-mpi)
    if $have_launcher; then
        LD_LIBRARY_PATH=$libdir sh "$launch" 2 "$work/app_mpi_pc"
    fi
    if $have_cmake; then
        echo "== CMake COMPONENTS mpi (linattn::mpi)"
        cmake_consumer "$top_srcdir/tests/consumer/mpi" "$work/cmpi" -DCMAKE_C_COMPILER="$cc" ||
            { cat "$work/cmake.log"; fail "linattn::mpi not found"; }
        cmake --build "$work/cmpi" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
        if $have_launcher; then
            LD_LIBRARY_PATH=$libdir sh "$launch" 2 "$work/cmpi/app_mpi"
        fi
        # the component needs MPI: unfindable, it is refused with the reason
        if cmake_consumer "$top_srcdir/tests/consumer/mpi" "$work/cmpi" \
                -DCMAKE_C_COMPILER="$cc" -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON; then
            fail "find_package(linattn COMPONENTS mpi) accepted without MPI"
        fi
        grep -q 'component mpi not found' "$work/cmake.log" ||
            { cat "$work/cmake.log"; fail "no reason given for component mpi without MPI"; }
        echo "find_package(linattn COMPONENTS mpi), MPI unfindable: refused, with the reason"
    fi
fi

# module linattn_mpi, where it was installed: pkg-config
# linattn-mpi-fortran and CMake's component mpi_fortran, run on 2 ranks
if $have_mpif; then
    echo "== pkg-config linattn-mpi-fortran"
    # shellcheck disable=SC2046
    $fc -o "$work/app_mpi_f" "$top_srcdir/tests/consumer/app_mpi.f90" \
        $(pc --cflags --libs linattn-mpi-fortran)
    if $have_launcher; then
        LD_LIBRARY_PATH=$libdir sh "$launch" 2 "$work/app_mpi_f"
    fi
    if $have_cmake; then
        echo "== CMake COMPONENTS mpi_fortran (linattn::mpi_fortran)"
        cmake_consumer "$top_srcdir/tests/consumer/mpi_fortran" "$work/cmpif" \
            -DCMAKE_Fortran_COMPILER="$fc" ||
            { cat "$work/cmake.log"; fail "linattn::mpi_fortran not found"; }
        cmake --build "$work/cmpif" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
        if $have_launcher; then
            LD_LIBRARY_PATH=$libdir sh "$launch" 2 "$work/cmpif/app_mpi_f"
        fi
    fi
fi

# The installed examples, built where a user would copy them, by the
# installed Makefiles, with pkg-config pointed at the prefix and nothing
# else: the programs must then run with nothing set.
echo "== the installed examples, built by their Makefiles (make -C examples)"
cp -R "$docdir/examples" "$work/examples"
mk_args="CC=$cc"
$have_fortran && mk_args="$mk_args FC=$fc"
# the MPI compiler wrappers if there are any, else the build's compilers
# (the pkg-config files carry MPI's flags)
command -v mpicc >/dev/null 2>&1 || mk_args="$mk_args MPICC=$cc"
command -v mpifort >/dev/null 2>&1 || mk_args="$mk_args MPIFC=$fc"
# (the make that runs this test passes nothing on to it)
# shellcheck disable=SC2086
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL PKG_CONFIG_PATH="$libdir/pkgconfig" \
    make -C "$work/examples" $mk_args > "$work/examples.log" 2>&1 ||
    { cat "$work/examples.log"; fail "the installed examples do not build with their Makefiles"; }
built=$(cd "$work/examples" && ls worked_example train_map fortran/textbook fortran/galerkin \
    fortran/timestep fortran/train_map mpi/causal_mpi mpi/causal_mpi_f 2>/dev/null | tr '\n' ' ')
echo "built: $built"
for prog in worked_example train_map; do
    [ -x "$work/examples/$prog" ] || fail "examples/$prog not built"
done
"$work/examples/worked_example" | grep 'output 4.5$' || fail "installed worked_example"
"$work/examples/train_map" > "$work/train.log" 2>&1 ||
    { cat "$work/train.log"; fail "installed train_map"; }
if $have_fortran; then
    for prog in textbook galerkin timestep train_map; do
        [ -x "$work/examples/fortran/$prog" ] || fail "examples/fortran/$prog not built"
    done
    "$work/examples/fortran/textbook" | grep 'output 4.5$' || fail "installed fortran/textbook"
    "$work/examples/fortran/galerkin" || fail "installed fortran/galerkin"
fi
if $have_mpi; then
    mpi_progs=causal_mpi
    [ -d "$work/examples/mpi" ] || fail "examples/mpi not installed"
    [ -f "$work/examples/mpi/causal_mpi.slurm" ] || fail "examples/mpi/causal_mpi.slurm not installed"
    if $have_mpif; then
        mpi_progs="$mpi_progs causal_mpi_f"
    fi
    for prog in $mpi_progs; do
        [ -x "$work/examples/mpi/$prog" ] || fail "examples/mpi/$prog not built"
        if $have_launcher; then
            (cd "$work/examples/mpi" && OMP_NUM_THREADS=1 sh "$launch" 2 "./$prog" 3001 "$prog.ck") \
                > "$work/mpi.log" 2>&1 || { cat "$work/mpi.log"; fail "installed mpi/$prog"; }
            grep -q 'holds 3001 tokens' "$work/mpi.log" ||
                { cat "$work/mpi.log"; fail "installed mpi/$prog: no checkpoint of 3001 tokens"; }
            echo "mpi/$prog on 2 ranks: $(grep -o 'checksum [-0-9.eE+]*' "$work/mpi.log" | head -n 1)"
        fi
    done
fi

lmod_init=
for f in /usr/share/lmod/lmod/init/bash /usr/share/lmod/*/init/bash; do
    [ -f "$f" ] && { lmod_init=$f; break; }
done
if [ -n "$lmod_init" ] && command -v bash >/dev/null 2>&1; then
    # the pkg-config modules installed, which the module's help must name
    pcs=$(cd "$libdir/pkgconfig" && ls linattn*.pc | sed 's/\.pc$//' | tr '\n' ' ')
    for kind in "lmod:$prefix/share/lmod" "tcl:$prefix/share/modulefiles"; do
        echo "== module load linattn (${kind%%:*} modulefile, by Lmod)"
        # The loaded module alone must find everything.
        MODULEPATH= LMOD_CMD= bash -c '
            set -eu
            . "$1"
            module use "$2"
            work=$3 app=$4 src=$5 cc=$6 pcs=$7
            help=$(module help linattn 2>&1)
            for p in $pcs; do
                echo "$help" | grep -q -- "--libs $p)" ||
                    { echo "$help"; echo "consumers: module help does not name $p" >&2; exit 1; }
            done
            module load linattn
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
        ' sh "$lmod_init" "${kind#*:}" "$work" "$app" "$top_srcdir" "$cc" "$pcs"
        echo "module help names: $pcs"
    done
else
    echo "consumers: Lmod not installed: the modulefiles are not checked"
fi
echo "consumers: all passed"
