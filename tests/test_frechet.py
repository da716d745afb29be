"""The Frechet distance with fewer items than features (issue 38 item 5).

With n < d a covariance is singular, and the eigen route took square roots of the eigenvalues
of S_R^1/2 S_G S_R^1/2, a squared scale whose round-off became 2.6e-6 relative on a case with a
known answer. The primal route (singular values of the centred cross product, streamed by QR)
is accurate to eps there.
"""

from __future__ import annotations

import numpy as np
import pytest

from diversity_core.evaluation import frechet_distance
from diversity_core.evaluation._frechet import _nuclear_norm_cross, frechet_parts, frechet_parts_of, moments
from diversity_core.exceptions import NumericalWarning


@pytest.mark.parametrize("n, d, decay", [(200, 512, -8), (64, 2048, -10), (150, 300, -3)])
def test_shift_with_fewer_items_than_features_is_exact(n, d, decay):
    """G = R + c: FD = |c|^2 exactly (the covariances are equal), whatever the ranks.

    Features whose scales span many decades (pixels that barely vary, float32 embeddings' tail
    directions) give S_R^1/2 S_G S_R^1/2 eigenvalues below its round-off, whose square roots the
    eigen route gets wrong by sqrt(d eps) each.
    """
    g = np.random.default_rng(d)
    R = g.normal(size=(n, d)) * np.logspace(0, decay, d)
    c = g.normal(size=d)
    want = float(c @ c)
    with pytest.warns(NumericalWarning, match="rank-deficient"):
        got = frechet_distance(R, R + c, n_resamples=0).value.value
    assert got == pytest.approx(want, rel=1e-13)


def test_the_eigen_route_is_what_the_primal_route_fixes():
    g = np.random.default_rng(512)
    R = g.normal(size=(200, 512)) * np.logspace(0, -8, 512)
    c = g.normal(size=512)
    want = float(c @ c)
    eigen = frechet_parts(moments(R), moments(R + c)).value  # the old route for these sets
    assert abs(eigen - want) / want > 1e-9
    assert abs(frechet_parts_of(R, R + c).value - want) / want < 1e-13


def test_streamed_nuclear_norm_equals_direct_svd():
    g = np.random.default_rng(3)
    A, B = g.normal(size=(3000, 40)), g.normal(size=(25, 40)) + 1.0
    mu_a, mu_b = A.mean(axis=0), B.mean(axis=0)
    direct = np.linalg.svd((A - mu_a) @ (B - mu_b).T, compute_uv=False).sum()
    from diversity_core import config_context

    with config_context(chunk_bytes=4096):  # many blocks, each reduced by QR
        streamed = _nuclear_norm_cross(A, mu_a, B, mu_b)
    assert streamed == pytest.approx(direct, rel=1e-12)
    assert _nuclear_norm_cross(B, mu_b, A, mu_a) == pytest.approx(direct, rel=1e-12)  # either order


def test_full_rank_sets_keep_the_cholesky_route():
    g = np.random.default_rng(4)
    R, G = g.normal(size=(300, 8)), g.normal(size=(200, 8)) + 0.3
    assert frechet_parts_of(R, G) == frechet_parts(moments(R), moments(G))


def test_one_small_set_against_a_large_one():
    """n_G < d < n_R: the primal route streams the larger set; the ranks are still reported."""
    g = np.random.default_rng(5)
    R, G = g.normal(size=(400, 30)), g.normal(size=(12, 30)) * 0.5 + 0.1
    parts = frechet_parts_of(R, G)
    assert (parts.rank_r, parts.rank_g) == (30, 11)
    A, B = R - R.mean(0), G - G.mean(0)
    ts = np.linalg.svd(A @ B.T, compute_uv=False).sum() / np.sqrt((len(R) - 1) * (len(G) - 1))
    assert parts.trace_sqrt == pytest.approx(ts, rel=1e-12)
