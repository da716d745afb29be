"""Run the reference package ``magnipy`` 1.0.0 in a virtual environment of its own.

``magnipy`` pins ``scipy==1.13.0`` (it imports ``scipy.integrate.trapz``, removed in SciPy 1.14),
so it cannot live in the project's environment. This script

- builds ``benchmarks/.magnipy-venv`` (git-ignored) with ``python3.11 -m venv`` and
  ``pip install magnipy==1.0.0`` when it is missing (``ensure_venv``);
- ``fixtures``: computes magnipy's values on seeded inputs and writes
  ``tests/fixtures/magnipy_reference.json`` (the inputs are stored too, so the tests do not
  depend on a random generator's stream);
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


def _magnipy_case(name: str, data, metric: str) -> dict:
    """magnipy's t_conv, curve and MagArea for one input, plus values refined to full precision."""
    import numpy as np
    from magnipy import Magnipy
    from magnipy.magnitude.compute import compute_magnitude_from_distances
    from scipy.optimize import brentq

    data = np.asarray(data, dtype=np.float64)
    log = ""
    mp, out = _quiet(Magnipy, data, metric=metric, n_ts=30)
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
    mp_ref, out = _quiet(Magnipy, data, metric=metric, ts=ts_ref)
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
    out = {
        "generator": "benchmarks/magnipy_env.py fixtures",
        "magnipy": MAGNIPY,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "cases": cases,
        "mag_diff": {"X": X.tolist(), "Y": Y.tolist(), "t_cut": t_cut, "n_scales": 30, "value": float(diff)},
    }
    Path(out_path).write_text(json.dumps(out, indent=1) + "\n")


def worker_bench(x_path: str, out_path: str, eval_ts_path: str = "") -> None:
    """Time ``Magnipy(X).MagArea()`` from scratch; optionally evaluate magnipy at given scales."""
    import time

    import numpy as np
    from magnipy import Magnipy

    X = np.load(x_path, allow_pickle=False)
    start = time.perf_counter()
    mp, log1 = _quiet(Magnipy, X)
    area, log2 = _quiet(mp.MagArea)
    elapsed = time.perf_counter() - start
    mag, ts = mp.get_magnitude()
    out = {
        "seconds": elapsed,
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
