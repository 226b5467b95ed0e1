! SPDX-License-Identifier: BSD-3-Clause
! linattn_mpi.f90 -- module linattn_mpi, the Fortran interface of
! liblinattn_mpi (sequence-parallel linear attention across MPI ranks).
!
!   use mpi_f08
!   use linattn
!   use linattn_mpi
!   call linattn_mpi_causal(plan, MPI_COMM_WORLD, q, k, v, out)
!
! The calls of linattn_mpi.h with the communicator after the plan, as
! type(MPI_Comm) (mpi_f08) or as an integer handle (module mpi, mpif.h;
! MPI_Comm_f2c converts it in C); arrays, precision, stat and errmsg as
! in module linattn.  Collective: every rank calls, every rank gets the
! same stat (also for refusals this module makes itself).  doc/mpi.md.
module linattn_mpi
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: real32, real64
  use mpi_f08, only: MPI_Comm, LINATTN_MPI_THREAD_LEVEL => MPI_THREAD_FUNNELED
  use linattn_base
  use linattn_mpi_base
  use linattn_mpi_c_any
  use linattn_mpi_d, only: linattn_mpi_attention, linattn_mpi_causal, &
      linattn_mpi_batched_attention, linattn_mpi_batched_causal, &
      linattn_mpi_attention_ex, linattn_mpi_causal_ex, &
      linattn_mpi_attention_backward, linattn_mpi_causal_backward, &
      linattn_mpi_batched_attention_backward, &
      linattn_mpi_batched_causal_backward, &
      linattn_mpi_batched_attention_forward, linattn_mpi_batched_causal_forward
  use linattn_mpi_s, only: linattn_mpi_attention, linattn_mpi_causal, &
      linattn_mpi_batched_attention, linattn_mpi_batched_causal, &
      linattn_mpi_attention_ex, linattn_mpi_causal_ex, &
      linattn_mpi_attention_backward, linattn_mpi_causal_backward, &
      linattn_mpi_batched_attention_backward, &
      linattn_mpi_batched_causal_backward, &
      linattn_mpi_batched_attention_forward, linattn_mpi_batched_causal_forward
  implicit none
  private

  ! The MPI_Init_thread level the library is designed for (plain
  ! MPI_Init is accepted too: linattn_mpi.h, Threads).
  public :: LINATTN_MPI_THREAD_LEVEL
  public :: linattn_mpi_attention, linattn_mpi_causal, &
      linattn_mpi_batched_attention, linattn_mpi_batched_causal, &
      linattn_mpi_attention_ex, linattn_mpi_causal_ex, &
      linattn_mpi_attention_backward, linattn_mpi_causal_backward, &
      linattn_mpi_batched_attention_backward, &
      linattn_mpi_batched_causal_backward, &
      linattn_mpi_batched_attention_forward, linattn_mpi_batched_causal_forward, &
      linattn_mpi_state_allreduce, linattn_mpi_state_exscan, &
      linattn_mpi_state_save_file, linattn_mpi_state_load_file

  interface linattn_mpi_state_allreduce
    module procedure state_allreduce, state_allreduce_f08
  end interface
  interface linattn_mpi_state_exscan
    module procedure state_exscan, state_exscan_f08
  end interface
  interface linattn_mpi_state_save_file
    module procedure state_save_file, state_save_file_f08
  end interface
  interface linattn_mpi_state_load_file
    module procedure state_load_file, state_load_file_f08
  end interface

contains

  ! states(i) = its sum over every rank (one reduction for all of them).
  subroutine state_allreduce(states, comm, stat, errmsg)
    type(linattn_state), intent(inout) :: states(:)
    integer, intent(in) :: comm
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call run_states('linattn_mpi_state_allreduce', 'state_allreduce', &
        states, comm, stat, errmsg)
  end subroutine state_allreduce

  subroutine state_allreduce_f08(states, comm, stat, errmsg)
    type(linattn_state), intent(inout) :: states(:)
    type(MPI_Comm), intent(in) :: comm
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call run_states('linattn_mpi_state_allreduce', 'state_allreduce', &
        states, comm%MPI_VAL, stat, errmsg)
  end subroutine state_allreduce_f08

  ! states(i) on rank r = its sum over ranks 0 .. r-1 (rank 0: empty).
  subroutine state_exscan(states, comm, stat, errmsg)
    type(linattn_state), intent(inout) :: states(:)
    integer, intent(in) :: comm
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call run_states('linattn_mpi_state_exscan', 'state_exscan', states, comm, &
        stat, errmsg)
  end subroutine state_exscan

  subroutine state_exscan_f08(states, comm, stat, errmsg)
    type(linattn_state), intent(inout) :: states(:)
    type(MPI_Comm), intent(in) :: comm
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call run_states('linattn_mpi_state_exscan', 'state_exscan', states, &
        comm%MPI_VAL, stat, errmsg)
  end subroutine state_exscan_f08

  subroutine run_states(proc, cbase, states, comm, stat, errmsg)
    character(*), intent(in) :: proc, cbase
    type(linattn_state), intent(inout) :: states(:)
    integer, intent(in) :: comm
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    type(c_ptr), allocatable, target :: ptrs(:)
    type(c_ptr) :: p
    integer :: i, kind
    integer(c_int64_t) :: n
    kind = real64
    if (size(states) > 0) kind = states(1)%kind
    c = mpi_call_begin(proc, cbase, kind)
    n = size(states, kind=c_int64_t)
    allocate (ptrs(max(1_c_int64_t, n)))
    ptrs = c_null_ptr
    do i = 1, size(states)
      call check_state(c, states(i), 1, 'states(' // itoa(int(i, c_int64_t)) &
          // ')', 'states(1)')
      ptrs(i) = states(i)%ptr
    end do
    p = c_null_ptr
    if (n > 0) p = c_loc(ptrs(1))
    if (c%status /= 0) then
      call refuse(c, comm, 3)
    else if (cbase == 'state_allreduce') then
      call call_c(c, cx_state_allreduce(kind, p, n, int(comm, c_int)))
    else
      call call_c(c, cx_state_exscan(kind, p, n, int(comm, c_int)))
    end if
    call mpi_call_end(c, stat, errmsg)
  end subroutine run_states

  ! Collective checkpoint of a state every rank holds (rank 0 writes one
  ! file, atomically); path is read on rank 0 (trailing blanks dropped).
  subroutine state_save_file(state, path, comm, stat, errmsg)
    type(linattn_state), intent(in) :: state
    character(*), intent(in) :: path
    integer, intent(in) :: comm
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call run_file('linattn_mpi_state_save_file', 'state_save_file', state, &
        path, comm, stat, errmsg)
  end subroutine state_save_file

  subroutine state_save_file_f08(state, path, comm, stat, errmsg)
    type(linattn_state), intent(in) :: state
    character(*), intent(in) :: path
    type(MPI_Comm), intent(in) :: comm
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call run_file('linattn_mpi_state_save_file', 'state_save_file', state, &
        path, comm%MPI_VAL, stat, errmsg)
  end subroutine state_save_file_f08

  ! Collective restore: read once on rank 0, broadcast, verified
  ! everywhere; refused with the same stat on every rank.
  subroutine state_load_file(state, path, comm, stat, errmsg)
    type(linattn_state), intent(inout) :: state
    character(*), intent(in) :: path
    integer, intent(in) :: comm
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call run_file('linattn_mpi_state_load_file', 'state_load_file', state, &
        path, comm, stat, errmsg)
  end subroutine state_load_file

  subroutine state_load_file_f08(state, path, comm, stat, errmsg)
    type(linattn_state), intent(inout) :: state
    character(*), intent(in) :: path
    type(MPI_Comm), intent(in) :: comm
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    call run_file('linattn_mpi_state_load_file', 'state_load_file', state, &
        path, comm%MPI_VAL, stat, errmsg)
  end subroutine state_load_file_f08

  subroutine run_file(proc, cbase, state, path, comm, stat, errmsg)
    character(*), intent(in) :: proc, cbase
    type(linattn_state), intent(in) :: state
    character(*), intent(in) :: path
    integer, intent(in) :: comm
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    character(kind=c_char), allocatable, target :: cpath(:)
    c = mpi_call_begin(proc, cbase, state%kind)
    call check_state(c, state, 1, 'state')
    cpath = c_string(path)
    if (c%status /= 0) then
      call refuse(c, comm, 3)
    else if (cbase == 'state_save_file') then
      call call_c(c, cx_state_save_file(state%kind, state%ptr, c_loc(cpath), &
          int(comm, c_int)), ' (' // trim(path) // ')')
    else
      call call_c(c, cx_state_load_file(state%kind, state%ptr, c_loc(cpath), &
          int(comm, c_int)), ' (' // trim(path) // ')')
    end if
    call mpi_call_end(c, stat, errmsg)
  end subroutine run_file
end module linattn_mpi
