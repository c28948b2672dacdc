"""Small dense linear algebra written in kernelc's own language: svd3, svd2, qr3 and eig3.

The 3x3 decompositions follow McAdams, Selle, Tamstorf, Teran and Sifakis, "Computing the
Singular Value Decomposition of 3x3 matrices with minimal branching and elementary floating
point operations" (UW-Madison TR1690, 2011), the algorithm Warp uses, with Warp's settings:

1. Jacobi eigenanalysis of the symmetric matrix S (AᵀA for the SVD, A itself for eig3): a
   fixed number of sweeps, each rotating the pairs (0, 1), (1, 2), (0, 2) in turn by an
   approximate Givens rotation (a half-angle pair (ch, sh), i.e. a quaternion about the third
   axis). The rotations accumulate in a quaternion, turned into the matrix V at the end.
2. B = A V; the columns of B (and V) are sorted by decreasing norm, a swap negating one column
   so that V stays a rotation.
3. A QR factorisation of B by three Givens rotations gives U (det +1) and R, whose diagonal is
   sigma; sigma[2] carries the sign of det(A).

float32 runs 4 sweeps, float64 8 (Warp's `_svd_config`), float16 like float32. The funcs below
are generic (`Any`): each specialises once per scalar type. The public entry points are the
special forms of `kernelc.frontend.linalg_forms`, which also handle Warp's in-place variants.
"""

from __future__ import annotations

from typing import Any

import kernelc as kc

_FOUR_GAMMA_SQUARED = 5.82842712474619  # 3 + 2 sqrt(2) = 1 / tan²(pi/8)
_COS_PI_8 = 0.9238795325112867
_SIN_PI_8 = 0.3826834323650898
_SQRT_HALF = 0.7071067811865476

# (Jacobi sweeps, Givens epsilon of the QR step) per scalar type, as in Warp.
SWEEPS_F32 = 4
SWEEPS_F64 = 8
QR_EPSILON_F32 = 1.0e-6
QR_EPSILON_F64 = 1.0e-12


@kc.func
def _rsqrt(x: Any):
    return 1.0 / kc.sqrt(x)


# ---- symmetric Jacobi eigenanalysis --------------------------------------------------------


@kc.func
def _jacobi_angle(app: Any, apq: Any, aqq: Any):
    """(cos, sin) of the half angle of the paper's approximate Givens rotation for the pair:
    the direction (2 (app - aqq), apq) normalised, or pi/8 when that angle would be larger."""
    ch = 2.0 * (app - aqq)
    sh = apq
    w = _rsqrt(ch * ch + sh * sh)
    if _FOUR_GAMMA_SQUARED * sh * sh < ch * ch:
        ch = w * ch
        sh = w * sh
    else:
        ch = _COS_PI_8
        sh = _SIN_PI_8
    return ch, sh


@kc.func
def _jacobi_rotate(s11: Any, s21: Any, s22: Any, s31: Any, s32: Any, s33: Any):
    """Rotates the (1, 2) pair of the symmetric S (lower triangle given) and relabels the
    axes cyclically (2, 3, 1) -> (1, 2, 3), so that the next pair comes to (1, 2).
    Returns (ch, sh) and the relabelled lower triangle."""
    ch, sh = _jacobi_angle(s11, s21, s22)
    scale = ch * ch + sh * sh
    c = (ch * ch - sh * sh) / scale  # cos and sin of the full angle
    s = (2.0 * sh * ch) / scale
    # S <- Gᵀ S G, G the rotation by (c, s) in the (1, 2) plane
    t11 = c * (c * s11 + s * s21) + s * (c * s21 + s * s22)
    t21 = c * (-s * s11 + c * s21) + s * (-s * s21 + c * s22)
    t22 = -s * (-s * s11 + c * s21) + c * (-s * s21 + c * s22)
    t31 = c * s31 + s * s32
    t32 = -s * s31 + c * s32
    return ch, sh, t22, t32, s33, t21, t31, t11


@kc.func
def _quat_turn(qa: Any, qb: Any, qc: Any, qw: Any, ch: Any, sh: Any):
    """q * (rotation by half-angle (ch, sh) about the axis of component c), with (a, b, c) a
    cyclic order of (x, y, z); returns the new (a, b, c, w)."""
    return qa * ch + qb * sh, qb * ch - qa * sh, qc * ch + sh * qw, qw * ch - qc * sh


@kc.func
def _jacobi_eigen(s11: Any, s21: Any, s22: Any, s31: Any, s32: Any, s33: Any,
                  sweeps: kc.int32, one: Any):
    """The rotation (a quaternion (x, y, z, w)) that nearly diagonalises S."""
    qx = one - one
    qy = qx
    qz = qx
    qw = one
    for _ in range(sweeps):
        ch, sh, s11, s21, s22, s31, s32, s33 = _jacobi_rotate(s11, s21, s22, s31, s32, s33)
        qx, qy, qz, qw = _quat_turn(qx, qy, qz, qw, ch, sh)  # pair (1, 2): about z
        ch, sh, s11, s21, s22, s31, s32, s33 = _jacobi_rotate(s11, s21, s22, s31, s32, s33)
        qy, qz, qx, qw = _quat_turn(qy, qz, qx, qw, ch, sh)  # pair (2, 3): about x
        ch, sh, s11, s21, s22, s31, s32, s33 = _jacobi_rotate(s11, s21, s22, s31, s32, s33)
        qz, qx, qy, qw = _quat_turn(qz, qx, qy, qw, ch, sh)  # pair (3, 1): about y
    return qx, qy, qz, qw


@kc.func
def _quat_to_mat(x: Any, y: Any, z: Any, w: Any):
    xx = x * x
    yy = y * y
    zz = z * z
    xy = x * y
    xz = x * z
    yz = y * z
    wx = w * x
    wy = w * y
    wz = w * z
    return kc.matrix(1.0 - 2.0 * (yy + zz), 2.0 * (xy - wz), 2.0 * (xz + wy),
                     2.0 * (xy + wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz - wx),
                     2.0 * (xz - wy), 2.0 * (yz + wx), 1.0 - 2.0 * (xx + yy), shape=(3, 3))


@kc.func
def _symmetric_eigen(a: Any, sweeps: kc.int32, one: Any):
    """The rotation V of the Jacobi eigenanalysis of the lower triangle of `a`."""
    qx, qy, qz, qw = _jacobi_eigen(a[0, 0], a[1, 0], a[1, 1], a[2, 0], a[2, 1], a[2, 2],
                                   sweeps, one)
    return _quat_to_mat(qx, qy, qz, qw)


# ---- QR by Givens rotations ----------------------------------------------------------------


@kc.func
def _qr_angle(pivot: Any, below: Any, eps: Any):
    """(cos, sin) of half the Givens angle that zeroes `below` against `pivot`, keeping the
    pivot's sign (so the rotation is a rotation, det +1); the identity-like choice when both
    are below `eps`."""
    rho = kc.sqrt(pivot * pivot + below * below)
    sh = below
    if not rho > eps:
        sh = 0.0
    ch = kc.abs(pivot) + kc.max(rho, eps)
    if pivot < 0.0:
        ch, sh = sh, ch
    w = _rsqrt(ch * ch + sh * sh)
    return ch * w, sh * w


@kc.func
def _qr(m: Any, eps: Any):
    """Q (a rotation) and R with m = Q R; R's entries below the diagonal are what remains of
    them after the rotations (zero up to rounding), as in Warp."""
    row0 = m[0]
    row1 = m[1]
    row2 = m[2]
    ch, sh = _qr_angle(row0[0], row1[0], eps)  # rows 0, 1: zero m[1, 0]
    c1 = 1.0 - 2.0 * sh * sh
    s1 = 2.0 * ch * sh
    r0 = c1 * row0 + s1 * row1
    r1 = -s1 * row0 + c1 * row1
    ch, sh = _qr_angle(r0[0], row2[0], eps)  # rows 0, 2: zero m[2, 0]
    c2 = 1.0 - 2.0 * sh * sh
    s2 = 2.0 * ch * sh
    t0 = c2 * r0 + s2 * row2
    t2 = -s2 * r0 + c2 * row2
    ch, sh = _qr_angle(r1[1], t2[1], eps)  # rows 1, 2: zero m[2, 1]
    c3 = 1.0 - 2.0 * sh * sh
    s3 = 2.0 * ch * sh
    u1 = c3 * r1 + s3 * t2
    u2 = -s3 * r1 + c3 * t2
    # Q = G1 G2 G3, multiplied out
    q = kc.matrix(c1 * c2, -s1 * c3 - c1 * s2 * s3, s1 * s3 - c1 * s2 * c3,
                  s1 * c2, c1 * c3 - s1 * s2 * s3, -c1 * s3 - s1 * s2 * c3,
                  s2, c2 * s3, c2 * c3, shape=(3, 3))
    return q, kc.matrix_from_rows(t0, u1, u2)


# ---- the decompositions --------------------------------------------------------------------


@kc.func
def _sort_columns(b: Any, v: Any):
    """Orders the columns of b (and v alike) by decreasing norm; a swap negates the column
    moved right, so v stays a rotation."""
    bt = kc.transpose(b)  # columns as rows
    vt = kc.transpose(v)
    b0 = bt[0]
    b1 = bt[1]
    b2 = bt[2]
    v0 = vt[0]
    v1 = vt[1]
    v2 = vt[2]
    rho0 = kc.dot(b0, b0)
    rho1 = kc.dot(b1, b1)
    rho2 = kc.dot(b2, b2)
    if rho0 < rho1:
        b0, b1 = b1, -b0
        v0, v1 = v1, -v0
        rho0, rho1 = rho1, rho0
    if rho0 < rho2:
        b0, b2 = b2, -b0
        v0, v2 = v2, -v0
        rho0, rho2 = rho2, rho0
    if rho1 < rho2:
        b1, b2 = b2, -b1
        v1, v2 = v2, -v1
    return kc.matrix_from_cols(b0, b1, b2), kc.matrix_from_cols(v0, v1, v2)


@kc.func
def _product(a: Any, b: Any):
    """a b with each entry summed left to right, as Warp's SVD forms AᵀA and A V (the
    matrix `*` operator fuses the multiply-adds, as Warp's does)."""
    return kc.matrix_from_rows(a[0, 0] * b[0] + a[0, 1] * b[1] + a[0, 2] * b[2],
                               a[1, 0] * b[0] + a[1, 1] * b[1] + a[1, 2] * b[2],
                               a[2, 0] * b[0] + a[2, 1] * b[1] + a[2, 2] * b[2])


@kc.func
def _svd3(a: Any, sweeps: kc.int32, eps: Any):
    v = _symmetric_eigen(_product(kc.transpose(a), a), sweeps, eps * 0.0 + 1.0)
    b, v = _sort_columns(_product(a, v), v)
    u, r = _qr(b, eps)
    return u, kc.get_diag(r), v


@kc.func
def svd3(a: kc.mat33f):
    """(U, sigma, V) with a = U diag(sigma) Vᵀ: U, V rotations, |sigma| decreasing, sigma[2]
    with the sign of det(a)."""
    return _svd3(a, SWEEPS_F32, kc.float32(QR_EPSILON_F32))


@kc.func
def svd3(a: kc.mat33d):  # noqa: F811
    return _svd3(a, SWEEPS_F64, kc.float64(QR_EPSILON_F64))


@kc.func
def svd3(a: kc.mat33h):  # noqa: F811
    return _svd3(a, SWEEPS_F32, kc.float16(QR_EPSILON_F32))


@kc.func
def qr3(a: kc.mat33f):
    """(Q, R) with a = Q R, Q a rotation (det +1), R upper triangular (up to rounding)."""
    return _qr(a, kc.float32(QR_EPSILON_F32))


@kc.func
def qr3(a: kc.mat33d):  # noqa: F811
    return _qr(a, kc.float64(QR_EPSILON_F64))


@kc.func
def qr3(a: kc.mat33h):  # noqa: F811
    return _qr(a, kc.float16(QR_EPSILON_F32))


@kc.func
def _eig3(a: Any, sweeps: kc.int32, one: Any):
    q = _symmetric_eigen(a, sweeps, one)
    # d[k] = q_kᵀ a q_k, with q_k the k-th column of q (its row of qᵀ)
    qt = kc.transpose(q)
    out = kc.get_diag(q)
    for k in range(3):
        row = q[0, k] * a[0] + q[1, k] * a[1] + q[2, k] * a[2]
        out[k] = kc.dot(row, qt[k])
    return q, out


@kc.func
def eig3(a: kc.mat33f):
    """(Q, d) with a = Q diag(d) Qᵀ for a symmetric a (only its lower triangle is read);
    Q is a rotation, d is not sorted."""
    return _eig3(a, SWEEPS_F32, kc.float32(1.0))


@kc.func
def eig3(a: kc.mat33d):  # noqa: F811
    return _eig3(a, SWEEPS_F64, kc.float64(1.0))


@kc.func
def eig3(a: kc.mat33h):  # noqa: F811
    return _eig3(a, SWEEPS_F32, kc.float16(1.0))


@kc.func
def _gap_inverse(gap: Any):
    """1 / gap, with |gap| raised to at least 1e-6 (Warp's guard for close eigenvalues)."""
    tiny = gap * 0.0 + 1.0e-6
    if gap > 0.0 and gap < tiny:
        gap = tiny
    if gap < 0.0 and gap > -tiny:
        gap = -tiny
    return 1.0 / gap


@kc.func_grad(eig3)
def _adj_eig3(a: Any, adj_q: Any, adj_d: Any):
    """The closed-form gradient (Giles, "An extended collection of matrix derivative results
    for forward and reverse mode algorithmic differentiation", 2008), as Warp's: Q (D̄ + F ∘
    QᵀQ̄) Qᵀ with F[i, j] = 1 / (d[j] - d[i]). Differentiating the Jacobi sweeps instead is
    unstable where eigenvalues repeat; a loss of the eigenvalues alone (Q̄ = 0) skips F
    there, so its gradient stays Q D̄ Qᵀ (the identity for d[0] + d[1] + d[2])."""
    q, d = eig3(a)
    qt = kc.transpose(q)
    inner = kc.diag(adj_d)
    if adj_q != adj_q * 0.0:
        f01 = _gap_inverse(d[1] - d[0])
        f02 = _gap_inverse(d[2] - d[0])
        f12 = _gap_inverse(d[2] - d[1])
        zero = f01 * 0.0
        f = kc.matrix_from_rows(kc.vector(zero, f01, f02), kc.vector(-f01, zero, f12),
                                kc.vector(-f02, -f12, zero))
        inner = inner + kc.cw_mul(f, qt * adj_q)
    kc.adjoint[a] += q * (inner * qt)


# ---- 2x2 SVD -------------------------------------------------------------------------------


@kc.func
def _svd2(a: Any, one: Any):
    """Warp's closed-form 2x2 SVD from the eigen-decomposition of aᵀa (see docs/linalg.md for
    the two cases where kernelc differs: repeated singular values and rank deficiency)."""
    p = a[0, 0] * a[0, 0] + a[1, 0] * a[1, 0]  # aᵀa = [[p, r], [r, q]]
    r = a[0, 0] * a[0, 1] + a[1, 0] * a[1, 1]
    q = a[0, 1] * a[0, 1] + a[1, 1] * a[1, 1]
    trace = p + q
    diff = p - q
    disc = diff * diff + 4.0 * r * r
    if disc == 0.0:
        # aᵀa = s² I: a is s times an orthogonal matrix, a = (a / s) diag(s, s) Iᵀ
        s = kc.sqrt(0.5 * trace)
        v = kc.matrix(one, one - one, one - one, one, shape=(2, 2))
        u = v
        if s > 0.0:
            u = a / s
        return u, kc.vector(s, s, length=2), v
    root = kc.sqrt(disc)
    lambda1 = (trace + root) * 0.5
    lambda2 = kc.max((trace - root) * 0.5, 0.0)  # rounding may take it below 0: no NaN
    inv_sigma1 = _rsqrt(lambda1)
    sigma1 = 1.0 / inv_sigma1
    sigma2 = kc.sqrt(lambda2)
    # the eigenvector of lambda1, as the difference of two parallel forms of it
    vx = diff + root - 2.0 * r
    vy = diff - root + 2.0 * r
    len_sq = vx * vx + vy * vy
    v11 = vx
    v21 = vy
    if len_sq == 0.0:
        v11 = _SQRT_HALF
        v21 = _SQRT_HALF
    else:
        inv_len = _rsqrt(len_sq)
        v11 = vx * inv_len
        v21 = vy * inv_len
    u11 = (a[0, 0] * v11 + a[0, 1] * v21) * inv_sigma1
    u21 = (a[1, 0] * v11 + a[1, 1] * v21) * inv_sigma1
    det_sign = one
    if a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0] < 0.0:
        det_sign = -det_sign
    u = kc.matrix(u11, -u21 * det_sign, u21, u11 * det_sign, shape=(2, 2))
    v = kc.matrix(v11, -v21, v21, v11, shape=(2, 2))
    return u, kc.vector(sigma1, sigma2, length=2), v


@kc.func
def svd2(a: kc.mat22f):
    """(U, sigma, V) with a = U diag(sigma) Vᵀ, sigma >= 0 decreasing, U and V orthogonal."""
    return _svd2(a, kc.float32(1.0))


@kc.func
def svd2(a: kc.mat22d):  # noqa: F811
    return _svd2(a, kc.float64(1.0))


@kc.func
def svd2(a: kc.mat22h):  # noqa: F811
    return _svd2(a, kc.float16(1.0))
