! SPDX-License-Identifier: BSD-3-Clause
! linattn_s.f90 -- the real32 (float) half of the Fortran interface: the
! precision-generic source linattn_prec.inc over the C functions
! linattn_s_* (module linattn_c_s, generated from linattn.h).
module linattn_s
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int8, int64, real32, real64
  use linattn_c
  use linattn_c_s
  use linattn_base
  implicit none
  integer, parameter :: wp = real32
  include 'linattn_prec.inc'
end module linattn_s
