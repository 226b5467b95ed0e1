#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A Fortran program outside the tree, built against an installed linattn
# with the README's pkg-config line: the README's own example (its first
# ```fortran block, the program), linked shared (run with LD_LIBRARY_PATH, and with
# the library directory recorded by the README's
# -Wl,-rpath,$(pkg-config --variable=libdir linattn-fortran) and nothing
# set: run_bare below), then against a copy of the prefix that holds only the static
# libraries (as --disable-shared installs) with pkg-config --static.  All
# must run and print outputs in [0, 1] (elu+1 attention averages the
# values, which are in [0, 1)).  Every ```fortran block of doc/guide.md
# (the installed guide.md in make installcheck) is a program too: built
# the same way, it must run to exit 0.  The installed examples build with
# the Makefile installed beside them, and run with nothing set.
#
# make check: installs into a staging directory (make install
# DESTDIR=...) and points pkg-config there with PKG_CONFIG_SYSROOT_DIR.
# make installcheck (INSTALLED=1): uses the real prefix.  The build's
# FCFLAGS and LDFLAGS go on the command lines too (a sanitizer build's
# library needs its runtime in the program).
set -u
src=$(cd "${top_srcdir:-.}" && pwd)
: "${FC:=gfortran}" "${PKG_CONFIG:=pkg-config}" "${MAKE:=make}"
fcflags=${FCFLAGS:-}
ldflags=${LDFLAGS:-}
: "${libdir:?}" "${includedir:?}" "${fmoddir:?}" "${fexamplesdir:?}"
docdir=${docdir:-${fexamplesdir%/examples/fortran}}
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
fail() { echo "installed.sh: $*"; exit 1; }

if [ "${INSTALLED:-0}" = 1 ]; then
    root=
else
    root=$work/stage
    $MAKE install DESTDIR="$root" > "$work/install.log" 2>&1 ||
        { cat "$work/install.log"; fail "make install DESTDIR=$root failed"; }
fi
[ -f "$root$libdir/pkgconfig/linattn-fortran.pc" ] || fail "no linattn-fortran.pc in $root$libdir/pkgconfig"
[ -f "$root$fmoddir/linattn.mod" ] || fail "no linattn.mod in $root$fmoddir"
echo "modules in $fmoddir:" $(cd "$root$fmoddir" && ls)

# The README's example, in a directory of its own outside the tree.
mkdir "$work/app"
# the first block: the program (the later ones are fragments)
sed -n '/^```fortran$/,/^```$/{p;/^```$/q;}' "$src/README.md" | sed '1d;$d' > "$work/app/app.f90"
grep -q 'use linattn' "$work/app/app.f90" || fail "no Fortran example in README.md"
cd "$work/app" || exit 1

# Run with nothing set: in make installcheck the library directory the
# program records (-Wl,-rpath) must suffice.  A staged install (make
# check) is not where its libraries' own run paths point (libtool records
# the real libdir in liblinattn_fortran.so, which finds liblinattn.so
# through it: gfortran links --as-needed, so the program itself names only
# liblinattn_fortran), so there the staged directory is LD_LIBRARY_PATH.
run_bare() {
    if [ "${INSTALLED:-0}" = 1 ]; then
        (unset LD_LIBRARY_PATH; "$@")
    else
        LD_LIBRARY_PATH=$root$libdir "$@"
    fi
}

check_run() { # program, with LD_LIBRARY_PATH set by the caller
    out=$("$@") || fail "$1 failed: $out"
    echo "$out"
    echo "$out" | awk '/last token:/ { for (i = 3; i <= NF; i++) if ($i < 0 || $i > 1) bad = 1; found = 1 }
        END { exit !(found && !bad) }' || fail "$1: outputs not in [0, 1]"
}

# Shared.
PKG_CONFIG_PATH=$root$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
flags=$($PKG_CONFIG --cflags --libs linattn-fortran) || fail "pkg-config failed"
echo "$FC app.f90 $flags"
$FC $fcflags app.f90 $flags $ldflags -o app_shared || fail "shared build failed"
LD_LIBRARY_PATH=$root$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} check_run ./app_shared
# The library directory recorded in the program (a prefix the loader
# does not search), run with no LD_LIBRARY_PATH at all.
rpath=-Wl,-rpath,$($PKG_CONFIG --variable=libdir linattn-fortran) || fail "pkg-config --variable failed"
echo "$FC app.f90 $flags $rpath"
$FC $fcflags app.f90 $flags $ldflags $rpath -o app_rpath || fail "build with -rpath failed"
run_bare check_run ./app_rpath || exit 1

# The guide's Fortran programs, built and run the same way.
if [ "${INSTALLED:-0}" = 1 ]; then
    guide=$root$docdir/guide.md
else
    guide=$src/doc/guide.md
fi
[ -f "$guide" ] || fail "no $guide"
awk -v dir="$work/app" '
    /^```fortran$/ { n++; file = sprintf("%s/guide%d.f90", dir, n); inblock = 1; next }
    /^```/         { inblock = 0; next }
    inblock        { print > file }
' "$guide"
nguide=0
for f in "$work"/app/guide*.f90; do
    [ -f "$f" ] || continue
    nguide=$((nguide + 1))
    name=$(basename "$f" .f90)
    $FC $fcflags "$f" $flags $ldflags $rpath -o "$name" > "$work/$name.log" 2>&1 ||
        { cat "$work/$name.log"; fail "guide.md, Fortran block $nguide does not build"; }
    out=$(run_bare "./$name" 2>&1) ||
        { echo "$out"; fail "guide.md, Fortran block $nguide failed"; }
    echo "guide.md, Fortran block $nguide: $out"
done
[ "$nguide" -gt 0 ] || fail "no Fortran block in $guide"

# The installed examples, built by their Makefile through pkg-config.
cp -R "$root$fexamplesdir" "$work/examples"
$MAKE -s -C "$work/examples" FC="$FC" FFLAGS="$fcflags $ldflags" > "$work/examples.log" 2>&1 ||
    { cat "$work/examples.log"; fail "the installed Fortran examples do not build"; }
run_bare "$work/examples/textbook" | grep 'output 4.5$' ||
    fail "installed textbook example"
run_bare "$work/examples/galerkin" || fail "installed galerkin example"
echo "installed examples built by their Makefile:" $(cd "$work/examples" && ls textbook galerkin timestep train_map)

# CMake: find_package(linattn) gives linattn::fortran.
if command -v cmake > /dev/null 2>&1; then
    mkdir "$work/cm"
    cp "$src/tests/fortran/consumer/CMakeLists.txt" app.f90 "$work/cm/"
    # the staged prefix's own paths are inside the stage
    if [ -n "$root" ]; then
        sed -i "s|\"$libdir|\"$root$libdir|g; s|\"$includedir|\"$root$includedir|g; s|\"$fmoddir|\"$root$fmoddir|g" \
            "$root$libdir"/cmake/linattn/*.cmake
    fi
    cmake -S "$work/cm" -B "$work/cm/build" -DCMAKE_Fortran_COMPILER="$FC" \
        -DCMAKE_Fortran_FLAGS="$fcflags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" \
        -Dlinattn_DIR="$root$libdir/cmake/linattn" > "$work/cmake.log" 2>&1 &&
        cmake --build "$work/cm/build" >> "$work/cmake.log" 2>&1 ||
        { cat "$work/cmake.log"; fail "CMake: find_package(linattn), linattn::fortran"; }
    LD_LIBRARY_PATH=$root$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        check_run "$work/cm/build/app"
    echo "CMake: linattn::fortran builds and links the example"
else
    echo "installed.sh: cmake not installed: linattn::fortran not checked"
fi

# Static: a copy of the prefix without the shared libraries.
sys=$work/static
mkdir -p "$sys$libdir/pkgconfig" "$sys$fmoddir" "$sys$includedir"
cp "$root$includedir/linattn.h" "$sys$includedir/"
cp "$root$libdir"/liblinattn*.a "$sys$libdir/" || fail "no static libraries installed"
cp "$root$libdir"/pkgconfig/linattn*.pc "$sys$libdir/pkgconfig/"
cp "$root$fmoddir"/* "$sys$fmoddir/"
PKG_CONFIG_PATH=$sys$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$sys
flags=$($PKG_CONFIG --static --cflags --libs linattn-fortran) || fail "pkg-config --static failed"
echo "$FC app.f90 $flags"
$FC $fcflags app.f90 $flags $ldflags -o app_static || fail "static build failed"
if command -v ldd > /dev/null 2>&1 && ldd ./app_static | grep -q liblinattn; then
    fail "app_static still loads a shared liblinattn"
fi
check_run ./app_static
