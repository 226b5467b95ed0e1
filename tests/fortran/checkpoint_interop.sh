#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A checkpoint written from Fortran loads in C, and one written from C
# loads in Fortran, bit for bit (tests/fortran/ckpt_f.f90, ckpt_c.c):
# Fortran saves, C checks the bytes against its own state, loads, goes on
# and saves, Fortran checks that against its own state of all the tokens.
b=${top_builddir:-.}/tests/fortran
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
"$b/ckpt_f" write "$dir" || exit 1
"$b/ckpt_c" "$dir" || exit 1
"$b/ckpt_f" read "$dir" || exit 1
