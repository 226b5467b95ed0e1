! SPDX-License-Identifier: BSD-3-Clause
! test_f_gbatch_d.f90 -- test_f_gbatch.inc in real64.
program test_f_gbatch_d
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  use linattn
  use ftest
  implicit none
  integer, parameter :: wp = real64
  real(real64), parameter :: tol = 1e-12_real64
  character(*), parameter :: pname = 'test_f_gbatch_d'
  include 'test_f_gbatch.inc'
end program test_f_gbatch_d
