"""Run the reference package ``magnipy`` 1.0.0 in a virtual environment of its own.

``magnipy`` pins ``scipy==1.13.0`` (it imports ``scipy.integrate.trapz``, removed in SciPy 1.14),
so it cannot live in the project's environment. This script

- builds ``benchmarks/.magnipy-venv`` (git-ignored) with ``python3.11 -m venv`` and
  ``pip install magnipy==1.0.0`` when it is missing (``ensure_venv``);
- ``fixtures``: computes magnipy's values on seeded inputs and writes
  ``tests/fixtures/magnipy_reference.json`` (the inputs are stored too, so the tests do not
  depend on a random generator's stream): magnitude functions, t_conv and MagArea for several
  metrics (euclidean, cityblock, cosine, precomputed, minkowski p=1.5, chebyshev, jaccard on
  binary fingerprints), MagDiff, spread, the magnitude dimension profile, positive magnitude,
  MagDiff on two different grids (``exact=True``) and the Diversipy MagDiff matrix;
- ``bench X.npy OUT.json``: times ``Magnipy(X).MagArea()`` from scratch and writes the time,
  the area, t_conv, the scales and the curve (used by ``bench_magnitude.py``).

Usage::

    python benchmarks/magnipy_env.py fixtures
    python benchmarks/magnipy_env.py bench X.npy out.json

The same file runs inside the magnipy venv as the worker (``--worker ...``); only the standard
library is imported at module level so that both interpreters can load it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENV = HERE / ".magnipy-venv"
FIXTURE = HERE.parent / "tests" / "fixtures" / "magnipy_reference.json"
MAGNIPY = "magnipy==1.0.0"


def venv_python() -> Path:
    """The magnipy venv's interpreter."""
    return VENV / "bin" / "python"


def ensure_venv(python: str = "python3.11") -> Path:
    """Create the venv and install magnipy into it unless it already imports."""
    py = venv_python()
    if py.exists():
        ok = subprocess.run([str(py), "-c", "import magnipy"], capture_output=True).returncode == 0
        if ok:
            return py
    print(f"building {VENV} with {MAGNIPY} (one-off)...", file=sys.stderr)
    subprocess.run([python, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", MAGNIPY], check=True)
    return py


def run_worker(*args: str) -> None:
    """Run this file's worker mode inside the magnipy venv."""
    py = ensure_venv()
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    subprocess.run([str(py), str(Path(__file__).resolve()), "--worker", *args], check=True, env=env)


# ------------------------------------------------------------------------------------------
# Worker side (runs inside the magnipy venv)
# ------------------------------------------------------------------------------------------


def _quiet(fn, *args, **kwargs):
    """Call ``fn`` capturing magnipy's prints; return (result, captured text)."""
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = fn(*args, **kwargs)
    return out, buf.getvalue()


def _magnipy_case(name: str, data, metric: str, **kwargs) -> dict:
    """magnipy's t_conv, curve and MagArea for one input, plus values refined to full precision.

    ``kwargs`` go to ``Magnipy`` (the distance's parameters, e.g. ``p`` of "minkowski").
    """
    import numpy as np
    from magnipy import Magnipy
    from magnipy.magnitude.compute import compute_magnitude_from_distances
    from scipy.optimize import brentq

    data = np.asarray(data, dtype=np.float64)
    log = ""
    mp, out = _quiet(Magnipy, data, metric=metric, n_ts=30, **kwargs)
    log += out
    area, out = _quiet(mp.MagArea)
    log += out
    mag, ts = mp.get_magnitude()
    t_conv = float(mp.get_t_conv())
    D = mp.get_dist()
    n = D.shape[0]

    def mag_at(t: float) -> float:
        val, out = _quiet(compute_magnitude_from_distances, D, ts=[t], method="cholesky")
        if "perturbing" in out:
            raise RuntimeError(f"{name}: magnipy jittered Z at t={t}; not a valid oracle case")
        return float(val[0])

    # magnipy stops TOMS 748 at rtol=1e-5; refine the root of *its* magnitude function
    target = 0.95 * n
    lo, hi = t_conv * (1 - 1e-3), t_conv * (1 + 1e-3)
    t_ref = brentq(lambda t: mag_at(t) - target, lo, hi, xtol=1e-15, rtol=1e-15, maxiter=200)
    ts_ref = np.linspace(0.0, t_ref, 30)
    mp_ref, out = _quiet(Magnipy, data, metric=metric, ts=ts_ref, **kwargs)
    log += out
    mag_ref, _ = _quiet(mp_ref.get_magnitude)
    mag_ref = mag_ref[0]
    area_ref, out = _quiet(mp_ref.MagArea)
    log += out
    if "perturbing" in log:
        raise RuntimeError(f"{name}: magnipy jittered Z; not a valid oracle case")
    return {
        "name": name,
        "metric": metric,
        "metric_kwargs": kwargs,
        "input": data.tolist(),
        "n_distinct": int(n),
        "ts": [float(v) for v in ts],
        "magnitude": [float(v) for v in mag],
        "t_conv": t_conv,
        "mag_area": float(area),
        "t_conv_refined": float(t_ref),
        "ts_refined": [float(v) for v in ts_ref],
        "magnitude_refined": [float(v) for v in mag_ref],
        "mag_area_refined": float(area_ref),
    }


def worker_fixtures(out_path: str) -> None:
    """Seeded inputs and magnipy's values on them -> JSON fixture."""
    import magnipy  # noqa: F401  (fail early outside the venv)
    import numpy as np
    import scipy
    from magnipy import Magnipy
    from scipy.spatial.distance import cdist

    rng = np.random.default_rng(20240611)
    cases = []
    X1 = rng.normal(size=(80, 3))
    cases.append(_magnipy_case("gauss3_euclidean", X1, "euclidean"))
    centres = rng.normal(size=(3, 5)) * 4.0
    X2 = centres[rng.integers(0, 3, 60)] + rng.normal(size=(60, 5))
    cases.append(_magnipy_case("mixture5_cityblock", X2, "cityblock"))
    X3 = rng.normal(size=(50, 8)) + 0.5
    cases.append(_magnipy_case("shifted8_cosine", X3, "cosine"))
    X4 = rng.uniform(0, 10, size=(70, 2))
    cases.append(_magnipy_case("uniform2_precomputed", cdist(X4, X4), "precomputed"))
    X5 = rng.normal(size=(40, 4))
    X5 = np.vstack([X5, X5[:7]])  # 7 duplicate rows: magnipy drops them too
    cases.append(_magnipy_case("duplicates4_euclidean", X5, "euclidean"))

    # MagDiff: Y = 0.7 X is less diverse at every scale, so |Mag_X - Mag_Y| = Mag_X - Mag_Y
    X = rng.normal(size=(60, 3))
    Y = 0.7 * X
    t_cut = 3.0
    ts = np.linspace(0.0, t_cut, 30)
    mx, _ = _quiet(Magnipy, X, ts=ts)
    my, _ = _quiet(Magnipy, Y, ts=ts)
    diff, _ = _quiet(mx.MagDiff, my)
    # Minkowski with 1 <= p <= 2 and the 2-D Chebyshev distance (L1 rotated by 45 degrees) keep Z_t
    # positive definite, so magnipy's Cholesky works without its jitter
    X6 = rng.normal(size=(60, 4))
    cases.append(_magnipy_case("gauss4_minkowski1.5", X6, "minkowski", p=1.5))
    X7 = rng.uniform(0, 5, size=(50, 2))
    cases.append(_magnipy_case("uniform2_chebyshev", X7, "chebyshev"))
    B = (rng.random((60, 48)) < 0.25).astype(np.float64)  # binary fingerprints: jaccard = 1 - Tanimoto
    cases.append(_magnipy_case("bits48_jaccard", B, "jaccard"))

    out = {
        "generator": "benchmarks/magnipy_env.py fixtures",
        "magnipy": MAGNIPY,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "cases": cases,
        "mag_diff": {"X": X.tolist(), "Y": Y.tolist(), "t_cut": t_cut, "n_scales": 30, "value": float(diff)},
    }
    out.update(_extra_fixtures(rng))
    Path(out_path).write_text(json.dumps(out, indent=1) + "\n")


def _extra_fixtures(rng) -> dict:
    """Spread, the dimension profile, positive magnitude, MagDiff on different grids, Diversipy."""
    import numpy as np
    from magnipy import Diversipy, Magnipy
    from magnipy.magnitude.compute import compute_magnitude_from_distances
    from magnipy.magnitude.dimension import magnitude_dimension_profile_exact
    from scipy.spatial.distance import cdist

    out = {}
    # spread: on magnipy's own grid (its t_conv of the spread) and on explicit scales
    X = rng.normal(size=(70, 3))
    mp, log = _quiet(Magnipy, X, method="spread", n_ts=30)
    spread, ts = _quiet(mp.get_magnitude)[0]
    ts_explicit = np.linspace(0.0, 4.0, 17)
    values, _ = _quiet(compute_magnitude_from_distances, cdist(X, X), ts=ts_explicit, method="spread")
    out["spread"] = {"X": X.tolist(), "ts": [float(v) for v in ts], "values": [float(v) for v in spread],
                     "t_conv": float(mp.get_t_conv()), "ts_explicit": ts_explicit.tolist(),
                     "values_explicit": [float(v) for v in values]}

    # magnitude dimension profile: central differences with a tiny step in log t (h = 1e-4,
    # error ~h^2) on a log grid; and magnipy's default (secant) profile and its maximum
    X = rng.uniform(0, 1, size=(80, 2))
    D = cdist(X, X)
    ts_log = np.geomspace(0.5, 60.0, 12)
    slopes, ts_dim = _quiet(magnitude_dimension_profile_exact, D, ts=ts_log, h=1e-4, one_point_property=False)[0]
    mp, log2 = _quiet(Magnipy, X, log_scale=True, n_ts=30)
    prof, ts_prof = _quiet(mp.get_magnitude_dimension_profile)[0]
    dim, _ = _quiet(mp.get_magnitude_dimension)
    mag_log, ts_mag_log = _quiet(mp.get_magnitude)[0]
    out["dimension"] = {"X": X.tolist(), "ts": ts_log.tolist(), "profile_central_h1e-4": [float(v) for v in slopes],
                        "magnipy_log_grid": [float(v) for v in ts_mag_log],
                        "magnipy_magnitude_on_log_grid": [float(v) for v in mag_log],
                        "magnipy_t_conv": float(mp.get_t_conv()),
                        "magnipy_secant_profile": [float(v) for v in prof],
                        "magnipy_secant_ts": [float(v) for v in ts_prof], "magnipy_dimension": float(dim)}

    # positive magnitude: clustered points, whose weightings have negative entries at mid scales
    centres = rng.normal(size=(4, 2)) * 3.0
    X = centres[rng.integers(0, 4, 50)] + 0.3 * rng.normal(size=(50, 2))
    ts_pos = np.linspace(0.0, 6.0, 13)
    mp_pos, log3 = _quiet(Magnipy, X, ts=ts_pos, positive_magnitude=True)
    mp_all, _ = _quiet(Magnipy, X, ts=ts_pos)
    out["positive_magnitude"] = {"X": X.tolist(), "ts": ts_pos.tolist(),
                                 "values": [float(v) for v in _quiet(mp_pos.get_magnitude)[0][0]],
                                 "magnitude": [float(v) for v in _quiet(mp_all.get_magnitude)[0][0]]}

    # MagDiff of two curves on their own grids (each [0, its t_conv]), re-evaluated on the union
    # of the grids (exact=True), absolute area, not scaled
    X = rng.normal(size=(50, 3))
    Y = 0.8 * rng.normal(size=(45, 3))
    mx, _ = _quiet(Magnipy, X, n_ts=30)
    my, _ = _quiet(Magnipy, Y, n_ts=30)
    _quiet(mx.get_magnitude)
    _quiet(my.get_magnitude)
    exact, log4 = _quiet(mx.MagDiff, my, exact=True, absolute_area=True, scale=False)
    out["mag_diff_grids"] = {"X": X.tolist(), "Y": Y.tolist(), "ts_x": [float(v) for v in mx.get_scales()],
                             "ts_y": [float(v) for v in my.get_scales()], "absolute": float(exact)}

    # Diversipy: all-pairs MagDiff (absolute, scaled by t_cut) on an explicit common grid and on
    # its own median-t_conv grid
    Xs = [rng.normal(size=(40, 3)), 0.7 * rng.normal(size=(45, 3)), 1.3 * rng.normal(size=(35, 3))]
    ts_common = np.linspace(0.0, 5.0, 30)
    dv, _ = _quiet(Diversipy, Xs, ts=ts_common)
    given, _ = _quiet(dv.MagDiffs)
    dv2, _ = _quiet(Diversipy, Xs, n_ts=30)
    auto, _ = _quiet(dv2.MagDiffs)
    out["diversipy"] = {"Xs": [x.tolist() for x in Xs], "ts": ts_common.tolist(),
                        "magdiffs_scaled": np.asarray(given).tolist(), "auto_t_convs": [float(v) for v in dv2._t_convs],
                        "auto_ts": [float(v) for v in dv2._ts], "auto_magdiffs_scaled": np.asarray(auto).tolist()}
    if "perturbing" in log + log2 + log3 + log4:
        raise RuntimeError("magnipy jittered Z in an extra fixture; not a valid oracle case")
    return out


def worker_bench(x_path: str, out_path: str, eval_ts_path: str = "") -> None:
    """Time ``Magnipy(X).MagArea()`` from scratch; optionally evaluate magnipy at given scales."""
    import time

    import numpy as np
    from magnipy import Magnipy

    X = np.load(x_path, allow_pickle=False)
    start, cpu_start = time.perf_counter(), time.process_time()
    mp, log1 = _quiet(Magnipy, X)
    area, log2 = _quiet(mp.MagArea)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    mag, ts = mp.get_magnitude()
    out = {
        "seconds": elapsed,
        "cpu_seconds": cpu,
        "mag_area": float(area),
        "t_conv": float(mp.get_t_conv()),
        "ts": [float(v) for v in ts],
        "magnitude": [float(v) for v in mag],
        "jittered": "perturbing" in (log1 + log2),
    }
    Path(out_path).write_text(json.dumps(out) + "\n")


# ------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    """``fixtures`` or ``bench``; ``--worker`` is the in-venv side."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--worker":
        task, *rest = argv[1:]
        if task == "fixtures":
            worker_fixtures(*rest)
        elif task == "bench":
            worker_bench(*rest)
        else:
            raise SystemExit(f"unknown worker task {task!r}")
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    fx = sub.add_parser("fixtures", help="write tests/fixtures/magnipy_reference.json")
    fx.add_argument("--out", default=str(FIXTURE))
    bn = sub.add_parser("bench", help="time Magnipy(X).MagArea() on a .npy file")
    bn.add_argument("x")
    bn.add_argument("out")
    args = parser.parse_args(argv)
    if args.cmd == "fixtures":
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        run_worker("fixtures", str(Path(args.out).resolve()))
        print(f"wrote {args.out}")
    else:
        run_worker("bench", str(Path(args.x).resolve()), str(Path(args.out).resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
