! SPDX-License-Identifier: BSD-3-Clause
! galerkin.f90 -- a Galerkin-type attention layer of a neural operator
! (Cao 2021, "Choose a Transformer: Fourier or Galerkin") applied to a
! field on a 2-D grid, the grid points being the tokens.
!
! Each grid point carries c channels, h = W_in (f, x, y, 1): the field
! and the coordinates, lifted.  The layer is
!
!     z = Q (K~^T V~) / n,     Q = W_q h,  K~ = LN(W_k h),  V~ = LN(W_v h)
!
! (LN: layer normalization of each token's channels), softmax-free and
! divided by the number of tokens n, so that K~^T V~ / n approximates an
! integral over the domain and the layer means the same on every grid.
! linattn computes it as attention with the identity feature map and the
! normalizer LINATTN_DENOM_COUNT, in O(n c^2); the program checks it
! against the same product written out in loops, then evaluates the
! layer's output u = W_out (h + z) at one point on two grids: the finer
! grid changes it only as much as the integral's discretization moves.  The weights
! are fixed numbers here; in a trained operator they come from training.
!
! Usage: galerkin    (exits with status 1 if linattn and the loops differ)
program galerkin
  use, intrinsic :: iso_fortran_env, only: real64
  use linattn
  implicit none
  integer, parameter :: c = 8
  real(real64), parameter :: pi = acos(-1.0_real64)
  real(real64) :: win(c, 4), wq(c, c), wk(c, c), wv(c, c), wout(c)
  logical :: ok
  integer :: i, j

  ! Fixed weights (a trained operator would read its own).
  do j = 1, 4
    do i = 1, c
      win(i, j) = sin(1.0_real64 * i + 2.0_real64 * j)
    end do
  end do
  do j = 1, c
    do i = 1, c
      wq(i, j) = cos(0.5_real64 * i - 1.3_real64 * j) / sqrt(real(c, real64))
      wk(i, j) = sin(0.7_real64 * i + 0.4_real64 * j) / sqrt(real(c, real64))
      wv(i, j) = cos(1.1_real64 * i + 0.9_real64 * j) / sqrt(real(c, real64))
    end do
    wout(j) = 1 / real(j, real64)
  end do

  ok = layer(32, 24)
  ok = layer(64, 48) .and. ok
  if (.not. ok) stop 1

contains

  logical function layer(nx, ny) result(ok)
    integer, intent(in) :: nx, ny
    type(linattn_plan) :: plan
    type(linattn_opts) :: opts
    real(real64), allocatable :: h(:, :), q(:, :), k(:, :), v(:, :), &
        z(:, :), zref(:, :), u(:)
    real(real64) :: s(c, c), x, y, f, err
    integer :: n, i, j, t, a, b

    ! Tokens are the grid points, arrays are (channel, token).
    n = nx * ny
    allocate (h(c, n), q(c, n), k(c, n), v(c, n), z(c, n), zref(c, n), u(n))
    do j = 1, ny
      do i = 1, nx
        t = i + (j - 1) * nx
        x = (i - 1) / real(nx, real64)
        y = (j - 1) / real(ny, real64)
        f = sin(2 * pi * x) * cos(pi * y)
        h(:, t) = matmul(win, [f, x, y, 1.0_real64])
      end do
    end do
    q = matmul(wq, h)
    k = matmul(wk, h)
    v = matmul(wv, h)
    call layer_norm(k)
    call layer_norm(v)

    ! z = Q (K~^T V~) / n: identity features, normalized by the count.
    opts%denom = LINATTN_DENOM_COUNT
    call linattn_plan_create(plan, LINATTN_MAP_IDENTITY, c, c, opts)
    call linattn_attention(plan, q, k, v, z)
    call linattn_plan_destroy(plan)

    ! The same, written out: S = sum_t k~_t v~_t^T / n, z_t = S^T q_t.
    s = 0
    do t = 1, n
      do b = 1, c
        do a = 1, c
          s(a, b) = s(a, b) + k(a, t) * v(b, t)
        end do
      end do
    end do
    s = s / n
    do t = 1, n
      do b = 1, c
        zref(b, t) = dot_product(s(:, b), q(:, t))
      end do
    end do
    err = maxval(abs(z - zref)) / maxval(abs(zref))
    ok = err <= 1e-12_real64

    u = matmul(wout, h + z)
    t = nx / 4 + 1 + (ny / 2) * nx     ! the grid point (1/4, 1/2)
    write (*, '(a, i0, a, i0, a, i0, a, es8.1, a, f8.5)') 'grid ', nx, &
        ' x ', ny, ' (', n, ' tokens): linattn against loops ', err, &
        '; u(1/4, 1/2) = ', u(t)
  end function layer

  ! Each token's channels to mean 0 and variance 1.
  subroutine layer_norm(a)
    real(real64), intent(inout) :: a(:, :)
    real(real64) :: mean, var
    integer :: t
    do t = 1, size(a, 2)
      mean = sum(a(:, t)) / size(a, 1)
      var = sum((a(:, t) - mean)**2) / size(a, 1)
      a(:, t) = (a(:, t) - mean) / sqrt(var + 1e-12_real64)
    end do
  end subroutine layer_norm
end program galerkin
