! SPDX-License-Identifier: BSD-3-Clause
! app_mpi.f90 -- a Fortran MPI program outside the tree, built against an
! installed module linattn_mpi (tests/consumers.sh): app_mpi.c's worked
! example, the four keys dealt round-robin over the ranks (arrays
! (feature, token)); every rank's query (1, 0) must give 4.5.  Exits 0
! only when it does.
program app_mpi
  use mpi_f08
  use linattn
  use linattn_mpi
  implicit none
  real(8), parameter :: keys(2, 4) = reshape([2d0, 1d0, -1d0, 2d0, 1d0, &
      -1d0, 0d0, 3d0], [2, 4]), vals(4) = [3d0, -2d0, 1d0, 4d0]
  real(8) :: k(2, 4), v(1, 4), q(2, 1), out(1, 1)
  type(linattn_plan) :: plan
  type(linattn_opts) :: opts
  integer :: level, rank, nranks, j, nk, st
  call MPI_Init_thread(LINATTN_MPI_THREAD_LEVEL, level)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  nk = 0
  do j = rank + 1, 4, nranks
    nk = nk + 1
    k(:, nk) = keys(:, j)
    v(1, nk) = vals(j)
  end do
  q(:, 1) = [1d0, 0d0]
  opts%denom = LINATTN_DENOM_NONZERO
  call linattn_plan_create(plan, LINATTN_MAP_IDENTITY, 2, 1, opts)
  call linattn_mpi_attention(plan, MPI_COMM_WORLD, q, k(:, 1:nk), &
      v(:, 1:nk), out, stat=st)
  call linattn_plan_destroy(plan)
  if (rank == 0) print '(a, i0, a, f0.6)', 'linattn_mpi from Fortran on ', &
      nranks, ' ranks: ', out(1, 1)
  call MPI_Finalize()
  if (st /= 0 .or. abs(out(1, 1) - 4.5d0) > 1d-12) error stop 1
end program app_mpi
