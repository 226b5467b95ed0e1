! SPDX-License-Identifier: BSD-3-Clause
! stop_f.f90 -- a failing call without stat stops the program with the
! message, as allocate does (run by stop.sh, which expects the failure).
!   stop_f shape   q with a feature too few (found by the module)
!   stop_f denom   a zero normalizer (found by the C library)
!   stop_f ok      the same calls, valid: runs to the end
program stop_f
  use, intrinsic :: iso_fortran_env, only: real64
  use linattn
  implicit none
  type(linattn_plan) :: plan
  type(linattn_opts) :: opts
  real(real64) :: q(2, 2), k(2, 2), v(1, 2), out(1, 2)
  character(16) :: what
  call get_command_argument(1, what)
  k = reshape([1, 0, 0, 1], [2, 2])
  v = reshape([1, 2], [1, 2])
  q = reshape([1, 1, 1, 2], [2, 2])
  if (what == 'denom') q(:, 2) = [1, -1]
  call linattn_plan_create(plan, LINATTN_MAP_IDENTITY, 2, 1, opts)
  write (*, '(a)') 'before the call'
  if (what == 'shape') then
    call linattn_attention(plan, q(1:1, :), k, v, out)
  else
    call linattn_attention(plan, q, k, v, out)
  end if
  write (*, '(a)') 'after the call'
  call linattn_plan_destroy(plan)
end program stop_f
