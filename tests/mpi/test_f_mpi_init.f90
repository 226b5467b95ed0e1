! SPDX-License-Identifier: BSD-3-Clause
! test_f_mpi_init.f90 -- module linattn_mpi in a program that starts MPI
! as most Fortran codes do, with call MPI_Init(ierr) (MPI_THREAD_SINGLE
! with Open MPI): before MPI_Init a call returns stat LINATTN_EMPIUSE with
! a message that says MPI is not initialized and names the call to make;
! after it the distributed calls (non-causal and causal, elu+1 and
! FAVOR+) equal module linattn's serial calls on the whole sequence to
! 1e-12 relative, rank 0 without tokens and the rest in uneven blocks.
! Prints Check's closing line.
program test_f_mpi_init
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use mpi_f08
  use linattn
  use linattn_mpi
  implicit none
  integer, parameter :: n = 41, d = 3, e = 2
  integer :: rank, nranks, ierr, st, tests, nfail, failures, provided
  integer(int64) :: off, cnt
  character(400) :: msg
  type(linattn_plan) :: plan
  real(real64) :: x(d, 1), y(e, 1), o(e, 1)

  tests = 0
  nfail = 0
  failures = 0
  ! before MPI_Init: refused, explained
  call linattn_plan_create(plan, LINATTN_MAP_ELU1, d, e)
  x = 1
  y = 1
  msg = ''
  call linattn_mpi_attention(plan, MPI_COMM_WORLD, x, x, y, o, stat=st, &
      errmsg=msg)
  call linattn_plan_destroy(plan)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  call MPI_Query_thread(provided)
  if (rank == 0) write (*, '(a, i0, a, i0, a)') 'MPI_Init provided level ', &
      provided, ' (MPI_THREAD_SINGLE = ', MPI_THREAD_SINGLE, ')'
  call check(st == LINATTN_EMPIUSE .and. &
      index(msg, 'not initialized') > 0 .and. index(msg, 'MPI_Init') > 0, &
      'before MPI_Init: ' // trim(msg))
  call agree('before MPI_Init: LINATTN_EMPIUSE, explained')
  call block(int(n, int64), off, cnt)
  call t_equal()
  call agree('after MPI_Init: distributed equals serial')

  if (rank == 0) then
    write (*, '(a, i0, a, i0, a, i0, a)') 'fortran mpi init, np ', nranks, &
        ': ', tests - nfail, ' passed, ', nfail, ' failed'
    write (*, '(i0, a, i0, a, i0, a)') merge(100 * (tests - nfail) / tests, &
        100, tests > 0), '%: Checks: ', tests, ', Failures: ', nfail, &
        ', Errors: 0'
  end if
  call MPI_Finalize(ierr)
  if (nfail > 0) error stop 1

contains

  include 'fmpitest.inc'

  subroutine t_equal()
    real(real64) :: q(d, n), k(d, n), v(e, n), ref(e, n), out(e, n)
    type(linattn_plan) :: p
    type(linattn_opts) :: opts
    integer :: map, causal
    integer(int64) :: a, b
    a = off + 1
    b = off + cnt
    call fill(q, 1, 0.5d0)
    call fill(k, 2, 0.5d0)
    call fill(v, 3, 1d0)
    do map = 1, 2
      opts%seed = 17
      opts%chunk = 4
      opts%block = 8
      call linattn_plan_create(p, merge(LINATTN_MAP_ELU1, LINATTN_MAP_FAVOR, &
          map == 1), d, e, opts)
      do causal = 0, 1
        out = -7
        if (causal == 1) then
          call linattn_causal(p, q, k, v, ref)
          call linattn_mpi_causal(p, MPI_COMM_WORLD, q(:, a:b), k(:, a:b), &
              v(:, a:b), out(:, a:b), stat=st, errmsg=msg)
        else
          call linattn_attention(p, q, k, v, ref)
          call linattn_mpi_attention(p, MPI_COMM_WORLD, q(:, a:b), &
              k(:, a:b), v(:, a:b), out(:, a:b), stat=st, errmsg=msg)
        end if
        call check(st == 0, 'status: ' // trim(msg))
        call check(relerr(out(:, a:b), ref(:, a:b)) < 1d-12, &
            'distributed differs from serial')
        call check(all(out(:, 1:a - 1) == -7) .and. all(out(:, b + 1:) == -7), &
            'another rank''s tokens written')
      end do
      call linattn_plan_destroy(p)
    end do
  end subroutine t_equal
end program test_f_mpi_init
