! SPDX-License-Identifier: BSD-3-Clause
! galerkin_meshes.f90 -- the Galerkin-type attention layer of galerkin.f90
! over a batch of meshes of different sizes, each point weighted by its
! cell's area, in one packed call.
!
! A neural operator sees several samples at once, each discretized on
! its own mesh: here three stretched tensor meshes of 1000, 1500 and 700
! points (cell-centred, spacings varying across the domain).  The layer
!
!     z(p) = q(p)^T ( sum_j w_j k~_j v~_j^T ) / sum_j w_j
!
! is a quadrature of (1/|D|) int_D q(p)^T k~(y) v~(y)^T dy with weights
! w_j, the areas of the points' cells: the same integral on every mesh.
! The meshes' points are packed end to end (key_offsets), and each
! sample's probe points p (the same five points for every sample, the
! queries: offsets) attend to its own mesh only, with the key weights;
! the identity feature map and the count normalizer, which key weights
! turn into sum_j w_j.  One call of linattn_attention_ex serves the
! batch.  The program checks it against the sums written out per mesh,
! then prints z at the probes from each mesh: they agree to the meshes'
! discretization error (a mesh-independent layer), although the point
! counts differ by a factor of two; without the weights (every point
! alike) they disagree several times more.
!
! Usage: galerkin_meshes    (exits with status 1 if linattn and the
! loops differ, or the meshes disagree beyond discretization)
program galerkin_meshes
  use, intrinsic :: iso_fortran_env, only: real64, int64
  use linattn
  implicit none
  integer, parameter :: c = 8, nmesh = 3, nprobe = 5
  integer, parameter :: nx(nmesh) = [40, 50, 28], ny(nmesh) = [25, 30, 25]
  real(real64), parameter :: stretch(nmesh) = [0.12_real64, 0.06_real64, &
      0.15_real64]
  real(real64), parameter :: pi = acos(-1.0_real64)
  real(real64), parameter :: px(nprobe) = [0.25_real64, 0.5_real64, &
      0.75_real64, 0.1_real64, 0.9_real64]
  real(real64), parameter :: py(nprobe) = [0.5_real64, 0.5_real64, &
      0.25_real64, 0.9_real64, 0.1_real64]
  real(real64) :: win(c, 4), wq(c, c), wk(c, c), wv(c, c)
  real(real64), allocatable :: k(:, :), v(:, :), w(:), q(:, :), z(:, :), &
      zref(:, :), zplain(:, :)
  integer(int64) :: koff(nmesh + 1), qoff(nmesh + 1)
  type(linattn_plan) :: plan
  type(linattn_opts) :: opts
  real(real64) :: err, spread
  logical :: ok
  integer :: i, j, s, t, n

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
  end do

  ! The meshes end to end: mesh s is points koff(s) + 1 .. koff(s + 1).
  koff(1) = 0
  do s = 1, nmesh
    koff(s + 1) = koff(s) + nx(s) * ny(s)
    qoff(s) = (s - 1) * nprobe
  end do
  qoff(nmesh + 1) = nmesh * nprobe
  n = int(koff(nmesh + 1))
  allocate (k(c, n), v(c, n), w(n), q(c, nmesh * nprobe), &
      z(c, nmesh * nprobe), zref(c, nmesh * nprobe), &
      zplain(c, nmesh * nprobe))
  do s = 1, nmesh
    call mesh(s, int(koff(s)))
    do t = 1, nprobe
      q(:, (s - 1) * nprobe + t) = matmul(wq, lift(px(t), py(t)))
    end do
  end do
  call layer_norm(k)
  call layer_norm(v)

  ! One call for the batch: each sample's probes against its mesh.
  opts%denom = LINATTN_DENOM_COUNT
  call linattn_plan_create(plan, LINATTN_MAP_IDENTITY, c, c, opts)
  call linattn_attention_ex(plan, q, k, v, z, weights=w, offsets=qoff, &
      key_offsets=koff)
  ! without the weights each point counts alike: on stretched meshes that
  ! is another integral, which the meshes disagree on
  call linattn_attention_ex(plan, q, k, v, zplain, offsets=qoff, &
      key_offsets=koff)
  call linattn_plan_destroy(plan)

  ! The same, written out mesh by mesh.
  do s = 1, nmesh
    call by_loops(int(koff(s)) + 1, int(koff(s + 1)), int(qoff(s)) + 1, &
        int(qoff(s + 1)))
  end do
  err = maxval(abs(z - zref)) / maxval(abs(zref))
  ! the meshes against each other at the probes, relative to the values
  spread = mesh_spread(z)
  do s = 1, nmesh
    write (*, '(a, i0, a, i0, a, i0, a, 3f9.5)') 'mesh ', s, ' (', nx(s), &
        ' x ', ny(s), ' points): z_1 at three probes', &
        z(1, (s - 1) * nprobe + 1:(s - 1) * nprobe + 3)
  end do
  write (*, '(a, es8.1, a, es8.1, a, es8.1, a)') 'linattn against loops ', &
      err, '; meshes against each other ', spread, ' (', &
      mesh_spread(zplain), ' without the weights)'
  ok = err <= 1e-12_real64 .and. spread <= 1e-2_real64 .and. &
      spread * 2 <= mesh_spread(zplain)
  deallocate (k, v, w, q, z, zref, zplain)
  if (.not. ok) stop 1

contains

  ! The largest difference at the probes between mesh 1 and the others,
  ! relative to the largest value.
  real(real64) function mesh_spread(zz) result(sp)
    real(real64), intent(in) :: zz(:, :)
    integer :: s
    sp = 0
    do s = 2, nmesh
      sp = max(sp, maxval(abs(zz(:, (s - 1) * nprobe + 1:s * nprobe) - &
          zz(:, 1:nprobe))))
    end do
    sp = sp / maxval(abs(zz))
  end function mesh_spread

  ! The lifted input at a point: W_in (f, x, y, 1).
  function lift(x, y) result(h)
    real(real64), intent(in) :: x, y
    real(real64) :: h(c)
    h = matmul(win, [sin(2 * pi * x) * cos(pi * y), x, y, 1.0_real64])
  end function lift

  ! Mesh s from point base + 1: cell centres of the map x = xi -
  ! a sin(2 pi xi) (likewise y) of a uniform grid, weights the mapped
  ! cells' areas (midpoint rule: x'(xi) dxi y'(eta) deta; a < 1 / (2 pi)
  ! keeps the map monotone and the weights positive).
  subroutine mesh(s, base)
    integer, intent(in) :: s, base
    real(real64) :: xi, eta, x, y, a
    integer :: i, j, t
    a = stretch(s)
    do j = 1, ny(s)
      do i = 1, nx(s)
        t = base + i + (j - 1) * nx(s)
        xi = (i - 0.5_real64) / nx(s)
        eta = (j - 0.5_real64) / ny(s)
        x = xi - a * sin(2 * pi * xi)
        y = eta - a * sin(2 * pi * eta)
        w(t) = (1 - 2 * pi * a * cos(2 * pi * xi)) / nx(s) * &
            (1 - 2 * pi * a * cos(2 * pi * eta)) / ny(s)
        k(:, t) = matmul(wk, lift(x, y))
        v(:, t) = matmul(wv, lift(x, y))
      end do
    end do
  end subroutine mesh

  ! zref for probes p0 .. p1 from points j0 .. j1: S = sum_j w_j k_j v_j^T
  ! / sum_j w_j, z_p = S^T q_p.
  subroutine by_loops(j0, j1, p0, p1)
    integer, intent(in) :: j0, j1, p0, p1
    real(real64) :: sm(c, c), mass
    integer :: j, p, a, b
    sm = 0
    mass = 0
    do j = j0, j1
      do b = 1, c
        do a = 1, c
          sm(a, b) = sm(a, b) + w(j) * k(a, j) * v(b, j)
        end do
      end do
      mass = mass + w(j)
    end do
    do p = p0, p1
      do b = 1, c
        zref(b, p) = dot_product(sm(:, b), q(:, p)) / mass
      end do
    end do
  end subroutine by_loops

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
end program galerkin_meshes
