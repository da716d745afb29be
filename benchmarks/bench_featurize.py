"""Benchmark of the neural featurizers on a CPU (issue 22, item 2): the project's path against a plain forward pass.

Images: ``--n`` (1,200) synthetic 64 x 64 PNG icons (a gradient background, one filled shape
of a random colour, size and place, a little noise) written to a temporary folder. Two paths:

- plain: the package's own ``model.extract_features(x).mean((2, 3))``, float32, default
  settings (NCHW, torch's default threads and OpenMP policy, ``torch.no_grad``), batches of 64,
  over tensors prepared before the clock starts (decoded, resized to 224, normalised);
- project: the ``efficientnet_lite0`` featurizer's runner end to end on the loaded dataset
  (re-reading and decoding the PNG files included), bypassing the feature caches.

Each timing runs in a fresh worker process (OpenMP reads its environment when torch is
imported; ``OMP_WAIT_POLICY`` is removed from the workers' environment, so the plain path runs
torch's defaults and the project's path sets what it sets itself, as in ``diversity score``),
after loading its model and warming it up. The timings alternate, plain, project, project,
plain, ..., so that both run under the same load. The ratio project / plain is the figure of
merit (target <= 0.65). The features are compared (largest difference relative to the largest
feature) and so are their Vendi scores (cosine kernel, q = 1). ``--in-process`` also times
both paths in one process under one OpenMP policy (the code's effect alone).

Text: ``--n`` short sentences (the text demo's captions and documentation sentences, topped up
with generated captions): ``SentenceTransformer.encode(texts, batch_size=64)`` against the
``minilm`` featurizer (:func:`~diversity_core.featurizers.text.minilm_embeddings`), the same way.

The load average is recorded with every timing: on a machine shared with other jobs,
wall-clock times are noisy and only the interleaved ratios compare. Writes
``benchmarks/results/featurize.json``. Usage::

    python benchmarks/bench_featurize.py [--n 1200] [--repeats 2] [--skip-text] [--in-process]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
RESULTS = HERE / "results" / "featurize.json"
TARGET_RATIO = 0.65


def load_average() -> float:
    return os.getloadavg()[0]


def write_icons(folder: Path, n: int, seed: int = 0) -> None:
    """``n`` image-like 64 x 64 PNG icons: gradient background, one shape, mild noise."""
    import numpy as np
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:64, 0:64] / 63.0
    for i in range(n):
        c0, c1 = rng.integers(0, 256, size=(2, 3))
        angle = rng.uniform(0, 2 * np.pi)
        t = np.clip(0.5 + (xx - 0.5) * np.cos(angle) + (yy - 0.5) * np.sin(angle), 0, 1)[..., None]
        bg = (1 - t) * c0 + t * c1 + rng.normal(0, 6, size=(64, 64, 3))
        img = Image.fromarray(np.clip(bg, 0, 255).astype(np.uint8), mode="RGB")
        draw = ImageDraw.Draw(img)
        colour = tuple(int(v) for v in rng.integers(0, 256, size=3))
        cx, cy, r = rng.integers(16, 48), rng.integers(16, 48), rng.integers(6, 16)
        kind = i % 3
        if kind == 0:
            draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=colour)
        elif kind == 1:
            draw.rectangle((cx - r, cy - r, cx + r, cy + r), fill=colour)
        else:
            draw.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=colour)
        img.save(folder / f"icon_{i:05d}.png")


def short_sentences(n: int) -> list:
    """``n`` short sentences: the text demo's items, topped up with generated captions, shuffled."""
    import numpy as np

    from diversity_core.data import load_demo
    from diversity_core.data.demos import generate_captions

    texts = [str(t) for t in load_demo("text").items]
    level = 3
    while len(texts) < n:
        texts += generate_captions(level, n_scenes=max(1, (n - len(texts)) // 5 + 1), seed=level)
        level = level - 1 if level > 0 else 3
    rng = np.random.default_rng(0)
    return [texts[i] for i in rng.permutation(len(texts))[:n]]


# --------------------------------------------------------------------------------------------
# the timed paths (each builds its inputs and warms up, then returns the function to time)
# --------------------------------------------------------------------------------------------


def images_plain(folder: Path):
    import numpy as np
    import torch

    from diversity_core.data import load_dataset
    from diversity_core.data.images import iter_original_images
    from diversity_core.featurizers.images import _normalized_batch, load_efficientnet_lite0

    ds = load_dataset(folder)
    x = torch.from_numpy(np.ascontiguousarray(_normalized_batch(list(iter_original_images(ds)), 224).transpose(0, 3, 1, 2)))
    model = load_efficientnet_lite0()
    with torch.no_grad():
        model.extract_features(x[:8])

    def run(reports):
        out = []
        with torch.no_grad():
            for s in range(0, x.shape[0], 64):
                out.append(model.extract_features(x[s : s + 64]).mean(dim=(2, 3)))
        return torch.cat(out).numpy()

    return run


def images_project(folder: Path):
    import numpy as np

    from diversity_core.data import load_dataset
    from diversity_core.featurizers import FEATURIZERS
    from diversity_core.featurizers.images import efficientnet_features

    ds = load_dataset(folder)
    spec = FEATURIZERS["efficientnet_lite0"]
    efficientnet_features(np.zeros((4, 64, 64, 3), dtype=np.uint8))  # loads and builds the network

    def run(reports):
        return spec.run(ds, lambda d, t, m: reports.append((time.perf_counter(), d, m)), **spec.parameters)

    return run


def text_plain(path: Path):
    from diversity_core.featurizers.text import load_minilm

    texts = json.loads(path.read_text())
    model = load_minilm()
    model.encode(texts[:64], batch_size=64)

    def run(reports):
        return model.encode(texts, batch_size=64, convert_to_numpy=True, normalize_embeddings=True,
                            show_progress_bar=False)

    return run


def text_project(path: Path):
    from diversity_core.featurizers import FEATURIZERS
    from diversity_core.featurizers.text import minilm_embeddings

    texts = json.loads(path.read_text())
    batch_size = FEATURIZERS["minilm"].parameters["batch_size"]
    minilm_embeddings(texts[:64], batch_size=batch_size)

    def run(reports):
        return minilm_embeddings(texts, batch_size=batch_size,
                                 progress=lambda d, t, m: reports.append((time.perf_counter(), d, m)))

    return run


PATHS = {"images-plain": images_plain, "images-project": images_project,
         "text-plain": text_plain, "text-project": text_project}


def timed(run) -> dict:
    """Wall and CPU seconds of one call, its output and its progress reports."""
    reports: list = []
    load = load_average()
    w, c = time.perf_counter(), time.process_time()
    out = run(reports)
    wall, cpu = time.perf_counter() - w, time.process_time() - c
    eta = None
    first = next(((t, m) for t, d, m in reports if d > 0 and m.endswith(" left")), None)
    if first is not None:
        eta = {"first_estimate": first[1].split(" · ")[-1], "after_s": first[0] - w,
               "actual_left_s": reports[-1][0] - first[0]}
    return {"wall_s": wall, "cpu_s": cpu, "load": [load, load_average()], "output": out,
            "stages": sorted({m.split(" · ")[0] for _t, _d, m in reports}), "eta": eta}


def worker(kind: str, data: Path, out: Path) -> None:
    """Run one timing of ``kind`` in this fresh process; features to ``out``, the rest to stdout."""
    import numpy as np

    run = PATHS[kind](data)  # imports torch: first, so that the path decides its OpenMP policy
    res = timed(run)
    np.save(out, np.asarray(res.pop("output")))
    import torch

    from diversity_core.featurizers._runtime import omp_waits_passively

    passive = omp_waits_passively() if kind.endswith("project") else False
    res.update(torch_threads=torch.get_num_threads(), omp_wait_policy="PASSIVE" if passive else "default")
    print(json.dumps(res))


def in_subprocess(kind: str, data: Path, out: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, "--data", str(data), "--out", str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=str(HERE.parent))
    if proc.returncode != 0:
        raise RuntimeError(f"worker {kind} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compare(modality: str, data: Path, tmp: Path, repeats: int, in_process: bool) -> dict:
    """Interleaved timings of ``<modality>-plain`` and ``<modality>-project``; features compared."""
    import numpy as np

    from diversity_core.spectrum import compute_spectrum

    names = [f"{modality}-plain", f"{modality}-project"]
    rows: dict = {k: [] for k in names}
    for r in range(repeats):
        for kind in names if r % 2 == 0 else names[::-1]:
            rows[kind].append(in_subprocess(kind, data, tmp / f"{kind}.npy"))
            row = rows[kind][-1]
            print(f"  {kind}: {row['wall_s']:.2f} s (load {row['load'][0]:.1f})", file=sys.stderr, flush=True)
    plain, project = (np.load(tmp / f"{k}.npy") for k in names)
    wall = {k.split("-")[1]: [row["wall_s"] for row in rows[k]] for k in names}
    cpu = {k.split("-")[1]: [row["cpu_s"] for row in rows[k]] for k in names}
    out = {
        "wall_s": wall,
        "cpu_s": cpu,
        "ratio_median": statistics.median(wall["project"]) / statistics.median(wall["plain"]),
        "ratio_best": min(wall["project"]) / min(wall["plain"]),
        "ratio_cpu": statistics.median(cpu["project"]) / statistics.median(cpu["plain"]),
        "max_relative_difference": float(np.abs(plain - project).max() / np.abs(plain).max()),
        "vendi_q1": {
            "plain": compute_spectrum(plain.astype(np.float64), kernel="cosine").vendi(1.0),
            "project": compute_spectrum(project.astype(np.float64), kernel="cosine").vendi(1.0),
        },
        "load_average": [row["load"] for k in names for row in rows[k]],
        "project_stages": rows[names[1]][-1]["stages"],
        "project_eta": [row["eta"] for row in rows[names[1]]],
        "workers": {k: {"torch_threads": rows[k][-1]["torch_threads"], "omp_wait_policy": rows[k][-1]["omp_wait_policy"]}
                    for k in names},
    }
    if in_process:
        fns = {k: PATHS[k](data) for k in names}
        same: dict = {k: [] for k in names}
        for r in range(repeats):
            for kind in names if r % 2 == 0 else names[::-1]:
                res = timed(fns[kind])
                same[kind].append(res["wall_s"])
                print(f"  in process {kind}: {res['wall_s']:.2f} s (load {res['load'][0]:.1f})", file=sys.stderr,
                      flush=True)
        from diversity_core.featurizers._runtime import omp_waits_passively

        out["in_process"] = {
            "omp_wait_policy": "PASSIVE" if omp_waits_passively() else "default",
            "wall_s": same,
            "ratio_median": statistics.median(same[names[1]]) / statistics.median(same[names[0]]),
        }
    return out


def report(title: str, res: dict) -> None:
    print(title)
    for name in ("plain", "project"):
        walls = res["wall_s"][name]
        print(f"  {name:<8} median {statistics.median(walls):7.2f} s  best {min(walls):7.2f} s  "
              f"cpu {statistics.median(res['cpu_s'][name]):7.2f} s")
    print(f"  ratio project / plain: median {res['ratio_median']:.3f}, best {res['ratio_best']:.3f}, "
          f"cpu {res['ratio_cpu']:.3f} (target <= {TARGET_RATIO})")
    print(f"  max relative difference {res['max_relative_difference']:.1e}; VS_1 plain "
          f"{res['vendi_q1']['plain']:.5f}, project {res['vendi_q1']['project']:.5f}")
    loads = [lo for pair in res["load_average"] for lo in pair]
    print(f"  load average during the timings: {min(loads):.1f} to {max(loads):.1f}")
    for eta in res["project_eta"]:
        if eta:
            print(f"  first time-left estimate after {eta['after_s']:.1f} s: {eta['first_estimate']} "
                  f"(actual {eta['actual_left_s']:.1f} s)")
    if "in_process" in res:
        ip = res["in_process"]
        print(f"  in one process (OMP_WAIT_POLICY={ip['omp_wait_policy']}): ratio median {ip['ratio_median']:.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1200)
    parser.add_argument("--repeats", type=int, default=2, help="timings of each path (alternating order)")
    parser.add_argument("--skip-images", action="store_true")
    parser.add_argument("--skip-text", action="store_true")
    parser.add_argument("--in-process", action="store_true", help="also time both paths in this one process")
    parser.add_argument("--worker", choices=sorted(PATHS), help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.data, args.out)
        return 0

    out = {
        "benchmark": "neural featurizers on a CPU: the project's path against a plain forward pass, interleaved, "
                     "each timing in a fresh process",
        "n": args.n,
        "repeats": args.repeats,
        "target_ratio": TARGET_RATIO,
        "machine": {
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
        },
    }
    with tempfile.TemporaryDirectory(prefix="bench_featurize_") as tmp_name:
        tmp = Path(tmp_name)
        if not args.skip_images:
            folder = tmp / "icons"
            folder.mkdir()
            write_icons(folder, args.n)
            out["images"] = compare("images", folder, tmp, args.repeats, args.in_process)
            report(f"EfficientNet-Lite0, {args.n} PNG icons 64 x 64 -> 224 px", out["images"])
        if not args.skip_text:
            texts = short_sentences(args.n)
            (tmp / "texts.json").write_text(json.dumps(texts))
            out["text"] = compare("text", tmp / "texts.json", tmp, args.repeats, args.in_process)
            out["text"]["mean_characters"] = statistics.mean(len(t) for t in texts)
            report(f"MiniLM, {args.n} short sentences ({out['text']['mean_characters']:.0f} characters on average)",
                   out["text"])
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
