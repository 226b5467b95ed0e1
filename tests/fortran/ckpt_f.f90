! SPDX-License-Identifier: BSD-3-Clause
! ckpt_f.f90 -- the Fortran half of checkpoint_interop.sh.
!   ckpt_f write DIR   saves the states of tokens 1..n1 to DIR/f_*.ck
!   ckpt_f read DIR    loads DIR/c_*.ck (ckpt_c loaded f_*.ck and went
!                      on to n1 + n2 tokens) and requires them to equal,
!                      bit for bit, its own state of the same tokens: the
!                      file's bytes, S, z, the token count and queries.
! The cases and inputs are ckpt_c.c's.
module ckpt_case_d
  use, intrinsic :: iso_fortran_env, only: int8, int64, real32, real64
  use linattn
  use ftest
  implicit none
  integer, parameter :: wp = real64
  include 'ckpt_f.inc'
end module ckpt_case_d

module ckpt_case_s
  use, intrinsic :: iso_fortran_env, only: int8, int64, real32, real64
  use linattn
  use ftest
  implicit none
  integer, parameter :: wp = real32
  include 'ckpt_f.inc'
end module ckpt_case_s

program ckpt_f
  use, intrinsic :: iso_fortran_env, only: int64
  use linattn, only: LINATTN_MAP_FAVOR, LINATTN_MAP_ELU1
  use ckpt_case_d, only: run_d => run_case
  use ckpt_case_s, only: run_s => run_case
  use ftest, only: finish
  implicit none
  character(8) :: mode
  character(1024) :: dir
  call get_command_argument(1, mode)
  call get_command_argument(2, dir)
  call run_d(trim(mode), trim(dir), 'favor_d', LINATTN_MAP_FAVOR, 3, 2, &
      2024_int64, 37, 20)
  call run_s(trim(mode), trim(dir), 'elu1_s', LINATTN_MAP_ELU1, 4, 3, &
      0_int64, 37, 20)
  call finish('ckpt_f ' // trim(mode))
end program ckpt_f
