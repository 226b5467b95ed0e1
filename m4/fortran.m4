# SPDX-License-Identifier: BSD-3-Clause
# fortran.m4 -- configure's Fortran part: module linattn in
# liblinattn_fortran.

# LINATTN_CHECK_FCFLAG(FLAG, VARIABLE)
# Appends FLAG to VARIABLE when the Fortran compiler accepts it without
# warning.
AC_DEFUN([LINATTN_CHECK_FCFLAG], [
  AC_LANG_PUSH([Fortran])
  AC_MSG_CHECKING([whether $FC accepts $1])
  linattn_save_FCFLAGS=$FCFLAGS
  FCFLAGS="$FCFLAGS $1 -Werror"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
    [AC_MSG_RESULT([yes]); $2="$$2 $1"],
    [AC_MSG_RESULT([no])])
  FCFLAGS=$linattn_save_FCFLAGS
  AC_LANG_POP([Fortran])
])

# LINATTN_FORTRAN(ENABLE, MODDIR)
# After AC_PROG_FC and LT_LANG([Fortran]) (at the top level of
# configure.ac, where autoconf wants them).  ENABLE is yes, no or auto (build when a working compiler is found);
# MODDIR the --with-fortran-moddir value ("default": LIBDIR/linattn/
# fortran/COMPILER-VERSION).  Defines the conditional BUILD_FORTRAN and
# substitutes FC_MODEXT, FC_MODINC, FC_MODOUT, the flags below, fmoddir
# and PERL.  Stops configure when ENABLE is yes
# and something is missing.
AC_DEFUN([LINATTN_FORTRAN], [
  linattn_fortran=no
  linattn_fortran_why=
  AS_IF([test "x$1" = xno], [linattn_fortran_why="--disable-fortran"],
        [test -z "$FC" || test "x$FC" = xno],
          [linattn_fortran_why="no Fortran compiler found"],
        [linattn_fortran=yes])
  AS_IF([test $linattn_fortran = yes], [
    AC_LANG_PUSH([Fortran])
    AC_FC_SRCEXT([f90], [], [linattn_fortran=no
      linattn_fortran_why="$FC does not compile .f90 files"])
    AS_IF([test $linattn_fortran = yes], [
      AC_MSG_CHECKING([whether $FC compiles and links Fortran 2008 with iso_c_binding])
      AC_LINK_IFELSE([AC_LANG_SOURCE([[
program conftest
  use, intrinsic :: iso_c_binding, only: c_sizeof, c_int64_t
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  implicit none
  integer(c_int64_t) :: n = 1
  if (c_sizeof(n) /= 8 .or. real32 == real64) error stop
end program conftest]])],
        [AC_MSG_RESULT([yes])],
        [AC_MSG_RESULT([no]); linattn_fortran=no
         linattn_fortran_why="$FC cannot build a Fortran 2008 program with iso_c_binding"])
    ])
    AS_IF([test $linattn_fortran = yes], [
      AC_FC_MODULE_EXTENSION
      AC_FC_MODULE_FLAG([], [linattn_fortran=no
        linattn_fortran_why="no module search flag found for $FC"])
      AC_FC_MODULE_OUTPUT_FLAG([], [linattn_fortran=no
        linattn_fortran_why="no module output flag found for $FC"])
    ])
    AC_LANG_POP([Fortran])
  ])
  AS_IF([test $linattn_fortran = yes], [
    AC_PATH_PROG([PERL], [perl])
    AS_IF([test -z "$PERL"], [linattn_fortran=no
      linattn_fortran_why="perl not found (it generates the bind(C) interfaces from linattn.h)"])
  ])
  AS_IF([test $linattn_fortran = no && test "x$1" = xyes],
    [AC_MSG_ERROR([--enable-fortran: $linattn_fortran_why.
  On Debian/Ubuntu: apt-get install gfortran; elsewhere set FC to a Fortran 2008 compiler.])])

  # Warnings, as for C.  NOCOPY_FCFLAGS: the module (and the test that
  # passes every kind of section to it) must build without array
  # temporaries: arrays pass by address, never copied.  At run time the
  # tests add FCHECK_FCFLAGS (bounds), that test FCHECK_TEMPS_FCFLAGS
  # (gfortran reports a temporary made at run time).
  WARN_FCFLAGS=
  NOCOPY_FCFLAGS=
  FCHECK_FCFLAGS=
  FCHECK_TEMPS_FCFLAGS=
  TEST_FCFLAGS_EXTRA=
  fmoddir=
  AS_IF([test $linattn_fortran = yes], [
    for linattn_flag in -std=f2008 -fimplicit-none -Wall -Wextra -pedantic \
        -Wimplicit-interface; do
      LINATTN_CHECK_FCFLAG([$linattn_flag], [WARN_FCFLAGS])
    done
    AS_IF([test "x$enable_werror" = xyes], [WARN_FCFLAGS="$WARN_FCFLAGS -Werror"])
    LINATTN_CHECK_FCFLAG([-Warray-temporaries -Werror=array-temporaries],
      [NOCOPY_FCFLAGS])
    LINATTN_CHECK_FCFLAG([-fcheck=bounds], [FCHECK_FCFLAGS])
    LINATTN_CHECK_FCFLAG([-fcheck=array-temps], [FCHECK_TEMPS_FCFLAGS])
    # The tests compare reals bit for bit on purpose.
    LINATTN_CHECK_FCFLAG([-Wno-compare-reals], [TEST_FCFLAGS_EXTRA])

    # Where the .mod files go: they are compiler-specific, so the
    # compiler's name and version are part of the path.
    AS_IF([test "x$ac_cv_fc_compiler_gnu" = xyes], [linattn_fc_name=gfortran],
      [set dummy $FC; linattn_fc_name=`basename "$[2]"`])
    linattn_fc_version=`$FC -dumpversion 2>/dev/null | sed -n '1s/^\([[0-9]][[0-9]]*\).*/\1/p'`
    test -n "$linattn_fc_version" || linattn_fc_version=unknown
    AS_IF([test "x$2" = xdefault || test "x$2" = xyes],
      [fmoddir='${libdir}'/linattn/fortran/$linattn_fc_name-$linattn_fc_version],
      [fmoddir=$2])
    linattn_fortran_summary="$FC ($linattn_fc_name $linattn_fc_version), modules in $fmoddir"
  ], [linattn_fortran_summary="no ($linattn_fortran_why)"])
  AC_SUBST([WARN_FCFLAGS])
  AC_SUBST([NOCOPY_FCFLAGS])
  AC_SUBST([FCHECK_FCFLAGS])
  AC_SUBST([FCHECK_TEMPS_FCFLAGS])
  AC_SUBST([TEST_FCFLAGS_EXTRA])
  AC_SUBST([fmoddir])
  AM_CONDITIONAL([BUILD_FORTRAN], [test $linattn_fortran = yes])
])
