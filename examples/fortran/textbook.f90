! SPDX-License-Identifier: BSD-3-Clause
! textbook.f90 -- the worked example of linear attention from Fortran
! (identity feature map, d = 2, e = 1), computed both ways:
!
!   keys (2,1), (-1,2), (1,-1), (0,3); values 3, -2, 1, 4; query (1,0).
!
! Rescanning every key: scores 2, -1, 1, 0, weighted sum 9, normalizer 2,
! output 4.5.  The state: s = (9,10), z = (2,5), q.s = 9, q.z = 2,
! output 4.5.  It prints what examples/worked_example.c prints, line for
! line (tests/fortran/textbook.sh compares them).
!
! Usage: textbook [q1 q2]    (another query; both ways move together)
program textbook
  use, intrinsic :: iso_fortran_env, only: real64, error_unit
  use linattn
  implicit none
  real(real64) :: k(2, 4), v(1, 4), q(2, 1), out(1, 1), s(2, 1), z(2)
  real(real64) :: scores(4)
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
      // 'query (' // g(q(1, 1)) // ',' // g(q(2, 1)) // ')'
  write (*, '(a)') ''

  ! Rescan: score every key, as quadratic attention does (the library's
  ! naive path gives the output).
  scores = matmul(q(:, 1), k)
  call linattn_naive(plan, q, k, v, out, stat=ierr)
  write (*, '(a)') 'rescan:       scores ' // g(scores(1)) // ', ' // &
      g(scores(2)) // ', ' // g(scores(3)) // ', ' // g(scores(4)) // &
      '; weighted sum ' // g(dot_product(scores, v(1, :))) // &
      '; normalizer ' // g(sum(scores)) // '; ' // outcome(ierr, out(1, 1))

  ! Factored: one pass over the keys builds the state, then the query
  ! reads it.
  call linattn_state_create(state, plan)
  call linattn_state_update(state, k, v)
  call linattn_state_get(state, s, z)
  call linattn_state_query(state, q, out, stat=ierr)
  write (*, '(a)') 'state lookup: s = (' // g(s(1, 1)) // ',' // g(s(2, 1)) &
      // '), z = (' // g(z(1)) // ',' // g(z(2)) // '); q.s = ' // &
      g(dot_product(q(:, 1), s(:, 1))) // '; q.z = ' // &
      g(dot_product(q(:, 1), z)) // '; ' // outcome(ierr, out(1, 1))

  call linattn_state_destroy(state)
  call linattn_plan_destroy(plan)

contains

  ! "output x", or why there is none (a zero normalizer is LINATTN_EDENOM).
  function outcome(ierr, x) result(str)
    integer, intent(in) :: ierr
    real(real64), intent(in) :: x
    character(:), allocatable :: str
    if (ierr == LINATTN_EDENOM) then
      str = 'output undefined (normalizer is zero)'
    else if (ierr /= 0) then
      str = 'failed: ' // linattn_strerror(ierr)
    else
      str = 'output ' // g(x)
    end if
  end function outcome

  ! x as C's printf("%g") writes it: 6 significant digits, no trailing
  ! zeros, an exponent outside [1e-4, 1e6).
  function g(x) result(str)
    real(real64), intent(in) :: x
    character(:), allocatable :: str
    character(40) :: buf
    integer :: p, e
    write (buf, '(es14.5e3)') x
    read (buf(index(buf, 'E') + 1:), *) p
    if (p < -4 .or. p >= 6) then
      str = trim(adjustl(buf(1:index(buf, 'E') - 1)))
      call strip(str)
      e = abs(p)
      write (buf, '(a, i2.2)') merge('e-', 'e+', p < 0), e
      str = str // trim(buf)
    else
      write (buf, '(f0.' // achar(48 + 5 - p) // ')') x
      str = trim(adjustl(buf))
      call strip(str)
      if (str(1:1) == '.') str = '0' // str
      if (str(1:min(2, len(str))) == '-.') str = '-0' // str(2:)
    end if
  end function g

  ! Trailing zeros of a decimal fraction, and a trailing point, removed.
  subroutine strip(str)
    character(:), allocatable, intent(inout) :: str
    if (index(str, '.') == 0) return
    do while (str(len(str):len(str)) == '0')
      str = str(1:len(str) - 1)
    end do
    if (str(len(str):len(str)) == '.') str = str(1:len(str) - 1)
  end subroutine strip
end program textbook
