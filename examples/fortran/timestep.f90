! SPDX-License-Identifier: BSD-3-Clause
! timestep.f90 -- a time-stepping code with an attention memory that
! forgets, which checkpoints itself every k steps and, killed and started
! again, continues bit for bit.
!
! A field u on a periodic 1-D grid is advected and diffused; every grid
! point of every step is a token streamed into a linattn state (key: the
! point's value and slope, value: u), so the state remembers the whole
! history at a fixed size.  The memory forgets: a gate of ln(forget) on
! each step's first token decays everything before it by that factor
! (S = forget S + this step's keys), the step's own points age together
! (gates of 0), so recent steps weigh more and the state stays bounded
! however long the run.  Each step queries the state with the current
! tokens and relaxes u towards what the history says (a memory term, as
! closure models learned from data have).
!
! Every k steps the run saves (step, u, state) to DIR/run.ck: the state
! as bytes (linattn_state_save) together with the field in one file,
! written beside it and renamed over it, so a run killed at any moment
! leaves the previous checkpoint or the new one, never a field of one step
! with the state of another.  (A code whose only state is the linattn one
! can call linattn_state_save_file, which does the same and also syncs
! the file to the disk.)  At start the run resumes from DIR/run.ck if
! there is one.  Each step prints the bits of two numbers of the field,
! so that runs can be compared exactly.
!
! Usage: timestep DIR NSTEPS [K [DELAY_MS]]   (K = 10; DELAY_MS slows each
!        step down so that a test can kill the run in the middle)
program timestep
  use, intrinsic :: iso_c_binding, only: c_char, c_int, c_null_char
  use, intrinsic :: iso_fortran_env, only: int8, int64, real64, &
      output_unit, error_unit
  use linattn
  implicit none
  integer, parameter :: n = 64, d = 2, e = 1
  real(real64), parameter :: dt = 0.005_real64, speed = 1, nu = 1e-3_real64, &
      relax = 0.5_real64, dx = 1 / real(n, real64), forget = 0.9_real64
  interface
    ! C's rename(): atomic within a file system
    function c_rename(from, to) bind(C, name='rename') result(status)
      import :: c_char, c_int
      character(kind=c_char), intent(in) :: from(*), to(*)
      integer(c_int) :: status
    end function c_rename
  end interface
  type(linattn_plan) :: plan
  type(linattn_state) :: state
  real(real64) :: u(n), unew(n), k(d, n), v(e, n), mem(e, n), gates(n)
  character(1024) :: dir, arg
  integer :: nsteps, every, delay_ms, step, first, p, left, right

  if (command_argument_count() < 2) then
    write (error_unit, '(a)') 'usage: timestep DIR NSTEPS [K [DELAY_MS]]'
    stop 2
  end if
  call get_command_argument(1, dir)
  call get_command_argument(2, arg)
  read (arg, *) nsteps
  every = 10
  delay_ms = 0
  if (command_argument_count() >= 3) then
    call get_command_argument(3, arg)
    read (arg, *) every
  end if
  if (command_argument_count() >= 4) then
    call get_command_argument(4, arg)
    read (arg, *) delay_ms
  end if

  call linattn_plan_create(plan, LINATTN_MAP_ELU1, d, e)
  call linattn_state_create(state, plan)
  do p = 1, n
    u(p) = exp(-100 * ((p - 1) * dx - 0.3_real64)**2)
  end do
  first = 1
  if (resume(step)) then
    write (*, '(a, i0)') 'resumed at step ', step
    first = step + 1
  end if

  do step = first, nsteps
    ! this step's tokens: (value, slope) keys, the value as value
    do p = 1, n
      left = modulo(p - 2, n) + 1
      right = modulo(p, n) + 1
      k(:, p) = [u(p), (u(right) - u(left)) / 2]
      v(1, p) = u(p)
    end do
    ! the history decays once per step, before this step's points enter
    gates = 0
    gates(1) = log(forget)
    call linattn_state_update(state, k, v, gates=gates)
    call linattn_state_query(state, k, mem)
    ! advection, diffusion, and relaxation towards the memory
    do p = 1, n
      left = modulo(p - 2, n) + 1
      right = modulo(p, n) + 1
      unew(p) = u(p) + dt * (-speed * (u(right) - u(left)) / (2 * dx) &
          + nu * (u(right) - 2 * u(p) + u(left)) / dx**2 &
          + relax * (mem(1, p) - u(p)))
    end do
    u = unew
    write (*, '(a, i0, a, f8.5, a, z16.16, 1x, z16.16)') 'step ', step, &
        ': u(17) =', u(17), ', bits ', bits(u(17)), &
        bits(sum(u * [(real(p, real64), p = 1, n)]))
    flush (output_unit)
    if (modulo(step, every) == 0 .or. step == nsteps) call save(step)
    call pause_ms(delay_ms)
  end do

  call linattn_state_destroy(state)
  call linattn_plan_destroy(plan)

contains

  integer(int64) function bits(x)
    real(real64), intent(in) :: x
    bits = transfer(x, 0_int64)
  end function bits

  ! (step, u, state) to DIR/run.ck: written beside it, then renamed over.
  subroutine save(step)
    integer, intent(in) :: step
    integer(int8), allocatable :: buf(:)
    integer(int64) :: bytes
    character(:), allocatable :: path, tmp
    integer :: unit
    call linattn_state_save_size(state, bytes)
    allocate (buf(bytes))
    call linattn_state_save(state, buf)
    path = trim(dir) // '/run.ck'
    tmp = path // '.tmp'
    open (newunit=unit, file=tmp, access='stream', form='unformatted', &
        status='replace', action='write')
    write (unit) 'TSCK', int(step, int64), int(n, int64), u, bytes, buf
    close (unit)
    if (c_rename(tmp // c_null_char, path // c_null_char) /= 0) then
      write (error_unit, '(a)') 'timestep: cannot rename ' // tmp
      error stop
    end if
    write (*, '(a, i0)') 'checkpoint at step ', step
    flush (output_unit)
  end subroutine save

  ! The last checkpoint, if any: the step it ends, u and the state.
  logical function resume(step)
    integer, intent(out) :: step
    integer(int8), allocatable :: buf(:)
    integer(int64) :: s, nn, bytes
    character(4) :: magic
    integer :: unit, ios
    resume = .false.
    step = 0
    open (newunit=unit, file=trim(dir) // '/run.ck', access='stream', &
        form='unformatted', status='old', action='read', iostat=ios)
    if (ios /= 0) return
    read (unit, iostat=ios) magic, s, nn
    if (ios /= 0 .or. magic /= 'TSCK' .or. nn /= n) then
      write (error_unit, '(a)') 'timestep: run.ck is not this run''s'
      error stop
    end if
    read (unit) u, bytes
    allocate (buf(bytes))
    read (unit) buf
    close (unit)
    call linattn_state_load(state, buf)    ! verifies it (stops if bad)
    step = int(s)
    resume = .true.
  end function resume

  subroutine pause_ms(ms)
    integer, intent(in) :: ms
    integer(int64) :: t0, t, rate
    if (ms <= 0) return
    call system_clock(t0, rate)
    do
      call system_clock(t)
      if ((t - t0) * 1000 >= ms * rate) exit
    end do
  end subroutine pause_ms
end program timestep
