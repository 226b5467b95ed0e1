! SPDX-License-Identifier: BSD-3-Clause
! ftest.f90 -- the Fortran tests' checks: counters, comparisons to a
! reference (relative to the reference's largest entry), bit-for-bit
! equality, and the closing line that fails the program.
module ftest
  use, intrinsic :: iso_fortran_env, only: int32, int64, real32, real64, &
      error_unit
  implicit none
  private
  public :: check, close_to, same_bits, finish, checks_failed, fill

  integer, save :: nchecks = 0, nfailed = 0

  ! close_to(x, ref, tol, what): max |x - ref| <= tol max(1, max |ref|)
  interface close_to
    module procedure close_d0, close_s0, close_d1, close_s1, close_d2, &
        close_s2
  end interface close_to

  ! same_bits(a, b): identical bits (NaN payloads and -0 included)
  interface same_bits
    module procedure same_d1, same_s1, same_d2, same_s2, same_d4, same_s4
  end interface same_bits

  ! fill(a, seed, lo, hi): deterministic values in [lo, hi]
  interface fill
    module procedure fill_d2, fill_s2
  end interface fill

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    nchecks = nchecks + 1
    if (.not. ok) then
      nfailed = nfailed + 1
      write (error_unit, '(a)') 'FAILED: ' // what
    end if
  end subroutine check

  function checks_failed() result(n)
    integer :: n
    n = nfailed
  end function checks_failed

  subroutine finish(name)
    character(*), intent(in) :: name
    write (*, '(a, ": ", i0, " checks, ", i0, " failed")') name, nchecks, &
        nfailed
    if (nfailed > 0) error stop 1
  end subroutine finish

  subroutine report(err, scale, tol, what)
    real(real64), intent(in) :: err, scale, tol
    character(*), intent(in) :: what
    logical :: ok
    ok = err <= tol * max(1.0_real64, scale)
    call check(ok, what)
    if (.not. ok) write (error_unit, '(a, es10.3, a, es10.3)') &
        '  max difference ', err, ', reference scale ', scale
  end subroutine report

  subroutine close_d0(x, ref, tol, what)
    real(real64), intent(in) :: x, ref
    real(real64), intent(in) :: tol
    character(*), intent(in) :: what
    call report(abs(x - ref), abs(ref), tol, what)
  end subroutine close_d0

  subroutine close_s0(x, ref, tol, what)
    real(real32), intent(in) :: x
    real(real64), intent(in) :: ref, tol
    character(*), intent(in) :: what
    call report(abs(real(x, real64) - ref), abs(ref), tol, what)
  end subroutine close_s0

  subroutine close_d1(x, ref, tol, what)
    real(real64), intent(in) :: x(:), ref(:)
    real(real64), intent(in) :: tol
    character(*), intent(in) :: what
    if (size(x) /= size(ref)) then
      call check(.false., what // ' (sizes differ)')
      return
    end if
    call report(maxval(abs(x - ref), mask=.true.), maxval(abs(ref), &
        mask=.true.), tol, what)
  end subroutine close_d1

  subroutine close_s1(x, ref, tol, what)
    real(real32), intent(in) :: x(:)
    real(real64), intent(in) :: ref(:), tol
    character(*), intent(in) :: what
    if (size(x) /= size(ref)) then
      call check(.false., what // ' (sizes differ)')
      return
    end if
    call report(maxval(abs(real(x, real64) - ref), mask=.true.), &
        maxval(abs(ref), mask=.true.), tol, what)
  end subroutine close_s1

  subroutine close_d2(x, ref, tol, what)
    real(real64), intent(in) :: x(:, :), ref(:, :)
    real(real64), intent(in) :: tol
    character(*), intent(in) :: what
    if (any(shape(x) /= shape(ref))) then
      call check(.false., what // ' (shapes differ)')
      return
    end if
    call report(maxval(abs(x - ref), mask=.true.), maxval(abs(ref), &
        mask=.true.), tol, what)
  end subroutine close_d2

  subroutine close_s2(x, ref, tol, what)
    real(real32), intent(in) :: x(:, :)
    real(real64), intent(in) :: ref(:, :), tol
    character(*), intent(in) :: what
    if (any(shape(x) /= shape(ref))) then
      call check(.false., what // ' (shapes differ)')
      return
    end if
    call report(maxval(abs(real(x, real64) - ref), mask=.true.), &
        maxval(abs(ref), mask=.true.), tol, what)
  end subroutine close_s2

  logical function same_d1(a, b) result(same)
    real(real64), intent(in) :: a(:), b(:)
    same = size(a) == size(b)
    if (same) same = all(transfer(a, 0_int64, size(a)) == &
        transfer(b, 0_int64, size(b)))
  end function same_d1

  logical function same_s1(a, b) result(same)
    real(real32), intent(in) :: a(:), b(:)
    same = size(a) == size(b)
    if (same) same = all(transfer(a, 0_int32, size(a)) == &
        transfer(b, 0_int32, size(b)))
  end function same_s1

  ! Higher ranks: the same shape, then the elements in order.
  logical function same_d2(a, b) result(same)
    real(real64), intent(in) :: a(:, :), b(:, :)
    same = all(shape(a) == shape(b))
    if (same) same = same_d1(reshape(a, [size(a)]), reshape(b, [size(b)]))
  end function same_d2

  logical function same_s2(a, b) result(same)
    real(real32), intent(in) :: a(:, :), b(:, :)
    same = all(shape(a) == shape(b))
    if (same) same = same_s1(reshape(a, [size(a)]), reshape(b, [size(b)]))
  end function same_s2

  logical function same_d4(a, b) result(same)
    real(real64), intent(in) :: a(:, :, :, :), b(:, :, :, :)
    same = all(shape(a) == shape(b))
    if (same) same = same_d1(reshape(a, [size(a)]), reshape(b, [size(b)]))
  end function same_d4

  logical function same_s4(a, b) result(same)
    real(real32), intent(in) :: a(:, :, :, :), b(:, :, :, :)
    same = all(shape(a) == shape(b))
    if (same) same = same_s1(reshape(a, [size(a)]), reshape(b, [size(b)]))
  end function same_s4

  ! Values of a smooth function of the indices: no two alike, the same on
  ! every run; in [lo, hi].
  subroutine fill_d2(a, seed, lo, hi)
    real(real64), intent(inout) :: a(:, :)
    integer, intent(in) :: seed
    real(real64), intent(in) :: lo, hi
    integer :: i, j
    do j = 1, size(a, 2)
      do i = 1, size(a, 1)
        a(i, j) = lo + (hi - lo) * 0.5_real64 * (1 + sin(1.37_real64 * i + &
            0.71_real64 * j + 2.3_real64 * seed + 0.11_real64 * i * j))
      end do
    end do
  end subroutine fill_d2

  subroutine fill_s2(a, seed, lo, hi)
    real(real32), intent(inout) :: a(:, :)
    integer, intent(in) :: seed
    real(real64), intent(in) :: lo, hi
    real(real64) :: t(size(a, 1), size(a, 2))
    call fill_d2(t, seed, lo, hi)
    a = real(t, real32)
  end subroutine fill_s2
end module ftest
