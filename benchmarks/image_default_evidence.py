"""Which representation should images open on? Rankings under pixels vs network features (issue 41, item 1).

For each image collection given (a folder with one sub-folder per group, or ``demo:NAME``), the
groups are ranked by VS_1 at equal n under the pixel features (cosine, the app's pixel view) and
under EfficientNet-Lite0 features (cosine), with the project's own robustness check
(:func:`diversity_core.robustness.representation_robustness`, same subsets under both). It prints,
per collection: the two rankings, how many pairs of groups reverse and how many of those are
resolved under both, Kendall's tau between the two rankings, the background check's share, and
the verdict the app would show. The JSON goes to ``benchmarks/results/image_default_evidence.json``.

Usage::

    python benchmarks/image_default_evidence.py demo:digits demo:icons /data/google_emoji /data/twitter_emoji

The collections measured for the issue (Noto and Twemoji emoji from the ``emoji-datasource-*``
npm packages, one folder per emoji category) are not shipped; the script takes any folder.
"""

from __future__ import annotations

import json
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np

import diversity_core as dc
from diversity_core.robustness import background_dominance, representation_robustness

NETWORK = "efficientnet_lite0"


def _load(spec: str):
    if spec.startswith("demo:"):
        return dc.load_demo(spec[5:])
    return dc.load_dataset(spec)


def _kendall(r1, r2) -> float:
    pos = {g: i for i, g in enumerate(r2)}
    agree = sum(1 if pos[a] < pos[b] else -1 for a, b in combinations(r1, 2))
    return agree / (len(r1) * (len(r1) - 1) / 2)


def measure(spec: str, *, cap: int = 150) -> dict:
    ds = _load(spec)
    # at most `cap` items a group (the same seed for both representations): EfficientNet on 2 cores
    rng = np.random.default_rng(0)
    keep = []
    for g in dict.fromkeys(ds.groups.tolist()):
        idx = np.flatnonzero(ds.groups == g)
        keep.extend(sorted(rng.choice(idx, min(cap, idx.size), replace=False).tolist()))
    ds = ds.subset(np.asarray(sorted(keep)))
    started = time.perf_counter()
    pixels = dc.featurize(ds, "pixels")
    network = dc.featurize(ds, NETWORK)
    featurize_s = time.perf_counter() - started
    res = representation_robustness(
        {"pixels": pixels, NETWORK: network}, ds.groups, kernels={"pixels": ("cosine",), NETWORK: ("cosine",)},
        q=1.0, images=None,
    )
    bg = background_dominance(ds.items, groups=ds.groups)
    pix, net = res.rows
    pairs = len(res.groups) * (len(res.groups) - 1) // 2
    out = {
        "collection": spec,
        "items": int(len(ds.ids)),
        "groups": len(res.groups),
        "n_equal": int(res.n),
        "ranking_pixels": list(pix.ranking),
        "ranking_network": list(net.ranking),
        "vs1_pixels": {g: pix.estimates[g][0] for g in res.groups},
        "vs1_network": {g: net.estimates[g][0] for g in res.groups},
        "pairs": pairs,
        "reversed": len(res.flips),
        "reversed_resolved": sum(f.resolved for f in res.flips),
        "kendall_tau": _kendall(pix.ranking, net.ranking),
        "background_share": float(bg.share),
        "background_warns": bool(bg.dominated),
        "background_fraction": float(bg.background_fraction),
        "verdict": res.verdict,
        "featurize_s": featurize_s,
    }
    return out


def main(argv) -> int:
    results = []
    for spec in argv or ["demo:digits", "demo:icons", "demo:shapes"]:
        r = measure(spec)
        results.append(r)
        print(f"\n{r['collection']}: {r['items']} items, {r['groups']} groups, n = {r['n_equal']}")
        print("  pixels :", " > ".join(r["ranking_pixels"]))
        print(f"  {NETWORK}:", " > ".join(r["ranking_network"]))
        print(f"  reversed pairs {r['reversed']} of {r['pairs']} ({r['reversed_resolved']} resolved under both);"
              f" Kendall tau {r['kendall_tau']:+.2f}; background share {r['background_share']}"
              f" (warns: {r['background_warns']}); verdict {r['verdict']}")
    out = Path(__file__).parent / "results" / "image_default_evidence.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
