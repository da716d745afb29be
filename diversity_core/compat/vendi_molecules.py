r"""Equivalent of ``vendi_score.molecule_utils``: molecules and their Tanimoto similarity matrix.

Reached as ``vendi.molecule_utils`` (``from diversity_core.compat.vendi import molecule_utils``).
RDKit is optional (``pip install 'diversity-explorer[molecules]'``); it is imported inside the
functions that need it.

:func:`get_tanimoto_K` keeps the package's fingerprints: Morgan of radius 2 folded to 1024 bits
(``fp="morgan"``, RDKit's ``MorganGenerator``, which gives the same bits as the deprecated
``GetMorganFingerprintAsBitVect`` the package calls), RDKit topological fingerprints
(``fp="rdk"``, ``Chem.RDKFingerprint``) or any function of a molecule; then

.. math::  K_{ij} = \frac{|f_i \wedge f_j|}{|f_i| + |f_j| - |f_i \wedge f_j|}

by :func:`diversity_core.featurizers.molecules.tanimoto_matrix`. Differences from the package:
a molecule whose fingerprint has no set bit (``[Na+]`` or ``C`` under ``fp="rdk"``) gets
``K_ii = 1`` (the package's 0 makes the diagonal non-unit, and its Vendi score is then not a
Vendi score); a custom ``fp`` function works (the package raises ``NameError``); SMILES strings
are accepted as well as molecules; :func:`load_molecules` does not print.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .._optional import require
from .._validation import check_scalar
from ..exceptions import DiversityInputError
from ..featurizers.molecules import tanimoto_matrix
from .vendi_data import Example

__all__ = [
    "MORGAN_RADIUS",
    "MORGAN_BITS",
    "disable_rdkit_log",
    "enable_rdkit_log",
    "get_mol",
    "load_molecules",
    "get_tanimoto_K",
]

#: The package's Morgan fingerprint: radius 2, 1024 bits (the project's featurizer uses 2048).
MORGAN_RADIUS = 2
MORGAN_BITS = 1024

_PURPOSE = "molecule similarities (diversity_core.compat.vendi.molecule_utils)"


def disable_rdkit_log() -> None:
    """Silence RDKit's messages (``rdApp.*``)."""
    require("rdkit.rdBase", purpose=_PURPOSE).DisableLog("rdApp.*")


def enable_rdkit_log() -> None:
    """Turn RDKit's messages (``rdApp.*``) back on."""
    require("rdkit.rdBase", purpose=_PURPOSE).EnableLog("rdApp.*")


def get_mol(smiles_or_mol):
    """An RDKit molecule from a SMILES string (``None`` if it does not parse); molecules pass through.

    Parameters
    ----------
    smiles_or_mol : str or rdkit.Chem.Mol

    Returns
    -------
    rdkit.Chem.Mol or None
        ``None`` for an empty string, a SMILES that does not parse or does not sanitise.

    Examples
    --------
    >>> get_mol("CCO").GetNumAtoms(), get_mol("not a molecule(") is None
    (3, True)
    """
    if not isinstance(smiles_or_mol, str):
        return smiles_or_mol
    if not smiles_or_mol:
        return None
    Chem = require("rdkit.Chem", purpose=_PURPOSE)
    mol = Chem.MolFromSmiles(smiles_or_mol)
    if mol is None:
        return None
    try:
        Chem.SanitizeMol(mol)
    except ValueError:
        return None
    return mol


def load_molecules(fn, max_samples=2000, unique=False) -> list:
    """Molecules from a CSV file whose first column holds SMILES (the first line is a header).

    Parameters
    ----------
    fn : str or path
        The file.
    max_samples : int, default 2000
        Stop after this many valid molecules.
    unique : bool, default False
        Skip a SMILES string seen before (compared as written, not canonicalised).

    Returns
    -------
    list of Example
        ``Example(x=mol, features={"s": smiles})`` for each valid molecule, in file order;
        invalid SMILES are skipped silently. Fewer than ``max_samples`` when the file has fewer
        (the package prints the count; check ``len()`` instead).
    """
    max_samples = check_scalar(max_samples, "max_samples", int, min_val=1)
    try:
        with open(fn, encoding="utf-8") as f:
            lines = f.read().splitlines()[1:]
    except OSError as exc:
        raise DiversityInputError(f"cannot read molecules from {fn!s}: {exc}") from None
    rdBase = require("rdkit.rdBase", purpose=_PURPOSE)
    examples: list = []
    seen: set = set()
    rdBase.DisableLog("rdApp.*")
    try:
        for line in lines:
            s = line.strip().split(",")[0]
            if unique and s in seen:
                continue
            seen.add(s)
            mol = get_mol(s)
            if mol is None:
                continue
            examples.append(Example(x=mol, features={"s": s}))
            if len(examples) >= max_samples:
                break
    finally:
        rdBase.EnableLog("rdApp.*")
    return examples


def _fingerprints(mols: list, fp) -> list:
    """Fingerprints of checked molecules: 'morgan', 'rdk' or a user function."""
    if fp == "morgan":
        gen = require("rdkit.Chem.rdFingerprintGenerator", purpose=_PURPOSE).GetMorganGenerator(
            radius=MORGAN_RADIUS, fpSize=MORGAN_BITS
        )
        return [gen.GetFingerprint(m) for m in mols]
    if fp == "rdk":
        Chem = require("rdkit.Chem", purpose=_PURPOSE)
        return [Chem.RDKFingerprint(m) for m in mols]
    if callable(fp):
        return [fp(m) for m in mols]
    raise DiversityInputError(
        f"unknown fingerprint fp={fp!r}; choose 'morgan', 'rdk' or a function mapping a molecule to a bit vector."
    )


def get_tanimoto_K(mols: Sequence, fp="morgan") -> np.ndarray:
    r"""Tanimoto similarity matrix of molecules under a fingerprint (unit diagonal).

    Parameters
    ----------
    mols : sequence of rdkit.Chem.Mol or SMILES strings
        The n molecules.
    fp : {"morgan", "rdk"} or callable, default "morgan"
        ``"morgan"``: radius 2, 1024 bits (the package's default); ``"rdk"``: RDKit's
        topological (path) fingerprint with its defaults (2048 bits, paths up to 7 bonds); a
        function: ``fp(mol)`` returning an RDKit bit vector or a 0/1 array.

    Returns
    -------
    ndarray of shape (n, n)
        Symmetric, PSD, ``K_ii = 1`` (also for a fingerprint with no set bit, where the
        package puts 0).

    Raises
    ------
    DiversityInputError
        A SMILES string does not parse, or ``fp`` is not one of the options.

    Notes
    -----
    O(n^2 bits / 64) with RDKit's ``BulkTanimotoSimilarity``.

    Examples
    --------
    >>> K = get_tanimoto_K(["CCO", "CCO", "c1ccccc1"])
    >>> K.round(3).tolist()
    [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    if isinstance(mols, str):
        raise DiversityInputError("mols must be a sequence of molecules or SMILES strings, not a single string.")
    mols = list(mols)
    if not mols:
        raise DiversityInputError("mols is empty; there is nothing to compare.")
    checked = []
    for i, m in enumerate(mols):
        mol = get_mol(m)
        if mol is None:
            raise DiversityInputError(f"molecule {i} ({str(m)[:60]!r}) is not a valid SMILES; drop it first.")
        checked.append(mol)
    fps = _fingerprints(checked, fp)
    if all(isinstance(f, np.ndarray) for f in fps):
        fps = np.vstack([np.asarray(f).ravel() for f in fps])
    return tanimoto_matrix(fps)
