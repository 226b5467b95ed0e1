! SPDX-License-Identifier: BSD-3-Clause
! linattn_base.f90 -- what every Fortran module over linattn shares: the
! handle and option types, the status of a call (stat, errmsg, or a stop
! with the message), and how an array becomes a C pointer with a leading
! dimension.  Users see its public types through module linattn; modules
! that wrap more C functions (linattn_mpi) use it directly, together with
! the generics linattn_view and linattn_stage of linattn_d and linattn_s
! (doc/fortran.md, "How it is built, and wrapping a C function").
module linattn_base
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64, &
      error_unit, output_unit
  use linattn_c
  use linattn_c_any, only: cx_plan_dims
  implicit none
  private

  ! Orders of the token arrays: a(feature, token), each token's features
  ! contiguous (the C row-major n x c matrix), or a(token, feature).
  integer, parameter, public :: LINATTN_FEATURE_TOKEN = LINATTN_ROW_MAJOR
  integer, parameter, public :: LINATTN_TOKEN_FEATURE = LINATTN_COL_MAJOR

  ! A plan or a state: the C handle, its precision (real32 or real64; 0
  ! when not created) and the plan's d, m, e.  Plain references: a copy
  ! of a handle refers to the same C object, to be destroyed once.  The
  ! components are public for modules that wrap more C functions; users
  ! never need to touch them.
  type, public :: linattn_plan
    type(c_ptr) :: ptr = c_null_ptr
    integer :: kind = 0
    integer(int64) :: d = 0, m = 0, e = 0
  end type linattn_plan

  type, public :: linattn_state
    type(c_ptr) :: ptr = c_null_ptr
    integer :: kind = 0
    integer(int64) :: d = 0, m = 0, e = 0
  end type linattn_state

  ! The plan options, holding the library's defaults (linattn_opts_init);
  ! meaning of each field at struct linattn_opts in linattn.h.  seed has
  ! the bits of the C uint64_t (a negative value is a seed >= 2**63).
  type, public :: linattn_opts
    integer(int64) :: m = 0
    integer(int64) :: block = 0
    integer(int64) :: chunk = 0
    integer :: denom = LINATTN_DENOM_POSITIVE
    real(real64) :: eps = 0
    integer(int64) :: seed = 0
    logical :: check_finite = .false.
    integer :: draw = LINATTN_DRAW_ORTHO
    real(real64) :: input_scale = 0
    real(real64) :: log_decay = 0
    real(real64) :: query_scale = 0
  end type linattn_opts

  ! linattn_approx_error's statistics (struct linattn_approx_stats).
  type, public :: linattn_approx_stats
    real(real64) :: out_rel_fro = 0, out_mse = 0, out_max_abs = 0
    real(real64) :: attn_rel_fro = 0, kernel_mse = 0, kernel_rel_fro = 0
    integer(int64) :: pairs = 0
  end type linattn_approx_stats

  ! Where a batched call failed, counted from 1 as Fortran indexes: the
  ! batch entry, the head, and for LINATTN_EDENOM and LINATTN_EOVERFLOW the
  ! token (else 0).
  type, public :: linattn_where
    integer(int64) :: batch = 0, head = 0, row = 0
  end type linattn_where

  ! What the library runs on (linattn_platform_query): the fields of
  ! struct linattn_platform in linattn.h, strings blank-padded.
  type, public :: linattn_platform
    character(32) :: blas_vendor = '', blas_version = ''
    character(192) :: blas_config = ''
    character(256) :: blas_library = ''
    character(32) :: blas_kernel = ''
    character(16) :: blas_kernel_isa = ''
    integer :: blas_threads = 0
    character(16) :: blas_threading = ''
    character(64) :: cpu_name = ''
    character(16) :: cpu_isa = ''
    character(384) :: cpu_features = ''
    character(16) :: lib_isa = ''
    integer :: lib_threads = 0
    character(16) :: lib_threading = ''
    logical :: blas_underuses_cpu = .false.
    character(384) :: advice = '', summary = ''
  end type linattn_platform

  ! One call in progress: who is calling what, and the first failure.
  ! (Fixed-length names: a call that succeeds allocates nothing.)
  type, public :: linattn_call
    character(40) :: proc = ''           ! the Fortran procedure
    character(32) :: cbase = ''          ! the C function without linattn_
                                         ! and its precision prefix
    integer :: kind = 0                  ! the arrays' real kind, 0 for none
    integer :: status = 0
    character(:), allocatable :: msg     ! set on failure
    ! the C library's prefix, and the C argument names when not
    ! linattn.h's (modules over another header set both)
    character(16) :: cprefix = 'linattn_'
    character(160) :: args = ''
  end type linattn_call

  ! A matrix argument: rows x cols for C (rows = tokens for the token
  ! arrays), its first element, the element strides between its rows and
  ! between its columns as the caller's array has them, and which
  ! dimension of the array holds the rows.  Outputs must be written in
  ! place.  settle then picks the call's layout and sets ptr (NULL when
  ! empty) and ld, or marks an input C cannot address for a copy.
  type, public :: linattn_matrix
    type(c_ptr) :: base = c_null_ptr
    integer(int64) :: rows = 0, cols = 0
    integer(int64) :: srow = 0, scol = 0
    integer :: rowdim = 2
    integer :: argno = 0
    character(8) :: name = ''
    logical :: given = .false.
    logical :: output = .false.
    type(c_ptr) :: ptr = c_null_ptr
    integer(c_int64_t) :: ld = 1
    logical :: copy = .false.
  end type linattn_matrix

  ! A batched array: the matrix of problem (1, 1), the numbers of heads
  ! and batch entries, and the head and batch strides.
  type, public :: linattn_batch
    type(linattn_matrix) :: mat
    type(c_strides) :: strides = c_strides(1, 0, 0)
    integer(int64) :: batch = 0, heads = 0
  end type linattn_batch

  public :: call_begin, call_fail, call_c, call_c_row, call_c_where, &
      call_end, check_plan, &
      check_state, check_shape, layout_of, describe_matrix, &
      describe_batch, describe_vector, view_int64, settle, element_stride, &
      itoa, kind_name, check_new, adopt_plan, &
      opts_to_c, opts_from_c, platform_from_c, c_string, f_string

contains

  function call_begin(proc, cbase, kind) result(c)
    character(*), intent(in) :: proc, cbase
    integer, intent(in) :: kind
    type(linattn_call) :: c
    c%proc = proc
    c%cbase = cbase
    c%kind = kind
  end function call_begin

  ! The C function called, e.g. linattn_d_causal.
  function cfun(c) result(name)
    type(linattn_call), intent(in) :: c
    character(:), allocatable :: name
    select case (c%kind)
    case (real64)
      name = trim(c%cprefix) // 'd_' // trim(c%cbase)
    case (real32)
      name = trim(c%cprefix) // 's_' // trim(c%cbase)
    case default
      name = trim(c%cprefix) // trim(c%cbase)
    end select
  end function cfun

  ! Records a failure found before the C call (the first one counts):
  ! status is the C library's code, -i naming argument i of the C function.
  subroutine call_fail(c, status, msg)
    type(linattn_call), intent(inout) :: c
    integer, intent(in) :: status
    character(*), intent(in) :: msg
    if (c%status /= 0) return
    c%status = status
    c%msg = trim(c%proc) // ': ' // msg
  end subroutine call_fail

  ! Records the status a C function returned, with its sentence.
  subroutine call_c(c, status, detail)
    type(linattn_call), intent(inout) :: c
    integer(c_int), intent(in) :: status
    character(*), intent(in), optional :: detail
    character(:), allocatable :: text
    if (status == 0 .or. c%status /= 0) return
    if (status < 0) then
      text = 'argument ' // itoa(int(-status, int64)) // &
          argname(c, -status) // ' of ' // cfun(c) // ' is invalid'
    else
      text = cfun(c) // ' returned ' // c_status_name(status)
      if (len(c_status_name(status)) == 0) text = text // itoa(int(status, int64))
      text = text // ': ' // f_string(c_strerror(status))
    end if
    if (present(detail)) text = text // detail
    call call_fail(c, status, text)
  end subroutine call_c

  ! The status of a C call that reports a row (0-based bad) for
  ! LINATTN_EDENOM and LINATTN_EOVERFLOW: bad_row gets it counted from 1,
  ! only then.
  subroutine call_c_row(c, status, bad, bad_row)
    type(linattn_call), intent(inout) :: c
    integer(c_int), intent(in) :: status
    integer(c_int64_t), intent(in) :: bad
    integer(int64), intent(inout), optional :: bad_row
    if ((status == LINATTN_EDENOM .or. status == LINATTN_EOVERFLOW) .and. &
        bad >= 0) then
      call call_c(c, status, ' (token ' // itoa(bad + 1) // ')')
      if (present(bad_row)) bad_row = bad + 1
    else
      call call_c(c, status)
      ! a backward call's overflow of dw or db alone names no token
      if (status == LINATTN_EOVERFLOW .and. present(bad_row)) bad_row = 0
    end if
  end subroutine call_c_row

  ! The status of a batched C call that reports where it failed (w,
  ! counted from 0): the place in the message and, counted from 1, in bad
  ! (all 0 for a batched backward call's overflow of the sums dw, db
  ! alone, which is no problem's).
  subroutine call_c_where(c, status, w, bad)
    type(linattn_call), intent(inout) :: c
    integer(c_int), intent(in) :: status
    type(c_where), intent(in) :: w
    type(linattn_where), intent(inout), optional :: bad
    if (status > 0 .and. w%batch >= 0) then
      if (w%row >= 0) then
        call call_c(c, status, ' (batch ' // itoa(w%batch + 1) // ', head ' &
            // itoa(w%head + 1) // ', token ' // itoa(w%row + 1) // ')')
      else
        call call_c(c, status, ' (batch ' // itoa(w%batch + 1) // ', head ' &
            // itoa(w%head + 1) // ')')
      end if
      if (present(bad)) bad = linattn_where(w%batch + 1, w%head + 1, &
          max(w%row + 1, 0_c_int64_t))
    else
      call call_c(c, status)
      if (status == LINATTN_EOVERFLOW .and. present(bad)) &
          bad = linattn_where(0, 0, 0)
    end if
  end subroutine call_c_where

  ! Hands the status over: to stat and errmsg when present, else a
  ! failure stops the program with the message (as allocate does).
  ! errmsg is assigned only on failure, as for allocate.
  subroutine call_end(c, stat, errmsg)
    type(linattn_call), intent(in) :: c
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (present(stat)) stat = c%status
    if (c%status == 0) return
    if (present(errmsg)) errmsg = c%msg
    if (present(stat)) return
    flush (output_unit)
    write (error_unit, '(a)') c%msg
    error stop
  end subroutine call_end

  ! " (name)" of argument i of the C function called, when the header
  ! names it.
  function argname(c, i) result(s)
    type(linattn_call), intent(in) :: c
    integer, intent(in) :: i
    character(:), allocatable :: s, names
    integer :: k, at, next
    if (len_trim(c%args) > 0) then
      names = trim(c%args) // ' '
    else
      names = c_argnames(trim(c%cbase)) // ' '
    end if
    at = 1
    s = ''
    do k = 1, i
      if (at > len(names)) return
      next = index(names(at:), ' ') + at - 1
      if (next <= at) return
      if (k == i) s = ' (' // names(at:next - 1) // ')'
      at = next + 1
    end do
  end function argname

  function kind_name(kind) result(s)
    integer, intent(in) :: kind
    character(:), allocatable :: s
    select case (kind)
    case (real64)
      s = 'real64'
    case (real32)
      s = 'real32'
    case default
      s = 'not created'
    end select
  end function kind_name

  ! A plan argument (C argument argno) must exist and match the arrays.
  ! A plan or state argument (C argument argno) must exist and be of the
  ! call's precision; against names what it is compared with in the
  ! message (default: the arrays).
  subroutine check_plan(c, plan, argno, name, against)
    type(linattn_call), intent(inout) :: c
    type(linattn_plan), intent(in) :: plan
    integer, intent(in) :: argno
    character(*), intent(in) :: name
    character(*), intent(in), optional :: against
    call check_kind(c, plan%kind, c_associated(plan%ptr), argno, name, against)
  end subroutine check_plan

  subroutine check_state(c, state, argno, name, against)
    type(linattn_call), intent(inout) :: c
    type(linattn_state), intent(in) :: state
    integer, intent(in) :: argno
    character(*), intent(in) :: name
    character(*), intent(in), optional :: against
    call check_kind(c, state%kind, c_associated(state%ptr), argno, name, against)
  end subroutine check_state

  subroutine check_kind(c, kind, exists, argno, name, against)
    type(linattn_call), intent(inout) :: c
    integer, intent(in) :: kind, argno
    logical, intent(in) :: exists
    character(*), intent(in) :: name
    character(*), intent(in), optional :: against
    if (.not. exists .or. kind == 0) then
      call call_fail(c, -argno, name // ' was not created (or was destroyed)')
    else if (c%kind /= 0 .and. kind /= c%kind) then
      if (present(against)) then
        call call_fail(c, -argno, name // ' is ' // kind_name(kind) // &
            ' but ' // against // ' is ' // kind_name(c%kind) // &
            ': a plan and its states share one precision')
      else
        call call_fail(c, -argno, name // ' is ' // kind_name(kind) // &
            ' but the arrays are ' // kind_name(c%kind) // &
            ': a plan, its states and its arrays share one precision')
      end if
    end if
  end subroutine check_kind

  ! A handle must be empty before a create fills it: no plan or state is
  ! lost (leaked) by creating over it.
  subroutine check_new(c, exists, name)
    type(linattn_call), intent(inout) :: c
    logical, intent(in) :: exists
    character(*), intent(in) :: name
    if (exists) call call_fail(c, -1, name // ' already holds one; ' // &
        'destroy it first')
  end subroutine check_new

  ! A plan just created in C (precision kind) into its handle.
  subroutine adopt_plan(plan, p, kind)
    type(linattn_plan), intent(inout) :: plan
    type(c_ptr), intent(in) :: p
    integer, intent(in) :: kind
    integer(c_int64_t), target :: d, m, e
    integer(c_int) :: st
    st = cx_plan_dims(kind, p, c_loc(d), c_loc(m), c_loc(e))
    plan%ptr = p
    plan%kind = kind
    plan%d = d
    plan%m = m
    plan%e = e
  end subroutine adopt_plan

  ! An extent the C call implies: got must equal want.
  subroutine check_shape(c, argno, got, want, what, why)
    type(linattn_call), intent(inout) :: c
    integer, intent(in) :: argno
    integer(int64), intent(in) :: got, want
    character(*), intent(in) :: what, why
    if (got /= want) call call_fail(c, -argno, what // ': ' // itoa(got) &
        // ' (expected ' // itoa(want) // ', ' // why // ')')
  end subroutine check_shape

  ! The C layout of an optional order argument (C argument argno).
  function layout_of(c, order, argno) result(layout)
    type(linattn_call), intent(inout) :: c
    integer, intent(in), optional :: order
    integer, intent(in) :: argno
    integer(c_int) :: layout
    layout = LINATTN_FEATURE_TOKEN
    if (.not. present(order)) return
    layout = order
    if (order /= LINATTN_FEATURE_TOKEN .and. order /= LINATTN_TOKEN_FEATURE) &
        call call_fail(c, -argno, 'order must be LINATTN_FEATURE_TOKEN or ' &
        // 'LINATTN_TOKEN_FEATURE, not ' // itoa(int(order, int64)))
  end function layout_of

  ! Elements from address p to address q (of one array).
  function element_stride(p, q, esize) result(n)
    type(c_ptr), intent(in) :: p, q
    integer(c_size_t), intent(in) :: esize
    integer(int64) :: n
    n = (transfer(q, 0_c_intptr_t) - transfer(p, 0_c_intptr_t)) / &
        int(esize, c_intptr_t)
  end function element_stride

  ! A 2-D array with extents ext and element strides str, first element
  ! at base; its dimension rowdim (1 or 2) holds the C rows.  Nothing is
  ! decided until settle.
  subroutine describe_matrix(argno, name, base, ext, str, rowdim, mat)
    integer, intent(in) :: argno, rowdim
    character(*), intent(in) :: name
    type(c_ptr), intent(in) :: base
    integer(int64), intent(in) :: ext(2), str(2)
    type(linattn_matrix), intent(out) :: mat
    mat%argno = argno
    mat%name = name
    mat%base = base
    mat%rows = ext(rowdim)
    mat%cols = ext(3 - rowdim)
    mat%srow = str(rowdim)
    mat%scol = str(3 - rowdim)
    mat%rowdim = rowdim
    mat%given = .true.
  end subroutine describe_matrix

  ! A batched array of extents ext and strides str over (feature, token,
  ! head, batch), the caller's axes already applied.
  subroutine describe_batch(c, argno, name, base, ext, str, arr)
    type(linattn_call), intent(inout) :: c
    integer, intent(in) :: argno
    character(*), intent(in) :: name
    type(c_ptr), intent(in) :: base
    integer(int64), intent(in) :: ext(4), str(4)
    type(linattn_batch), intent(out) :: arr
    call describe_matrix(argno, name, base, ext(1:2), str(1:2), 2, arr%mat)
    arr%heads = ext(3)
    arr%batch = ext(4)
    arr%strides%head = 0
    arr%strides%batch = 0
    if (ext(3) > 1) arr%strides%head = str(3)
    if (ext(4) > 1) arr%strides%batch = str(4)
    ! no problem: nothing of it is addressed, any layout fits it
    if (ext(3) == 0 .or. ext(4) == 0) arr%mat%given = .false.
    if (arr%strides%head < 0 .or. arr%strides%batch < 0) &
        call call_fail(c, -argno, name // ': a head or batch dimension ' // &
        'runs backwards; pass a copy')
  end subroutine describe_batch

  ! Whether C can address matrix m in layout: ROW_MAJOR wants its
  ! columns adjacent (scol = 1) and ld = srow, COL_MAJOR its rows
  ! adjacent and ld = scol.
  logical function fits(m, layout)
    type(linattn_matrix), intent(in) :: m
    integer(c_int), intent(in) :: layout
    fits = .true.
    if (.not. m%given .or. m%rows == 0 .or. m%cols == 0) return
    if (layout == LINATTN_ROW_MAJOR) then
      fits = (m%cols <= 1 .or. m%scol == 1) .and. &
          (m%rows <= 1 .or. m%srow >= m%cols)
    else
      fits = (m%rows <= 1 .or. m%srow == 1) .and. &
          (m%cols <= 1 .or. m%scol >= m%rows)
    end if
  end function fits

  subroutine fix(m, layout)
    type(linattn_matrix), intent(inout) :: m
    integer(c_int), intent(in) :: layout
    m%copy = .not. fits(m, layout)
    m%ptr = c_null_ptr
    if (m%rows > 0 .and. m%cols > 0) m%ptr = m%base
    if (layout == LINATTN_ROW_MAJOR) then
      m%ld = max(1_int64, m%cols)
      if (m%rows > 1) m%ld = m%srow
    else
      m%ld = max(1_int64, m%rows)
      if (m%cols > 1) m%ld = m%scol
    end if
  end subroutine fix

  ! The call's layout: the one asked for (the order's) when every matrix
  ! fits it, else the other one when every matrix fits that (a
  ! transposed view, as gfortran passes transpose(a), is the other
  ! layout of the same memory).  Failing both, the first of them that
  ! every output fits, and the inputs that do not fit it are marked for
  ! a contiguous copy (copy_inputs, default true; the caller makes it);
  ! an output that fits neither, or outputs of both orders, are refused.
  ! Then ptr and ld of every matrix.
  subroutine settle(c, layout, m1, m2, m3, m4, copy_inputs)
    type(linattn_call), intent(inout) :: c
    integer(c_int), intent(inout) :: layout
    type(linattn_matrix), intent(inout), optional :: m1, m2, m3, m4
    logical, intent(in), optional :: copy_inputs
    type(linattn_matrix) :: a(4)
    integer(c_int) :: other
    integer :: i
    logical :: may_copy
    if (c%status /= 0) return
    ! the usual case, every matrix in the order's layout: nothing to choose
    if (fits_opt(m1) .and. fits_opt(m2) .and. fits_opt(m3) .and. &
        fits_opt(m4)) then
      if (present(m1)) call fix(m1, layout)
      if (present(m2)) call fix(m2, layout)
      if (present(m3)) call fix(m3, layout)
      if (present(m4)) call fix(m4, layout)
      return
    end if
    may_copy = .true.
    if (present(copy_inputs)) may_copy = copy_inputs
    if (present(m1)) a(1) = m1
    if (present(m2)) a(2) = m2
    if (present(m3)) a(3) = m3
    if (present(m4)) a(4) = m4
    do i = 1, 4
      if (.not. may_copy) a(i)%output = a(i)%output .or. a(i)%given
    end do
    other = LINATTN_ROW_MAJOR + LINATTN_COL_MAJOR - layout
    if (all_fit(layout, .false.)) then
      continue
    else if (all_fit(other, .false.)) then
      layout = other
    else if (all_fit(other, .true.) .and. .not. all_fit(layout, .true.)) then
      layout = other
    else if (.not. all_fit(layout, .true.)) then
      do i = 1, 4
        if (a(i)%output .and. .not. fits(a(i), layout) .and. &
            .not. fits(a(i), other)) then
          call call_fail(c, -a(i)%argno, trim(a(i)%name) // ': no ' // &
              'leading dimension describes it (neither dimension is ' // &
              'contiguous, or one runs backwards): pass an array, or a ' // &
              'section whose first dimension is contiguous')
          return
        end if
      end do
      do i = 1, 4
        if (a(i)%output .and. .not. fits(a(i), layout)) then
          call call_fail(c, -a(i)%argno, trim(a(i)%name) // ': its ' // &
              'memory order differs from the other arrays'' (a call ' // &
              'takes one layout)')
          return
        end if
      end do
    end if
    do i = 1, 4
      if (a(i)%given) call fix(a(i), layout)
    end do
    if (present(m1)) m1 = a(1)
    if (present(m2)) m2 = a(2)
    if (present(m3)) m3 = a(3)
    if (present(m4)) m4 = a(4)
  contains
    logical function fits_opt(m)
      type(linattn_matrix), intent(in), optional :: m
      fits_opt = .true.
      if (present(m)) fits_opt = fits(m, layout)
    end function fits_opt
    ! every matrix (outputs_only: every output) fits lay
    logical function all_fit(lay, outputs_only)
      integer(c_int), intent(in) :: lay
      logical, intent(in) :: outputs_only
      integer :: j
      all_fit = .true.
      do j = 1, 4
        if (outputs_only .and. .not. a(j)%output) cycle
        all_fit = all_fit .and. fits(a(j), lay)
      end do
    end function all_fit
  end subroutine settle

  ! A vector must be contiguous; NULL when empty.
  subroutine describe_vector(c, argno, name, base, n, str, ptr)
    type(linattn_call), intent(inout) :: c
    integer, intent(in) :: argno
    character(*), intent(in) :: name
    type(c_ptr), intent(in) :: base
    integer(int64), intent(in) :: n, str
    type(c_ptr), intent(out) :: ptr
    ptr = c_null_ptr
    if (n == 0) return
    if (n > 1 .and. str /= 1) then
      call call_fail(c, -argno, name // ' is not contiguous (stride ' // &
          itoa(str) // '); pass a copy')
      return
    end if
    ptr = base
  end subroutine describe_vector

  ! A vector of int64 (packed sequences' offsets) as C's pointer: it must
  ! be contiguous (NULL when empty).
  subroutine view_int64(c, argno, name, a, ptr)
    type(linattn_call), intent(inout) :: c
    integer, intent(in) :: argno
    character(*), intent(in) :: name
    integer(int64), intent(in), target :: a(:)
    type(c_ptr), intent(out) :: ptr
    integer(int64) :: str
    ptr = c_null_ptr
    if (size(a) == 0) return
    str = 1
    if (size(a) > 1) str = element_stride(c_loc(a(1)), c_loc(a(2)), &
        c_sizeof(a(1)))
    call describe_vector(c, argno, name, c_loc(a(1)), size(a, kind=int64), &
        str, ptr)
  end subroutine view_int64

  function itoa(i) result(s)
    integer(int64), intent(in) :: i
    character(:), allocatable :: s
    character(24) :: buf
    write (buf, '(i0)') i
    s = trim(buf)
  end function itoa

  function opts_to_c(o) result(co)
    type(linattn_opts), intent(in) :: o
    type(c_opts) :: co
    co%m = o%m
    co%block = o%block
    co%chunk = o%chunk
    co%denom = o%denom
    co%eps = o%eps
    co%seed = o%seed
    co%check_finite = merge(1_c_int, 0_c_int, o%check_finite)
    co%draw = o%draw
    co%input_scale = o%input_scale
    co%log_decay = o%log_decay
    co%query_scale = o%query_scale
    co%reserved = 0
  end function opts_to_c

  function opts_from_c(co) result(o)
    type(c_opts), intent(in) :: co
    type(linattn_opts) :: o
    o%m = co%m
    o%block = co%block
    o%chunk = co%chunk
    o%denom = co%denom
    o%eps = co%eps
    o%seed = co%seed
    o%check_finite = co%check_finite /= 0
    o%draw = co%draw
    o%input_scale = co%input_scale
    o%log_decay = co%log_decay
    o%query_scale = co%query_scale
  end function opts_from_c

  function platform_from_c(cp) result(p)
    type(c_platform), intent(in) :: cp
    type(linattn_platform) :: p
    p%blas_vendor = chars(cp%blas_vendor)
    p%blas_version = chars(cp%blas_version)
    p%blas_config = chars(cp%blas_config)
    p%blas_library = chars(cp%blas_library)
    p%blas_kernel = chars(cp%blas_kernel)
    p%blas_kernel_isa = chars(cp%blas_kernel_isa)
    p%blas_threads = cp%blas_threads
    p%blas_threading = chars(cp%blas_threading)
    p%cpu_name = chars(cp%cpu_name)
    p%cpu_isa = chars(cp%cpu_isa)
    p%cpu_features = chars(cp%cpu_features)
    p%lib_isa = chars(cp%lib_isa)
    p%lib_threads = cp%lib_threads
    p%lib_threading = chars(cp%lib_threading)
    p%blas_underuses_cpu = cp%blas_underuses_cpu /= 0
    p%advice = chars(cp%advice)
    p%summary = chars(cp%summary)
  end function platform_from_c

  ! A C char array holding a NUL-terminated string, as a Fortran string.
  function chars(a) result(s)
    character(kind=c_char), intent(in) :: a(:)
    character(:), allocatable :: s
    integer :: n, i
    n = 0
    do while (n < size(a))
      if (a(n + 1) == c_null_char) exit
      n = n + 1
    end do
    allocate (character(n) :: s)
    do i = 1, n
      s(i:i) = a(i)
    end do
  end function chars

  ! A Fortran string as a NUL-terminated C string (trailing blanks
  ! dropped, as Fortran pads file names).
  function c_string(s) result(cs)
    character(*), intent(in) :: s
    character(kind=c_char) :: cs(len_trim(s) + 1)
    integer :: i
    do i = 1, len_trim(s)
      cs(i) = s(i:i)
    end do
    cs(len_trim(s) + 1) = c_null_char
  end function c_string

  ! The C string at p as a Fortran string.
  function f_string(p) result(s)
    type(c_ptr), intent(in) :: p
    character(:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: n, i, shp(1)
    interface
      function strlen(str) bind(C, name='strlen') result(n)
        import :: c_ptr, c_size_t
        type(c_ptr), value :: str
        integer(c_size_t) :: n
      end function strlen
    end interface
    if (.not. c_associated(p)) then
      s = ''
      return
    end if
    n = int(strlen(p))
    shp(1) = n
    call c_f_pointer(p, chars, shp)
    allocate (character(n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function f_string
end module linattn_base
