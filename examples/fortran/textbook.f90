! SPDX-License-Identifier: BSD-3-Clause
! textbook.f90 -- the worked example of linear attention from Fortran
! (identity feature map, d = 2, e = 1), computed both ways:
!
!   keys (2,1), (-1,2), (1,-1), (0,3); values 3, -2, 1, 4; query (1,0).
!
! Rescanning every key: scores 2, -1, 1, 0, weighted sum 9, normalizer 2,
! output 4.5.  The state: s = (9,10), z = (2,5), q.s = 9, q.z = 2,
! output 4.5.
!
! Usage: textbook [q1 q2]    (another query; both ways move together)
program textbook
  use, intrinsic :: iso_fortran_env, only: real64, error_unit
  use linattn
  implicit none
  real(real64) :: k(2, 4), v(1, 4), q(2, 1), out(1, 1), s(2, 1), z(2)
  real(real64) :: scores(4), wsum, norm
  type(linattn_plan) :: plan
  type(linattn_state) :: state
  type(linattn_opts) :: opts
  character(64) :: arg
  integer :: i, ierr

  ! Arrays are indexed (feature, token): k(:, j) is key j.
  k = reshape([2, 1, -1, 2, 1, -1, 0, 3], [2, 4])
  v = reshape([3, -2, 1, 4], [1, 4])
  q(:, 1) = [1, 0]
  if (command_argument_count() == 2) then
    do i = 1, 2
      call get_command_argument(i, arg)
      read (arg, *, iostat=ierr) q(i, 1)
      if (ierr /= 0) then
        write (error_unit, '(a)') 'textbook: the query must be two numbers'
        stop 2
      end if
    end do
  else if (command_argument_count() /= 0) then
    write (error_unit, '(a)') 'usage: textbook [q1 q2]'
    stop 2
  end if

  ! The identity kernel is signed: accept any non-zero normalizer.
  opts%denom = LINATTN_DENOM_NONZERO
  call linattn_plan_create(plan, LINATTN_MAP_IDENTITY, 2, 1, opts)

  write (*, '(a)') 'keys (2,1), (-1,2), (1,-1), (0,3); values 3, -2, 1, 4; ' &
      // 'query (' // num(q(1, 1)) // ',' // num(q(2, 1)) // ')'
  write (*, '(a)') ''

  ! Rescan: score every key, as quadratic attention does.
  scores = matmul(q(:, 1), k)
  wsum = dot_product(scores, v(1, :))
  norm = sum(scores)
  write (*, '(a)') 'rescan: scores ' // num(scores(1)) // ', ' // &
      num(scores(2)) // ', ' // num(scores(3)) // ', ' // num(scores(4)) // &
      '; weighted sum ' // num(wsum) // '; normalizer ' // num(norm) // &
      '; output ' // num(wsum / norm)

  ! Factored: one pass over the keys builds the state, then the query
  ! reads it.
  call linattn_state_create(state, plan)
  call linattn_state_update(state, k, v)
  call linattn_state_get(state, s, z)
  call linattn_state_query(state, q, out)
  write (*, '(a)') 'state:  s = (' // num(s(1, 1)) // ',' // num(s(2, 1)) // &
      '), z = (' // num(z(1)) // ',' // num(z(2)) // '); q.s = ' // &
      num(dot_product(q(:, 1), s(:, 1))) // '; q.z = ' // &
      num(dot_product(q(:, 1), z)) // '; output ' // num(out(1, 1))

  call linattn_state_destroy(state)
  call linattn_plan_destroy(plan)

contains

  ! x with at most 6 decimals and no trailing zeros, as C's %g would.
  function num(x) result(str)
    real(real64), intent(in) :: x
    character(:), allocatable :: str
    character(32) :: buf
    write (buf, '(f0.6)') x
    str = trim(buf)
    do while (str(len(str):len(str)) == '0')
      str = str(1:len(str) - 1)
    end do
    if (str(len(str):len(str)) == '.') str = str(1:len(str) - 1)
    if (str(1:1) == '.') str = '0' // str
    if (str(1:min(2, len(str))) == '-.') str = '-0' // str(2:)
    if (str == '-0' .or. len(str) == 0) str = '0'
  end function num
end program textbook
