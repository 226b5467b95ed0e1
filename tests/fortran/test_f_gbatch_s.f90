! SPDX-License-Identifier: BSD-3-Clause
! test_f_gbatch_s.f90 -- test_f_gbatch.inc in real32.
program test_f_gbatch_s
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  use linattn
  use ftest
  implicit none
  integer, parameter :: wp = real32
  real(real64), parameter :: tol = 1e-5_real64
  character(*), parameter :: pname = 'test_f_gbatch_s'
  include 'test_f_gbatch.inc'
end program test_f_gbatch_s
