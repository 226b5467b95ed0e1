! SPDX-License-Identifier: BSD-3-Clause
! test_f_mpi.f90 -- module linattn_mpi under mpirun (np 1 to 8): the
! distributed calls from Fortran equal module linattn's serial calls on
! the whole sequence (real64 to 1e-12, real32 to 1e-5 relative; rank 0
! without tokens, uneven blocks), through type(MPI_Comm) and through the
! integer handle; a bad argument on one rank (found by the module, or by
! C) gives the same stat on every rank with nothing written (run.sh's
! timeout catches a hang); the collective checkpoint: save, load,
! continue equals the uninterrupted state byte for byte, a damaged file
! refused with one stat everywhere; sums beyond the range: the serial
! call's LINATTN_EOVERFLOW and token everywhere; a packed stream with
! per-sequence states (absorbed: each final state where its sequence's
! last token is, the other ranks' unchanged); the distributed backward
! (dq, dk, dv, the summed dw, db of a trained map, key weights with
! dL/dw, the handed state) equals module linattn's backward of the whole
! sequence, causal and not, and one rank's wrong size(den) gives the same
! stat everywhere with nothing written; decay across ranks (a decayed
! plan, gates= of linattn_mpi_causal_ex, gates= and head_decays= of the
! batched causal call) equals module linattn's serial calls, and a gate
! above 0 on one rank gives the same stat everywhere; the packed
! backward (offsets=, and causal states=, dstates=) equals module
! linattn's on the whole stream.  Prints Check's closing line.
program test_f_mpi
  use, intrinsic :: iso_fortran_env, only: int8, int64, real32, real64
  use mpi_f08
  use linattn
  use linattn_mpi
  implicit none
  integer :: rank, nranks, provided, failures, tests, nfail
  integer(int64) :: off, cnt
  integer, parameter :: n = 23, d = 3, e = 2

  call MPI_Init_thread(LINATTN_MPI_THREAD_LEVEL, provided)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  tests = 0
  nfail = 0
  call block(int(n, int64), off, cnt)

  ! (tests called in turn, not passed as arguments: an internal procedure
  ! as an argument needs an executable stack)
  failures = 0
  call t_equal_d()
  call agree('distributed equals serial, real64')
  call t_equal_s()
  call agree('distributed equals serial, real32')
  call t_bad_argument()
  call agree('one rank bad argument')
  call t_checkpoint()
  call agree('state collectives and checkpoint')
  call t_overflow()
  call agree('sums beyond the range (EOVERFLOW)')
  call t_packed()
  call agree('packed stream across ranks (offsets, weights, den)')
  call t_packed_states()
  call agree('packed stream with per-sequence states (states, absorb)')
  call t_grad_d()
  call agree('distributed backward equals serial, real64')
  call t_grad_s()
  call agree('distributed backward equals serial, real32')
  call t_grad_batched()
  call agree('distributed batched backward equals serial (3-D, two heads)')
  call t_decay()
  call agree('decay and gates across ranks (gates=, head_decays=, dgates=)')
  call t_grad_packed()
  call agree('packed backward across ranks (offsets=, states=, dstates=)')

  if (rank == 0) then
    write (*, '(a, i0, a, i0, a, i0, a)') 'fortran mpi, np ', nranks, ': ', &
        tests - nfail, ' passed, ', nfail, ' failed'
    write (*, '(i0, a, i0, a, i0, a)') merge(100 * (tests - nfail) / tests, &
        100, tests > 0), '%: Checks: ', tests, ', Failures: ', nfail, &
        ', Errors: 0'
  end if
  call MPI_Finalize()
  if (nfail > 0) error stop 1

contains

  include 'fmpitest.inc'

  subroutine t_equal_d()
    real(real64) :: q(d, n), k(d, n), v(e, n), ref(e, n), out(e, n)
    real(real64) :: qb(d, n, 2), kb(d, n, 2), vb(e, n, 2), refb(e, n, 2), outb(e, n, 2)
    type(linattn_plan) :: plan
    type(linattn_opts) :: o
    integer :: map, st, h
    integer(int64) :: a, b
    a = off + 1
    b = off + cnt
    call fill(q, 1, 0.5d0)
    call fill(k, 2, 0.5d0)
    call fill(v, 3, 1d0)
    do map = 1, 2
      o%seed = 17
      call linattn_plan_create(plan, merge(LINATTN_MAP_ELU1, LINATTN_MAP_FAVOR, &
          map == 1), d, e, o)
      ! non-causal: queries and keys of this rank; mpi_f08 handle
      out = -7
      call linattn_attention(plan, q, k, v, ref)
      call linattn_mpi_attention(plan, MPI_COMM_WORLD, q(:, a:b), k(:, a:b), &
          v(:, a:b), out(:, a:b), stat=st)
      call check(st == 0 .and. relerr(out(:, a:b), ref(:, a:b)) < 1d-12, &
          'attention differs: stat ' // trim(itoa(st)))
      call check(all(out(:, 1:a-1) == -7) .and. all(out(:, b+1:) == -7), &
          'attention wrote other tokens')
      ! causal through the integer handle
      out = -7
      call linattn_causal(plan, q, k, v, ref)
      call linattn_mpi_causal(plan, MPI_COMM_WORLD%MPI_VAL, q(:, a:b), &
          k(:, a:b), v(:, a:b), out(:, a:b), stat=st)
      call check(st == 0 .and. relerr(out(:, a:b), ref(:, a:b)) < 1d-12, &
          'causal differs')
      call check(all(out(:, 1:a-1) == -7) .and. all(out(:, b+1:) == -7), &
          'causal wrote other tokens')
      ! batched, two heads (3-D): one reduction / one scan for both
      do h = 1, 2
        qb(:, :, h) = q * h
        kb(:, :, h) = k / h
        vb(:, :, h) = v + h
      end do
      call linattn_batched_causal(plan, qb, kb, vb, refb)
      outb = -7
      call linattn_mpi_batched_causal(plan, MPI_COMM_WORLD, qb(:, a:b, :), &
          kb(:, a:b, :), vb(:, a:b, :), outb(:, a:b, :), stat=st)
      call check(st == 0 .and. relerr(reshape(outb(:, a:b, :), [e, 2 * int(cnt)]), &
          reshape(refb(:, a:b, :), [e, 2 * int(cnt)])) < 1d-12, 'batched causal differs')
      call linattn_batched_attention(plan, qb, kb, vb, refb)
      call linattn_mpi_batched_attention(plan, MPI_COMM_WORLD%MPI_VAL, &
          qb(:, a:b, :), kb(:, a:b, :), vb(:, a:b, :), outb(:, a:b, :), stat=st)
      call check(st == 0 .and. relerr(reshape(outb(:, a:b, :), [e, 2 * int(cnt)]), &
          reshape(refb(:, a:b, :), [e, 2 * int(cnt)])) < 1d-12, 'batched attention differs')
      call linattn_plan_destroy(plan)
    end do
  end subroutine t_equal_d

  ! Decay: a plan of ln gamma = -0.05; the plain causal call, causal_ex
  ! with gates= (one of -1e3: what came before dies there) and den=, and
  ! the 3-D batched causal call with gates= and head_decays= (two heads),
  ! against module linattn's serial calls on the whole sequence; a gate
  ! above 0 on the last rank: C's -i of ex (-13) on every rank, nothing
  ! written.
  subroutine t_decay()
    real(real64) :: q(d, n), k(d, n), v(e, n), ref(e, n), out(e, n)
    real(real64) :: g(n), den(n), rden(n)
    real(real64) :: qb(d, n, 2), kb(d, n, 2), vb(e, n, 2), refb(e, n, 2), &
        outb(e, n, 2), gb(n, 2)
    real(real64), allocatable :: gl(:, :)
    real(real64), parameter :: hd(2) = [0d0, -0.2d0]
    type(linattn_plan) :: plan
    type(linattn_opts) :: o
    integer :: st, h, i
    integer(int64) :: a, b
    a = off + 1
    b = off + cnt
    call fill(q, 21, 0.5d0)
    call fill(k, 22, 0.5d0)
    call fill(v, 23, 1d0)
    do i = 1, n
      g(i) = -0.1d0 * mod(i, 3)
    end do
    g(9) = -1d3
    o%log_decay = -0.05d0
    call linattn_plan_create(plan, LINATTN_MAP_ELU1, d, e, o)
    out = -7
    call linattn_causal(plan, q, k, v, ref)
    call linattn_mpi_causal(plan, MPI_COMM_WORLD, q(:, a:b), k(:, a:b), &
        v(:, a:b), out(:, a:b), stat=st)
    call check(st == 0 .and. relerr(out(:, a:b), ref(:, a:b)) < 1d-12, &
        'decayed causal differs: stat ' // trim(itoa(st)))
    out = -7
    den = -7
    call linattn_causal_ex(plan, q, k, v, ref, den=rden, gates=g)
    call linattn_mpi_causal_ex(plan, MPI_COMM_WORLD%MPI_VAL, q(:, a:b), &
        k(:, a:b), v(:, a:b), out(:, a:b), den=den(a:b), gates=g(a:b), &
        stat=st)
    call check(st == 0 .and. relerr(out(:, a:b), ref(:, a:b)) < 1d-12 .and. &
        relerr(reshape(den(a:b), [1, int(cnt)]), &
        reshape(rden(a:b), [1, int(cnt)])) < 1d-12, &
        'gated causal_ex differs: stat ' // trim(itoa(st)))
    call check(all(out(:, 1:a-1) == -7) .and. all(out(:, b+1:) == -7), &
        'gated causal_ex wrote other tokens')
    ! a gate above 0 on the last rank
    out = -7
    if (rank == nranks - 1 .and. cnt > 0) g(b) = 0.5d0
    call linattn_mpi_causal_ex(plan, MPI_COMM_WORLD, q(:, a:b), k(:, a:b), &
        v(:, a:b), out(:, a:b), gates=g(a:b), stat=st)
    call check(st == -13 .and. all(out == -7), 'a gate above 0: stat ' // &
        trim(itoa(st)))
    if (rank == nranks - 1 .and. cnt > 0) g(b) = -0.1d0 * mod(b, 3_int64)
    ! batched, two heads, a gamma per head and gates
    do h = 1, 2
      qb(:, :, h) = q * h
      kb(:, :, h) = k / h
      vb(:, :, h) = v + h
      gb(:, h) = g / h
    end do
    allocate (gl(cnt, 2))
    gl = gb(a:b, :)
    call linattn_batched_causal(plan, qb, kb, vb, refb, gates=gb, &
        head_decays=hd)
    outb = -7
    call linattn_mpi_batched_causal(plan, MPI_COMM_WORLD, qb(:, a:b, :), &
        kb(:, a:b, :), vb(:, a:b, :), outb(:, a:b, :), gates=gl, &
        head_decays=hd, stat=st)
    call check(st == 0 .and. relerr(reshape(outb(:, a:b, :), &
        [e, 2 * int(cnt)]), reshape(refb(:, a:b, :), [e, 2 * int(cnt)])) &
        < 1d-12, 'batched causal with head_decays differs: stat ' // &
        trim(itoa(st)))
    deallocate (gl)
    ! the backward with gates and dL/da against module linattn's on the
    ! whole sequence (the forward's den and out above: rden, ref)
    call t_decay_backward(plan, q, k, v, g, ref, rden, a, b)
    call linattn_plan_destroy(plan)
  end subroutine t_decay

  subroutine t_decay_backward(plan, q, k, v, g, ref, rden, a, b)
    type(linattn_plan), intent(in) :: plan
    real(real64), intent(in) :: q(:, :), k(:, :), v(:, :), g(:), ref(:, :)
    real(real64), intent(in) :: rden(:)
    integer(int64), intent(in) :: a, b
    real(real64) :: gr(e, n), dq(d, n), dk(d, n), dv(e, n), da(n)
    real(real64) :: rq(d, n), rk(d, n), rv(e, n), rda(n)
    integer :: st
    call fill(gr, 24, 1d0)
    call linattn_causal_backward(plan, q, k, v, ref, rden, gr, rq, rk, rv, &
        gates=g, dgates=rda)
    dq = -7
    dk = -7
    dv = -7
    da = -7
    call linattn_mpi_causal_backward(plan, MPI_COMM_WORLD, q(:, a:b), &
        k(:, a:b), v(:, a:b), ref(:, a:b), rden(a:b), gr(:, a:b), &
        dq(:, a:b), dk(:, a:b), dv(:, a:b), gates=g(a:b), dgates=da(a:b), &
        stat=st)
    call check(st == 0 .and. relerr(dq(:, a:b), rq(:, a:b)) < 1d-12 .and. &
        relerr(dk(:, a:b), rk(:, a:b)) < 1d-12 .and. &
        relerr(dv(:, a:b), rv(:, a:b)) < 1d-12 .and. &
        maxval(abs(da(a:b) - rda(a:b)), mask=b >= a) <= &
        1d-12 * maxval(abs(rda)), 'gated backward differs: stat ' // &
        trim(itoa(st)))
    call check(all(da(1:a-1) == -7) .and. all(da(b+1:) == -7), &
        'gated backward wrote other tokens')
  end subroutine t_decay_backward

  ! The packed backward: the stream of t_packed (6 sequences, empty ones
  ! among them) with a trained map (custom exp: dw, db), causal from
  ! per-sequence states (dstates= on the rank holding each sequence's
  ! first token, 0 for an empty one everywhere, the rest untouched) and
  ! not, against module linattn's packed backward on the whole stream.
  subroutine t_grad_packed()
    real(real64) :: q(d, n), k(d, n), v(e, n), g(e, n), out(e, n), den(n)
    real(real64) :: dq(d, n), dk(d, n), dv(e, n), rq(d, n), rk(d, n), rv(e, n)
    real(real64) :: w(4, d), b(4), dw(4, d), db(4), rw(4, d), rb(4)
    real(real64) :: lden(n), lout(e, n), sk(d, 2), sv(e, 2)
    real(real64), allocatable :: ds(:), rds(:)
    integer(int64), parameter :: offs(7) = [0_int64, 0_int64, 6_int64, &
        7_int64, 7_int64, 15_int64, int(n, int64)]
    integer, parameter :: nseq = 6
    type(linattn_plan) :: plan
    type(linattn_state) :: sts(nseq)
    integer :: st, causal, s
    integer(int64) :: a, bb, ln
    logical :: mine
    a = off + 1
    bb = off + cnt
    call fill(q, 31, 0.5d0)
    call fill(k, 32, 0.5d0)
    call fill(v, 33, 1d0)
    call fill(g, 34, 1d0)
    call fill(w, 35, 0.8d0)
    call fill(sk, 36, 0.5d0)
    call fill(sv, 37, 1d0)
    b = [0.1d0, -0.2d0, 0.3d0, 0d0]
    call linattn_plan_create_custom(plan, LINATTN_ACT_EXP, w, b, e)
    ln = 4 * (e + 1)
    allocate (ds(ln * nseq), rds(ln * nseq))
    do s = 1, nseq
      call linattn_state_create(sts(s), plan)
      if (mod(s, 3) > 0) call linattn_state_update(sts(s), &
          sk(:, 1:mod(s, 3)), sv(:, 1:mod(s, 3)))
    end do
    do causal = 0, 1
      dq = -7
      dk = -7
      dv = -7
      ds = -7
      rds = -7
      if (causal == 1) then
        call linattn_causal_ex(plan, q, k, v, out, den=den, offsets=offs, &
            states=sts)
        call linattn_causal_backward(plan, q, k, v, out, den, g, rq, rk, rv, &
            dw=rw, db=rb, offsets=offs, states=sts, dstates=rds)
        call linattn_mpi_causal_ex(plan, MPI_COMM_WORLD, q(:, a:bb), &
            k(:, a:bb), v(:, a:bb), lout(:, a:bb), den=lden(a:bb), &
            offsets=offs, states=sts)
        call linattn_mpi_causal_backward(plan, MPI_COMM_WORLD, q(:, a:bb), &
            k(:, a:bb), v(:, a:bb), lout(:, a:bb), lden(a:bb), g(:, a:bb), &
            dq(:, a:bb), dk(:, a:bb), dv(:, a:bb), dw=dw, db=db, stat=st, &
            offsets=offs, states=sts, dstates=ds)
      else
        call linattn_attention_ex(plan, q, k, v, out, den=den, offsets=offs)
        call linattn_attention_backward(plan, q, k, v, out, den, g, rq, rk, &
            rv, dw=rw, db=rb, offsets=offs)
        call linattn_mpi_attention_ex(plan, MPI_COMM_WORLD%MPI_VAL, &
            q(:, a:bb), k(:, a:bb), v(:, a:bb), lout(:, a:bb), &
            den=lden(a:bb), offsets=offs)
        call linattn_mpi_attention_backward(plan, MPI_COMM_WORLD%MPI_VAL, &
            q(:, a:bb), k(:, a:bb), v(:, a:bb), lout(:, a:bb), lden(a:bb), &
            g(:, a:bb), dq(:, a:bb), dk(:, a:bb), dv(:, a:bb), dw=dw, db=db, &
            stat=st, offsets=offs)
      end if
      call check(st == 0 .and. relerr(dq(:, a:bb), rq(:, a:bb)) < 1d-12 &
          .and. relerr(dk(:, a:bb), rk(:, a:bb)) < 1d-12 .and. &
          relerr(dv(:, a:bb), rv(:, a:bb)) < 1d-12 .and. &
          relerr(dw, rw) < 1d-12 .and. relerr(reshape(db, [4, 1]), &
          reshape(rb, [4, 1])) < 1d-12, 'packed backward, causal ' // &
          trim(itoa(causal)) // ': stat ' // trim(itoa(st)))
      call check(all(dq(:, 1:a-1) == -7) .and. all(dq(:, bb+1:) == -7), &
          'packed backward wrote tokens of other ranks')
      do s = 1, nseq
        if (causal == 0) exit
        mine = offs(s + 1) > offs(s) .and. offs(s) + 1 >= a .and. &
            offs(s) + 1 <= bb
        if (mine) then
          call check(relerr(reshape(ds((s - 1) * ln + 1:s * ln), [1_int64, ln]), &
              reshape(rds((s - 1) * ln + 1:s * ln), [1_int64, ln])) < 1d-12, &
              'dstates of sequence ' // trim(itoa(s)))
        else if (offs(s + 1) == offs(s)) then
          call check(all(ds((s - 1) * ln + 1:s * ln) == 0), &
              'dstates of empty sequence ' // trim(itoa(s)))
        else
          call check(all(ds((s - 1) * ln + 1:s * ln) == -7), &
              'dstates of sequence ' // trim(itoa(s)) // ' written off its rank')
        end if
      end do
    end do
    do s = 1, nseq
      call linattn_state_destroy(sts(s))
    end do
    call linattn_plan_destroy(plan)
  end subroutine t_grad_packed

  ! A packed stream of 6 sequences (empty ones, one token long) over the
  ! ranks' uneven blocks, weighted (a weight 0 among them) under the count
  ! normalizer: linattn_mpi_causal_ex and linattn_mpi_attention_ex with
  ! offsets=, weights= and den= equal module linattn's serial packed
  ! calls on the whole stream.
  subroutine t_packed()
    real(real64) :: q(d, n), k(d, n), v(e, n), ref(e, n), out(e, n)
    real(real64) :: w(n), den(n), rden(n)
    integer(int64), parameter :: offs(7) = [0_int64, 0_int64, 6_int64, &
        7_int64, 7_int64, 15_int64, int(n, int64)]
    type(linattn_plan) :: plan
    type(linattn_opts) :: o
    integer :: st, causal, i
    integer(int64) :: a, b
    a = off + 1
    b = off + cnt
    call fill(q, 4, 0.5d0)
    call fill(k, 5, 0.5d0)
    call fill(v, 6, 1d0)
    do i = 1, n
      w(i) = 0.5d0 + mod(i, 4) * 0.25d0
    end do
    w(9) = 0
    o%denom = LINATTN_DENOM_COUNT
    call linattn_plan_create(plan, LINATTN_MAP_ELU1, d, e, o)
    do causal = 0, 1
      out = -7
      den = -7
      if (causal == 1) then
        call linattn_causal_ex(plan, q, k, v, ref, den=rden, weights=w, &
            offsets=offs)
        call linattn_mpi_causal_ex(plan, MPI_COMM_WORLD, q(:, a:b), &
            k(:, a:b), v(:, a:b), out(:, a:b), den=den(a:b), weights=w(a:b), &
            offsets=offs, stat=st)
      else
        call linattn_attention_ex(plan, q, k, v, ref, den=rden, weights=w, &
            offsets=offs)
        call linattn_mpi_attention_ex(plan, MPI_COMM_WORLD%MPI_VAL, &
            q(:, a:b), k(:, a:b), v(:, a:b), out(:, a:b), den=den(a:b), &
            weights=w(a:b), offsets=offs, stat=st)
      end if
      call check(st == 0 .and. relerr(out(:, a:b), ref(:, a:b)) < 1d-12 .and. &
          relerr(reshape(den(a:b), [1, int(cnt)]), &
          reshape(rden(a:b), [1, int(cnt)])) < 1d-12, &
          'packed differs: causal ' // trim(itoa(causal)) // ', stat ' // &
          trim(itoa(st)))
      call check(all(out(:, 1:a-1) == -7) .and. all(out(:, b+1:) == -7) .and. &
          all(den(1:a-1) == -7) .and. all(den(b+1:) == -7), &
          'packed call wrote other tokens')
    end do
    ! offsets that do not end at every rank's tokens: C's -i of ex everywhere
    call linattn_mpi_causal_ex(plan, MPI_COMM_WORLD, q(:, a:b), k(:, a:b), &
        v(:, a:b), out(:, a:b), offsets=offs(1:6), stat=st)
    call check(st == -13, 'short offsets: stat ' // trim(itoa(st)))
    call linattn_plan_destroy(plan)
  end subroutine t_packed

  ! The stream of t_packed from per-sequence states (sequence s's holding
  ! mod(s, 3) tokens of its own), absorbed: outputs as module linattn's
  ! serial packed call's from the same states; each final state, on the
  ! rank holding its sequence's last token, as the serial call leaves it
  ! (S, z to 1e-12, the same tokens), every other entry unchanged.
  subroutine t_packed_states()
    real(real64) :: q(d, n), k(d, n), v(e, n), ref(e, n), out(e, n)
    real(real64) :: sk(d, 2), sv(e, 2)
    real(real64) :: s1(d, e), z1(d), s2(d, e), z2(d)
    integer(int64), parameter :: offs(7) = [0_int64, 0_int64, 6_int64, &
        7_int64, 7_int64, 15_int64, int(n, int64)]
    integer, parameter :: nseq = 6
    type(linattn_plan) :: plan
    type(linattn_state) :: mine(nseq), refs(nseq), orig(nseq)
    integer :: st, causal, s
    integer(int64) :: a, b, t1, t2
    logical :: last_here
    a = off + 1
    b = off + cnt
    call fill(q, 14, 0.5d0)
    call fill(k, 15, 0.5d0)
    call fill(v, 16, 1d0)
    call fill(sk, 17, 0.5d0)
    call fill(sv, 18, 1d0)
    call linattn_plan_create(plan, LINATTN_MAP_ELU1, d, e)
    do causal = 0, 1
      do s = 1, nseq
        call linattn_state_create(mine(s), plan)
        call linattn_state_create(refs(s), plan)
        call linattn_state_create(orig(s), plan)
        if (mod(s, 3) > 0) call linattn_state_update(mine(s), &
            sk(:, 1:mod(s, 3)), sv(:, 1:mod(s, 3)))
        call linattn_state_copy(refs(s), mine(s))
        call linattn_state_copy(orig(s), mine(s))
      end do
      out = -7
      if (causal == 1) then
        call linattn_causal_ex(plan, q, k, v, ref, offsets=offs, &
            states=refs, absorb=.true.)
        call linattn_mpi_causal_ex(plan, MPI_COMM_WORLD, q(:, a:b), &
            k(:, a:b), v(:, a:b), out(:, a:b), offsets=offs, states=mine, &
            absorb=.true., stat=st)
      else
        call linattn_attention_ex(plan, q, k, v, ref, offsets=offs, &
            states=refs, absorb=.true.)
        call linattn_mpi_attention_ex(plan, MPI_COMM_WORLD%MPI_VAL, &
            q(:, a:b), k(:, a:b), v(:, a:b), out(:, a:b), offsets=offs, &
            states=mine, absorb=.true., stat=st)
      end if
      call check(st == 0 .and. relerr(out(:, a:b), ref(:, a:b)) < 1d-12, &
          'packed with states differs: causal ' // trim(itoa(causal)) // &
          ', stat ' // trim(itoa(st)))
      do s = 1, nseq
        last_here = offs(s + 1) > offs(s) .and. offs(s + 1) >= a .and. &
            offs(s + 1) <= b
        call linattn_state_get(mine(s), s1, z1, t1)
        if (last_here) then
          call linattn_state_get(refs(s), s2, z2, t2)
        else
          call linattn_state_get(orig(s), s2, z2, t2)
        end if
        call check(t1 == t2 .and. relerr(s1, s2) < 1d-12 .and. &
            relerr(reshape(z1, [1, d]), reshape(z2, [1, d])) < 1d-12 .and. &
            (last_here .or. (all(s1 == s2) .and. all(z1 == z2))), &
            'state of sequence ' // trim(itoa(s)) // ', causal ' // &
            trim(itoa(causal)))
        call linattn_state_destroy(mine(s))
        call linattn_state_destroy(refs(s))
        call linattn_state_destroy(orig(s))
      end do
    end do
    call linattn_plan_destroy(plan)
  end subroutine t_packed_states

  ! The distributed backward against module linattn's on the whole
  ! sequence: a trained map (custom exp: W, b, shifts), causal and not,
  ! with key weights and dL/dw, the handed global state.
  subroutine t_grad_d()
    real(real64) :: q(d, n), k(d, n), v(e, n), g(e, n), out(e, n), den(n)
    real(real64) :: dq(d, n), dk(d, n), dv(e, n), rq(d, n), rk(d, n), rv(e, n)
    real(real64) :: w(4, d), b(4), dw(4, d), db(4), rw(4, d), rb(4)
    real(real64) :: wt(n), dwt(n), rwt(n), lden(n), lout(e, n)
    type(linattn_plan) :: plan
    type(linattn_state) :: gs(1)
    integer :: st, causal, variant
    integer(int64) :: a, bb
    character(200) :: msg
    a = off + 1
    bb = off + cnt
    call fill(q, 1, 0.5d0)
    call fill(k, 2, 0.5d0)
    call fill(v, 3, 1d0)
    call fill(g, 4, 1d0)
    call fill(w, 5, 0.8d0)
    b = [0.1d0, -0.2d0, 0.3d0, 0d0]
    wt = 1 + 0.5d0 * sin(1.7d0 * [(st, st = 1, n)])
    call linattn_plan_create_custom(plan, LINATTN_ACT_EXP, w, b, e)
    do causal = 0, 1
      do variant = 0, 2
        if (causal == 1 .and. variant == 2) cycle
        ! the serial reference on the whole sequence
        if (causal == 1) then
          if (variant == 1) then
            call linattn_causal_ex(plan, q, k, v, out, den=den, weights=wt)
            call linattn_causal_backward(plan, q, k, v, out, den, g, rq, rk, &
                rv, dw=rw, db=rb, weights=wt, dweights=rwt)
          else
            call linattn_causal_forward(plan, q, k, v, out, den)
            call linattn_causal_backward(plan, q, k, v, out, den, g, rq, rk, &
                rv, dw=rw, db=rb)
          end if
        else
          if (variant == 1) then
            call linattn_attention_ex(plan, q, k, v, out, den=den, weights=wt)
            call linattn_attention_backward(plan, q, k, v, out, den, g, rq, &
                rk, rv, dw=rw, db=rb, weights=wt, dweights=rwt)
          else
            call linattn_attention_forward(plan, q, k, v, out, den)
            call linattn_attention_backward(plan, q, k, v, out, den, g, rq, &
                rk, rv, dw=rw, db=rb)
          end if
        end if
        ! the distributed forward and backward on this rank's tokens
        dq = -7
        dk = -7
        dv = -7
        dwt = -7
        if (causal == 1) then
          if (variant == 1) then
            call linattn_mpi_causal_ex(plan, MPI_COMM_WORLD, q(:, a:bb), &
                k(:, a:bb), v(:, a:bb), lout(:, a:bb), den=lden(a:bb), &
                weights=wt(a:bb))
            call linattn_mpi_causal_backward(plan, MPI_COMM_WORLD, &
                q(:, a:bb), k(:, a:bb), v(:, a:bb), lout(:, a:bb), &
                lden(a:bb), g(:, a:bb), dq(:, a:bb), dk(:, a:bb), &
                dv(:, a:bb), dw=dw, db=db, stat=st, weights=wt(a:bb), &
                dweights=dwt(a:bb))
          else
            call linattn_mpi_causal_ex(plan, MPI_COMM_WORLD%MPI_VAL, &
                q(:, a:bb), k(:, a:bb), v(:, a:bb), lout(:, a:bb), &
                den=lden(a:bb))
            call linattn_mpi_causal_backward(plan, MPI_COMM_WORLD%MPI_VAL, &
                q(:, a:bb), k(:, a:bb), v(:, a:bb), lout(:, a:bb), &
                lden(a:bb), g(:, a:bb), dq(:, a:bb), dk(:, a:bb), &
                dv(:, a:bb), dw=dw, db=db, stat=st)
          end if
        else if (variant == 1) then
          call linattn_mpi_attention_ex(plan, MPI_COMM_WORLD, q(:, a:bb), &
              k(:, a:bb), v(:, a:bb), lout(:, a:bb), den=lden(a:bb), &
              weights=wt(a:bb))
          call linattn_mpi_attention_backward(plan, MPI_COMM_WORLD, &
              q(:, a:bb), k(:, a:bb), v(:, a:bb), lout(:, a:bb), lden(a:bb), &
              g(:, a:bb), dq(:, a:bb), dk(:, a:bb), dv(:, a:bb), dw=dw, &
              db=db, stat=st, weights=wt(a:bb), dweights=dwt(a:bb))
        else
          call linattn_mpi_attention_ex(plan, MPI_COMM_WORLD, q(:, a:bb), &
              k(:, a:bb), v(:, a:bb), lout(:, a:bb), den=lden(a:bb))
          if (variant == 2) then ! the global state handed over
            call linattn_state_create(gs(1), plan)
            call linattn_state_update(gs(1), k(:, a:bb), v(:, a:bb))
            call linattn_mpi_state_allreduce(gs, MPI_COMM_WORLD)
            call linattn_mpi_attention_backward(plan, MPI_COMM_WORLD, &
                q(:, a:bb), k(:, a:bb), v(:, a:bb), lout(:, a:bb), &
                lden(a:bb), g(:, a:bb), dq(:, a:bb), dk(:, a:bb), &
                dv(:, a:bb), dw=dw, db=db, state=gs(1), stat=st)
            call linattn_state_destroy(gs(1))
          else
            call linattn_mpi_attention_backward(plan, MPI_COMM_WORLD, &
                q(:, a:bb), k(:, a:bb), v(:, a:bb), lout(:, a:bb), &
                lden(a:bb), g(:, a:bb), dq(:, a:bb), dk(:, a:bb), &
                dv(:, a:bb), dw=dw, db=db, stat=st)
          end if
        end if
        call check(st == 0 .and. relerr(dq(:, a:bb), rq(:, a:bb)) < 1d-12 &
            .and. relerr(dk(:, a:bb), rk(:, a:bb)) < 1d-12 .and. &
            relerr(dv(:, a:bb), rv(:, a:bb)) < 1d-12 .and. &
            relerr(dw, rw) < 1d-12 .and. relerr(reshape(db, [4, 1]), &
            reshape(rb, [4, 1])) < 1d-12, 'backward, causal ' // &
            trim(itoa(causal)) // ' variant ' // trim(itoa(variant)) // &
            ': stat ' // trim(itoa(st)))
        if (variant == 1) call check(relerr(reshape(dwt(a:bb), [1, int(cnt)]), &
            reshape(rwt(a:bb), [1, int(cnt)])) < 1d-12, 'dL/dw')
        call check(all(dq(:, 1:a-1) == -7) .and. all(dq(:, bb+1:) == -7), &
            'tokens of other ranks written')
      end do
    end do
    ! one rank's wrong size(den): the module refuses, every rank agrees
    dq = -7
    msg = ''
    if (rank == nranks - 1) then
      call linattn_mpi_causal_backward(plan, MPI_COMM_WORLD, q(:, a:bb), &
          k(:, a:bb), v(:, a:bb), lout(:, a:bb), lden(a:bb - 1), &
          g(:, a:bb), dq(:, a:bb), dk(:, a:bb), dv(:, a:bb), stat=st, &
          errmsg=msg)
    else
      call linattn_mpi_causal_backward(plan, MPI_COMM_WORLD, q(:, a:bb), &
          k(:, a:bb), v(:, a:bb), lout(:, a:bb), lden(a:bb), g(:, a:bb), &
          dq(:, a:bb), dk(:, a:bb), dv(:, a:bb), stat=st, errmsg=msg)
    end if
    call check(st == -13, 'size(den) on one rank: stat ' // trim(itoa(st)) &
        // ': ' // trim(msg))
    call check(all(dq == -7), 'gradients written after a refusal')
    call linattn_plan_destroy(plan)
  end subroutine t_grad_d

  ! The batched backward over (feature, token, head) arrays, two heads,
  ! causal and not, against module linattn's batched backward; dw, db
  ! summed over the heads and ranks.
  subroutine t_grad_batched()
    integer, parameter :: h = 2
    real(real64) :: q(d, n, h), k(d, n, h), v(e, n, h), g(e, n, h)
    real(real64) :: out(e, n, h), den(n, h), lout(e, n, h)
    real(real64) :: dq(d, n, h), dk(d, n, h), dv(e, n, h)
    real(real64) :: rq(d, n, h), rk(d, n, h), rv(e, n, h)
    real(real64) :: w(4, d), b(4), dw(4, d), db(4), rw(4, d), rb(4)
    real(real64), allocatable :: dl(:, :) ! den as C keeps it: dense
    type(linattn_plan) :: plan
    integer :: st, causal, j
    integer(int64) :: a, bb
    a = off + 1
    bb = off + cnt
    do j = 1, h
      call fill(q(:, :, j), 1 + j, 0.5d0)
      call fill(k(:, :, j), 3 + j, 0.5d0)
      call fill(v(:, :, j), 5 + j, 1d0)
      call fill(g(:, :, j), 7 + j, 1d0)
    end do
    call fill(w, 9, 0.8d0)
    b = [0.2d0, -0.1d0, 0d0, 0.3d0]
    call linattn_plan_create_custom(plan, LINATTN_ACT_EXP, w, b, e)
    do causal = 0, 1
      if (causal == 1) then
        call linattn_batched_causal_forward(plan, q, k, v, out, den)
        call linattn_batched_causal_backward(plan, q, k, v, out, den, g, rq, &
            rk, rv, dw=rw, db=rb)
      else
        call linattn_batched_attention_forward(plan, q, k, v, out, den)
        call linattn_batched_attention_backward(plan, q, k, v, out, den, g, &
            rq, rk, rv, dw=rw, db=rb)
      end if
      ! the distributed batched forward with den (dense: dl)
      allocate(dl(cnt, h))
      if (causal == 1) then
        call linattn_mpi_batched_causal_forward(plan, MPI_COMM_WORLD, &
            q(:, a:bb, :), k(:, a:bb, :), v(:, a:bb, :), lout(:, a:bb, :), &
            dl, stat=st)
      else
        call linattn_mpi_batched_attention_forward(plan, &
            MPI_COMM_WORLD%MPI_VAL, q(:, a:bb, :), k(:, a:bb, :), &
            v(:, a:bb, :), lout(:, a:bb, :), dl, stat=st)
      end if
      call check(st == 0 .and. relerr(dl, den(a:bb, :)) < 1d-12, &
          'batched forward with den: stat ' // trim(itoa(st)))
      dq = -7
      if (causal == 1) then
        call linattn_mpi_batched_causal_backward(plan, MPI_COMM_WORLD, &
            q(:, a:bb, :), k(:, a:bb, :), v(:, a:bb, :), lout(:, a:bb, :), &
            dl, g(:, a:bb, :), dq(:, a:bb, :), dk(:, a:bb, :), &
            dv(:, a:bb, :), dw=dw, db=db, stat=st)
      else
        call linattn_mpi_batched_attention_backward(plan, &
            MPI_COMM_WORLD%MPI_VAL, q(:, a:bb, :), k(:, a:bb, :), &
            v(:, a:bb, :), lout(:, a:bb, :), dl, g(:, a:bb, :), &
            dq(:, a:bb, :), dk(:, a:bb, :), dv(:, a:bb, :), dw=dw, db=db, &
            stat=st)
      end if
      call check(st == 0 .and. &
          relerr(reshape(dq(:, a:bb, :), [d, 2 * int(cnt)]), &
          reshape(rq(:, a:bb, :), [d, 2 * int(cnt)])) < 1d-12 .and. &
          relerr(reshape(dk(:, a:bb, :), [d, 2 * int(cnt)]), &
          reshape(rk(:, a:bb, :), [d, 2 * int(cnt)])) < 1d-12 .and. &
          relerr(reshape(dv(:, a:bb, :), [e, 2 * int(cnt)]), &
          reshape(rv(:, a:bb, :), [e, 2 * int(cnt)])) < 1d-12 .and. &
          relerr(dw, rw) < 1d-12 .and. relerr(reshape(db, [4, 1]), &
          reshape(rb, [4, 1])) < 1d-12, 'batched backward, causal ' // &
          trim(itoa(causal)) // ': stat ' // trim(itoa(st)))
        call check(all(dq(:, 1:a-1, :) == -7) .and. all(dq(:, bb+1:, :) == -7), &
          'batched: tokens of other ranks written')
      deallocate(dl)
    end do
    call linattn_plan_destroy(plan)
  end subroutine t_grad_batched

  ! real32: causal, the elu+1 map, against the serial real32 backward.
  subroutine t_grad_s()
    real(real64) :: q8(d, n), k8(d, n), v8(e, n), g8(e, n)
    real(real32) :: q(d, n), k(d, n), v(e, n), g(e, n), out(e, n), den(n)
    real(real32) :: dq(d, n), dk(d, n), dv(e, n), rq(d, n), rk(d, n), rv(e, n)
    type(linattn_plan) :: plan
    integer :: st
    integer(int64) :: a, b
    a = off + 1
    b = off + cnt
    call fill(q8, 1, 0.5d0)
    call fill(k8, 2, 0.5d0)
    call fill(v8, 3, 1d0)
    call fill(g8, 4, 1d0)
    q = real(q8, real32)
    k = real(k8, real32)
    v = real(v8, real32)
    g = real(g8, real32)
    call linattn_plan_create(plan, LINATTN_MAP_ELU1, d, e, kind=real32)
    call linattn_causal_forward(plan, q, k, v, out, den)
    call linattn_causal_backward(plan, q, k, v, out, den, g, rq, rk, rv)
    call linattn_mpi_causal_backward(plan, MPI_COMM_WORLD, q(:, a:b), &
        k(:, a:b), v(:, a:b), out(:, a:b), den(a:b), g(:, a:b), dq(:, a:b), &
        dk(:, a:b), dv(:, a:b), stat=st)
    call check(st == 0 .and. relerr(real(dq(:, a:b), real64), &
        real(rq(:, a:b), real64)) < 1d-5 .and. &
        relerr(real(dk(:, a:b), real64), real(rk(:, a:b), real64)) < 1d-5 &
        .and. relerr(real(dv(:, a:b), real64), real(rv(:, a:b), real64)) &
        < 1d-5, 'real32 backward: stat ' // trim(itoa(st)))
    call linattn_plan_destroy(plan)
  end subroutine t_grad_s

  subroutine t_equal_s()
    real(real64) :: q8(d, n), k8(d, n), v8(e, n)
    real(real32) :: q(d, n), k(d, n), v(e, n), ref(e, n), out(e, n)
    type(linattn_plan) :: plan
    integer :: st
    integer(int64) :: a, b
    a = off + 1
    b = off + cnt
    call fill(q8, 1, 0.5d0)
    call fill(k8, 2, 0.5d0)
    call fill(v8, 3, 1d0)
    q = real(q8, real32)
    k = real(k8, real32)
    v = real(v8, real32)
    call linattn_plan_create(plan, LINATTN_MAP_ELU1, d, e, kind=real32)
    call linattn_causal(plan, q, k, v, ref)
    out = -7
    call linattn_mpi_causal(plan, MPI_COMM_WORLD, q(:, a:b), k(:, a:b), &
        v(:, a:b), out(:, a:b), stat=st)
    call check(st == 0 .and. relerr(real(out(:, a:b), real64), &
        real(ref(:, a:b), real64)) < 1d-5, 'real32 causal differs')
    call linattn_attention(plan, q, k, v, ref)
    call linattn_mpi_attention(plan, MPI_COMM_WORLD%MPI_VAL, q(:, a:b), &
        k(:, a:b), v(:, a:b), out(:, a:b), stat=st)
    call check(st == 0 .and. relerr(real(out(:, a:b), real64), &
        real(ref(:, a:b), real64)) < 1d-5, 'real32 attention differs')
    call linattn_plan_destroy(plan)
  end subroutine t_equal_s

  ! One rank's argument is wrong: every rank gets its stat, nothing is
  ! written anywhere, nobody hangs.
  subroutine t_bad_argument()
    real(real64) :: q(d, n), k(d, n), v(e, n), out(e, n), qbad(d + 1, n)
    type(linattn_plan) :: plan
    type(linattn_opts) :: o
    logical :: me
    integer :: st
    integer(int64) :: a, b
    character(200) :: msg
    a = off + 1
    b = off + cnt
    me = rank == nranks - 1
    call fill(q, 1, 0.5d0)
    call fill(k, 2, 0.5d0)
    call fill(v, 3, 1d0)
    qbad = 0
    o%check_finite = .true.
    call linattn_plan_create(plan, LINATTN_MAP_ELU1, d, e, o)
    ! found by the module: q has d + 1 features there (C argument 5 of
    ! linattn_mpi_d_causal: plan, comm, layout, n, q)
    out = -7
    msg = ''
    if (me) then
      call linattn_mpi_causal(plan, MPI_COMM_WORLD, qbad(:, a:b), k(:, a:b), &
          v(:, a:b), out(:, a:b), stat=st, errmsg=msg)
    else
      call linattn_mpi_causal(plan, MPI_COMM_WORLD, q(:, a:b), k(:, a:b), &
          v(:, a:b), out(:, a:b), stat=st, errmsg=msg)
    end if
    call check(st == -5, 'module refusal: stat ' // trim(itoa(st)) // ': ' // trim(msg))
    call check(index(msg, 'linattn_mpi_causal') > 0, 'message: ' // trim(msg))
    call check(all(out == -7), 'output written after a refusal')
    ! found by C: a NaN in one rank's values under check_finite
    if (me .and. cnt > 0) v(1, b) = transfer(-1_int64, 1d0)
    call linattn_mpi_attention(plan, MPI_COMM_WORLD%MPI_VAL, q(:, a:b), &
        k(:, a:b), v(:, a:b), out(:, a:b), stat=st)
    call check(st == LINATTN_ENONFINITE, 'C refusal: stat ' // trim(itoa(st)))
    call check(all(out == -7), 'output written after a C refusal')
    call linattn_plan_destroy(plan)
  end subroutine t_bad_argument

  ! allreduce, exscan, and the collective checkpoint.
  subroutine t_checkpoint()
    real(real64) :: k(d, n), v(e, n)
    type(linattn_plan) :: plan
    type(linattn_state) :: s(1), back, ref, pre(1), before
    integer(int8), allocatable :: b1(:), b2(:)
    integer(int64) :: bytes, a, b, half
    integer :: st, st2, u
    integer(int8) :: byte
    character(300) :: path
    a = off + 1
    b = off + cnt
    call fill(k, 2, 0.5d0)
    call fill(v, 3, 1d0)
    call linattn_plan_create(plan, LINATTN_MAP_FAVOR, d, e)
    call linattn_state_create(s(1), plan)
    call linattn_state_create(pre(1), plan)
    call linattn_state_create(ref, plan)
    call linattn_state_create(before, plan)
    call linattn_state_create(back, plan)
    call linattn_state_update(s(1), k(:, a:b), v(:, a:b))
    call linattn_state_update(pre(1), k(:, a:b), v(:, a:b))
    call linattn_mpi_state_allreduce(s, MPI_COMM_WORLD, stat=st)
    call linattn_mpi_state_exscan(pre, MPI_COMM_WORLD%MPI_VAL, stat=st2)
    call check(st == 0 .and. st2 == 0, 'allreduce/exscan stat')
    call linattn_state_update(ref, k, v)
    call linattn_state_update(before, k(:, 1:off), v(:, 1:off))
    call check(same_sums(s(1), ref), 'allreduce differs from the serial state')
    call check(same_sums(pre(1), before), 'exscan differs from the serial prefix')
    ! save the reduced state, load it, continue with the same keys
    write (path, '(a, i0, a)') 'test_f_mpi_', nranks, '.ck'
    call linattn_mpi_state_save_file(s(1), path, MPI_COMM_WORLD, stat=st)
    call check(st == 0, 'save stat ' // trim(itoa(st)))
    call linattn_mpi_state_load_file(back, path, MPI_COMM_WORLD%MPI_VAL, stat=st)
    call check(st == 0, 'load stat ' // trim(itoa(st)))
    half = 12 ! about half of the n = 23 tokens
    call linattn_state_update(s(1), k(:, 1:half), v(:, 1:half))
    call linattn_state_update(back, k(:, 1:half), v(:, 1:half))
    call linattn_state_save_size(s(1), bytes)
    allocate (b1(bytes), b2(bytes))
    call linattn_state_save(s(1), b1)
    call linattn_state_save(back, b2)
    call check(all(b1 == b2), 'continued state differs')
    ! damaged on rank 0: the same stat everywhere, the state unchanged
    if (rank == 0) then
      open (newunit=u, file=path, access='stream', form='unformatted', &
          status='old', action='readwrite')
      read (u, pos=101) byte
      write (u, pos=101) not(byte)
      close (u)
    end if
    call MPI_Barrier(MPI_COMM_WORLD)
    call linattn_mpi_state_load_file(back, path, MPI_COMM_WORLD, stat=st)
    call check(st == LINATTN_EFORMAT, 'damaged file: stat ' // trim(itoa(st)))
    call linattn_state_save(back, b1)
    call check(all(b1 == b2), 'a refused load changed the state')
    call MPI_Barrier(MPI_COMM_WORLD)
    if (rank == 0) then
      open (newunit=u, file=path, status='old')
      close (u, status='delete')
    end if
    call linattn_state_destroy(s(1))
    call linattn_state_destroy(pre(1))
    call linattn_state_destroy(ref)
    call linattn_state_destroy(before)
    call linattn_state_destroy(back)
    call linattn_plan_destroy(plan)
  end subroutine t_checkpoint

  ! Finite values whose sums leave real32's range (0.6 huge(1.0) in the
  ! last feature of the first and the last token): the serial call's
  ! stat and token on every rank, in bad_row and in linattn_where; the
  ! non-causal call writes nothing (the summed state is refused), the
  ! causal one every token before.  The state allreduce of such sums:
  ! EOVERFLOW, the state unchanged.
  subroutine t_overflow()
    real(real32) :: q(1, n), k(1, n), v(e, n), ref(e, n), out(e, n)
    real(real32) :: q3(1, n, 2), k3(1, n, 2), v3(e, n, 2), ref3(e, n, 2), &
        out3(e, n, 2)
    type(linattn_plan) :: plan
    type(linattn_state) :: s(1), keep
    type(linattn_where) :: w, sw
    integer(int8), allocatable :: b1(:), b2(:)
    integer(int64) :: a, b, row, srow, bytes
    integer :: st, sts
    a = off + 1
    b = off + cnt
    q = 0
    k = 0
    v = 0.25
    v(e, 1) = 0.6 * huge(1.0_real32)
    v(e, n) = v(e, 1)
    call linattn_plan_create(plan, LINATTN_MAP_ELU1, 1, e, kind=real32)
    srow = -3
    call linattn_attention(plan, q, k, v, ref, bad_row=srow, stat=sts)
    out = -7
    row = -3
    call linattn_mpi_attention(plan, MPI_COMM_WORLD, q(:, a:b), k(:, a:b), &
        v(:, a:b), out(:, a:b), bad_row=row, stat=st)
    call check(sts == LINATTN_EOVERFLOW .and. st == sts .and. row == srow, &
        'attention: stat ' // trim(itoa(st)) // ' token ' // &
        trim(itoa(int(row))) // ', serial ' // trim(itoa(sts)) // ' token ' &
        // trim(itoa(int(srow))))
    call check(all(out == -7), 'attention wrote after EOVERFLOW')
    call linattn_causal(plan, q, k, v, ref, bad_row=srow, stat=sts)
    out = -7
    row = -3
    call linattn_mpi_causal(plan, MPI_COMM_WORLD%MPI_VAL, q(:, a:b), &
        k(:, a:b), v(:, a:b), out(:, a:b), bad_row=row, stat=st)
    call check(sts == LINATTN_EOVERFLOW .and. srow == n .and. st == sts &
        .and. row == srow, 'causal: stat ' // trim(itoa(st)) // ' token ' &
        // trim(itoa(int(row))))
    call check(all(out(:, a:min(b, n - 1_int64)) == ref(:, a:min(b, n - 1_int64))), &
        'causal: tokens before the bad one differ')
    call check(all(out(:, 1:a-1) == -7) .and. all(out(:, b+1:) == -7), &
        'causal wrote other tokens')
    ! batched: head 1 without the huge values, head 2 with them
    q3 = 0
    k3 = 0
    v3(:, :, 1) = 0.25
    v3(:, :, 2) = v
    call linattn_batched_causal(plan, q3, k3, v3, ref3, bad=sw, stat=sts)
    call linattn_mpi_batched_causal(plan, MPI_COMM_WORLD, q3(:, a:b, :), &
        k3(:, a:b, :), v3(:, a:b, :), out3(:, a:b, :), bad=w, stat=st)
    call check(sts == LINATTN_EOVERFLOW .and. st == sts .and. &
        w%batch == sw%batch .and. w%head == sw%head .and. w%row == sw%row, &
        'batched causal: stat ' // trim(itoa(st)) // ' token ' // &
        trim(itoa(int(w%row))))
    call linattn_batched_attention(plan, q3, k3, v3, ref3, bad=sw, stat=sts)
    call linattn_mpi_batched_attention(plan, MPI_COMM_WORLD%MPI_VAL, &
        q3(:, a:b, :), k3(:, a:b, :), v3(:, a:b, :), out3(:, a:b, :), bad=w, &
        stat=st)
    call check(sts == LINATTN_EOVERFLOW .and. st == sts .and. &
        w%head == 2 .and. w%head == sw%head .and. w%row == sw%row, &
        'batched attention: stat ' // trim(itoa(st)) // ' token ' // &
        trim(itoa(int(w%row))))
    ! every rank's state holds one huge value: their sum overflows
    call linattn_state_create(s(1), plan)
    call linattn_state_create(keep, plan)
    call linattn_state_update(s(1), k(:, 1:1), v(:, 1:1))
    call linattn_state_copy(keep, s(1))
    call linattn_mpi_state_allreduce(s, MPI_COMM_WORLD, stat=st)
    call check(st == merge(LINATTN_EOVERFLOW, 0, nranks > 1), &
        'state allreduce: stat ' // trim(itoa(st)))
    call linattn_state_save_size(keep, bytes)
    allocate (b1(bytes), b2(bytes))
    call linattn_state_save(s(1), b1)
    call linattn_state_save(keep, b2)
    if (nranks > 1) call check(all(b1 == b2), 'a refused allreduce changed the state')
    call linattn_state_destroy(s(1))
    call linattn_state_destroy(keep)
    call linattn_plan_destroy(plan)
  end subroutine t_overflow

  ! The sums of two states equal: tokens exactly, S and z (brought to
  ! b's shift) to 1e-12.
  logical function same_sums(x, y)
    type(linattn_state), intent(in) :: x, y
    real(real64), allocatable :: ax(:, :), ay(:, :)
    real(real64) :: sx, sy
    integer(int64) :: tx, ty
    allocate (ax(e + 1, x%m), ay(e + 1, y%m))
    call linattn_state_export(x, ax, sx, tx)
    call linattn_state_export(y, ay, sy, ty)
    ax = ax * exp(sx - sy)
    same_sums = tx == ty .and. maxval(abs(ax - ay)) <= 1d-12 * max(maxval(abs(ay)), 1d-300)
  end function same_sums

  function itoa(i) result(s)
    integer, intent(in) :: i
    character(16) :: s
    write (s, '(i0)') i
  end function itoa
end program test_f_mpi
