! SPDX-License-Identifier: BSD-3-Clause
! linattn.f90 -- module linattn, the Fortran interface of linattn.
!
!   use linattn
!   type(linattn_plan) :: plan
!   call linattn_plan_create(plan, LINATTN_MAP_ELU1, d, e)
!   call linattn_attention(plan, q, k, v, out)          ! q(d, n), out(e, n)
!   call linattn_plan_destroy(plan)
!
! One generic name per C operation, for real32 and real64 arrays; token
! arrays indexed (feature, token), or (token, feature) with
! order = LINATTN_TOKEN_FEATURE; optional stat and errmsg everywhere
! (without stat a failure stops the program with the message).  Every
! procedure and the C function it calls: doc/fortran.md.
!
! The array procedures come from linattn_d and linattn_s (one source,
! linattn_prec.inc), whose generic interfaces merge here; the handle-only
! procedures below pick the precision from the handle.
module linattn
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int8, int64, real32, real64
  use linattn_c
  use linattn_base
  use linattn_d, only: linattn_plan_create_custom, linattn_plan_weights, &
      linattn_features, linattn_state_update, linattn_state_get, &
      linattn_state_query, linattn_attention, linattn_causal, linattn_naive, &
      linattn_naive_causal, linattn_softmax, linattn_approx_error, &
      linattn_batched_attention, linattn_batched_naive, &
      linattn_batched_causal, linattn_batched_naive_causal, &
      d_plan_create => plan_create, d_plan_destroy => plan_destroy, &
      d_plan_dims => plan_dims, d_plan_block => plan_block, &
      d_plan_weight_rows => plan_weight_rows, &
      d_state_create => state_create, d_state_destroy => state_destroy, &
      d_state_reset => state_reset, d_state_merge => state_merge, &
      d_state_copy => state_copy, d_state_shift => state_shift, &
      d_state_tokens => state_tokens, d_state_save_size => state_save_size, &
      d_state_save => state_save, d_state_load => state_load, &
      d_state_save_file => state_save_file, &
      d_state_load_file => state_load_file
  use linattn_s, only: linattn_plan_create_custom, linattn_plan_weights, &
      linattn_features, linattn_state_update, linattn_state_get, &
      linattn_state_query, linattn_attention, linattn_causal, linattn_naive, &
      linattn_naive_causal, linattn_softmax, linattn_approx_error, &
      linattn_batched_attention, linattn_batched_naive, &
      linattn_batched_causal, linattn_batched_naive_causal, &
      s_plan_create => plan_create, s_plan_destroy => plan_destroy, &
      s_plan_dims => plan_dims, s_plan_block => plan_block, &
      s_plan_weight_rows => plan_weight_rows, &
      s_state_create => state_create, s_state_destroy => state_destroy, &
      s_state_reset => state_reset, s_state_merge => state_merge, &
      s_state_copy => state_copy, s_state_shift => state_shift, &
      s_state_tokens => state_tokens, s_state_save_size => state_save_size, &
      s_state_save => state_save, s_state_load => state_load, &
      s_state_save_file => state_save_file, &
      s_state_load_file => state_load_file
  implicit none
  private

  ! The constants of linattn.h (module linattn_c and this public
  ! statement are generated from it), the array orders, and the types.
  include 'linattn_c_public.inc'
  public :: LINATTN_FEATURE_TOKEN, LINATTN_TOKEN_FEATURE
  public :: linattn_plan, linattn_state, linattn_opts, linattn_approx_stats, &
      linattn_where

  ! Array procedures: generic over real32 and real64.
  public :: linattn_plan_create_custom, linattn_plan_weights, &
      linattn_features, linattn_state_update, linattn_state_get, &
      linattn_state_query, linattn_attention, linattn_causal, linattn_naive, &
      linattn_naive_causal, linattn_softmax, linattn_approx_error, &
      linattn_batched_attention, linattn_batched_naive, &
      linattn_batched_causal, linattn_batched_naive_causal

  ! Handle-only and precision-free procedures.
  public :: linattn_plan_create, linattn_plan_destroy, linattn_plan_dims, &
      linattn_plan_block, linattn_plan_weight_rows, linattn_state_create, &
      linattn_state_destroy, linattn_state_reset, linattn_state_merge, &
      linattn_state_copy, linattn_state_shift, linattn_state_tokens, &
      linattn_state_save_size, linattn_state_save, linattn_state_load, &
      linattn_state_save_file, linattn_state_load_file, linattn_opts_init, &
      linattn_version, linattn_version_string, linattn_strerror, &
      linattn_rng_normal

contains

  ! A plan of precision kind (real64, the default, or real32): the
  ! arrays given to it must be of that kind.
  subroutine linattn_plan_create(plan, map, d, e, opts, kind, stat, errmsg)
    type(linattn_plan), intent(inout) :: plan
    integer, intent(in) :: map, d, e
    type(linattn_opts), intent(in), optional :: opts
    integer, intent(in), optional :: kind
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    integer :: k
    k = real64
    if (present(kind)) k = kind
    if (k == real64) then
      call d_plan_create(plan, map, d, e, opts, stat, errmsg)
    else if (k == real32) then
      call s_plan_create(plan, map, d, e, opts, stat, errmsg)
    else
      c = call_begin('linattn_plan_create', 'plan_create', 0)
      call call_fail(c, -1, 'kind must be real32 or real64 (of ' // &
          'iso_fortran_env), not ' // itoa(int(k, int64)))
      call call_end(c, stat, errmsg)
    end if
  end subroutine linattn_plan_create

  subroutine linattn_plan_destroy(plan, stat, errmsg)
    type(linattn_plan), intent(inout) :: plan
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (plan%kind == real32) then
      call s_plan_destroy(plan, stat, errmsg)
    else
      call d_plan_destroy(plan, stat, errmsg)
    end if
  end subroutine linattn_plan_destroy

  subroutine linattn_plan_dims(plan, d, m, e, stat, errmsg)
    type(linattn_plan), intent(in) :: plan
    integer, intent(inout), optional :: d, m, e
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (plan%kind == real32) then
      call s_plan_dims(plan, d, m, e, stat, errmsg)
    else
      call d_plan_dims(plan, d, m, e, stat, errmsg)
    end if
  end subroutine linattn_plan_dims

  subroutine linattn_plan_block(plan, block, stat, errmsg)
    type(linattn_plan), intent(in) :: plan
    integer, intent(inout) :: block
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (plan%kind == real32) then
      call s_plan_block(plan, block, stat, errmsg)
    else
      call d_plan_block(plan, block, stat, errmsg)
    end if
  end subroutine linattn_plan_block

  subroutine linattn_plan_weight_rows(plan, rows, stat, errmsg)
    type(linattn_plan), intent(in) :: plan
    integer, intent(inout) :: rows
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (plan%kind == real32) then
      call s_plan_weight_rows(plan, rows, stat, errmsg)
    else
      call d_plan_weight_rows(plan, rows, stat, errmsg)
    end if
  end subroutine linattn_plan_weight_rows

  subroutine linattn_state_create(state, plan, stat, errmsg)
    type(linattn_state), intent(inout) :: state
    type(linattn_plan), intent(in) :: plan
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (plan%kind == real32) then
      call s_state_create(state, plan, stat, errmsg)
    else
      call d_state_create(state, plan, stat, errmsg)
    end if
  end subroutine linattn_state_create

  subroutine linattn_state_destroy(state, stat, errmsg)
    type(linattn_state), intent(inout) :: state
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (state%kind == real32) then
      call s_state_destroy(state, stat, errmsg)
    else
      call d_state_destroy(state, stat, errmsg)
    end if
  end subroutine linattn_state_destroy

  subroutine linattn_state_reset(state, stat, errmsg)
    type(linattn_state), intent(inout) :: state
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (state%kind == real32) then
      call s_state_reset(state, stat, errmsg)
    else
      call d_state_reset(state, stat, errmsg)
    end if
  end subroutine linattn_state_reset

  ! dst += src: the state of the concatenation of their keys.
  subroutine linattn_state_merge(dst, src, stat, errmsg)
    type(linattn_state), intent(inout) :: dst
    type(linattn_state), intent(in) :: src
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (dst%kind == real32) then
      call s_state_merge(dst, src, stat, errmsg)
    else
      call d_state_merge(dst, src, stat, errmsg)
    end if
  end subroutine linattn_state_merge

  subroutine linattn_state_copy(dst, src, stat, errmsg)
    type(linattn_state), intent(inout) :: dst
    type(linattn_state), intent(in) :: src
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (dst%kind == real32) then
      call s_state_copy(dst, src, stat, errmsg)
    else
      call d_state_copy(dst, src, stat, errmsg)
    end if
  end subroutine linattn_state_copy

  subroutine linattn_state_shift(state, shift, stat, errmsg)
    type(linattn_state), intent(in) :: state
    real(real64), intent(inout) :: shift
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (state%kind == real32) then
      call s_state_shift(state, shift, stat, errmsg)
    else
      call d_state_shift(state, shift, stat, errmsg)
    end if
  end subroutine linattn_state_shift

  subroutine linattn_state_tokens(state, tokens, stat, errmsg)
    type(linattn_state), intent(in) :: state
    integer(int64), intent(inout) :: tokens
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (state%kind == real32) then
      call s_state_tokens(state, tokens, stat, errmsg)
    else
      call d_state_tokens(state, tokens, stat, errmsg)
    end if
  end subroutine linattn_state_tokens

  subroutine linattn_state_save_size(state, bytes, stat, errmsg)
    type(linattn_state), intent(in) :: state
    integer(int64), intent(inout) :: bytes
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (state%kind == real32) then
      call s_state_save_size(state, bytes, stat, errmsg)
    else
      call d_state_save_size(state, bytes, stat, errmsg)
    end if
  end subroutine linattn_state_save_size

  subroutine linattn_state_save(state, buf, written, stat, errmsg)
    type(linattn_state), intent(in) :: state
    integer(int8), intent(inout) :: buf(:)
    integer(int64), intent(inout), optional :: written
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (state%kind == real32) then
      call s_state_save(state, buf, written, stat, errmsg)
    else
      call d_state_save(state, buf, written, stat, errmsg)
    end if
  end subroutine linattn_state_save

  subroutine linattn_state_load(state, buf, stat, errmsg)
    type(linattn_state), intent(inout) :: state
    integer(int8), intent(in) :: buf(:)
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (state%kind == real32) then
      call s_state_load(state, buf, stat, errmsg)
    else
      call d_state_load(state, buf, stat, errmsg)
    end if
  end subroutine linattn_state_load

  subroutine linattn_state_save_file(state, path, stat, errmsg)
    type(linattn_state), intent(in) :: state
    character(*), intent(in) :: path
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (state%kind == real32) then
      call s_state_save_file(state, path, stat, errmsg)
    else
      call d_state_save_file(state, path, stat, errmsg)
    end if
  end subroutine linattn_state_save_file

  subroutine linattn_state_load_file(state, path, stat, errmsg)
    type(linattn_state), intent(inout) :: state
    character(*), intent(in) :: path
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    if (state%kind == real32) then
      call s_state_load_file(state, path, stat, errmsg)
    else
      call d_state_load_file(state, path, stat, errmsg)
    end if
  end subroutine linattn_state_load_file

  ! opts = the library's defaults, from linattn_opts_init (which the
  ! default initialization of type(linattn_opts) equals; tested).
  subroutine linattn_opts_init(opts, stat, errmsg)
    type(linattn_opts), intent(inout) :: opts
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    type(c_opts), target :: co
    c = call_begin('linattn_opts_init', 'opts_init', 0)
    call call_c(c, c_opts_init(c_loc(co)))
    if (c%status == 0) opts = opts_from_c(co)
    call call_end(c, stat, errmsg)
  end subroutine linattn_opts_init

  ! LINATTN_VERSION_NUMBER of the library linked (compare with the
  ! module's LINATTN_VERSION_NUMBER).
  function linattn_version() result(v)
    integer :: v
    v = c_version()
  end function linattn_version

  function linattn_version_string() result(s)
    character(:), allocatable :: s
    s = f_string(c_version_string())
  end function linattn_version_string

  ! The library's sentence for a status.
  function linattn_strerror(status) result(s)
    integer, intent(in) :: status
    character(:), allocatable :: s
    s = f_string(c_strerror(int(status, c_int)))
  end function linattn_strerror

  ! out(i) = normal number first + i - 1 of the generator's (seed,
  ! stream) (doc/rng.md); the arguments have the bits of C's uint64_t.
  subroutine linattn_rng_normal(seed, stream, first, out, stat, errmsg)
    integer(int64), intent(in) :: seed, stream, first
    real(real64), intent(inout), target :: out(:)
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    type(c_ptr) :: p
    integer(int64) :: str
    c = call_begin('linattn_rng_normal', 'rng_normal', 0)
    p = c_null_ptr
    str = 1
    if (size(out) > 1) str = element_stride(c_loc(out(1)), c_loc(out(2)), &
        c_sizeof(out(1)))
    if (size(out) > 0) call describe_vector(c, 5, 'out', c_loc(out(1)), &
        size(out, kind=int64), str, p)
    if (c%status == 0) call call_c(c, c_rng_normal(seed, stream, first, &
        size(out, kind=c_int64_t), p))
    call call_end(c, stat, errmsg)
  end subroutine linattn_rng_normal
end module linattn
