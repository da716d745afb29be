r"""Molecule featurizers: Morgan fingerprints, bulk Tanimoto similarity, 2-D depictions.

Morgan (ECFP-like) fingerprints of radius 2 folded to 2048 bits (both configurable) are
returned as 0/1 float arrays; the Tanimoto kernel on them is

.. math::  k(x, y) = \frac{|x \wedge y|}{|x| + |y| - |x \wedge y|},

which :func:`tanimoto_matrix` computes with RDKit's ``BulkTanimotoSimilarity`` (the VS paper's
molecule similarity, App. B; IntDiv of MOSES is :math:`1 - \text{mean}(K)`). A molecule without
any set bit (e.g. a single atom at small radius) has Tanimoto similarity 0 with everything,
including itself by RDKit's convention; :func:`tanimoto_matrix` sets such diagonal entries to 1.
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np

from .._optional import require
from .._progress import ProgressCallback, report
from .._validation import check_scalar
from ..exceptions import DiversityInputError


def _mol(smiles: str, index: int):
    Chem = require("rdkit.Chem", purpose="molecular fingerprints")

    from ..data.molecules import quiet_rdkit

    with quiet_rdkit():
        mol = Chem.MolFromSmiles(str(smiles))
    if mol is None:
        raise DiversityInputError(
            f"molecule {index} ({str(smiles)[:60]!r}) is not a valid SMILES; load molecules with load_dataset, "
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
    for i, s in enumerate(smiles):
        if i % 500 == 0:
            report(progress, i, len(smiles), "fingerprinting molecules")
        fps.append(gen.GetFingerprint(_mol(s, i)))
    report(progress, len(smiles), len(smiles), "fingerprinting molecules")
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


def _prepared(smiles: str):
    rdMolDraw2D = require("rdkit.Chem.Draw.rdMolDraw2D", purpose="molecular fingerprints")

    mol = _mol(smiles, 0)
    return rdMolDraw2D.PrepareMolForDrawing(mol)


def draw_molecule(smiles: str, *, size=200) -> str:
    """A 2-D depiction of ``smiles`` as an SVG string (``size``: int or (width, height) in px)."""
    rdMolDraw2D = require("rdkit.Chem.Draw.rdMolDraw2D", purpose="molecular fingerprints")

    w, h = _size(size)
    drawer = rdMolDraw2D.MolDraw2DSVG(w, h)
    drawer.DrawMolecule(_prepared(smiles))
    drawer.FinishDrawing()
    return drawer.GetDrawingText()


def draw_molecule_png(smiles: str, *, size=200) -> bytes:
    """A 2-D depiction of ``smiles`` as PNG bytes (``size``: int or (width, height) in px)."""
    rdMolDraw2D = require("rdkit.Chem.Draw.rdMolDraw2D", purpose="molecular fingerprints")

    w, h = _size(size)
    drawer = rdMolDraw2D.MolDraw2DCairo(w, h)
    drawer.DrawMolecule(_prepared(smiles))
    drawer.FinishDrawing()
    return drawer.GetDrawingText()
