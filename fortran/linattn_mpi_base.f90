! SPDX-License-Identifier: BSD-3-Clause
! linattn_mpi_base.f90 -- what both precisions of module linattn_mpi share:
! a call's names for messages (the C functions linattn_mpi_[ds]_*, their
! argument names from linattn_mpi.h), and the agreement of a call refused
! before it reached C.
module linattn_mpi_base
  use, intrinsic :: iso_c_binding
  use linattn_base
  use linattn_c, only: LINATTN_EMPI, LINATTN_EMPIUSE
  use linattn_mpi_c, only: c_mpi_refuse, c_mpi_strerror, &
      mpi_argnames => c_argnames
  implicit none
  private
  public :: mpi_call_begin, mpi_call_end, refuse

contains

  function mpi_call_begin(proc, cbase, kind) result(c)
    character(*), intent(in) :: proc, cbase
    integer, intent(in) :: kind
    type(linattn_call) :: c
    c = call_begin(proc, cbase, kind)
    c%cprefix = 'linattn_mpi_'
    c%args = mpi_argnames(cbase)
  end function mpi_call_begin

  ! call_end, with a refusal for want of a usable MPI (LINATTN_EMPIUSE)
  ! explained from MPI's state: not initialized, finalized, or which
  ! thread level and thread (linattn_mpi_strerror).
  subroutine mpi_call_end(c, stat, errmsg)
    type(linattn_call), intent(inout) :: c
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (c%status == LINATTN_EMPIUSE) c%msg = c%msg // ': ' // &
        f_string(c_mpi_strerror(int(c%status, c_int)))
    call call_end(c, stat, errmsg)
  end subroutine mpi_call_end

  ! A call this module refused (c%status, its message) takes part in the
  ! agreement of the other ranks' call (collective: linattn_mpi_refuse,
  ! the communicator being C argument comm_arg); when another rank failed
  ! first, its status replaces this one's.
  subroutine refuse(c, comm, comm_arg)
    type(linattn_call), intent(inout) :: c
    integer, intent(in) :: comm, comm_arg
    type(linattn_call) :: agreed
    integer(c_int) :: st
    st = c_mpi_refuse(int(comm, c_int), int(comm_arg, c_int), &
        int(c%status, c_int))
    if (st == c%status) return
    agreed = c
    agreed%status = 0
    ! MPI not usable (or failing) here is this rank's own verdict
    if (st == LINATTN_EMPIUSE .or. st == LINATTN_EMPI) then
      call call_c(agreed, st)
    else
      call call_c(agreed, st, ' (another rank''s call failed first)')
    end if
    c = agreed
  end subroutine refuse
end module linattn_mpi_base
