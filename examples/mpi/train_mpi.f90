! SPDX-License-Identifier: BSD-3-Clause
! train_mpi.f90 -- the Fortran twin of train_mpi.c: a causal linear-
! attention layer whose tokens are split across MPI ranks, its trained map
! phi(x) = elu(W x + b) + 1 fitted by gradient descent with the
! distributed backward.  Each rank holds its block of the tokens, in rank
! order; per step:
!
!   call linattn_mpi_causal_ex(plan, MPI_COMM_WORLD, q, k, v, out, den=den)
!   g = out - target                   ! loss: MPI_Allreduce of the sums
!   call linattn_mpi_causal_backward(plan, MPI_COMM_WORLD, q, k, v, out, &
!        den, g, dq, dk, dv, dw=dw, db=db)   ! dw, db: every rank's tokens
!   w = w - lr dw;  b = b - lr db     (a new plan: plans are immutable)
!
! The same data and steps as the C program: the same losses to rounding,
! at any number of ranks (tests/mpi/train.sh).  Usage: mpirun -np P
! ./train_mpi_f [steps]
program train_mpi
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use mpi_f08
  use linattn
  use linattn_mpi
  implicit none
  integer, parameter :: n = 48, d = 4, e = 3, m = 6
  real(real64), parameter :: lr = 4
  real(real64), allocatable :: q(:, :), k(:, :), v(:, :), target(:, :)
  real(real64), allocatable :: out(:, :), den(:), g(:, :), dq(:, :)
  real(real64), allocatable :: dk(:, :), dv(:, :)
  real(real64) :: wt(m, d), bt(m), w(m, d), b(m), dw(m, d), db(m)
  real(real64) :: mine, loss, first
  type(linattn_plan) :: plan
  integer :: provided, rank, nranks, lo, nl, step, steps, r, c
  character(32) :: arg

  call MPI_Init_thread(LINATTN_MPI_THREAD_LEVEL, provided)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  steps = 400
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) steps
  end if
  ! this rank's block of the n tokens
  lo = n / nranks * rank + min(rank, mod(n, nranks))
  nl = n / nranks + merge(1, 0, rank < mod(n, nranks))
  allocate(q(d, nl), k(d, nl), v(e, nl), target(e, nl), out(e, nl), &
      den(nl), g(e, nl), dq(d, nl), dk(d, nl), dv(e, nl))
  call tokens(q, 1, 1d0)
  call tokens(k, 2, 1d0)
  call tokens(v, 3, 1d0)
  do c = 1, d
    do r = 1, m
      wt(r, c) = 1.5d0 * fixed(r, c, 4)
      w(r, c) = 0.1d0 * fixed(r, c, 5)
    end do
  end do
  bt = 0.5d0 * [(sin(3d0 * r), r = 1, m)]
  b = 0
  call linattn_plan_create_custom(plan, LINATTN_ACT_ELU1, wt, bt, e)
  call linattn_mpi_causal_ex(plan, MPI_COMM_WORLD, q, k, v, target, den=den)
  call linattn_plan_destroy(plan)
  first = -1
  do step = 0, steps
    call linattn_plan_create_custom(plan, LINATTN_ACT_ELU1, w, b, e)
    call linattn_mpi_causal_ex(plan, MPI_COMM_WORLD, q, k, v, out, den=den)
    g = out - target
    mine = 0.5d0 * sum(g**2)
    call MPI_Allreduce(mine, loss, 1, MPI_DOUBLE_PRECISION, MPI_SUM, &
        MPI_COMM_WORLD)
    if (first < 0) first = loss
    if (rank == 0 .and. (mod(step, 50) == 0 .or. step == steps)) &
        print '(a, i4, a, es19.12)', 'step ', step, '  loss ', loss
    call linattn_mpi_causal_backward(plan, MPI_COMM_WORLD, q, k, v, out, &
        den, g, dq, dk, dv, dw=dw, db=db)
    call linattn_plan_destroy(plan)
    w = w - lr * dw
    b = b - lr * db
  end do
  if (rank == 0) print '(a, es10.3, a, es10.3, a, i0, a)', 'loss ', first, &
      ' -> ', loss, ' on ', nranks, ' ranks'
  ! (a main program's allocatables live to its end: freed here, so that
  ! leak checkers see none)
  deallocate(q, k, v, target, out, den, g, dq, dk, dv)
  call MPI_Finalize()
  if (.not. loss < 0.01d0 * first) error stop 1

contains

  ! Entry (i, j) of a fixed matrix, as train_mpi.c's fixed().
  real(real64) function fixed(i, j, seed)
    integer, intent(in) :: i, j, seed
    fixed = sin(12.9898d0 * (i + 7 * j) + 78.233d0 * seed)
  end function fixed

  ! This rank's tokens of a (feature, token) matrix.
  subroutine tokens(x, seed, scale)
    real(real64), intent(out) :: x(:, :)
    integer, intent(in) :: seed
    real(real64), intent(in) :: scale
    integer :: t, i
    do t = 1, size(x, 2)
      do i = 1, size(x, 1)
        x(i, t) = scale * fixed(i, lo + t, seed)
      end do
    end do
  end subroutine tokens
end program train_mpi
