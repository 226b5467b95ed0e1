! SPDX-License-Identifier: BSD-3-Clause
! test_f_grad.f90 -- the training calls through module linattn
! (linattn_grad.inc): the backward's gradients against central finite
! differences of the module's own forward calls (real64), non-causal and
! causal, in both orders, dw and db of a custom map, features_backward
! against differences of linattn_features; real32 against real64; a
! wrong extent refused with stat and nothing written; decay: dgates
! against differences of the gated forward, the batched backward with a
! log decay per head against single calls; the forward's saved chunk
! states (chunk_states=) read by the backward, in both precisions, and
! refused when not sealed by the forward or too small.
program test_f_grad
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  use linattn
  use ftest
  implicit none
  integer, parameter :: d = 3, e = 2, m = 6, n = 13
  real(real64) :: wc(m, d), bc(m)
  type(linattn_plan) :: plan, plan_s
  type(linattn_state) :: state
  integer :: causal, st, i
  character(200) :: msg
  ! the problem of fd_check, and the W, b its differences move
  real(real64), allocatable :: cq(:, :), ck(:, :), cv(:, :), cg(:, :)
  real(real64) :: cw(m, d), cb(m)
  logical :: cur_causal, cur_tf

  call fill(wc, 7, -0.5_real64, 0.5_real64)
  bc = [(0.3_real64 + 0.1_real64 * i, i = 1, m)]
  call linattn_plan_create_custom(plan, LINATTN_ACT_ELU1, wc, bc, e)
  do causal = 0, 1
    call fd_check(causal == 1, LINATTN_FEATURE_TOKEN)
    call fd_check(causal == 1, LINATTN_TOKEN_FEATURE)
  end do
  call features_check()
  ! the non-causal backward given the forward's state: the same numbers
  call state_check()
  ! the causal backward's extras: weights, dweights, a starting state
  ! and its gradient, against differences; packed states against pieces
  call ex_check()
  ! a decayed plan, gates and their gradient
  call decay_check()
  ! the causal forward's chunk states, read by the backward
  call chunk_states_check()
  call chunk_states_check_s()
  ! opts%query_scale reaches C: without normalizer, out scales by it
  call qscale_check()
  ! real32 follows real64
  call single_check()
  ! a wrong extent: refused, nothing written
  call refusal_check()
  ! gradients beyond the range: EOVERFLOW with the token, or none
  call overflow_check()
  call linattn_plan_destroy(plan)
  deallocate(cq, ck, cv, cg) ! finish stops: LeakSanitizer would see them
  call finish('test_f_grad')

contains

  ! sum(g * out) through the module's forward calls.
  function loss(causal, q, k, v, g, w, b) result(l)
    logical, intent(in) :: causal
    real(real64), intent(in) :: q(:, :), k(:, :), v(:, :), g(:, :)
    real(real64), intent(in) :: w(:, :), b(:)
    real(real64) :: l
    real(real64), allocatable :: out(:, :), den(:)
    type(linattn_plan) :: p
    call linattn_plan_create_custom(p, LINATTN_ACT_ELU1, w, b, e)
    allocate(out(size(g, 1), size(g, 2)), den(n))
    if (causal) then
      call linattn_causal_forward(p, q, k, v, out, den)
    else
      call linattn_attention_forward(p, q, k, v, out, den)
    end if
    call linattn_plan_destroy(p)
    l = sum(g * out)
  end function loss

  subroutine fd_check(causal, order)
    logical, intent(in) :: causal
    integer, intent(in) :: order
    real(real64), allocatable :: out(:, :), dq(:, :), dk(:, :), dv(:, :)
    real(real64), allocatable :: fq(:, :), fk(:, :), fv(:, :)
    real(real64) :: den(n), dw(m, d), db(m), fw(m, d), fb(m)
    cur_causal = causal
    cur_tf = order == LINATTN_TOKEN_FEATURE
    call alloc(cq, d, cur_tf, 1)
    call alloc(ck, d, cur_tf, 2)
    call alloc(cv, e, cur_tf, 3)
    call alloc(cg, e, cur_tf, 4)
    allocate(out, mold=cg)
    allocate(dq, fq, mold=cq)
    allocate(dk, fk, mold=ck)
    allocate(dv, fv, mold=cv)
    if (causal) then
      call linattn_causal_forward(plan, cq, ck, cv, out, den, order=order)
      call linattn_causal_backward(plan, cq, ck, cv, out, den, cg, dq, dk, &
          dv, dw=dw, db=db, order=order)
    else
      call linattn_attention_forward(plan, cq, ck, cv, out, den, order=order)
      call linattn_attention_backward(plan, cq, ck, cv, out, den, cg, dq, &
          dk, dv, dw=dw, db=db, order=order)
    end if
    cw = wc
    cb = bc
    call diff2(cq, fq)
    call diff2(ck, fk)
    call diff2(cv, fv)
    call diff_params(fw, fb)
    call close_to(dq, fq, 1e-6_real64, 'dq by differences')
    call close_to(dk, fk, 1e-6_real64, 'dk by differences')
    call close_to(dv, fv, 1e-6_real64, 'dv by differences')
    call close_to(dw, fw, 1e-6_real64, 'dw by differences')
    call close_to(db, fb, 1e-6_real64, 'db by differences')
  end subroutine fd_check

  ! Central differences of the loss in every entry of x (one of cq, ck,
  ! cv), and in every entry of W and b.
  subroutine diff2(x, fx)
    real(real64), intent(inout) :: x(:, :)
    real(real64), intent(out) :: fx(:, :)
    real(real64) :: keep, h
    integer :: i, j
    do j = 1, size(x, 2)
      do i = 1, size(x, 1)
        keep = x(i, j)
        h = 1e-6_real64 * max(1.0_real64, abs(keep))
        x(i, j) = keep + h
        fx(i, j) = lossx()
        x(i, j) = keep - h
        fx(i, j) = (fx(i, j) - lossx()) / (2 * h)
        x(i, j) = keep
      end do
    end do
  end subroutine diff2

  subroutine diff_params(fw, fb)
    real(real64), intent(out) :: fw(:, :), fb(:)
    real(real64) :: keep, h
    integer :: i, j
    do j = 1, d
      do i = 1, m
        keep = cw(i, j)
        h = 1e-6_real64 * max(1.0_real64, abs(keep))
        cw(i, j) = keep + h
        fw(i, j) = lossx()
        cw(i, j) = keep - h
        fw(i, j) = (fw(i, j) - lossx()) / (2 * h)
        cw(i, j) = keep
      end do
    end do
    do i = 1, m
      keep = cb(i)
      h = 1e-6_real64 * max(1.0_real64, abs(keep))
      cb(i) = keep + h
      fb(i) = lossx()
      cb(i) = keep - h
      fb(i) = (fb(i) - lossx()) / (2 * h)
      cb(i) = keep
    end do
  end subroutine diff_params

  function lossx() result(l)
    real(real64) :: l
    if (cur_tf) then
      l = loss(cur_causal, transpose(cq), transpose(ck), transpose(cv), &
          transpose(cg), cw, cb)
    else
      l = loss(cur_causal, cq, ck, cv, cg, cw, cb)
    end if
  end function lossx

  ! a(c, n), or a(n, c) in the token-feature order, filled.
  subroutine alloc(a, c, tf, seed)
    real(real64), allocatable, intent(out) :: a(:, :)
    integer, intent(in) :: c, seed
    logical, intent(in) :: tf
    if (tf) then
      allocate(a(n, c))
    else
      allocate(a(c, n))
    end if
    call fill(a, seed, -1.0_real64, 1.0_real64)
  end subroutine alloc

  subroutine features_check()
    real(real64) :: x(d, n), a(m, n), dx(d, n), fdx(d, n), phi(m, n)
    real(real64) :: dw(m, d), db(m), keep, h, lp
    integer :: i, j
    call fill(x, 11, -1.0_real64, 1.0_real64)
    call fill(a, 12, -1.0_real64, 1.0_real64)
    call linattn_features_backward(plan, x, a, dx, dw=dw, db=db)
    do j = 1, n
      do i = 1, d
        keep = x(i, j)
        h = 1e-6_real64
        x(i, j) = keep + h
        call linattn_features(plan, x, phi)
        lp = sum(a * phi)
        x(i, j) = keep - h
        call linattn_features(plan, x, phi)
        fdx(i, j) = (lp - sum(a * phi)) / (2 * h)
        x(i, j) = keep
      end do
    end do
    call close_to(dx, fdx, 1e-6_real64, 'features_backward by differences')
  end subroutine features_check

  ! sum(g * out) of the causal forward from state s with weights w.
  function loss_ex(q, k, v, g, w, s) result(l)
    real(real64), intent(in) :: q(:, :), k(:, :), v(:, :), g(:, :), w(:)
    type(linattn_state), intent(inout) :: s
    real(real64) :: l
    real(real64) :: out(e, n)
    call linattn_causal_ex(plan, q, k, v, out, state=s, weights=w)
    l = sum(g * out)
  end function loss_ex

  subroutine ex_check()
    real(real64) :: q(d, n), k(d, n), v(e, n), g(e, n), out(e, n), den(n)
    real(real64) :: dq(d, n), dk(d, n), dv(e, n), w(n), dwt(n)
    real(real64) :: pq(d, n), pk(d, n), pv(e, n), pds(2 * m * (e + 1))
    real(real64) :: acc(e + 1, m), ds(m * (e + 1)), ds2(m * (e + 1)), sh
    real(real64) :: kk(d, 4), vv(e, 4), lp, lm, h, fd, worst
    integer(int64) :: tok
    integer(int64), parameter :: offs(3) = [0_int64, 5_int64, int(n, int64)]
    type(linattn_state) :: s0, t, pair(2)
    integer :: i, j
    call fill(q, 31, -1.0_real64, 1.0_real64)
    call fill(k, 32, -1.0_real64, 1.0_real64)
    call fill(v, 33, -1.0_real64, 1.0_real64)
    call fill(g, 34, -1.0_real64, 1.0_real64)
    call fill(kk, 35, -1.0_real64, 1.0_real64)
    call fill(vv, 36, -1.0_real64, 1.0_real64)
    w = [(0.5_real64 + 0.1_real64 * i, i = 1, n)]
    call linattn_state_create(s0, plan)
    call linattn_state_update(s0, kk, vv)
    call linattn_causal_ex(plan, q, k, v, out, den=den, state=s0, weights=w)
    call linattn_causal_backward(plan, q, k, v, out, den, g, dq, dk, dv, &
        weights=w, dweights=dwt, state=s0, dstates=ds, stat=st)
    call check(st == 0, 'causal backward with extras')
    h = 1d-6
    worst = 0
    do i = 1, n ! dL/dw_i and dL/dq(1, i)
      w(i) = w(i) + h
      lp = loss_ex(q, k, v, g, w, s0)
      w(i) = w(i) - 2 * h
      lm = loss_ex(q, k, v, g, w, s0)
      w(i) = w(i) + h
      worst = max(worst, abs(dwt(i) - (lp - lm) / (2 * h)))
      q(1, i) = q(1, i) + h
      lp = loss_ex(q, k, v, g, w, s0)
      q(1, i) = q(1, i) - 2 * h
      lm = loss_ex(q, k, v, g, w, s0)
      q(1, i) = q(1, i) + h
      worst = max(worst, abs(dq(1, i) - (lp - lm) / (2 * h)))
    end do
    call check(worst < 1d-7, 'dweights and dq against differences')
    ! the state's gradient: its accumulator moved through export/import
    call linattn_state_export(s0, acc, sh, tok)
    call linattn_state_create(t, plan)
    worst = 0
    do j = 1, m
      do i = 1, e + 1
        acc(i, j) = acc(i, j) + h
        call linattn_state_import(t, acc, sh, tok)
        lp = loss_ex(q, k, v, g, w, t)
        acc(i, j) = acc(i, j) - 2 * h
        call linattn_state_import(t, acc, sh, tok)
        lm = loss_ex(q, k, v, g, w, t)
        acc(i, j) = acc(i, j) + h
        fd = (lp - lm) / (2 * h)
        worst = max(worst, abs(ds(i + (e + 1) * (j - 1)) - fd))
      end do
    end do
    call check(worst < 1d-7, 'dstates against differences')
    ! packed: two sequences from their own states, against single calls
    call linattn_state_create(pair(1), plan)
    call linattn_state_create(pair(2), plan)
    call linattn_state_update(pair(1), kk(:, 1:2), vv(:, 1:2))
    call linattn_state_update(pair(2), kk(:, 3:4), vv(:, 3:4))
    call linattn_causal_ex(plan, q, k, v, out, den=den, offsets=offs, &
        states=pair)
    call linattn_causal_backward(plan, q, k, v, out, den, g, pq, pk, pv, &
        offsets=offs, states=pair, dstates=pds, stat=st)
    call check(st == 0, 'packed backward with states')
    call linattn_causal_backward(plan, q(:, 1:5), k(:, 1:5), v(:, 1:5), &
        out(:, 1:5), den(1:5), g(:, 1:5), dq(:, 1:5), dk(:, 1:5), &
        dv(:, 1:5), state=pair(1), dstates=ds)
    call linattn_causal_backward(plan, q(:, 6:), k(:, 6:), v(:, 6:), &
        out(:, 6:), den(6:), g(:, 6:), dq(:, 6:), dk(:, 6:), dv(:, 6:), &
        state=pair(2), dstates=ds2)
    call check(all(pq == dq) .and. all(pk == dk) .and. all(pv == dv) .and. &
        all(pds(1:m * (e + 1)) == ds) .and. all(pds(m * (e + 1) + 1:) == ds2), &
        'packed states: the single calls, bit for bit')
    ! dstates without a state: refused, nothing written
    ds = -7
    call linattn_causal_backward(plan, q, k, v, out, den, g, dq, dk, dv, &
        dstates=ds, stat=st, errmsg=msg)
    call check(st == -24 .and. all(ds == -7), 'dstates alone: ' // &
        trim(msg))
    ! dstates every other entry of an array: refused (C takes no stride)
    pds = -7
    msg = ''
    call linattn_causal_backward(plan, q, k, v, out, den, g, dq, dk, dv, &
        state=pair(1), dstates=pds(1:2 * m * (e + 1):2), stat=st, errmsg=msg)
    call check(st == -24 .and. index(msg, 'contiguous') > 0 .and. &
        all(pds == -7), 'dstates strided: ' // trim(msg))
    call linattn_state_destroy(s0)
    call linattn_state_destroy(t)
    call linattn_state_destroy(pair(1))
    call linattn_state_destroy(pair(2))
  end subroutine ex_check

  ! sum(g * out) of the gated causal forward of plan p.
  function loss_g(p, q, k, v, g, gt) result(l)
    type(linattn_plan), intent(in) :: p
    real(real64), intent(in) :: q(:, :), k(:, :), v(:, :), g(:, :), gt(:)
    real(real64) :: l
    real(real64) :: out(e, n)
    call linattn_causal_ex(p, q, k, v, out, gates=gt)
    l = sum(g * out)
  end function loss_g

  subroutine decay_check()
    integer, parameter :: hh = 3
    real(real64) :: q(d, n), k(d, n), v(e, n), g(e, n), out(e, n), den(n)
    real(real64) :: dq(d, n), dk(d, n), dv(e, n), gt(n), dg(n)
    real(real64) :: bq(d, n, hh), bk(d, n, hh), bv(e, n, hh), bg(e, n, hh)
    real(real64) :: bo(e, n, hh), bden(n, hh), bgt(n, hh), bdg(n, hh)
    real(real64) :: bdq(d, n, hh), bdk(d, n, hh), bdv(e, n, hh), sdg(n)
    real(real64) :: sq(d, n), sk(d, n), sv(e, n)
    real(real64), parameter :: hd(hh) = [-0.1_real64, 0.0_real64, -0.7_real64]
    real(real64) :: lp, lm, h, worst, total
    type(linattn_plan) :: p, ph
    type(linattn_opts) :: o
    integer :: i
    logical :: same
    o%log_decay = -0.05_real64
    call linattn_plan_create(p, LINATTN_MAP_ELU1, d, e, opts=o)
    call fill(q, 41, -1.0_real64, 1.0_real64)
    call fill(k, 42, -1.0_real64, 1.0_real64)
    call fill(v, 43, -1.0_real64, 1.0_real64)
    call fill(g, 44, -1.0_real64, 1.0_real64)
    gt = [(-0.03_real64 * i, i = 1, n)]
    call linattn_causal_ex(p, q, k, v, out, den=den, gates=gt)
    call linattn_causal_backward(p, q, k, v, out, den, g, dq, dk, dv, &
        gates=gt, dgates=dg, stat=st)
    call check(st == 0, 'gated causal backward')
    h = 1d-6
    worst = 0
    do i = 1, n
      gt(i) = gt(i) + h
      lp = loss_g(p, q, k, v, g, gt)
      gt(i) = gt(i) - 2 * h
      lm = loss_g(p, q, k, v, g, gt)
      gt(i) = gt(i) + h
      worst = max(worst, abs(dg(i) - (lp - lm) / (2 * h)))
    end do
    call check(worst < 1d-7, 'dgates against differences')
    ! dL/d ln gamma: the sum of dgates
    total = sum(dg)
    o%log_decay = -0.05_real64 + h
    call linattn_plan_create(ph, LINATTN_MAP_ELU1, d, e, opts=o)
    lp = loss_g(ph, q, k, v, g, gt)
    call linattn_plan_destroy(ph)
    o%log_decay = -0.05_real64 - h
    call linattn_plan_create(ph, LINATTN_MAP_ELU1, d, e, opts=o)
    lm = loss_g(ph, q, k, v, g, gt)
    call linattn_plan_destroy(ph)
    call check(abs(total - (lp - lm) / (2 * h)) < 1d-7, &
        'dL/d ln gamma: the sum of dgates')
    ! the batched backward, (feature, token, head), a log decay per head:
    ! each head as a single call from a plan of its decay, bit for bit
    do i = 1, hh
      call fill(bq(:, :, i), 51 + 10 * i, -1.0_real64, 1.0_real64)
      call fill(bk(:, :, i), 52 + 10 * i, -1.0_real64, 1.0_real64)
      call fill(bv(:, :, i), 53 + 10 * i, -1.0_real64, 1.0_real64)
      call fill(bg(:, :, i), 54 + 10 * i, -1.0_real64, 1.0_real64)
    end do
    call fill(bgt, 55, -0.2_real64, 0.0_real64)
    call linattn_batched_causal(p, bq, bk, bv, bo, den=bden, gates=bgt, &
        head_decays=hd, stat=st)
    call check(st == 0, 'batched gated forward')
    call linattn_batched_causal_backward(p, bq, bk, bv, bo, bden, bg, bdq, &
        bdk, bdv, gates=bgt, dgates=bdg, head_decays=hd, stat=st)
    call check(st == 0, 'batched gated backward')
    same = .true.
    do i = 1, hh
      o%log_decay = -0.05_real64 + hd(i)
      call linattn_plan_create(ph, LINATTN_MAP_ELU1, d, e, opts=o)
      call linattn_causal_backward(ph, bq(:, :, i), bk(:, :, i), &
          bv(:, :, i), bo(:, :, i), bden(:, i), bg(:, :, i), sq, sk, sv, &
          gates=bgt(:, i), dgates=sdg)
      call linattn_plan_destroy(ph)
      same = same .and. all(sq == bdq(:, :, i)) .and. &
          all(sk == bdk(:, :, i)) .and. all(sv == bdv(:, :, i)) .and. &
          all(sdg == bdg(:, i))
    end do
    call check(same, 'batched gated backward: each head''s single call')
    ! dgates of the wrong size: refused, nothing written
    dg = 7
    call linattn_causal_backward(p, q, k, v, out, den, g, dq, dk, dv, &
        gates=gt, dgates=dg(1:n - 1), stat=st, errmsg=msg)
    call check(st == -24 .and. all(dg == 7), 'dgates short: ' // trim(msg))
    call linattn_plan_destroy(p)
  end subroutine decay_check

  ! A gated forward of several chunks saving its chunk states: out bit
  ! for bit the plain forward's; the backward reading them gives dq, dk,
  ! dv and dgates of the one that rebuilds the carried state (1e-10 of
  ! the largest); a buffer the forward never wrote (zeros) and one too
  ! small refused (-24, -12), nothing written; the size of n < 0 refused.
  subroutine chunk_states_check()
    integer, parameter :: nt = 37
    real(real64) :: q(d, nt), k(d, nt), v(e, nt), g(e, nt), out(e, nt)
    real(real64) :: o2(e, nt), den(nt), gt(nt), dg(nt), sdg(nt)
    real(real64) :: dq(d, nt), dk(d, nt), dv(e, nt)
    real(real64) :: sq(d, nt), sk(d, nt), sv(e, nt)
    real(real64), allocatable :: cs(:), cz(:)
    type(linattn_plan) :: p
    type(linattn_opts) :: o
    integer(int64) :: entries
    integer :: i
    o%log_decay = -0.05_real64
    o%chunk = 8
    call linattn_plan_create(p, LINATTN_MAP_ELU1, d, e, opts=o)
    call fill(q, 71, -1.0_real64, 1.0_real64)
    call fill(k, 72, -1.0_real64, 1.0_real64)
    call fill(v, 73, -1.0_real64, 1.0_real64)
    call fill(g, 74, -1.0_real64, 1.0_real64)
    gt = [(-0.02_real64 * mod(i, 5), i = 1, nt)]
    entries = -1
    call linattn_causal_chunk_states_size(p, int(nt, int64), entries, &
        stat=st)
    call check(st == 0 .and. entries > 0, 'chunk states size')
    allocate(cs(entries), cz(entries))
    cs = 0
    cz = 0
    call linattn_causal_ex(p, q, k, v, out, den=den, gates=gt, &
        chunk_states=cs, stat=st)
    call check(st == 0, 'gated forward saving its chunk states')
    call linattn_causal_ex(p, q, k, v, o2, gates=gt)
    call check(same_bits(out, o2), 'saving the chunk states: out unchanged')
    call linattn_causal_backward(p, q, k, v, out, den, g, dq, dk, dv, &
        gates=gt, dgates=dg, stat=st)
    call check(st == 0, 'gated backward rebuilding the carried state')
    call linattn_causal_backward(p, q, k, v, out, den, g, sq, sk, sv, &
        gates=gt, dgates=sdg, chunk_states=cs, stat=st, errmsg=msg)
    call check(st == 0, 'gated backward from the chunk states: ' // trim(msg))
    call close_to(sq, dq, 1d-10, 'chunk states: dq')
    call close_to(sk, dk, 1d-10, 'chunk states: dk')
    call close_to(sv, dv, 1d-10, 'chunk states: dv')
    call close_to(sdg, dg, 1d-10, 'chunk states: dgates')
    ! never written by the forward: refused, nothing written
    sq = 7
    sdg = 7
    msg = ''
    call linattn_causal_backward(p, q, k, v, out, den, g, sq, sk, sv, &
        gates=gt, dgates=sdg, chunk_states=cz, stat=st, errmsg=msg)
    call check(st == -24 .and. all(sq == 7) .and. all(sdg == 7), &
        'chunk states never written: refused, dq unchanged: ' // trim(msg))
    ! one entry short: refused by the forward, its check and the backward
    o2 = 7
    call linattn_causal_ex(p, q, k, v, o2, gates=gt, &
        chunk_states=cs(1:entries - 1), stat=st, errmsg=msg)
    call check(st == -12 .and. index(msg, 'size(chunk_states)') > 0 .and. &
        all(o2 == 7), 'chunk states short (forward): ' // trim(msg))
    call linattn_causal_ex_check(p, q, k, v, o2, gates=gt, &
        chunk_states=cs(1:entries - 1), stat=st)
    call check(st == -12, 'chunk states short (forward check)')
    call linattn_causal_backward(p, q, k, v, out, den, g, sq, sk, sv, &
        chunk_states=cs(1:entries - 1), stat=st, errmsg=msg)
    call check(st == -24 .and. index(msg, 'size(chunk_states)') > 0 .and. &
        all(sq == 7), 'chunk states short (backward): ' // trim(msg))
    call linattn_causal_chunk_states_size(p, -1_int64, entries, stat=st)
    call check(st == -2, 'chunk states size of n < 0 refused')
    deallocate(cs, cz)
    call linattn_plan_destroy(p)
  end subroutine chunk_states_check

  ! chunk_states_check's first half in real32 (1e-4 of the largest).
  subroutine chunk_states_check_s()
    integer, parameter :: nt = 37
    real(real32) :: q(d, nt), k(d, nt), v(e, nt), g(e, nt), out(e, nt)
    real(real32) :: den(nt), gt(nt), dg(nt), sdg(nt)
    real(real32) :: dq(d, nt), dk(d, nt), dv(e, nt)
    real(real32) :: sq(d, nt), sk(d, nt), sv(e, nt)
    real(real32), allocatable :: cs(:)
    type(linattn_plan) :: p
    type(linattn_opts) :: o
    integer(int64) :: entries
    integer :: i
    o%log_decay = -0.05_real64
    o%chunk = 8
    call linattn_plan_create(p, LINATTN_MAP_ELU1, d, e, opts=o, kind=real32)
    call fill(q, 71, -1.0_real64, 1.0_real64)
    call fill(k, 72, -1.0_real64, 1.0_real64)
    call fill(v, 73, -1.0_real64, 1.0_real64)
    call fill(g, 74, -1.0_real64, 1.0_real64)
    gt = [(-0.02_real32 * mod(i, 5), i = 1, nt)]
    entries = -1
    call linattn_causal_chunk_states_size(p, int(nt, int64), entries, &
        stat=st)
    call check(st == 0 .and. entries > 0, 'real32 chunk states size')
    allocate(cs(entries))
    cs = 0
    call linattn_causal_ex(p, q, k, v, out, den=den, gates=gt, &
        chunk_states=cs, stat=st)
    call check(st == 0, 'real32 gated forward saving its chunk states')
    call linattn_causal_backward(p, q, k, v, out, den, g, dq, dk, dv, &
        gates=gt, dgates=dg, stat=st)
    call check(st == 0, 'real32 gated backward')
    call linattn_causal_backward(p, q, k, v, out, den, g, sq, sk, sv, &
        gates=gt, dgates=sdg, chunk_states=cs, stat=st, errmsg=msg)
    call check(st == 0, 'real32 backward from the chunk states: ' // &
        trim(msg))
    call close_to(sq, real(dq, real64), 1d-4, 'real32 chunk states: dq')
    call close_to(sk, real(dk, real64), 1d-4, 'real32 chunk states: dk')
    call close_to(sv, real(dv, real64), 1d-4, 'real32 chunk states: dv')
    call close_to(sdg, real(dg, real64), 1d-4, &
        'real32 chunk states: dgates')
    deallocate(cs)
    call linattn_plan_destroy(p)
  end subroutine chunk_states_check_s

  subroutine qscale_check()
    real(real64) :: q(d, n), k(d, n), v(e, n), o1(e, n), o2(e, n)
    type(linattn_plan) :: p1, p2
    type(linattn_opts) :: o
    call fill(q, 61, -1.0_real64, 1.0_real64)
    call fill(k, 62, -1.0_real64, 1.0_real64)
    call fill(v, 63, -1.0_real64, 1.0_real64)
    o%denom = LINATTN_DENOM_NONE
    call linattn_plan_create(p1, LINATTN_MAP_ELU1, d, e, opts=o)
    o%query_scale = 0.25_real64
    call linattn_plan_create(p2, LINATTN_MAP_ELU1, d, e, opts=o)
    call linattn_causal(p1, q, k, v, o1)
    call linattn_causal(p2, q, k, v, o2)
    call check(maxval(abs(o2 - 0.25_real64 * o1)) < 1d-12 * maxval(abs(o1)), &
        'query_scale: out scaled')
    call linattn_plan_destroy(p1)
    call linattn_plan_destroy(p2)
  end subroutine qscale_check

  subroutine state_check()
    real(real64) :: q(d, n), k(d, n), v(e, n), g(e, n), out(e, n), den(n)
    real(real64) :: dq(d, n), dk(d, n), dv(e, n), sq(d, n), sk(d, n), sv(e, n)
    call fill(q, 21, -1.0_real64, 1.0_real64)
    call fill(k, 22, -1.0_real64, 1.0_real64)
    call fill(v, 23, -1.0_real64, 1.0_real64)
    call fill(g, 24, -1.0_real64, 1.0_real64)
    call linattn_state_create(state, plan)
    call linattn_state_update(state, k, v)
    call linattn_state_query(state, q, out=out, den=den)
    call linattn_attention_backward(plan, q, k, v, out, den, g, dq, dk, dv)
    call linattn_attention_backward(plan, q, k, v, out, den, g, sq, sk, sv, &
        state=state)
    call check(all(dq == sq) .and. all(dk == sk) .and. all(dv == sv), &
        'the backward given the state equals the one that rebuilds it')
    call linattn_state_destroy(state)
  end subroutine state_check

  subroutine single_check()
    real(real64) :: q(d, n), k(d, n), v(e, n), g(e, n), out(e, n), den(n)
    real(real64) :: dq(d, n), dk(d, n), dv(e, n)
    real(real32) :: q4(d, n), k4(d, n), v4(e, n), g4(e, n), out4(e, n)
    real(real32) :: den4(n), dq4(d, n), dk4(d, n), dv4(e, n)
    call fill(q, 31, -1.0_real64, 1.0_real64)
    call fill(k, 32, -1.0_real64, 1.0_real64)
    call fill(v, 33, -1.0_real64, 1.0_real64)
    call fill(g, 34, -1.0_real64, 1.0_real64)
    q4 = real(q, real32)
    k4 = real(k, real32)
    v4 = real(v, real32)
    g4 = real(g, real32)
    call linattn_plan_create(plan_s, LINATTN_MAP_ELU1, d, e, kind=real32)
    call linattn_causal_forward(plan_s, q4, k4, v4, out4, den4)
    call linattn_causal_backward(plan_s, q4, k4, v4, out4, den4, g4, dq4, &
        dk4, dv4)
    call linattn_plan_destroy(plan_s)
    call linattn_plan_create(plan_s, LINATTN_MAP_ELU1, d, e)
    call linattn_causal_forward(plan_s, q, k, v, out, den)
    call linattn_causal_backward(plan_s, q, k, v, out, den, g, dq, dk, dv)
    call linattn_plan_destroy(plan_s)
    call close_to(real(dq4, real64), dq, 1e-4_real64, 'real32 dq')
    call close_to(real(dk4, real64), dk, 1e-4_real64, 'real32 dk')
    call close_to(real(dv4, real64), dv, 1e-4_real64, 'real32 dv')
  end subroutine single_check

  subroutine refusal_check()
    real(real64) :: q(d, n), k(d, n), v(e, n), g(e, n), out(e, n), den(n)
    real(real64) :: dq(d, n), dk(d, n), dv(e, n + 1), dw(m, d)
    call fill(q, 41, -1.0_real64, 1.0_real64)
    call fill(k, 42, -1.0_real64, 1.0_real64)
    call fill(v, 43, -1.0_real64, 1.0_real64)
    call fill(g, 44, -1.0_real64, 1.0_real64)
    call linattn_attention_forward(plan, q, k, v, out, den)
    dq = 7
    dk = 7
    dv = 7
    dw = 7
    msg = ''
    call linattn_attention_backward(plan, q, k, v, out, den, g, dq, dk, dv, &
        dw=dw, stat=st, errmsg=msg)
    call check(st == -20 .and. index(msg, 'tokens of dv') > 0, &
        'dv with a token too many: refused, named')
    call check(all(dq == 7) .and. all(dk == 7) .and. all(dv == 7) .and. &
        all(dw == 7), 'nothing written on the refused call')
    den(3) = 0
    call linattn_causal_backward(plan, q, k, v, out, den, g, dq, dk, &
        dv(:, 1:n), stat=st, errmsg=msg)
    call check(st == LINATTN_EDENOM .and. all(dq == 7), &
        'a zero normalizer: EDENOM, nothing written')
  end subroutine refusal_check

  ! Finite inputs, gradients beyond the range: identity, dS = 2 huge
  ! overflows, EOVERFLOW at token 1 (of dk, dv) with dq finite; custom
  ! ReLU(2^-20 x + 1) where only dw leaves the range: EOVERFLOW, bad_row
  ! 0 (no token), dw and db untouched.
  subroutine overflow_check()
    type(linattn_plan) :: p
    real(real64) :: q(1, 2), k(1, 2), v(1, 2), g(1, 2), out(1, 2), den(2)
    real(real64) :: dq(1, 2), dk(1, 2), dv(1, 2), dw(1, 1), db(1), w(1, 1)
    real(real64) :: b(1)
    integer(int64) :: row
    character(512) :: m
    call linattn_plan_create(p, LINATTN_MAP_IDENTITY, 1, 1)
    q = 1
    k(1, :) = [1.0_real64, 0.0_real64]
    v = 1
    call linattn_attention_forward(p, q, k, v, out, den)
    g = huge(1.0_real64) / 4 * 3
    row = -7
    call linattn_attention_backward(p, q, k, v, out, den, g, dq, dk, dv, &
        bad_row=row, stat=st, errmsg=m)
    call check(st == LINATTN_EOVERFLOW .and. row == 1 .and. &
        all(abs(dq) <= huge(1.0_real64)) .and. index(m, '(token 1)') > 0, &
        'dS beyond the range: EOVERFLOW at token 1, dq finite')
    call linattn_plan_destroy(p)
    w = 2.0_real64**(-20)
    b = 1
    call linattn_plan_create_custom(p, LINATTN_ACT_RELU, w, b, 1)
    q = 0
    k(1, :) = [0.0_real64, 2.0_real64**20]
    v(1, :) = [0.0_real64, 1.0_real64]
    call linattn_attention_forward(p, q, k, v, out, den)
    g = huge(1.0_real64) / 4
    dw = 7
    db = 7
    row = -7
    m = ''
    call linattn_attention_backward(p, q, k, v, out, den, g, dq, dk, dv, &
        dw=dw, db=db, bad_row=row, stat=st, errmsg=m)
    call check(st == LINATTN_EOVERFLOW .and. row == 0 .and. &
        all(dw == 7) .and. all(db == 7) .and. index(m, '(token') == 0 .and. &
        len_trim(m) > 0, &
        'only dw beyond the range: EOVERFLOW, no token, dw and db untouched')
    call linattn_plan_destroy(p)
  end subroutine overflow_check
end program test_f_grad
