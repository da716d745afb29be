"""Issue 39, item 4: the dense magnitude solver's BLAS threads.

On a machine of at most two usable cores the factorisations run on one BLAS thread, like the CG
products (NumPy's and SciPy's OpenBLAS pools with two threads each made the n = 2000 pipeline
5-20x slower on two shared cores; ``benchmarks/bench_magnitude.py`` measures it). Larger machines
keep every thread for them. Timings are the benchmark's; this checks the policy.
"""

from __future__ import annotations

import numpy as np
import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

from diversity_core import workers  # noqa: E402
from diversity_core.magnitude import _solvers, magnitude_function  # noqa: E402


def _blas_threads() -> int:
    return max(int(i["num_threads"]) for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas")


@pytest.mark.parametrize(("cores", "expected"), [(1, 1), (2, 1), (8, 2)])
def test_factorisations_use_one_blas_thread_on_small_machines(monkeypatch, cores, expected):
    seen = []
    real = _solvers._cholesky

    def spy(A, *, overwrite):
        seen.append(_blas_threads())
        return real(A, overwrite=overwrite)

    monkeypatch.setattr(_solvers, "_cholesky", spy)
    monkeypatch.setattr(workers, "available_cores", lambda: cores)
    X = np.random.default_rng(0).normal(size=(80, 3))
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        if _blas_threads() < 2:
            pytest.skip("this BLAS cannot raise its thread count to 2")
        func = magnitude_function(X, n_scales=10, method="dense")
        after = _blas_threads()
    assert any(m.startswith("cholesky") for m in func.methods)  # the small scales were factorised
    assert seen and set(seen) == {expected}
    assert after == 2  # the limit is restored after each factorisation
