! SPDX-License-Identifier: BSD-3-Clause
! linattn_mpi_d.f90 -- the real64 distributed calls of module linattn_mpi:
! linattn_mpi_prec.inc with wp = real64 over the C functions of
! linattn_mpi_c_d (through their shims).
module linattn_mpi_d
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64, real64, wp => real64
  use mpi_f08, only: MPI_Comm
  use linattn_c, only: c_strides, c_where
  use linattn_base
  use linattn_c_d, only: c_extras, c_extras_init
  use linattn_d, only: linattn_qkv_prepare, linattn_batched_prepare, &
      linattn_view, linattn_packed_extras, linattn_grad_prepare, &
      linattn_grad_finish, linattn_bgrad_views, linattn_bgrad_settle, &
      linattn_batched_extras, linattn_backward_extras
  use linattn_mpi_c_d
  use linattn_mpi_base
  implicit none
  include 'linattn_mpi_prec.inc'
end module linattn_mpi_d
