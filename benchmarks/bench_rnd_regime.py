"""RND regime study (issue 27, item 8): does a setting rank structured data above unstructured noise?

For each case ``DATA:COMPONENTS:EPOCHS[:TRAIN]`` the RND score (MLP, 40 runs, the given epochs,
``train_size`` TRAIN, default 200) of the data and of its noise, with their intervals, and the
verdict: RESOLVED (data above noise, intervals apart), REVERSED (noise above data) or overlap.
``COMPONENTS`` is ``rnd_score``'s ``n_components`` (``none``: every feature). DATA is ``text`` or
``molecules`` (the demos' default features; noise: each feature shuffled across items on its own),
``DEMO@G`` (group G of a demo, same noise), ``digits64`` / ``digits1024`` (the digits' 8 x 8 pixels,
or 32 x 32 upsampled; noise: uniform random pixels) or ``icons`` / ``shapes`` (pixel features).
The figures are recorded in ``docs/rnd.md``. Usage::

    python benchmarks/bench_rnd_regime.py text:32:30 molecules:32:30 digits1024:32:30 text:64:30
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402


def shuffled_columns(X, rng) -> np.ndarray:
    """Each feature permuted across items on its own (as tests/test_rnd.py): the marginals kept, the structure gone."""
    X = X.toarray() if sp.issparse(X) else np.array(X, dtype=np.float64)
    return np.take_along_axis(X, np.argsort(rng.random(X.shape), axis=0), axis=0)


def source(name: str) -> tuple:
    """``(data, noise)`` feature matrices of a case's DATA."""
    from diversity_core.data import load_demo
    from diversity_core.featurizers import featurize
    from diversity_core.featurizers.images import pixel_features

    rng = np.random.default_rng(7)
    if "@" in name:
        demo, g = name.split("@")
        ds = load_demo(demo)
        X = featurize(ds)[ds.group_indices(ds.group_names()[int(g)])]
        return (X.toarray() if sp.issparse(X) else np.asarray(X, float)), shuffled_columns(X, rng)
    if name in ("text", "molecules"):
        X = featurize(load_demo(name))
        return (X.toarray() if sp.issparse(X) else np.asarray(X, float)), shuffled_columns(X, rng)
    if name in ("digits64", "digits1024", "icons", "shapes"):
        items = load_demo(name.rstrip("0123456789") if name.startswith("digits") else name).items
        noise = rng.integers(0, 256, size=items.shape, dtype=np.uint8)
        if name == "digits64":
            return items.reshape(len(items), -1).astype(float), noise.reshape(len(items), -1).astype(float)
        if name == "digits1024":
            return pixel_features(items, side=32, upsample=True), pixel_features(noise, side=32, upsample=True)
        return pixel_features(items), pixel_features(noise)
    raise SystemExit(f"unknown DATA {name!r}: text, molecules, DEMO@G, digits64, digits1024, icons or shapes")


def main(cases: list[str]) -> None:
    import torch

    from diversity_core.rnd import rnd_score

    torch.set_num_threads(1)
    for case in cases:
        parts = case.split(":")
        name, k, epochs = parts[0], parts[1], int(parts[2])
        train = int(parts[3]) if len(parts) > 3 else 200
        X, N = source(name)
        t = time.perf_counter()
        kw = dict(architecture="mlp", train_size=train, runs=40, epochs=epochs, average_last=10, rng=0,
                  device="cpu", n_components=None if k == "none" else int(k))
        d, z = rnd_score(X, **kw), rnd_score(N, **kw)
        (d_lo, d_hi), (z_lo, z_hi) = d.confidence_interval, z.confidence_interval
        verdict = "RESOLVED" if d_lo > z_hi else ("REVERSED" if z_lo > d_hi else "overlap")
        print(f"{name} d={X.shape[1]} components={k} epochs={epochs}: data {d.score:.4f} [{d_lo:.4f}, "
              f"{d_hi:.4f}] noise {z.score:.4f} [{z_lo:.4f}, {z_hi:.4f}] {verdict} "
              f"({time.perf_counter() - t:.0f} s)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["text:32:30", "molecules:32:30", "digits1024:32:30"])
