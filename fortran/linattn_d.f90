! SPDX-License-Identifier: BSD-3-Clause
! linattn_d.f90 -- the real64 (double) half of the Fortran interface: the
! precision-generic source linattn_prec.inc over the C functions
! linattn_d_* (module linattn_c_d, generated from linattn.h).
module linattn_d
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int8, int64, real32, real64
  use linattn_c
  use linattn_c_d
  use linattn_base
  implicit none
  integer, parameter :: wp = real64
  include 'linattn_prec.inc'
end module linattn_d
