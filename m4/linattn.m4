# SPDX-License-Identifier: BSD-3-Clause
# linattn.m4 -- configure helpers of linattn.

# LINATTN_CHECK_CFLAG(FLAG, VARIABLE)
# Appends FLAG to VARIABLE when the C compiler accepts it without warning.
AC_DEFUN([LINATTN_CHECK_CFLAG], [
  AC_MSG_CHECKING([whether $CC accepts $1])
  linattn_save_CFLAGS=$CFLAGS
  CFLAGS="$CFLAGS $1 -Werror"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
    [AC_MSG_RESULT([yes]); $2="$$2 $1"],
    [AC_MSG_RESULT([no])])
  CFLAGS=$linattn_save_CFLAGS
])

# LINATTN_FIND_LIB(DESCRIPTION, FUNCTION, WITH-VALUE, CANDIDATES, VARIABLE,
#                  PACKAGE-HINT)
# Finds linker flags that provide FUNCTION.  WITH-VALUE is the user's
# --with-* value: "auto" tries each of CANDIDATES (a list of quoted flag
# sets, "none" meaning no extra flags); a bare name becomes -lNAME; a value
# starting with - or / is used as given.  Stops configure with PACKAGE-HINT
# when nothing links.
AC_DEFUN([LINATTN_FIND_LIB], [
  linattn_save_LIBS=$LIBS
  linattn_found=no
  AS_CASE([$3],
    [auto], [linattn_try="$4"],
    [-*|/*], [linattn_try="'$3'"],
    [linattn_try="'-l$3'"])
  eval "set dummy $linattn_try"; shift
  for linattn_flags in "$[@]"; do
    AS_IF([test "x$linattn_flags" = xnone], [linattn_flags=])
    AC_MSG_CHECKING([for $2 in ${linattn_flags:-the libraries found so far}])
    LIBS="$linattn_flags $linattn_save_LIBS"
    AC_LINK_IFELSE([AC_LANG_CALL([], [$2])],
      [AC_MSG_RESULT([yes]); linattn_found=yes; $5=$linattn_flags; break],
      [AC_MSG_RESULT([no])])
  done
  LIBS=$linattn_save_LIBS
  AS_IF([test "x$linattn_found" != xyes],
    [AC_MSG_ERROR([no $1 library providing $2 was found.
  $6])])
])

# LINATTN_VARIANT_DIRS(SUBDIR, SONAME)
# Sets linattn_variant_flags to a list of quoted linker flag sets, one per
# library directory holding SUBDIR/SONAME (Debian's layout for BLAS
# variants: /usr/lib/<multiarch>/openblas-openmp/libopenblas.so.0), each
# linking that exact file and putting its directory on the run-time path.
# Needs linattn_multiarch (may be empty).
AC_DEFUN([LINATTN_VARIANT_DIRS], [
  linattn_variant_flags=
  for linattn_dir in /usr/lib/$linattn_multiarch/$1 /usr/lib64/$1 /usr/lib/$1; do
    AS_IF([test -f "$linattn_dir/$2"],
      [linattn_variant_flags="$linattn_variant_flags '-L$linattn_dir -Wl,-rpath,$linattn_dir -l:$2'"])
  done
])
