r"""Molecule featurizers: Morgan fingerprints, bulk Tanimoto similarity, 2-D depictions.

Morgan (ECFP-like) fingerprints of radius 2 folded to 2048 bits (both configurable) are
returned as 0/1 float arrays; the Tanimoto kernel on them is

.. math::  k(x, y) = \frac{|x \wedge y|}{|x| + |y| - |x \wedge y|},

which :func:`tanimoto_matrix` computes with RDKit's ``BulkTanimotoSimilarity`` (the VS paper's
molecule similarity, App. B; IntDiv of MOSES is :math:`1 - \text{mean}(K)`). A molecule without
any set bit (e.g. a single atom at small radius) has Tanimoto similarity 0 with everything,
including itself by RDKit's convention; :func:`tanimoto_matrix` sets such diagonal entries to 1.

Size bounds: a SMILES over the loader's limits (:data:`~diversity_core.data.molecules.MAX_SMILES_LENGTH`,
:data:`~diversity_core.data.molecules.MAX_ATOMS`) is refused before RDKit sees it, and a molecule
with more than :data:`MAX_DRAW_ATOMS` atoms is not drawn: :func:`draw_molecule` and
:func:`draw_molecule_png` return a placeholder instead (RDKit took over 5 minutes and 3.7 GB to
draw a 10,000-atom molecule, and 7 s for 1,000 atoms).
"""

from __future__ import annotations

import io
import struct
import zlib
from typing import Optional, Sequence, Union
from xml.sax.saxutils import escape

import numpy as np

from .._optional import require
from .._progress import ProgressCallback
from .._validation import check_scalar
from ..exceptions import DiversityInputError
from ._runtime import BatchProgress

#: Largest molecule drawn, in atoms; larger ones get a placeholder (drawing cost grows fast).
MAX_DRAW_ATOMS = 250
#: Molecules fingerprinted between progress reports (each with the time left, measured).
_PROGRESS_EVERY = 500


def _mol(smiles: str, index: int):
    Chem = require("rdkit.Chem", purpose="molecular fingerprints")

    from ..data.molecules import quiet_rdkit, smiles_size_problem

    text = str(smiles)
    problem = smiles_size_problem(text)
    if problem is not None:
        raise DiversityInputError(
            f"molecule {index}: {problem}; load molecules with load_dataset, which skips and reports such entries."
        )
    with quiet_rdkit():
        mol = Chem.MolFromSmiles(text)
    if mol is None:
        raise DiversityInputError(
            f"molecule {index} ({len(text)} characters) is not a valid SMILES; load molecules with load_dataset, "
            "which skips and reports invalid ones."
        )
    return mol


def fingerprint_bitvects(
    smiles: Sequence[str],
    *,
    radius: int = 2,
    n_bits: int = 2048,
    chirality: bool = False,
    progress: Optional[ProgressCallback] = None,
) -> list:
    """RDKit ``ExplicitBitVect`` Morgan fingerprints (for :func:`tanimoto_matrix`)."""
    rdFingerprintGenerator = require("rdkit.Chem.rdFingerprintGenerator", purpose="molecular fingerprints")

    radius = check_scalar(radius, "radius", int, min_val=0, max_val=8)
    n_bits = check_scalar(n_bits, "n_bits", int, min_val=16, max_val=1 << 16)
    if isinstance(smiles, str):
        raise DiversityInputError("smiles must be a sequence of SMILES strings, not a single string.")
    smiles = list(smiles)
    if not smiles:
        raise DiversityInputError("smiles is empty; there is nothing to featurize.")
    gen = rdFingerprintGenerator.GetMorganGenerator(
        radius=radius, fpSize=n_bits, includeChirality=bool(chirality)
    )
    fps = []
    clock = BatchProgress(progress, len(smiles), "fingerprinting molecules")
    clock.start()
    for i, s in enumerate(smiles):
        fps.append(gen.GetFingerprint(_mol(s, i)))
        if (i + 1) % _PROGRESS_EVERY == 0 and i + 1 < len(smiles):
            clock.update(i + 1)
    clock.update(len(smiles))
    return fps


def morgan_fingerprints(
    smiles: Sequence[str],
    *,
    radius: int = 2,
    n_bits: int = 2048,
    chirality: bool = False,
    progress: Optional[ProgressCallback] = None,
) -> np.ndarray:
    """Morgan fingerprints as a 0/1 float64 array of shape (N, n_bits); use the Tanimoto kernel.

    Examples
    --------
    >>> X = morgan_fingerprints(["CCO", "CCO", "c1ccccc1"], n_bits=256)
    >>> X.shape, bool((X[0] == X[1]).all())
    ((3, 256), True)
    """
    DataStructs = require("rdkit.DataStructs", purpose="molecular fingerprints")

    fps = fingerprint_bitvects(smiles, radius=radius, n_bits=n_bits, chirality=chirality, progress=progress)
    out = np.zeros((len(fps), fps[0].GetNumBits()), dtype=np.float64)
    row = np.zeros(fps[0].GetNumBits(), dtype=np.float64)
    for i, fp in enumerate(fps):
        DataStructs.ConvertToNumpyArray(fp, row)
        out[i] = row
    return out


def _as_bitvects(fps) -> list:
    DataStructs = require("rdkit.DataStructs", purpose="molecular fingerprints")

    if isinstance(fps, np.ndarray):
        a = np.asarray(fps)
        if a.ndim != 2 or not np.isin(a, (0, 1)).all():
            raise DiversityInputError(
                "fingerprints must be a 2-D 0/1 array (or a list of RDKit bit vectors)."
            )
        out = []
        for row in a:
            bv = DataStructs.ExplicitBitVect(a.shape[1])
            bv.SetBitsFromList(np.flatnonzero(row).tolist())
            out.append(bv)
        return out
    fps = list(fps)
    if fps and isinstance(fps[0], str):
        return fingerprint_bitvects(fps)
    return fps


def tanimoto_matrix(fps: Union[np.ndarray, Sequence]) -> np.ndarray:
    """Tanimoto similarity matrix (N x N, float64, unit diagonal) via ``BulkTanimotoSimilarity``.

    Parameters
    ----------
    fps : list of RDKit bit vectors, a 0/1 array (N, n_bits), or a list of SMILES
        (fingerprinted with the defaults).

    Notes
    -----
    O(N^2 n_bits / 64) with RDKit's popcount; about a second for N = 2000 on one core.
    """
    DataStructs = require("rdkit.DataStructs", purpose="molecular fingerprints")

    bvs = _as_bitvects(fps)
    n = len(bvs)
    if n == 0:
        raise DiversityInputError("no fingerprints given.")
    K = np.empty((n, n), dtype=np.float64)
    for i in range(n):
        K[i, i:] = DataStructs.BulkTanimotoSimilarity(bvs[i], bvs[i:])
        K[i:, i] = K[i, i:]
    np.fill_diagonal(K, 1.0)
    return K


def _size(size) -> tuple:
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        size = (int(size), int(size))
    try:
        w, h = (int(v) for v in size)
    except (TypeError, ValueError):
        raise DiversityInputError(f"size must be an int or a (width, height) pair; got {size!r}.") from None
    if not (16 <= w <= 4096 and 16 <= h <= 4096):
        raise DiversityInputError(f"size must be between 16 and 4096 pixels; got {size!r}.")
    return w, h


def drawing_problem(smiles: str) -> Optional[str]:
    """Why ``smiles`` would not be drawn (too many atoms for a depiction), or ``None``.

    The atoms are counted from the text first (no RDKit), so a huge SMILES costs nothing.
    """
    from ..data.molecules import count_smiles_atoms, smiles_size_problem

    text = str(smiles)
    problem = smiles_size_problem(text)
    if problem is not None:
        return problem
    atoms = count_smiles_atoms(text)
    if atoms > MAX_DRAW_ATOMS:
        return f"too large to draw ({atoms} atoms; the limit is {MAX_DRAW_ATOMS})"
    return None


def _placeholder_svg(w: int, h: int, reason: str) -> str:
    """A grey box that says why there is no drawing."""
    head, _, tail = reason.partition(" (")
    lines = [head] + ([f"({tail}"] if tail else [])
    texts = "".join(
        f"<text x='{w / 2:.0f}' y='{h / 2 + 16 * (i - (len(lines) - 1) / 2):.0f}' text-anchor='middle' "
        f"font-family='sans-serif' font-size='12' fill='#555555'>{escape(line)}</text>"
        for i, line in enumerate(lines)
    )
    return (
        f"<?xml version='1.0' encoding='iso-8859-1'?>\n<svg version='1.1' baseProfile='full' "
        f"xmlns='http://www.w3.org/2000/svg' width='{w}px' height='{h}px' viewBox='0 0 {w} {h}'>"
        f"<rect x='0.5' y='0.5' width='{w - 1}' height='{h - 1}' fill='#f2f2f2' stroke='#bbbbbb'/>{texts}</svg>\n"
    )


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _placeholder_png(w: int, h: int, reason: str) -> bytes:
    """A grey box as PNG (with the reason written in it when Pillow is installed)."""
    try:
        from PIL import Image, ImageDraw
    except ImportError:
        Image = None
    if Image is not None:
        img = Image.new("RGB", (w, h), (242, 242, 242))
        draw = ImageDraw.Draw(img)
        draw.rectangle((0, 0, w - 1, h - 1), outline=(187, 187, 187))
        head, _, tail = reason.partition(" (")
        for i, line in enumerate([head] + ([f"({tail}"] if tail else [])):
            draw.text((w / 2, h / 2 + 16 * (i - 0.5)), line, fill=(85, 85, 85), anchor="mm")
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        return buf.getvalue()
    # no Pillow: an 8-bit grey PNG written by hand (a filter byte of 0 before each row)
    row = bytes([187]) + bytes([242]) * (w - 2) + bytes([187])
    edge = bytes([187]) * w
    raw = b"".join(b"\x00" + (edge if y in (0, h - 1) else row) for y in range(h))
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
        + _png_chunk(b"IDAT", zlib.compress(raw, 9))
        + _png_chunk(b"IEND", b"")
    )


def _prepared(smiles: str):
    """The molecule prepared for drawing, or ``(None, reason)`` when it is too large to draw."""
    rdMolDraw2D = require("rdkit.Chem.Draw.rdMolDraw2D", purpose="molecular fingerprints")

    problem = drawing_problem(smiles)
    if problem is not None:
        return None, problem
    mol = _mol(smiles, 0)
    if mol.GetNumAtoms() > MAX_DRAW_ATOMS:  # implicit atoms the text count missed
        return None, f"too large to draw ({mol.GetNumAtoms()} atoms; the limit is {MAX_DRAW_ATOMS})"
    return rdMolDraw2D.PrepareMolForDrawing(mol), None


def draw_molecule(smiles: str, *, size=200) -> str:
    """A 2-D depiction of ``smiles`` as an SVG string (``size``: int or (width, height) in px).

    A molecule with more than :data:`MAX_DRAW_ATOMS` atoms (or over the loader's size limits)
    is not drawn: a grey placeholder box saying why is returned instead (see :func:`drawing_problem`).
    """
    rdMolDraw2D = require("rdkit.Chem.Draw.rdMolDraw2D", purpose="molecular fingerprints")

    w, h = _size(size)
    mol, problem = _prepared(smiles)
    if mol is None:
        return _placeholder_svg(w, h, problem)
    drawer = rdMolDraw2D.MolDraw2DSVG(w, h)
    drawer.DrawMolecule(mol)
    drawer.FinishDrawing()
    return drawer.GetDrawingText()


def draw_molecule_png(smiles: str, *, size=200) -> bytes:
    """A 2-D depiction of ``smiles`` as PNG bytes (``size``: int or (width, height) in px).

    Too large a molecule gets a placeholder, as in :func:`draw_molecule`.
    """
    rdMolDraw2D = require("rdkit.Chem.Draw.rdMolDraw2D", purpose="molecular fingerprints")

    w, h = _size(size)
    mol, problem = _prepared(smiles)
    if mol is None:
        return _placeholder_png(w, h, problem)
    drawer = rdMolDraw2D.MolDraw2DCairo(w, h)
    drawer.DrawMolecule(mol)
    drawer.FinishDrawing()
    return drawer.GetDrawingText()
