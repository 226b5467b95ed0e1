! SPDX-License-Identifier: BSD-3-Clause
! train_map.f90 -- training a linear-attention layer's feature map by
! gradient descent with the library's backward call, in Fortran: the C
! example examples/train_map.c with the module's calls.
!
! The layer is causal linear attention with a trained map
! phi(x) = elu(W x + b) + 1.  A teacher with fixed W*, b* makes the
! targets on a toy sequence; the student starts from a small W and b = 0
! and fits them on L = 1/2 sum |out - target|^2:
!
!   call linattn_causal_forward(plan, q, k, v, out, den)     ! out, den
!   g = out - target                                         ! dL/dout
!   call linattn_causal_backward(plan, q, k, v, out, den, g, dq, dk, dv, &
!                                dw=dw, db=db)
!   w = w - lr dw;  b = b - lr db    (a new plan: plans are immutable)
!
! Token arrays are (feature, token), W(rows, d) as the mathematics writes
! it.  Prints the loss every 100 steps; exits with status 1 unless the
! last loss is below 1% of the first.  Usage: train_map
program train_map
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use linattn
  implicit none
  integer, parameter :: n = 48, d = 4, e = 3, m = 6, steps = 600
  real(real64), parameter :: lr = 4
  real(real64) :: q(d, n), k(d, n), v(e, n), target(e, n), out(e, n)
  real(real64) :: g(e, n), dq(d, n), dk(d, n), dv(e, n), den(n)
  real(real64) :: wt(m, d), bt(m), w(m, d), b(m), dw(m, d), db(m)
  real(real64) :: loss, first
  type(linattn_plan) :: plan
  integer :: step

  call random_fill(q, 1)
  call random_fill(k, 2)
  call random_fill(v, 3)
  call random_fill(wt, 4)
  wt = 1.5_real64 * wt
  call random_fill(w, 5)
  w = 0.1_real64 * w
  bt = 0.5_real64 * [(sin(3.0_real64 * step), step = 1, m)]
  b = 0
  ! the teacher's outputs
  call linattn_plan_create_custom(plan, LINATTN_ACT_ELU1, wt, bt, e)
  call linattn_causal_forward(plan, q, k, v, target, den)
  call linattn_plan_destroy(plan)
  first = -1
  do step = 0, steps
    call linattn_plan_create_custom(plan, LINATTN_ACT_ELU1, w, b, e)
    call linattn_causal_forward(plan, q, k, v, out, den)
    g = out - target
    loss = 0.5_real64 * sum(g**2)
    if (first < 0) first = loss
    if (mod(step, 100) == 0) print '(a, i4, a, es13.6)', 'step ', step, &
        '  loss ', loss
    call linattn_causal_backward(plan, q, k, v, out, den, g, dq, dk, dv, &
        dw=dw, db=db)
    call linattn_plan_destroy(plan)
    w = w - lr * dw
    b = b - lr * db
  end do
  print '(a, es10.3, a, es10.3)', 'loss ', first, ' -> ', loss
  if (.not. loss < 0.01_real64 * first) error stop 1

contains

  ! Fixed values in [-1, 1): the same numbers everywhere.
  subroutine random_fill(a, seed)
    real(real64), intent(out) :: a(:, :)
    integer, intent(in) :: seed
    integer :: i, j
    do j = 1, size(a, 2)
      do i = 1, size(a, 1)
        a(i, j) = sin(12.9898_real64 * (i + 7 * j) + 78.233_real64 * seed)
      end do
    end do
  end subroutine random_fill
end program train_map
