! SPDX-License-Identifier: BSD-3-Clause
! test_f_nocopy.f90 -- arrays reach C without a copy.  Built with
! -Warray-temporaries -Werror=array-temporaries (no temporary at compile
! time) and -fcheck=array-temps (gfortran reports any made at run time on
! stderr, which nocopy.sh fails on).  Sections whose first dimension is
! contiguous pass as the address of their first element with the
! parent's leading dimension (linattn_view shows it); transposed views
! pass as the other layout; results equal those of contiguous copies and
! nothing around the sections is written.
program test_f_nocopy
  use, intrinsic :: iso_c_binding, only: c_loc, c_associated, c_int
  use, intrinsic :: iso_fortran_env, only: int8, int64, real32, real64
  use linattn
  use linattn_base, only: linattn_call, linattn_matrix, linattn_batch, &
      call_begin, settle
  use linattn_d, only: linattn_view
  use linattn_s, only: linattn_view
  use ftest
  implicit none
  integer, parameter :: d = 3, e = 2, n = 6, ld = 7, nmax = 12
  integer, parameter :: ax4(4) = [1, 2, 3, 4]
  real(real64), parameter :: tol = 1e-13_real64
  real(real64), target :: qb(ld, nmax), kb(ld, nmax), vb(ld, nmax), &
      ob(ld, nmax), okeep(ld, nmax), dbuf(nmax), dkeep(nmax)
  real(real64) :: q(d, n), k(d, n), v(e, n), ref(e, n), got(e, n), &
      qt(n, d), s(d, e), z(d), sref(d, e), zref(d), w(12, d), &
      wb(14, d + 2), wkeep(14, d + 2), nref(e, n), den(n)
  real(real32), target :: q4(d + 1, n + 1, 3, 2), o4(e + 1, n + 1, 3, 2)
  real(real32) :: q4c(d, n, 3, 2), o4c(e, n, 3, 2), o4keep(e + 1, n + 1, 3, 2)
  type(linattn_plan) :: plan, plan32, favor
  type(linattn_state) :: st
  type(linattn_call) :: c
  type(linattn_matrix) :: mat, mo, mn
  type(linattn_batch) :: bat
  integer(c_int) :: layout
  integer(int8), target :: buf(4000)
  integer(int64) :: written, bytes
  integer :: ierr

  call fill(q, 1, -1.0_real64, 1.0_real64)
  call fill(k, 2, -1.0_real64, 1.0_real64)
  call fill(v, 3, -1.0_real64, 1.0_real64)
  call random_fill(qb)
  call random_fill(kb)
  call random_fill(vb)
  qb(2:d + 1, 3:n + 2) = q
  kb(1:d, 1:n) = k
  vb(3:e + 2, 2:n + 1) = v
  ob = -99
  okeep = ob

  ! What C receives for a section: the parent's memory and leading
  ! dimension, in both layouts.
  c = call_begin('test', 'attention', real64)
  call linattn_view(c, 5, 'q', qb(2:d + 1, 3:n + 2), LINATTN_ROW_MAJOR, mat)
  layout = LINATTN_ROW_MAJOR
  call settle(c, layout, mat)
  call check(c%status == 0 .and. layout == LINATTN_ROW_MAJOR, &
      'section: row-major layout kept')
  call check(c_associated(mat%ptr, c_loc(qb(2, 3))) .and. .not. mat%copy, &
      'section: C gets the address of its first element')
  call check(mat%ld == ld .and. mat%rows == n .and. mat%cols == d, &
      'section: C gets the parent''s leading dimension')
  call linattn_view(c, 5, 'q', qb(2:n + 1, 1:d), LINATTN_COL_MAJOR, mat)
  layout = LINATTN_COL_MAJOR
  call settle(c, layout, mat)
  call check(c_associated(mat%ptr, c_loc(qb(2, 1))) .and. mat%ld == ld &
      .and. layout == LINATTN_COL_MAJOR, 'section: (token, feature) order')
  call linattn_view(c, 5, 'q', qb(1:d, 1:2 * n:2), LINATTN_ROW_MAJOR, mat)
  layout = LINATTN_ROW_MAJOR
  call settle(c, layout, mat)
  call check(mat%ld == 2 * ld, 'every other token: ld = 2 ld')
  call linattn_view(c, 5, 'q', transpose(qb(1:n, 1:d)), LINATTN_ROW_MAJOR, &
      mat)
  layout = LINATTN_ROW_MAJOR
  call settle(c, layout, mat)
  call check(layout == LINATTN_COL_MAJOR .and. mat%ld == ld .and. &
      c_associated(mat%ptr, c_loc(qb(1, 1))) .and. .not. mat%copy, &
      'transpose(a) alone: passed as the other layout of a''s memory')
  ! A transposed view among arrays of the other order: the input is
  ! copied (the one copy the module makes), an output would be refused.
  call linattn_view(c, 5, 'q', transpose(qb(1:n, 1:d)), LINATTN_ROW_MAJOR, &
      mat)
  call linattn_view(c, 11, 'out', ob(1:e, 1:n), LINATTN_ROW_MAJOR, mo)
  mo%output = .true.
  layout = LINATTN_ROW_MAJOR
  call settle(c, layout, mat, mo)
  call check(c%status == 0 .and. layout == LINATTN_ROW_MAJOR .and. mat%copy &
      .and. .not. mo%copy, 'transposed input next to an output: input copied')
  call linattn_view(c, 12, 'num', ob(1:n, 1:e), LINATTN_COL_MAJOR, mn)
  mn%output = .true.
  call settle(c, layout, mat, mo, mn)
  call check(c%status == -12, 'outputs of both memory orders: refused')
  c = call_begin('test', 'attention', real64)
  call linattn_view(c, 7, 'q', q4(1:d, 2:n + 1, 2:3, 1:2), ax4, bat)
  call settle(c, layout, bat%mat)
  call check(c_associated(bat%mat%ptr, c_loc(q4(1, 2, 2, 1))) .and. &
      bat%strides%head == size(q4, 1) * size(q4, 2) .and. &
      bat%strides%batch == size(q4, 1) * size(q4, 2) * size(q4, 3), &
      'batched section: address and strides of the parent')

  ! Results through sections = results of contiguous arrays.
  call linattn_plan_create(plan, LINATTN_MAP_ELU1, d, e)
  call linattn_attention(plan, q, k, v, ref)
  call linattn_attention(plan, qb(2:d + 1, 3:n + 2), kb(1:d, 1:n), &
      vb(3:e + 2, 2:n + 1), ob(2:e + 1, 4:n + 3), stat=ierr)
  got = ob(2:e + 1, 4:n + 3)
  call check(ierr == 0, 'attention on sections: status')
  call close_to(got, ref, tol, 'attention on sections')
  ob(2:e + 1, 4:n + 3) = -99
  call check(same_bits(ob, okeep), 'attention on sections: nothing else written')
  qt = transpose(q)
  call linattn_causal(plan, transpose(qt), k, v, ref)
  call linattn_causal(plan, qb(2:d + 1, 3:n + 2), kb(1:d, 1:n), &
      vb(3:e + 2, 2:n + 1), ob(1:e, 1:n), stat=ierr)
  got = ob(1:e, 1:n)
  call close_to(got, ref, tol, 'causal on sections and transpose(a)')
  ob(1:e, 1:n) = -99
  call check(same_bits(ob, okeep), 'causal on sections: nothing else written')

  ! An input no leading dimension describes (every other feature) is
  ! copied: the same result.
  call linattn_attention(plan, q, k, v, ref)
  qb(1:2 * d:2, 1:n) = q
  call linattn_attention(plan, qb(1:2 * d:2, 1:n), k, v, got, stat=ierr)
  call check(ierr == 0, 'strided input: status')
  call close_to(got, ref, tol, 'strided input copied: same result')
  qb(2:d + 1, 3:n + 2) = q

  ! States, through sections of every argument.
  call linattn_state_create(st, plan)
  call linattn_state_update(st, kb(1:d, 1:n), vb(3:e + 2, 2:n + 1))
  call linattn_state_get(st, ob(2:d + 1, 2:e + 1), dbuf(3:d + 2))
  s = ob(2:d + 1, 2:e + 1)
  z = dbuf(3:d + 2)
  ob(2:d + 1, 2:e + 1) = -99
  call check(same_bits(ob, okeep), 'state_get into a section: nothing else')
  call linattn_state_reset(st)
  call linattn_state_update(st, k, v)
  call linattn_state_get(st, sref, zref)
  call check(same_bits(s, sref) .and. same_bits(z, zref), &
      'state_get into sections = into arrays')
  dbuf = -99
  dkeep = dbuf
  call linattn_state_query(st, qb(2:d + 1, 3:n + 2), num=ob(1:e, 2:n + 1), &
      den=dbuf(2:n + 1), stat=ierr)
  call linattn_state_query(st, q, num=nref, den=den)
  got = ob(1:e, 2:n + 1)
  call close_to(got, nref, tol, 'query numerators into a section')
  call close_to(dbuf(2:n + 1), den, tol, 'query normalizers into a section')
  dbuf(2:n + 1) = -99
  call check(same_bits(dbuf, dkeep), 'normalizers: nothing else written')
  call linattn_state_save_size(st, bytes)
  call linattn_state_save(st, buf(11:), written)
  call linattn_state_load(st, buf(11:10 + written), stat=ierr)
  call check(ierr == 0 .and. written == bytes, 'checkpoint through sections')
  call linattn_state_destroy(st)

  ! W into a section; the random numbers into a section.
  call linattn_plan_create(favor, LINATTN_MAP_FAVOR, d, e)
  call linattn_plan_weights(favor, w)
  wb = -99
  wkeep = wb
  call linattn_plan_weights(favor, wb(2:13, 2:d + 1), stat=ierr)
  call check(ierr == 0, 'plan_weights into a section: status')
  call check(same_bits(wb(2:13, 2:d + 1), w), 'plan_weights into a section')
  wb(2:13, 2:d + 1) = -99
  call check(same_bits(wb, wkeep), 'plan_weights into a section: nothing else')
  call linattn_plan_destroy(favor)
  call linattn_rng_normal(42_int64, 0_int64, 0_int64, dbuf(2:5))
  call check(abs(dbuf(2) + 0.66537486780734956_real64) < 1e-15_real64, &
      'rng_normal into a section')

  ! Batched, single precision: 4-D sections of padded arrays.
  call linattn_plan_create(plan32, LINATTN_MAP_ELU1, d, e, kind=real32)
  call random_fill4(q4)
  q4c = q4(1:d, 2:n + 1, :, :)
  o4 = 5
  o4keep = o4
  call linattn_batched_attention(plan32, q4(1:d, 2:n + 1, :, :), &
      q4(1:d, 2:n + 1, :, :), q4(2:e + 1, 1:n, :, :), o4(2:e + 1, 1:n, :, :), &
      stat=ierr)
  call check(ierr == 0, 'batched on sections: status')
  call linattn_batched_attention(plan32, q4c, q4c, q4(2:e + 1, 1:n, :, :), &
      o4c, stat=ierr)
  call check(same_bits(o4(2:e + 1, 1:n, :, :), o4c), &
      'batched on sections = on contiguous copies')
  o4(2:e + 1, 1:n, :, :) = 5
  call check(same_bits(o4, o4keep), 'batched on sections: nothing else')
  call linattn_plan_destroy(plan32)
  call linattn_plan_destroy(plan)
  call finish('test_f_nocopy')

contains

  subroutine random_fill(a)
    real(real64), intent(inout) :: a(:, :)
    call random_number(a)
  end subroutine random_fill

  subroutine random_fill4(a)
    real(real32), intent(inout) :: a(:, :, :, :)
    call random_number(a)
  end subroutine random_fill4
end program test_f_nocopy
