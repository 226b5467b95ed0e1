! SPDX-License-Identifier: BSD-3-Clause
! causal_mpi.f90 -- the Fortran twin of causal_mpi.c: causal linear
! attention over a long sequence split across MPI ranks, continued from a
! collective checkpoint, with modules linattn and linattn_mpi.
!
!   mpirun -np 4 ./causal_mpi_f [N [CHECKPOINT]]
!
! Each run processes the next N tokens (default 2**20), split evenly over
! the ranks; the checkpoint holds the state of every token before (none:
! a fresh start; a file that exists but cannot be read: stop, leaving it
! as it is).  Arrays are (feature, token): q(d, rows) is this rank's
! block, passed to C without a copy.  The checksum equals the C
! program's for the same N, to rounding.  Memory per rank: N / ranks
! tokens of q, k, v and out, 1 KiB per token.
program causal_mpi_f
  use, intrinsic :: iso_fortran_env, only: int64, real64, error_unit
  use mpi_f08
  use linattn
  use linattn_mpi
  implicit none
  integer, parameter :: d = 32, e = 32
  integer :: rank, nranks, provided, r, st
  integer(int64) :: n, rows, first, start, tokens, i
  character(512) :: arg, path
  logical :: exists
  type(linattn_opts) :: o
  type(linattn_plan) :: plan
  type(linattn_state) :: seen, prefix(1)
  real(real64), allocatable :: q(:, :), k(:, :), v(:, :), out(:, :)
  real(real64) :: t0, t1, t2, total
  character(200) :: msg
  character(24) :: sumtext

  call MPI_Init_thread(LINATTN_MPI_THREAD_LEVEL, provided)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  n = 2_int64**20
  path = 'causal_mpi.ck'
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *, iostat=st) n
    if (st /= 0) n = 0
  end if
  if (command_argument_count() >= 2) call get_command_argument(2, path)
  if (n < 1) then
    if (rank == 0) write (error_unit, '(a)') 'usage: causal_mpi_f [N [CHECKPOINT]]'
    call MPI_Finalize()
    stop 2
  end if

  ! FAVOR+ with the same seed on every rank (the library checks the plans
  ! agree); without stat, a failure stops this rank and so the job.
  o%seed = 42
  call linattn_plan_create(plan, LINATTN_MAP_FAVOR, d, e, o)
  call linattn_state_create(seen, plan)
  ! no file: a fresh start; a file: load it (any failure stops the job).
  ! (Fortran's inquire says .false. also for a file it cannot reach, such
  ! as a symbolic link to itself: POSIX lstat tells "not there".)
  if (rank == 0) exists = present_on_disk(trim(path))
  call MPI_Bcast(exists, 1, MPI_LOGICAL, 0, MPI_COMM_WORLD)
  if (exists) call linattn_mpi_state_load_file(seen, trim(path), MPI_COMM_WORLD)
  call linattn_state_tokens(seen, start)

  ! this rank's block of [start, start + n)
  rows = n / nranks
  if (rank < mod(n, int(nranks, int64))) rows = rows + 1
  first = start
  do r = 0, rank - 1
    first = first + n / nranks
    if (r < mod(n, int(nranks, int64))) first = first + 1
  end do
  allocate (q(d, rows), k(d, rows), v(e, rows), out(e, rows))
  do i = 1, rows
    call token(first + i - 1, q(:, i), k(:, i), v(:, i))
  end do

  call MPI_Barrier(MPI_COMM_WORLD)
  t0 = MPI_Wtime()
  ! the prefix (this rank's keys, exclusive scan, the checkpoint's), the
  ! rows from it absorbing this rank's keys, and the last rank's state --
  ! everything seen now -- to every rank (see causal_mpi.c)
  call linattn_state_create(prefix(1), plan)
  call linattn_state_update(prefix(1), k, v)
  call linattn_mpi_state_exscan(prefix, MPI_COMM_WORLD)
  call linattn_state_merge(prefix(1), seen)
  call linattn_state_causal(prefix(1), q, k, v, out, absorb=.true.)
  if (rank /= nranks - 1) call linattn_state_reset(prefix(1))
  call linattn_mpi_state_allreduce(prefix, MPI_COMM_WORLD%MPI_VAL)
  call linattn_state_copy(seen, prefix(1))
  call linattn_state_destroy(prefix(1))
  t1 = MPI_Wtime()
  call linattn_mpi_state_save_file(seen, trim(path), MPI_COMM_WORLD, stat=st, &
      errmsg=msg)
  if (st /= 0) then
    write (error_unit, '(a)') trim(msg)
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end if
  t2 = MPI_Wtime()

  call MPI_Reduce(sum(out), total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, &
      MPI_COMM_WORLD)
  call linattn_state_tokens(seen, tokens)
  write (sumtext, '(es20.12e2)') total
  if (rank == 0) write (*, '(a, i0, a, i0, a, i0, a, f5.3, a, f5.3, 5a, i0, a)') &
      'tokens [', start, ', ', start + n, ') on ', nranks, &
      ' rank(s): attention ', t1 - t0, ' s, checkpoint ', t2 - t1, &
      ' s; checksum ', trim(adjustl(sumtext)), '; ', trim(path), &
      ' now holds ', tokens, ' tokens'
  deallocate (q, k, v, out)
  call linattn_state_destroy(seen)
  call linattn_plan_destroy(plan)
  call MPI_Finalize()

contains

  ! Whether path names anything at all (lstat succeeds; its result, a
  ! struct stat, goes to a buffer larger than any).
  logical function present_on_disk(p)
    use, intrinsic :: iso_c_binding, only: c_char, c_int, c_null_char
    character(*), intent(in) :: p
    interface
      function lstat(name, buf) bind(C, name='lstat') result(r)
        import :: c_char, c_int
        character(kind=c_char), intent(in) :: name(*)
        character(kind=c_char), intent(out) :: buf(*)
        integer(c_int) :: r
      end function lstat
    end interface
    character(kind=c_char) :: buf(1024)
    present_on_disk = lstat(p // c_null_char, buf) == 0
  end function present_on_disk

  ! Token t of the series (t counted from 0, as in causal_mpi.c).
  subroutine token(t, qt, kt, vt)
    integer(int64), intent(in) :: t
    real(real64), intent(out) :: qt(d), kt(d), vt(e)
    integer :: j
    real(real64) :: w
    do j = 0, d - 1
      w = 1d-3 * (j + 1)
      qt(j + 1) = 0.5d0 * sin(w * real(t, real64) + j)
      kt(j + 1) = 0.5d0 * cos(w * real(t, real64) - j)
    end do
    do j = 0, e - 1
      vt(j + 1) = sin(2d-4 * real(t, real64) * (j + 1))
    end do
  end subroutine token
end program causal_mpi_f
