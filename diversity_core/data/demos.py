"""Demo datasets, built offline from data that ships with the installed packages.

=============  ==========  ================================================================
name           modality    groups
=============  ==========  ================================================================
digits         images      scikit-learn's bundled 8 x 8 handwritten digits, grouped into
                           "models" like the VS paper's experiments: all ten classes, mode
                           dropping (classes 0-2), mode collapse (5 images repeated with
                           noise), an imbalanced mixture (class 9 at 1%).
shapes         images      generated shape x colour images (the VS paper's Fig. 1 kind):
                           4 shapes x 4 colours balanced and imbalanced, one colour, one
                           shape, 2 x 2.
icons          images      generated icon sets built so that the ranking depends on the
                           representation: dark tiles (2 designs), 24 small glyphs on white,
                           6 medium glyphs on white (pixel cosine and pixel RBF disagree).
molecules      molecules   real sets read from the installed RDKit package: the NCI and WEHI
                           screening collections, the congeneric ChEMBL series of RDKit's
                           FreeWilson example (a focused series), and the NCI set with
                           injected duplicates.
text           text        sentences from the Python standard library's ``pydoc_data.topics``,
                           and captions generated from this module's templates at four
                           controlled diversity levels (beam-search-like to human-like).
=============  ==========  ================================================================

Everything is deterministic (fixed seeds), at most 2000 items per demo, built on first use
and cached in memory (:func:`functools.lru_cache`); nothing is downloaded or written to disk.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from .._optional import require
from ..exceptions import DiversityInputError
from ._dataset import Dataset
from .molecules import canonical_smiles


@dataclass(frozen=True)
class DemoSpec:
    """A demo dataset the app and the CLI can list."""

    name: str
    modality: str
    title: str
    description: str
    build: Callable[[], Dataset]

    def to_dict(self) -> dict:
        """JSON-ready description of the demo."""
        return {
            "name": self.name,
            "modality": self.modality,
            "title": self.title,
            "description": self.description,
        }


def _dataset(name, modality, items, groups, ids, *, features=None) -> Dataset:
    return Dataset(
        name=name,
        modality=modality,
        items=items,
        features=features,
        groups=np.asarray(groups, dtype=str),
        weights=None,
        ids=ids,
        skipped=(),
        source=f"demo:{name}",
    )


# --------------------------------------------------------------------------------------------
# digits
# --------------------------------------------------------------------------------------------

DIGITS_GROUPS = (
    "all ten classes",
    "mode dropping (classes 0-2)",
    "mode collapse (5 images + noise)",
    "imbalanced (class 9 at 1%)",
)


def _digits_arrays() -> tuple:
    """scikit-learn's 1,797 digits: ``(images (1797, 8, 8) float64 in [0, 16], target int)``.

    Read straight from the CSV scikit-learn ships (``sklearn/datasets/data/digits.csv.gz``),
    as ``load_digits`` reads it, without importing scikit-learn (1.4 s, most of the app's
    first page on a new server); ``load_digits`` itself where that file is not found.
    """
    import gzip

    spec = importlib.util.find_spec("sklearn")
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    for folder in folders:
        path = Path(folder) / "datasets" / "data" / "digits.csv.gz"
        if path.is_file():
            with gzip.open(path, "rt") as fh:
                data = np.loadtxt(fh, delimiter=",")
            return data[:, :-1].reshape(-1, 8, 8), data[:, -1].astype(int)
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return bunch.images, bunch.target


def _build_digits(per_group: int = 300, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    images, target = _digits_arrays()  # (1797, 8, 8) in [0, 16]
    picks: list[np.ndarray] = []
    ids: list[str] = []
    groups: list[str] = []

    def add(group, idx, imgs=None, suffix=""):
        picks.append(images[idx] if imgs is None else imgs)
        ids.extend(f"digits[{i}]{suffix}" for i in idx)
        groups.extend([group] * len(idx))

    add(DIGITS_GROUPS[0], rng.choice(len(target), per_group, replace=False))
    add(DIGITS_GROUPS[1], rng.choice(np.flatnonzero(target < 3), per_group, replace=False))
    base = np.array([rng.choice(np.flatnonzero(target == c)) for c in (0, 3, 4, 7, 8)])
    rep = np.repeat(base, per_group // len(base))
    noisy = np.clip(images[rep] + rng.normal(0.0, 1.0, size=(len(rep), 8, 8)), 0.0, 16.0)
    add(DIGITS_GROUPS[2], rep, noisy, " + noise")
    n_rare = max(1, round(0.01 * per_group))
    rare = rng.choice(np.flatnonzero(target == 9), n_rare, replace=False)
    common = rng.choice(np.flatnonzero(target != 9), per_group - n_rare, replace=False)
    add(DIGITS_GROUPS[3], rng.permutation(np.concatenate([common, rare])))
    pixels = np.concatenate(picks, axis=0)
    items = np.clip(np.rint(pixels * (255.0 / 16.0)), 0, 255).astype(np.uint8)[..., None]
    return _dataset("digits", "images", items, groups, ids)


# --------------------------------------------------------------------------------------------
# shapes and colours
# --------------------------------------------------------------------------------------------

SHAPES = ("circle", "square", "triangle", "cross")
COLOURS = {"red": (220, 40, 40), "green": (40, 180, 60), "blue": (50, 90, 230), "yellow": (235, 200, 40)}
SHAPES_GROUPS = (
    "4 shapes x 4 colours (balanced)",
    "4 shapes x 4 colours (imbalanced: 70% red circles)",
    "4 shapes, one colour",
    "one shape, 4 colours",
    "2 shapes x 2 colours",
)


def draw_shape(shape: str, colour, rng: np.random.Generator, side: int = 48) -> np.ndarray:
    """One side x side RGB image of ``shape`` in ``colour`` on black, with a small random jitter."""
    Image = require("PIL.Image", purpose="the demo datasets")
    ImageDraw = require("PIL.ImageDraw", purpose="the demo datasets")

    img = Image.new("RGB", (side, side), (0, 0, 0))
    d = ImageDraw.Draw(img)
    r = side * 0.30 * rng.uniform(0.9, 1.1)
    cx = side / 2 + rng.uniform(-2, 2)
    cy = side / 2 + rng.uniform(-2, 2)
    rgb = tuple(int(np.clip(c + rng.normal(0, 8), 0, 255)) for c in colour)
    if shape == "circle":
        d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=rgb)
    elif shape == "square":
        s = r * 0.9
        d.rectangle([cx - s, cy - s, cx + s, cy + s], fill=rgb)
    elif shape == "triangle":
        d.polygon([(cx, cy - r), (cx - r * 0.95, cy + r * 0.8), (cx + r * 0.95, cy + r * 0.8)], fill=rgb)
    elif shape == "cross":
        w = r * 0.35
        d.rectangle([cx - r, cy - w, cx + r, cy + w], fill=rgb)
        d.rectangle([cx - w, cy - r, cx + w, cy + r], fill=rgb)
    else:
        raise DiversityInputError(f"unknown shape {shape!r}; choose one of: {', '.join(SHAPES)}.")
    return np.asarray(img, dtype=np.uint8)


def _build_shapes(per_group: int = 200, seed: int = 1) -> Dataset:
    rng = np.random.default_rng(seed)
    colours = list(COLOURS)
    combos = {
        SHAPES_GROUPS[0]: [(s, c) for s in SHAPES for c in colours],
        SHAPES_GROUPS[1]: [(s, c) for s in SHAPES for c in colours],
        SHAPES_GROUPS[2]: [(s, "blue") for s in SHAPES],
        SHAPES_GROUPS[3]: [("circle", c) for c in colours],
        SHAPES_GROUPS[4]: [(s, c) for s in ("circle", "square") for c in ("red", "blue")],
    }
    items, ids, groups = [], [], []
    for group, options in combos.items():
        if group == SHAPES_GROUPS[1]:
            n_major = int(0.7 * per_group)
            rest = [o for o in options if o != ("circle", "red")]
            chosen = [("circle", "red")] * n_major + [rest[i % len(rest)] for i in range(per_group - n_major)]
        else:
            chosen = [options[i % len(options)] for i in range(per_group)]
        for k, (shape, colour) in enumerate(chosen):
            items.append(draw_shape(shape, COLOURS[colour], rng))
            ids.append(f"{colour} {shape} #{k + 1}")
            groups.append(group)
    return _dataset("shapes", "images", np.stack(items), groups, ids)


# --------------------------------------------------------------------------------------------
# icons: built so that the groups' ranking depends on the representation
# --------------------------------------------------------------------------------------------

ICONS_GROUPS = (
    "A: 2 dark tiles",
    "B: 24 small glyphs on white",
    "C: 6 medium glyphs on white",
)
ICON_PALETTE = ((200, 40, 40), (40, 150, 60), (50, 90, 220), (230, 170, 30), (150, 60, 180), (30, 160, 170))


def _icon(kind: str, k: int, rng: np.random.Generator, side: int = 32) -> np.ndarray:
    """One side x side icon of design ``k`` of a set (``"tile"``, ``"small"`` or ``"medium"``), jittered."""
    Image = require("PIL.Image", purpose="the demo datasets")
    ImageDraw = require("PIL.ImageDraw", purpose="the demo datasets")

    jx, jy = rng.uniform(-1, 1, size=2)
    if kind == "tile":  # a dark tile with a light window in one of two corners
        img = Image.new("RGB", (side, side), (20, 20, 20))
        x0, y0 = (2 + jx, 2 + jy) if k == 0 else (18 + jx, 18 + jy)
        ImageDraw.Draw(img).rectangle([x0, y0, x0 + 11, y0 + 11], fill=(240, 240, 240))
        return np.asarray(img, dtype=np.uint8)
    img = Image.new("RGB", (side, side), (255, 255, 255))
    d = ImageDraw.Draw(img)
    if kind == "small":  # 6 colours x 4 positions, 3 shapes: a small glyph on a white background
        colour, (cx, cy), shape, r = ICON_PALETTE[k % 6], ((9, 9), (23, 9), (9, 23), (23, 23))[k // 6], (k // 2) % 3, 6
    else:  # 3 colours x 2 shapes, centred and larger
        colour, (cx, cy), shape, r = ICON_PALETTE[k % 3], (16, 16), k // 3, 10
    cx, cy = cx + jx, cy + jy
    if shape == 0:
        d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=colour)
    elif shape == 1:
        d.rectangle([cx - r, cy - r, cx + r, cy + r], fill=colour)
    else:
        d.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=colour)
    return np.asarray(img, dtype=np.uint8)


def _build_icons(sizes: tuple = (300, 240, 200), seed: int = 5) -> Dataset:
    """Three icon sets whose order reverses between pixel-cosine and pixel-RBF similarity (see DEMOS)."""
    rng = np.random.default_rng(seed)
    items, ids, groups = [], [], []
    for group, kind, designs, size in zip(ICONS_GROUPS, ("tile", "small", "medium"), (2, 24, 6), sizes):
        for i in range(size):
            items.append(_icon(kind, i % designs, rng))
            ids.append(f"{group[:1]} design {i % designs + 1} #{i // designs + 1}")
            groups.append(group)
    return _dataset("icons", "images", np.stack(items), groups, ids)


# --------------------------------------------------------------------------------------------
# molecules (files inside the installed RDKit package)
# --------------------------------------------------------------------------------------------

MOLECULE_GROUPS = (
    "NCI screening set (diverse)",
    "WEHI screening set (diverse)",
    "ChEMBL congeneric series (focused)",
    "NCI + injected duplicates",
)


def rdkit_data_files() -> dict:
    """Paths of the RDKit-bundled files the molecule demo reads (an error if one is missing)."""
    RDConfig = require("rdkit.RDConfig", purpose="the demo datasets")

    files = {
        "nci": Path(RDConfig.RDDataDir) / "NCI" / "first_5K.smi",
        "wehi": Path(RDConfig.RDDataDir) / "Pains" / "test_data" / "wehi_mols.csv",
        "chembl": Path(RDConfig.RDContribDir) / "FreeWilson" / "data" / "CHEMBL2321810.smi",
    }
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise DiversityInputError(
            f"the molecule demo reads files shipped with RDKit, but {', '.join(missing)} is missing from "
            "this installation. Reinstall the rdkit wheel (pip install --force-reinstall rdkit)."
        )
    return files


def _read_first_column(path, sep=None) -> list:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line:
            continue
        first = line.split(sep)[0] if sep else line.split()[0]
        out.append(first.strip().strip('"'))
    return out


def _sample_valid(smiles: list, k: int, rng: np.random.Generator, exclude=()) -> list:
    seen = set(exclude)
    out = []
    for i in rng.permutation(len(smiles)):
        c = canonical_smiles(smiles[i])
        if c is None or c in seen or "." in c:
            continue
        seen.add(c)
        out.append(c)
        if len(out) == k:
            break
    return out


def _build_molecules(per_group: int = 500, n_duplicated: int = 5, copies: int = 30, seed: int = 2) -> Dataset:
    rng = np.random.default_rng(seed)
    files = rdkit_data_files()
    nci = _sample_valid(_read_first_column(files["nci"]), per_group, rng)
    wehi = _sample_valid(_read_first_column(files["wehi"], sep=","), per_group, rng)
    chembl = _sample_valid(_read_first_column(files["chembl"]), per_group, rng)
    # duplicates: n_duplicated molecules of the NCI sample, each repeated `copies` times,
    # replacing as many other NCI molecules (the group keeps per_group items)
    dup_src = [nci[i] for i in rng.choice(len(nci), n_duplicated, replace=False)]
    kept = [s for s in nci if s not in dup_src][: per_group - n_duplicated * copies]
    dup = kept + [s for s in dup_src for _ in range(copies)]
    order = rng.permutation(len(dup))
    dup = [dup[i] for i in order]
    dup_ids = []
    counter: dict[str, int] = {}
    for s in dup:
        counter[s] = counter.get(s, 0) + 1
        dup_ids.append(f"nci+dup {s}" + (f" (copy {counter[s]})" if s in dup_src else ""))
    items = nci + wehi + chembl + dup
    groups = (
        [MOLECULE_GROUPS[0]] * len(nci)
        + [MOLECULE_GROUPS[1]] * len(wehi)
        + [MOLECULE_GROUPS[2]] * len(chembl)
        + [MOLECULE_GROUPS[3]] * len(dup)
    )
    ids = [f"nci {s}" for s in nci] + [f"wehi {s}" for s in wehi] + [f"chembl {s}" for s in chembl] + dup_ids
    return _dataset("molecules", "molecules", items, groups, ids)


# --------------------------------------------------------------------------------------------
# text: pydoc sentences and template captions
# --------------------------------------------------------------------------------------------

TEXT_GROUPS = (
    "Python docs sentences (pydoc_data)",
    "captions: beam search (level 0)",
    "captions: diverse beam, low penalty (level 1)",
    "captions: diverse beam, high penalty (level 2)",
    "captions: human-like (level 3)",
)

# Each slot lists synonyms; index 0 is the "most likely" word a beam search would keep.
_SUBJECTS = {
    "dog": ["dog", "puppy", "brown dog", "pup", "hound"],
    "cat": ["cat", "kitten", "tabby cat", "house cat", "kitty"],
    "man": ["man", "guy", "young man", "gentleman", "person"],
    "woman": ["woman", "lady", "young woman", "girl", "person"],
    "child": ["child", "little boy", "kid", "toddler", "young child"],
    "horse": ["horse", "pony", "brown horse", "mare", "stallion"],
    "bird": ["bird", "seagull", "small bird", "pigeon", "sparrow"],
    "skier": ["skier", "person on skis", "snow skier", "athlete", "woman skiing"],
    "surfer": ["surfer", "man on a surfboard", "wave rider", "person surfing", "boarder"],
    "cyclist": ["cyclist", "bike rider", "man on a bicycle", "biker", "rider"],
}
_ACTIONS = {
    "running": ["running", "sprinting", "racing", "dashing", "jogging"],
    "sitting": ["sitting", "resting", "lounging", "relaxing", "lying"],
    "standing": ["standing", "waiting", "posing", "staying", "lingering"],
    "playing": ["playing", "having fun", "frolicking", "messing around", "goofing off"],
    "eating": ["eating", "having a snack", "munching", "chewing food", "feeding"],
    "jumping": ["jumping", "leaping", "hopping", "bounding", "springing"],
}
_PLACES = {
    "beach": ["on the beach", "by the sea", "on the sand", "along the shore", "near the ocean"],
    "park": ["in the park", "on the grass", "in a green field", "on a lawn", "among the trees"],
    "street": ["on the street", "on a city sidewalk", "down the road", "in a busy town", "near some shops"],
    "snow": ["in the snow", "on a snowy slope", "on a mountain", "in the winter cold", "on white powder"],
    "kitchen": ["in the kitchen", "near the counter", "by the stove", "inside a small kitchen", "at home"],
    "river": ["by the river", "near the water", "on the riverbank", "beside a stream", "at the lake"],
}
_EXTRAS = [
    "under a cloudy sky",
    "at sunset",
    "on a sunny day",
    "early in the morning",
    "while it rains",
    "with friends nearby",
    "next to a red car",
    "in front of a fence",
    "surrounded by people",
    "at night",
    "in the fog",
    "after a long day",
    "during the holidays",
    "as the wind blows",
    "beside an old wall",
    "on a quiet afternoon",
    "in bright light",
    "far from home",
    "with a big smile",
    "in the distance",
]
_TEMPLATES = [
    "a {s} {a} {p}",
    "a {s} is {a} {p}",
    "there is a {s} {a} {p}",
    "{p} , a {s} is {a}",
    "a photo of a {s} {a} {p}",
    "close up of a {s} {a} {p} {e}",
    "a {s} {a} {p} {e}",
    "someone took a picture of a {s} {a} {p}",
]


def _scenes(n_scenes: int, rng: np.random.Generator) -> list:
    subjects, actions, places = list(_SUBJECTS), list(_ACTIONS), list(_PLACES)
    out, seen = [], set()
    while len(out) < n_scenes:
        scene = (
            subjects[rng.integers(len(subjects))],
            actions[rng.integers(len(actions))],
            places[rng.integers(len(places))],
        )
        if scene not in seen:
            seen.add(scene)
            out.append(scene)
    return out


def generate_captions(level: int, n_scenes: int = 40, per_scene: int = 5, seed: int = 3) -> list:
    """Captions for ``n_scenes`` scenes at diversity ``level`` 0 (beam search) to 3 (human-like).

    Every level describes the same scenes (same seed); higher levels vary more of each caption:
    level 0 changes only an article, level 1 also the verb, level 2 the subject, the verb and the
    frame, level 3 every slot (drawn without repetition within a scene) plus extra details. The n-gram Vendi
    score of each set therefore increases with the level.
    """
    if level not in (0, 1, 2, 3):
        raise DiversityInputError(f"caption level must be 0, 1, 2 or 3; got {level!r}.")
    scenes = _scenes(n_scenes, np.random.default_rng(seed))
    rng = np.random.default_rng(seed + 100 + level)
    out = []
    for subj, act, place in scenes:
        syn_s, syn_a, syn_p = _SUBJECTS[subj], _ACTIONS[act], _PLACES[place]
        # level 3 draws every slot without replacement within a scene
        perm_s, perm_a, perm_p = (rng.permutation(len(x)) for x in (syn_s, syn_a, syn_p))
        perm_t = rng.permutation(len(_TEMPLATES))
        perm_e = rng.permutation(len(_EXTRAS))
        for k in range(per_scene):
            if level == 0:
                frame = [
                    "a {s} {a} {p}",
                    "a {s} {a} {p}",
                    "the {s} {a} {p}",
                    "a {s} is {a} {p}",
                    "a {s} {a} {p}",
                ]
                text = frame[k % len(frame)].format(s=syn_s[0], a=syn_a[0], p=syn_p[0])
            elif level == 1:
                text = _TEMPLATES[k % 2].format(s=syn_s[0], a=syn_a[k % 3], p=syn_p[0])
            elif level == 2:
                s, a = syn_s[k % len(syn_s)], syn_a[(k + 1) % len(syn_a)]
                text = _TEMPLATES[k % 3].format(s=s, a=a, p=syn_p[0])
            else:
                s = syn_s[perm_s[k % len(syn_s)]]
                a = syn_a[perm_a[k % len(syn_a)]]
                p = syn_p[perm_p[k % len(syn_p)]]
                e = _EXTRAS[perm_e[k % len(_EXTRAS)]]
                template = _TEMPLATES[perm_t[k % len(_TEMPLATES)]]
                text = template.format(s=s, a=a, p=p, e=e)
                if "{e}" not in template and rng.random() < 0.5:
                    text = f"{text} {e}"
            out.append(" ".join(text.split()))
    return out


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_BAD_CHARS = re.compile(r"[`*|=<>{}\[\]\\_#~^@$]|::|\.\.\.|\"")


def pydoc_sentences(limit: int = 300, seed: int = 4) -> list:
    """English prose sentences from the standard library's ``pydoc_data.topics`` (code excluded)."""
    from pydoc_data.topics import topics

    sentences = []
    for key in sorted(topics):
        for para in re.split(r"\n\s*\n", topics[key]):
            lines = para.splitlines()
            if not lines or any(ln.startswith((" ", "\t")) for ln in lines):
                continue  # indented blocks are code, grammar or tables
            text = " ".join(ln.strip() for ln in lines)
            for sent in _SENTENCE_SPLIT.split(text):
                sent = sent.strip()
                words = sent.split()
                if not (8 <= len(words) <= 35) or not sent.endswith("."):
                    continue
                if _BAD_CHARS.search(sent) or not sent.isascii() or not sent[0].isupper():
                    continue
                sentences.append(sent)
    sentences = list(dict.fromkeys(sentences))
    if len(sentences) > limit:
        rng = np.random.default_rng(seed)
        idx = np.sort(rng.choice(len(sentences), limit, replace=False))
        sentences = [sentences[i] for i in idx]
    return sentences


def _build_text() -> Dataset:
    docs = pydoc_sentences()
    items, groups, ids = (
        list(docs),
        [TEXT_GROUPS[0]] * len(docs),
        [f"pydoc {i + 1}" for i in range(len(docs))],
    )
    for level in range(4):
        caps = generate_captions(level)
        items.extend(caps)
        groups.extend([TEXT_GROUPS[level + 1]] * len(caps))
        ids.extend(f"level {level} scene {i // 5 + 1} caption {i % 5 + 1}" for i in range(len(caps)))
    return _dataset("text", "text", items, groups, ids)


# --------------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------------

DEMOS: dict = {
    spec.name: spec
    for spec in (
        DemoSpec(
            "digits",
            "images",
            "Handwritten digits: four 'models'",
            "scikit-learn's 8x8 digits grouped like generative models: all ten classes, mode dropping "
            "(classes 0-2), mode collapse (5 images repeated with noise), and an imbalanced mixture "
            "(class 9 at 1%). 1200 images.",
            _build_digits,
        ),
        DemoSpec(
            "shapes",
            "images",
            "Shapes and colours",
            "Generated 48x48 images of 4 shapes x 4 colours (the VS paper's Fig. 1): balanced, imbalanced "
            "(70% red circles), one colour, one shape, and 2 x 2. 1000 images.",
            _build_shapes,
        ),
        DemoSpec(
            "molecules",
            "molecules",
            "Molecules shipped with RDKit",
            "500 each from the NCI and WEHI screening collections (diverse), the congeneric ChEMBL series "
            "CHEMBL2321810 (focused), and the NCI sample with 5 molecules repeated 30 times each.",
            _build_molecules,
        ),
        DemoSpec(
            "text",
            "text",
            "Sentences and captions",
            "300 sentences from Python's bundled documentation (pydoc_data) and 4 x 200 template captions "
            "at increasing diversity (beam search, diverse beam low/high penalty, human-like).",
            _build_text,
        ),
        DemoSpec(
            "icons",
            "images",
            "Icon sets: a ranking that depends on the representation",
            "Three generated 32x32 icon sets: dark tiles in 2 designs, 24 small glyph designs on white, 6 medium "
            "ones on white. Pixel cosine similarity, dominated by the white background, ranks the tiles first; "
            "an RBF kernel on the same pixels counts designs and ranks them last (the Robustness page). "
            "740 images.",
            _build_icons,
        ),
    )
}


def list_demos(modality: str | None = None) -> list:
    """Names of the demo datasets, optionally of one modality (details in :data:`DEMOS`)."""
    return [name for name, spec in DEMOS.items() if modality is None or spec.modality == modality]


@functools.cache
def load_demo(name: str) -> Dataset:
    """Build (once per process) and return the demo dataset ``name``; see :data:`DEMOS`.

    Examples
    --------
    >>> load_demo("digits").group_names()[:2]
    ['all ten classes', 'mode dropping (classes 0-2)']
    """
    if name not in DEMOS:
        raise DiversityInputError(
            f"unknown demo {name!r}; choose one of: {', '.join(repr(d) for d in DEMOS)}."
        )
    return DEMOS[name].build()
