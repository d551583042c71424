#!/usr/bin/env python
"""Fits the exp polynomial of the fused GroupNorm+SiLU sigmoid (kernels/cpu/silu_rows_impl.h):
exp(r) ~ 1 + r + r^2 q(r) on |r| <= ln2 / 2, q of degree DEG - 2, for relative error
(iteratively reweighted least squares towards the equal-ripple fit), then rounds the
coefficients to float32 and measures the error of the float32 evaluation with FMA (one
rounding per multiply-add, as the AVX2/AVX-512 builds evaluate it) against float64 exp.

    python scripts/fit_exp_polynomial.py [DEG]   # default 6, the kernels' degree
"""
import sys

import numpy as np

HALF_LN2 = np.log(2) / 2
CEPHES_DEG7 = [5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2, 8.3334519073e-3, 1.3981999507e-3, 1.9875691500e-4]


def fit(deg, points=200001, iterations=60):
    r = np.linspace(-HALF_LN2, HALF_LN2, points)
    basis = np.stack([r ** (k + 2) for k in range(deg - 1)], 1)
    target, weight = np.expm1(r) - r, 1 / np.exp(r)
    for it in range(iterations):
        coef, *_ = np.linalg.lstsq(basis * weight[:, None], target * weight, rcond=None)
        err = (basis @ coef - target) / np.exp(r)
        if it:
            weight = weight * (np.abs(err) / np.abs(err).max() + 1e-3) ** 0.5
    return coef, np.abs(err).max()


def float32_fma_error(coef):
    """Largest relative error of the kernels' float32 evaluation (Horner with FMA)."""
    r = np.linspace(-HALF_LN2, HALF_LN2, 400001).astype(np.float32)
    p = np.float32(coef[-1])
    for c in coef[-2::-1]:  # a float32 * float32 product is exact in float64: one rounding, as FMA
        p = (np.float64(p) * r + np.float32(c)).astype(np.float32)
    r2 = (np.float64(r) * r).astype(np.float32)
    value = (np.float64(p) * r2 + r).astype(np.float32) + np.float32(1)
    return np.abs(value / np.exp(r.astype(np.float64)) - 1).max()


def main():
    deg = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    coef, err64 = fit(deg)
    coef32 = [float(np.float32(c)) for c in coef]
    print(f"degree {deg}: q coefficients (r^0 first) {['%.10e' % c for c in coef32]}")
    print(f"  polynomial error (float64) {err64:.3g}, float32 evaluation {float32_fma_error(coef32):.3g}")
    print(f"Cephes degree 7, float32 evaluation {float32_fma_error(CEPHES_DEG7):.3g}")


if __name__ == "__main__":
    main()
