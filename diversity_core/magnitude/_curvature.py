"""Point clouds on geodesic disks of constant curvature: the curvature experiment of [1]_ (Table 1).

A disk of geodesic radius 1 on the surface of constant Gaussian curvature K (a sphere of radius
1/sqrt(K) for K > 0, the plane for K = 0, the hyperbolic plane of curvature K for K < 0), with
points drawn uniformly by area, as in Turkes, Montufar & Otter (NeurIPS 2022), whose data set the
paper follows. Used by ``benchmarks/bench_magnitude_curvature.py`` and its small test; not public.

Geodesic distances use the haversine form of the law of cosines, which keeps close pairs accurate
(``arccos`` / ``arccosh`` of a number near 1 loses half the digits): with
:math:`s_K(x) = \\sin(\\sqrt K x)/\\sqrt K`, :math:`x` or :math:`\\sinh(\\sqrt{-K} x)/\\sqrt{-K}`,

.. math::

    s_K(d/2)^2 = s_K\\left(\\frac{r_1 - r_2}{2}\\right)^2 + s_K(r_1)\\, s_K(r_2)\\,
    \\sin^2\\frac{\\theta_1 - \\theta_2}{2}

for points at geodesic polar coordinates :math:`(r_i, \\theta_i)` around the centre.

References
----------
.. [1] K. Limbeck, R. Andreeva, R. Sarkar, B. Rieck, "Metric Space Magnitude for Evaluating
   the Diversity of Latent Representations", NeurIPS 2024, Sec. 4.1 and Table 1.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import DiversityInputError


def _s(curvature: float, x: np.ndarray) -> np.ndarray:
    """s_K(x): sin(sqrt(K) x) / sqrt(K), x, or sinh(sqrt(-K) x) / sqrt(-K)."""
    if curvature > 0:
        c = np.sqrt(curvature)
        return np.sin(c * x) / c
    if curvature < 0:
        c = np.sqrt(-curvature)
        return np.sinh(c * x) / c
    return np.asarray(x, dtype=np.float64)


def _s_inverse(curvature: float, y: np.ndarray) -> np.ndarray:
    """The inverse of :func:`_s` on [0, pi / (2 sqrt(K))] (arcsin clipped at 1)."""
    if curvature > 0:
        c = np.sqrt(curvature)
        return np.arcsin(np.minimum(c * y, 1.0)) / c
    if curvature < 0:
        c = np.sqrt(-curvature)
        return np.arcsinh(c * y) / c
    return y


def _disk_radii(curvature: float, u: np.ndarray) -> np.ndarray:
    """Geodesic radii whose distribution is uniform by area on the unit disk (inverse CDF of u in [0, 1])."""
    if curvature > 0:
        c = np.sqrt(curvature)
        return 2.0 / c * np.arcsin(np.sqrt(u) * np.sin(c / 2.0))
    if curvature < 0:
        c = np.sqrt(-curvature)
        return 2.0 / c * np.arcsinh(np.sqrt(u) * np.sinh(c / 2.0))
    return np.sqrt(u)


def _curvature_disk(curvature: float, n_points: int, rng: np.random.Generator) -> np.ndarray:
    """Geodesic distances of ``n_points`` points drawn uniformly by area from the unit disk of curvature K.

    The matrix is n x n, float64, exactly symmetric with a zero diagonal. Needs
    ``curvature < pi^2`` (the disk must fit in a hemisphere); the experiment uses [-2, 2].
    """
    if not curvature < np.pi ** 2:
        raise DiversityInputError(f"a disk of geodesic radius 1 needs curvature < pi^2; got {curvature!r}.")
    r = _disk_radii(curvature, rng.random(n_points))
    theta = 2.0 * np.pi * rng.random(n_points)
    sr = _s(curvature, r)
    half = _s(curvature, 0.5 * (r[:, None] - r[None, :]))
    h = half * half + sr[:, None] * sr[None, :] * np.sin(0.5 * (theta[:, None] - theta[None, :])) ** 2
    D = 2.0 * _s_inverse(curvature, np.sqrt(h))
    D = 0.5 * (D + D.T)
    np.fill_diagonal(D, 0.0)
    return D
