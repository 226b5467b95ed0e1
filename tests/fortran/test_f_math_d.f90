! SPDX-License-Identifier: BSD-3-Clause
! test_f_math_d.f90 -- test_f_math.inc in real64.
program test_f_math_d
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  use linattn
  use, intrinsic :: iso_c_binding, only: c_associated
  use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan
  use ftest
  implicit none
  integer, parameter :: wp = real64
  real(real64), parameter :: tol = 1e-11_real64
  character(*), parameter :: pname = 'test_f_math_d'
  include 'test_f_math.inc'
end program test_f_math_d
