! SPDX-License-Identifier: BSD-3-Clause
! test_f_api.f90 -- the module against C: every constant's value and
! every struct's size and field offsets as C computes them (generated
! halves, gen_fortran.pl --check-c / --check-f: a new field or constant
! is checked without editing this file); the options type's defaults
! against linattn_opts_init, every field bit for bit; the generator's test vectors
! (doc/rng.md) bit for bit, with seeds and counters beyond 2**63; version
! and status strings; the platform description against C's struct; and
! the textbook example in both precisions,
! rescanned by plain loops and through the library, exactly.
program test_f_api
  use, intrinsic :: iso_c_binding, only: c_int64_t, c_loc, c_char, &
      c_null_char
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  use linattn
  use linattn_c, only: c_opts, c_opts_init, c_platform, c_platform_query
  use linattn_base, only: opts_to_c
  use linattn_c_check
  use ftest
  implicit none
  integer :: i

  call layout_and_constants()
  call options()
  call generator()
  call strings()
  call platform()
  call textbook_d()
  call textbook_s()
  call finish('test_f_api')

contains

  subroutine layout_and_constants()
    integer(c_int64_t) :: fc(nconsts), fl(nlayout)
    call f_constants(fc)
    do i = 1, nconsts
      call check(fc(i) == c_consts(i), trim(const_names(i)) // ' as in C')
    end do
    call f_layout(fl)
    call check(all(fl == c_layout), 'struct sizes and offsets as in C')
    if (any(fl /= c_layout)) then
      write (*, '(a, 40i5)') '  Fortran ', fl
      write (*, '(a, 40i5)') '  C       ', c_layout
    end if
    call check(c_layout(1) == 120, 'sizeof(linattn_opts) = 120')
  end subroutine layout_and_constants

  ! linattn_platform_query: every string field equal to C's up to its
  ! terminator (the rest blank), the numbers and the verdict as C has
  ! them, and the description's own consistency.
  subroutine platform()
    type(linattn_platform) :: p
    type(c_platform), target :: cp
    integer :: st
    call linattn_platform_query(p, stat=st)
    call check(st == 0, 'platform_query: status 0')
    call check(c_platform_query(c_loc(cp)) == 0, 'platform_query from C')
    call check(same(p%blas_vendor, cp%blas_vendor) .and. &
        same(p%blas_version, cp%blas_version) .and. &
        same(p%blas_config, cp%blas_config) .and. &
        same(p%blas_library, cp%blas_library) .and. &
        same(p%blas_kernel, cp%blas_kernel) .and. &
        same(p%blas_kernel_isa, cp%blas_kernel_isa) .and. &
        same(p%blas_threading, cp%blas_threading) .and. &
        same(p%cpu_name, cp%cpu_name) .and. same(p%cpu_isa, cp%cpu_isa) &
        .and. same(p%cpu_features, cp%cpu_features) .and. &
        same(p%lib_isa, cp%lib_isa) .and. &
        same(p%lib_threading, cp%lib_threading) .and. &
        same(p%advice, cp%advice) .and. same(p%summary, cp%summary), &
        'platform_query: strings as in C')
    call check(p%blas_threads == cp%blas_threads .and. &
        p%lib_threads == cp%lib_threads .and. &
        (p%blas_underuses_cpu .eqv. cp%blas_underuses_cpu /= 0), &
        'platform_query: numbers as in C')
    call check(len_trim(p%blas_vendor) > 0 .and. &
        index(p%summary, trim(p%blas_vendor)) > 0 .and. &
        index(p%summary, 'linattn kernels ' // trim(p%lib_isa)) > 0, &
        'platform_query: the summary names the BLAS and the kernels')
    call check((len_trim(p%advice) > 0) .eqv. p%blas_underuses_cpu, &
        'platform_query: advice exactly when it warns')
  end subroutine platform

  ! s holds the C string in a (up to its NUL), then blanks.
  logical function same(s, a)
    character(*), intent(in) :: s
    character(kind=c_char), intent(in) :: a(:)
    integer :: i
    logical :: ended
    same = .true.
    ended = .false.
    do i = 1, len(s)
      if (i <= size(a) .and. .not. ended) ended = a(i) == c_null_char
      if (ended .or. i > size(a)) then
        same = same .and. s(i:i) == ' '
      else
        same = same .and. s(i:i) == a(i)
      end if
    end do
  end function same

  ! type(linattn_opts) starts with the library's defaults: the C struct
  ! it converts to equals linattn_opts_init's, field for field; the seed
  ! keeps its 64 bits.
  subroutine options()
    type(linattn_opts) :: o, o2
    type(c_opts), target :: from_c, from_f
    integer :: st
    st = c_opts_init(c_loc(from_c))
    from_f = opts_to_c(o)
    ! field by field, bits of the reals included (the padding after
    ! denom is no field)
    call check(st == 0 .and. from_c%m == from_f%m .and. &
        from_c%block == from_f%block .and. from_c%chunk == from_f%chunk &
        .and. from_c%denom == from_f%denom .and. &
        transfer(from_c%eps, 0_int64) == transfer(from_f%eps, 0_int64) .and. &
        from_c%seed == from_f%seed .and. &
        from_c%check_finite == from_f%check_finite .and. &
        from_c%draw == from_f%draw .and. transfer(from_c%input_scale, &
        0_int64) == transfer(from_f%input_scale, 0_int64) .and. &
        all(from_c%reserved == from_f%reserved), &
        'default options = linattn_opts_init, field for field')
    o2%seed = -1
    o2%m = 7
    call linattn_opts_init(o2)
    call check(o2%seed == 0 .and. o2%m == 0 .and. .not. o2%check_finite &
        .and. o2%denom == LINATTN_DENOM_POSITIVE .and. o2%draw == &
        LINATTN_DRAW_ORTHO, 'linattn_opts_init resets to the defaults')
    o%seed = -2_int64
    o%check_finite = .true.
    from_f = opts_to_c(o)
    call check(from_f%seed == -2_int64 .and. from_f%check_finite == 1, &
        'seed bits and check_finite reach C')
  end subroutine options

  ! doc/rng.md's test vectors, bit for bit; 2**64 - 2 is -2 as int64.
  subroutine generator()
    real(real64) :: a(8), b(3), c(2)
    real(real64), parameter :: va(8) = [-0.66537486780734956_real64, &
        1.0360238086554643_real64, -1.4338891806537386_real64, &
        0.42327818124445254_real64, 0.13500793462831751_real64, &
        -0.90438638506663493_real64, -0.64825064275588418_real64, &
        0.6154812264131011_real64]
    real(real64), parameter :: vb(3) = [0.56023354534368797_real64, &
        0.66380381248685083_real64, 1.4538458148994462_real64]
    real(real64), parameter :: vc(2) = [-2.0123492575848383_real64, &
        -0.90797854945202927_real64]
    integer :: ierr
    call linattn_rng_normal(42_int64, 0_int64, 0_int64, a)
    call check(same_bits(a, va), 'rng_normal: seed 42')
    call linattn_rng_normal(int(z'0123456789abcdef', int64), 1_int64, &
        2_int64**40 + 1, b)
    call check(same_bits(b, vb), 'rng_normal: seed 0x0123456789abcdef')
    call linattn_rng_normal(7_int64, 2_int64**32, -2_int64, c)
    call check(same_bits(c, vc), 'rng_normal: first = 2**64 - 2')
    call linattn_rng_normal(7_int64, 0_int64, -2_int64, a(1:3), stat=ierr)
    call check(ierr == -4, 'rng_normal: past 2**64 - 1 refused')
  end subroutine generator

  subroutine strings()
    character(16) :: expect
    character(:), allocatable :: text
    write (expect, '(i0, ".", i0, ".", i0)') LINATTN_VERSION_MAJOR, &
        LINATTN_VERSION_MINOR, LINATTN_VERSION_PATCH
    call check(linattn_version() == LINATTN_VERSION_NUMBER, 'version number')
    call check(linattn_version_string() == trim(expect), 'version string')
    text = linattn_strerror(LINATTN_EDENOM)
    call check(index(text, 'a normalizer is zero') == 1, 'strerror(EDENOM)')
    text = linattn_strerror(LINATTN_EOVERFLOW)
    call check(index(text, 'a result of finite inputs is beyond the') &
        == 1, 'strerror(EOVERFLOW)')
    call check(linattn_strerror(-3) == 'argument 3 is invalid', &
        'strerror(-3)')
  end subroutine strings

  ! Keys (2,1), (-1,2), (1,-1), (0,3); values 3, -2, 1, 4 (README).
  subroutine textbook_d()
    real(real64) :: k(2, 4), v(1, 4), q(2, 2), out(1, 2), outt(2, 1), &
        s(2, 1), z(2), rescan(2), num
    type(linattn_plan) :: plan
    type(linattn_state) :: st
    type(linattn_opts) :: o
    integer :: j, t
    k = reshape([2, 1, -1, 2, 1, -1, 0, 3], [2, 4])
    v = reshape([3, -2, 1, 4], [1, 4])
    q = reshape([1, 0, 0, 1], [2, 2])
    do t = 1, 2
      num = 0
      rescan(t) = 0
      do j = 1, 4
        num = num + dot_product(q(:, t), k(:, j)) * v(1, j)
        rescan(t) = rescan(t) + dot_product(q(:, t), k(:, j))
      end do
      rescan(t) = num / rescan(t)
    end do
    call check(rescan(1) == 4.5_real64 .and. rescan(2) == 2, &
        'textbook: rescanning gives 4.5 and 2')
    o%denom = LINATTN_DENOM_NONZERO
    call linattn_plan_create(plan, LINATTN_MAP_IDENTITY, 2, 1, o)
    call linattn_state_create(st, plan)
    call linattn_state_update(st, k, v)
    call linattn_state_get(st, s, z)
    call check(all(s(:, 1) == [9, 10]) .and. all(z == [2, 5]), &
        'textbook: s = (9, 10), z = (2, 5)')
    call linattn_state_query(st, q, out)
    call check(out(1, 1) == 4.5_real64 .and. out(1, 2) == 2, &
        'textbook: the state gives 4.5 and 2 (real64)')
    out = 0
    call linattn_attention(plan, q, k, v, out)
    call check(out(1, 1) == 4.5_real64 .and. out(1, 2) == 2, &
        'textbook: attention gives 4.5 and 2 (real64)')
    call linattn_naive(plan, transpose(q), transpose(k), transpose(v), outt, &
        order=LINATTN_TOKEN_FEATURE)
    call check(outt(1, 1) == 4.5_real64 .and. outt(2, 1) == 2, &
        'textbook: naive, (token, feature), gives 4.5 and 2 (real64)')
    call linattn_state_destroy(st)
    call linattn_plan_destroy(plan)
  end subroutine textbook_d

  subroutine textbook_s()
    real(real32) :: k(2, 4), v(1, 4), q(2, 2), out(1, 2), out4(1, 4)
    type(linattn_plan) :: plan
    type(linattn_state) :: st
    type(linattn_opts) :: o
    k = reshape([2, 1, -1, 2, 1, -1, 0, 3], [2, 4])
    v = reshape([3, -2, 1, 4], [1, 4])
    q = reshape([1, 0, 0, 1], [2, 2])
    o%denom = LINATTN_DENOM_NONZERO
    call linattn_plan_create(plan, LINATTN_MAP_IDENTITY, 2, 1, o, &
        kind=real32)
    call linattn_state_create(st, plan)
    call linattn_state_update(st, k, v)
    call linattn_state_query(st, q, out)
    call check(out(1, 1) == 4.5_real32 .and. out(1, 2) == 2, &
        'textbook: the state gives 4.5 and 2 (real32)')
    ! causal: row 1 sees key 1 only (score 2, value 3), row 4 all four
    call linattn_causal(plan, q(:, [1, 2, 2, 2]), k, v, out4)
    call check(out4(1, 1) == 3 .and. out4(1, 4) == 2, &
        'textbook: causal rows 1 and 4 (real32)')
    call linattn_state_destroy(st)
    call linattn_plan_destroy(plan)
  end subroutine textbook_s
end program test_f_api
