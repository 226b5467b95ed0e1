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
! linattn_prec.inc), whose generic interfaces merge here; the procedures
! below take only handles (or nothing) and call the C function of the
! handle's precision through the generated cx_* of linattn_c_any.
module linattn
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int8, int64, real32, real64
  use linattn_c
  use linattn_base
  use linattn_c_any
  use linattn_d, only: linattn_plan_create_custom, linattn_plan_weights, &
      linattn_features, linattn_state_update, linattn_state_get, &
      linattn_state_query, linattn_attention, linattn_causal, linattn_naive, &
      linattn_naive_causal, linattn_softmax, linattn_approx_error, &
      linattn_batched_attention, linattn_batched_naive, &
      linattn_batched_causal, linattn_batched_naive_causal, &
      linattn_state_causal, linattn_attention_check, linattn_causal_check, &
      linattn_batched_attention_check, linattn_batched_causal_check, &
      linattn_attention_forward, linattn_causal_forward, &
      linattn_attention_backward, linattn_causal_backward, &
      linattn_features_backward, linattn_batched_attention_forward, &
      linattn_batched_causal_forward, linattn_batched_attention_backward, &
      linattn_batched_causal_backward, linattn_attention_ex, &
      linattn_causal_ex, linattn_states_step, linattn_naive_ex, &
      linattn_naive_causal_ex, linattn_attention_ex_check, &
      linattn_causal_ex_check
  use linattn_s, only: linattn_plan_create_custom, linattn_plan_weights, &
      linattn_features, linattn_state_update, linattn_state_get, &
      linattn_state_query, linattn_attention, linattn_causal, linattn_naive, &
      linattn_naive_causal, linattn_softmax, linattn_approx_error, &
      linattn_batched_attention, linattn_batched_naive, &
      linattn_batched_causal, linattn_batched_naive_causal, &
      linattn_state_causal, linattn_attention_check, linattn_causal_check, &
      linattn_batched_attention_check, linattn_batched_causal_check, &
      linattn_attention_forward, linattn_causal_forward, &
      linattn_attention_backward, linattn_causal_backward, &
      linattn_features_backward, linattn_batched_attention_forward, &
      linattn_batched_causal_forward, linattn_batched_attention_backward, &
      linattn_batched_causal_backward, linattn_attention_ex, &
      linattn_causal_ex, linattn_states_step, linattn_naive_ex, &
      linattn_naive_causal_ex, linattn_attention_ex_check, &
      linattn_causal_ex_check
  implicit none
  private

  ! The constants of linattn.h (module linattn_c and this public
  ! statement are generated from it), the array orders, and the types.
  include 'linattn_c_public.inc'
  public :: LINATTN_FEATURE_TOKEN, LINATTN_TOKEN_FEATURE
  public :: linattn_plan, linattn_state, linattn_opts, linattn_approx_stats, &
      linattn_where, linattn_platform

  ! Array procedures: generic over real32 and real64.
  public :: linattn_plan_create_custom, linattn_plan_weights, &
      linattn_features, linattn_state_update, linattn_state_get, &
      linattn_state_query, linattn_attention, linattn_causal, linattn_naive, &
      linattn_naive_causal, linattn_softmax, linattn_approx_error, &
      linattn_batched_attention, linattn_batched_naive, &
      linattn_batched_causal, linattn_batched_naive_causal, &
      linattn_state_causal, linattn_attention_check, linattn_causal_check, &
      linattn_batched_attention_check, linattn_batched_causal_check, &
      linattn_attention_forward, linattn_causal_forward, &
      linattn_attention_backward, linattn_causal_backward, &
      linattn_features_backward, linattn_batched_attention_forward, &
      linattn_batched_causal_forward, linattn_batched_attention_backward, &
      linattn_batched_causal_backward, linattn_attention_ex, &
      linattn_causal_ex, linattn_states_step, linattn_naive_ex, &
      linattn_naive_causal_ex, linattn_attention_ex_check, &
      linattn_causal_ex_check

  ! Handle-only and precision-free procedures.
  public :: linattn_plan_create, linattn_plan_destroy, linattn_plan_dims, &
      linattn_plan_block, linattn_plan_decay, linattn_plan_weight_rows, &
      linattn_causal_chunk_states_size, linattn_state_create, &
      linattn_state_destroy, linattn_state_reset, linattn_state_merge, &
      linattn_state_copy, linattn_state_shift, linattn_state_tokens, &
      linattn_state_save_size, linattn_state_save, linattn_state_load, &
      linattn_state_save_file, linattn_state_load_file, &
      linattn_plan_fingerprint, linattn_state_plan, linattn_state_export, &
      linattn_state_import, linattn_state_key_weight, linattn_opts_init, &
      linattn_version, linattn_version_string, linattn_strerror, &
      linattn_rng_normal, linattn_platform_query

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
    type(c_opts), target :: co
    type(c_ptr), target :: p
    type(c_ptr) :: popts
    integer :: k
    k = real64
    if (present(kind)) k = kind
    c = call_begin('linattn_plan_create', 'plan_create', k)
    if (k /= real64 .and. k /= real32) call call_fail(c, -1, 'kind must ' // &
        'be real32 or real64 (of iso_fortran_env), not ' // itoa(int(k, int64)))
    call check_new(c, c_associated(plan%ptr), 'plan')
    popts = c_null_ptr
    if (present(opts)) then
      co = opts_to_c(opts)
      popts = c_loc(co)
    end if
    if (c%status == 0) then
      call call_c(c, cx_plan_create(k, c_loc(p), int(map, c_int), &
          int(d, c_int64_t), int(e, c_int64_t), popts))
      if (c%status == 0) call adopt_plan(plan, p, k)
    end if
    call call_end(c, stat, errmsg)
  end subroutine linattn_plan_create

  ! Frees the plan and empties the handle (an empty one: nothing to do).
  subroutine linattn_plan_destroy(plan, stat, errmsg)
    type(linattn_plan), intent(inout) :: plan
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    type(linattn_plan) :: empty
    c = call_begin('linattn_plan_destroy', 'plan_destroy', plan%kind)
    call cx_plan_destroy(plan%kind, plan%ptr)
    plan = empty
    call call_end(c, stat, errmsg)
  end subroutine linattn_plan_destroy

  subroutine linattn_plan_dims(plan, d, m, e, stat, errmsg)
    type(linattn_plan), intent(in) :: plan
    integer, intent(inout), optional :: d, m, e
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    integer(c_int64_t), target :: cd, cm, ce
    c = call_begin('linattn_plan_dims', 'plan_dims', plan%kind)
    call check_plan(c, plan, 1, 'plan')
    if (c%status == 0) then
      call call_c(c, cx_plan_dims(plan%kind, plan%ptr, c_loc(cd), c_loc(cm), &
          c_loc(ce)))
      if (c%status == 0) then
        if (present(d)) d = int(cd)
        if (present(m)) m = int(cm)
        if (present(e)) e = int(ce)
      end if
    end if
    call call_end(c, stat, errmsg)
  end subroutine linattn_plan_dims

  subroutine linattn_plan_block(plan, block, stat, errmsg)
    type(linattn_plan), intent(in) :: plan
    integer, intent(inout) :: block
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    integer(c_int64_t), target :: cb
    c = call_begin('linattn_plan_block', 'plan_block', plan%kind)
    call check_plan(c, plan, 1, 'plan')
    if (c%status == 0) then
      call call_c(c, cx_plan_block(plan%kind, plan%ptr, c_loc(cb)))
      if (c%status == 0) block = int(cb)
    end if
    call call_end(c, stat, errmsg)
  end subroutine linattn_plan_block

  ! log_decay = ln gamma, the plan's decay per token (opts%log_decay; 0:
  ! none).
  subroutine linattn_plan_decay(plan, log_decay, stat, errmsg)
    type(linattn_plan), intent(in) :: plan
    real(real64), intent(inout) :: log_decay
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    real(c_double), target :: cd
    c = call_begin('linattn_plan_decay', 'plan_decay', plan%kind)
    call check_plan(c, plan, 1, 'plan')
    if (c%status == 0) then
      call call_c(c, cx_plan_decay(plan%kind, plan%ptr, c_loc(cd)))
      if (c%status == 0) log_decay = cd
    end if
    call call_end(c, stat, errmsg)
  end subroutine linattn_plan_decay

  ! The rows of the plan's W (0 for maps without one), to size the
  ! argument of linattn_plan_weights.
  subroutine linattn_plan_weight_rows(plan, rows, stat, errmsg)
    type(linattn_plan), intent(in) :: plan
    integer, intent(inout) :: rows
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    integer(c_int64_t), target :: r
    c = call_begin('linattn_plan_weight_rows', 'plan_weights', plan%kind)
    call check_plan(c, plan, 1, 'plan')
    if (c%status == 0) then
      call call_c(c, cx_plan_weights(plan%kind, plan%ptr, LINATTN_COL_MAJOR, &
          c_null_ptr, 1_c_int64_t, c_loc(r)))
      if (c%status == 0) rows = int(r)
    end if
    call call_end(c, stat, errmsg)
  end subroutine linattn_plan_weight_rows

  ! entries = the size of the chunk_states argument of linattn_causal_ex
  ! and linattn_causal_backward for n tokens of plan's (on any thread
  ! count; O(n m e / chunk)).
  subroutine linattn_causal_chunk_states_size(plan, n, entries, stat, errmsg)
    type(linattn_plan), intent(in) :: plan
    integer(int64), intent(in) :: n
    integer(int64), intent(inout) :: entries
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    integer(c_int64_t), target :: s
    c = call_begin('linattn_causal_chunk_states_size', &
        'causal_chunk_states_size', plan%kind)
    call check_plan(c, plan, 1, 'plan')
    if (c%status == 0) then
      call call_c(c, cx_causal_chunk_states_size(plan%kind, plan%ptr, &
          int(n, c_int64_t), c_loc(s)))
      if (c%status == 0) entries = s
    end if
    call call_end(c, stat, errmsg)
  end subroutine linattn_causal_chunk_states_size

  ! A zero state for plan, of the plan's precision.
  subroutine linattn_state_create(state, plan, stat, errmsg)
    type(linattn_state), intent(inout) :: state
    type(linattn_plan), intent(in) :: plan
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    type(c_ptr), target :: p
    c = call_begin('linattn_state_create', 'state_create', plan%kind)
    call check_new(c, c_associated(state%ptr), 'state')
    call check_plan(c, plan, 2, 'plan')
    if (c%status == 0) then
      call call_c(c, cx_state_create(plan%kind, c_loc(p), plan%ptr))
      if (c%status == 0) state = linattn_state(p, plan%kind, plan%d, plan%m, &
          plan%e)
    end if
    call call_end(c, stat, errmsg)
  end subroutine linattn_state_create

  subroutine linattn_state_destroy(state, stat, errmsg)
    type(linattn_state), intent(inout) :: state
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    type(linattn_state) :: empty
    c = call_begin('linattn_state_destroy', 'state_destroy', state%kind)
    call cx_state_destroy(state%kind, state%ptr)
    state = empty
    call call_end(c, stat, errmsg)
  end subroutine linattn_state_destroy

  subroutine linattn_state_reset(state, stat, errmsg)
    type(linattn_state), intent(inout) :: state
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    c = call_begin('linattn_state_reset', 'state_reset', state%kind)
    call check_state(c, state, 1, 'state')
    if (c%status == 0) call call_c(c, cx_state_reset(state%kind, state%ptr))
    call call_end(c, stat, errmsg)
  end subroutine linattn_state_reset

  ! dst += src: the state of the concatenation of their keys.
  subroutine linattn_state_merge(dst, src, stat, errmsg)
    type(linattn_state), intent(inout) :: dst
    type(linattn_state), intent(in) :: src
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    c = call_begin('linattn_state_merge', 'state_merge', dst%kind)
    call check_state(c, dst, 1, 'dst')
    call check_state(c, src, 2, 'src', 'dst')
    if (c%status == 0) call call_c(c, cx_state_merge(dst%kind, dst%ptr, &
        src%ptr))
    call call_end(c, stat, errmsg)
  end subroutine linattn_state_merge

  ! dst = src.
  subroutine linattn_state_copy(dst, src, stat, errmsg)
    type(linattn_state), intent(inout) :: dst
    type(linattn_state), intent(in) :: src
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    c = call_begin('linattn_state_copy', 'state_copy', dst%kind)
    call check_state(c, dst, 1, 'dst')
    call check_state(c, src, 2, 'src', 'dst')
    if (c%status == 0) call call_c(c, cx_state_copy(dst%kind, dst%ptr, &
        src%ptr))
    call call_end(c, stat, errmsg)
  end subroutine linattn_state_copy

  ! The stabilizing shift of the exponential maps' states (0 otherwise).
  subroutine linattn_state_shift(state, shift, stat, errmsg)
    type(linattn_state), intent(in) :: state
    real(real64), intent(inout) :: shift
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    real(c_double), target :: sh
    c = call_begin('linattn_state_shift', 'state_shift', state%kind)
    call check_state(c, state, 1, 'state')
    if (c%status == 0) then
      call call_c(c, cx_state_shift(state%kind, state%ptr, c_loc(sh)))
      if (c%status == 0) shift = sh
    end if
    call call_end(c, stat, errmsg)
  end subroutine linattn_state_shift

  ! The number of tokens the state has absorbed.
  subroutine linattn_state_tokens(state, tokens, stat, errmsg)
    type(linattn_state), intent(in) :: state
    integer(int64), intent(inout) :: tokens
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    integer(c_int64_t), target :: t
    c = call_begin('linattn_state_tokens', 'state_get', state%kind)
    call check_state(c, state, 1, 'state')
    if (c%status == 0) then
      call call_c(c, cx_state_get(state%kind, state%ptr, LINATTN_COL_MAJOR, &
          c_null_ptr, 1_c_int64_t, c_null_ptr, c_loc(t)))
      if (c%status == 0) tokens = t
    end if
    call call_end(c, stat, errmsg)
  end subroutine linattn_state_tokens

  ! ---- building blocks of distributed and segmented runs ----

  ! A 64-bit hash of everything that decides the plan's results (the
  ! bits of C's uint64_t): equal for plans built alike anywhere.
  subroutine linattn_plan_fingerprint(plan, fp, stat, errmsg)
    type(linattn_plan), intent(in) :: plan
    integer(int64), intent(inout) :: fp
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    integer(c_int64_t), target :: f
    c = call_begin('linattn_plan_fingerprint', 'plan_fingerprint', plan%kind)
    call check_plan(c, plan, 1, 'plan')
    if (c%status == 0) then
      call call_c(c, cx_plan_fingerprint(plan%kind, plan%ptr, c_loc(f)))
      if (c%status == 0) fp = f
    end if
    call call_end(c, stat, errmsg)
  end subroutine linattn_plan_fingerprint

  ! plan = a handle of the plan state was created for (an empty handle
  ! filled with a reference: the plan is still destroyed once, through
  ! either handle).
  subroutine linattn_state_plan(state, plan, stat, errmsg)
    type(linattn_state), intent(in) :: state
    type(linattn_plan), intent(inout) :: plan
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    type(c_ptr), target :: p
    c = call_begin('linattn_state_plan', 'state_plan', state%kind)
    call check_state(c, state, 1, 'state')
    if (c%status == 0 .and. c_associated(plan%ptr)) call call_fail(c, -2, &
        'plan already holds one (the handle must be empty)')
    if (c%status == 0) then
      call call_c(c, cx_state_plan(state%kind, state%ptr, c_loc(p)))
      if (c%status == 0) plan = linattn_plan(p, state%kind, state%d, &
          state%m, state%e)
    end if
    call call_end(c, stat, errmsg)
  end subroutine linattn_state_plan

  ! The state as it accumulates, in real64 for either precision:
  ! acc(e + 1, m), column i = row i of [S z] (C's row-major m x (e + 1),
  ! contiguous); the shift c with true sums = acc exp(c); the tokens; the
  ! keys' weight (sum of w_j, the tokens when every key weighed 1:
  ! linattn_d_state_key_weight).  export then import restores a state bit
  ! for bit.
  subroutine linattn_state_export(state, acc, shift, tokens, stat, errmsg, &
      weight)
    type(linattn_state), intent(in) :: state
    real(real64), intent(inout), target, optional :: acc(:, :)
    real(real64), intent(inout), optional :: shift
    integer(int64), intent(inout), optional :: tokens
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    real(real64), intent(inout), optional :: weight
    type(linattn_call) :: c
    type(c_ptr) :: pa
    real(c_double), target :: sh, w
    integer(c_int64_t), target :: t
    c = call_begin('linattn_state_export', 'state_export', state%kind)
    call check_state(c, state, 1, 'state')
    pa = c_null_ptr
    if (present(acc)) call view_acc(c, state, acc, pa)
    if (c%status == 0 .and. present(weight)) call call_c(c, &
        cx_state_key_weight(state%kind, state%ptr, c_loc(w)))
    if (c%status == 0) then
      call call_c(c, cx_state_export(state%kind, state%ptr, pa, c_loc(sh), &
          c_loc(t)))
      if (c%status == 0) then
        if (present(shift)) shift = sh
        if (present(tokens)) tokens = t
        if (present(weight)) weight = w
      end if
    end if
    call call_end(c, stat, errmsg)
  end subroutine linattn_state_export

  ! The keys' weight the state holds, sum_j w_j (its tokens when every key
  ! weighed 1; the count of LINATTN_DENOM_COUNT).
  subroutine linattn_state_key_weight(state, weight, stat, errmsg)
    type(linattn_state), intent(in) :: state
    real(real64), intent(inout) :: weight
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    real(c_double), target :: w
    c = call_begin('linattn_state_key_weight', 'state_key_weight', state%kind)
    call check_state(c, state, 1, 'state')
    if (c%status == 0) then
      call call_c(c, cx_state_key_weight(state%kind, state%ptr, c_loc(w)))
      if (c%status == 0) weight = w
    end if
    call call_end(c, stat, errmsg)
  end subroutine linattn_state_key_weight

  ! state = the accumulator acc(e + 1, m) (as linattn_state_export writes
  ! it) at shift, holding tokens keys, and with weight their weight
  ! (linattn_d_state_import_weighted: weight >= 0, 0 exactly when tokens
  ! is 0); refused: the state unchanged.
  subroutine linattn_state_import(state, acc, shift, tokens, stat, errmsg, &
      weight)
    type(linattn_state), intent(inout) :: state
    real(real64), intent(in), target :: acc(:, :)
    real(real64), intent(in) :: shift
    integer(int64), intent(in) :: tokens
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    real(real64), intent(in), optional :: weight
    type(linattn_call) :: c
    type(c_ptr) :: pa
    if (present(weight)) then
      c = call_begin('linattn_state_import', 'state_import_weighted', &
          state%kind)
    else
      c = call_begin('linattn_state_import', 'state_import', state%kind)
    end if
    call check_state(c, state, 1, 'state')
    call view_acc(c, state, acc, pa)
    if (c%status /= 0) then
      continue
    else if (present(weight)) then
      call call_c(c, cx_state_import_weighted(state%kind, state%ptr, pa, &
          real(shift, c_double), int(tokens, c_int64_t), &
          real(weight, c_double)))
    else
      call call_c(c, cx_state_import(state%kind, state%ptr, pa, &
          real(shift, c_double), int(tokens, c_int64_t)))
    end if
    call call_end(c, stat, errmsg)
  end subroutine linattn_state_import

  ! An accumulator argument (C argument 2): acc(e + 1, m), contiguous (C
  ! takes no leading dimension here).
  subroutine view_acc(c, state, acc, p)
    type(linattn_call), intent(inout) :: c
    type(linattn_state), intent(in) :: state
    real(real64), intent(in), target :: acc(:, :)
    type(c_ptr), intent(out) :: p
    integer(int64) :: str
    p = c_null_ptr
    if (c%status /= 0) return
    call check_shape(c, 2, size(acc, 1, kind=int64), state%e + 1, &
        'size(acc, 1)', 'the plan''s e + 1')
    call check_shape(c, 2, size(acc, 2, kind=int64), state%m, &
        'size(acc, 2)', 'the plan''s m')
    if (c%status /= 0) return
    ! contiguous: the last element is size - 1 elements after the first
    str = element_stride(c_loc(acc(1, 1)), c_loc(acc(size(acc, 1), &
        size(acc, 2))), c_sizeof(acc(1, 1)))
    if (str /= size(acc, kind=int64) - 1) then
      call call_fail(c, -2, 'acc is not contiguous (C takes no leading ' // &
          'dimension for it); pass a contiguous array')
      return
    end if
    p = c_loc(acc(1, 1))
  end subroutine view_acc

  ! ---- checkpoint/restart ----

  subroutine linattn_state_save_size(state, bytes, stat, errmsg)
    type(linattn_state), intent(in) :: state
    integer(int64), intent(inout) :: bytes
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    integer(c_int64_t), target :: b
    c = call_begin('linattn_state_save_size', 'state_save_size', state%kind)
    call check_state(c, state, 1, 'state')
    if (c%status == 0) then
      call call_c(c, cx_state_save_size(state%kind, state%ptr, c_loc(b)))
      if (c%status == 0) bytes = b
    end if
    call call_end(c, stat, errmsg)
  end subroutine linattn_state_save_size

  ! buf(1:written) = the state's checkpoint; size(buf) may be larger.
  subroutine linattn_state_save(state, buf, written, stat, errmsg)
    type(linattn_state), intent(in) :: state
    integer(int8), intent(inout), target :: buf(:)
    integer(int64), intent(inout), optional :: written
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    integer(c_int64_t), target :: w
    type(c_ptr) :: p
    c = call_begin('linattn_state_save', 'state_save', state%kind)
    call check_state(c, state, 1, 'state')
    call view_bytes(c, 2, buf, p)
    if (c%status == 0) then
      call call_c(c, cx_state_save(state%kind, state%ptr, p, &
          size(buf, kind=c_int64_t), c_loc(w)))
      if (c%status == 0 .and. present(written)) written = w
    end if
    call call_end(c, stat, errmsg)
  end subroutine linattn_state_save

  ! state = the checkpoint buf (all of it); a refused load leaves it as
  ! it was.
  subroutine linattn_state_load(state, buf, stat, errmsg)
    type(linattn_state), intent(inout) :: state
    integer(int8), intent(in), target :: buf(:)
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    type(c_ptr) :: p
    c = call_begin('linattn_state_load', 'state_load', state%kind)
    call check_state(c, state, 1, 'state')
    call view_bytes(c, 2, buf, p)
    if (c%status == 0) call call_c(c, cx_state_load(state%kind, state%ptr, p, &
        size(buf, kind=c_int64_t)))
    call call_end(c, stat, errmsg)
  end subroutine linattn_state_load

  ! A byte buffer: contiguous; C refuses NULL, so an empty one passes as
  ! the address of a byte that C never reads (its length is 0).
  subroutine view_bytes(c, argno, buf, p)
    type(linattn_call), intent(inout) :: c
    integer, intent(in) :: argno
    integer(int8), intent(in), target :: buf(:)
    type(c_ptr), intent(out) :: p
    integer(int8), save, target :: none(1) = 0
    integer(int64) :: str
    str = 1
    if (size(buf) > 1) str = element_stride(c_loc(buf(1)), c_loc(buf(2)), &
        c_sizeof(buf(1)))
    if (size(buf) > 0) then
      call describe_vector(c, argno, 'buf', c_loc(buf(1)), &
          size(buf, kind=int64), str, p)
    else
      p = c_loc(none)
    end if
  end subroutine view_bytes

  ! path: a file name, trailing blanks dropped.
  subroutine linattn_state_save_file(state, path, stat, errmsg)
    type(linattn_state), intent(in) :: state
    character(*), intent(in) :: path
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    character(kind=c_char), target :: cpath(len_trim(path) + 1)
    c = call_begin('linattn_state_save_file', 'state_save_file', state%kind)
    call check_state(c, state, 1, 'state')
    cpath = c_string(path)
    if (c%status == 0) call call_c(c, cx_state_save_file(state%kind, &
        state%ptr, c_loc(cpath)), ' (' // trim(path) // ')')
    call call_end(c, stat, errmsg)
  end subroutine linattn_state_save_file

  subroutine linattn_state_load_file(state, path, stat, errmsg)
    type(linattn_state), intent(inout) :: state
    character(*), intent(in) :: path
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    character(kind=c_char), target :: cpath(len_trim(path) + 1)
    c = call_begin('linattn_state_load_file', 'state_load_file', state%kind)
    call check_state(c, state, 1, 'state')
    cpath = c_string(path)
    if (c%status == 0) call call_c(c, cx_state_load_file(state%kind, &
        state%ptr, c_loc(cpath)), ' (' // trim(path) // ')')
    call call_end(c, stat, errmsg)
  end subroutine linattn_state_load_file

  ! ---- precision-free ----

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

  ! What the library runs on: the BLAS found in the process, the CPU's
  ! vector extensions, the path of linattn's kernels, and a warning with
  ! its remedy when the BLAS kernel underuses the CPU (linattn.h).
  subroutine linattn_platform_query(info, stat, errmsg)
    type(linattn_platform), intent(inout) :: info
    integer, intent(out), optional :: stat
    character(*), intent(inout), optional :: errmsg
    type(linattn_call) :: c
    type(c_platform), target :: cp
    c = call_begin('linattn_platform_query', 'platform_query', 0)
    call call_c(c, c_platform_query(c_loc(cp)))
    if (c%status == 0) info = platform_from_c(cp)
    call call_end(c, stat, errmsg)
  end subroutine linattn_platform_query

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
