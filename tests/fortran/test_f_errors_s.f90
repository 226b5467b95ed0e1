! SPDX-License-Identifier: BSD-3-Clause
! test_f_errors_s.f90 -- test_f_errors.inc with real32 arrays (real64 for the
! precision mismatches).
program test_f_errors_s
  use, intrinsic :: iso_fortran_env, only: int8, int64, real32, real64
  use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan, &
      ieee_positive_inf
  use linattn
  use ftest
  implicit none
  integer, parameter :: wp = real32, xp = real64
  character(*), parameter :: wp_name = 'real32', xp_name = 'real64'
  character(*), parameter :: pname = 'test_f_errors_s'
  include 'test_f_errors.inc'
end program test_f_errors_s
