! SPDX-License-Identifier: BSD-3-Clause
! test_f_math_s.f90 -- test_f_math.inc in real32.
program test_f_math_s
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  use linattn
  use, intrinsic :: iso_c_binding, only: c_associated
  use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan
  use ftest
  implicit none
  integer, parameter :: wp = real32
  real(real64), parameter :: tol = 2e-4_real64
  character(*), parameter :: pname = 'test_f_math_s'
  include 'test_f_math.inc'
end program test_f_math_s
