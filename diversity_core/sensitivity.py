r"""Kernel sensitivity: how Vendi scores move when the kernel's scale changes.

A Vendi score is a statement about a dataset *under a similarity*. Two sweeps show how much a
conclusion (say, "set A is more diverse than set B") depends on that choice:

- :func:`bandwidth_sweep`: the RBF (or Laplacian) bandwidth sigma over multiples of the
  median pairwise distance (the default bandwidth). Small sigma makes every item dissimilar
  (VS -> n); large sigma makes everything similar (VS -> 1).
- :func:`fingerprint_radius_sweep`: the Morgan fingerprint radius of molecules under the
  Tanimoto kernel (radius 0 sees atom types only; larger radii see larger substructures).

With ``groups`` every group is swept separately with the *same* kernel parameters (the
median distance is taken over all items), so the curves of the groups can be compared: where
they cross, the ranking of the groups depends on the kernel.

Every sweep keeps the eigenvalue spectra, so scores of any order q follow without recomputing
(:meth:`SensitivityResult.vendi`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from ._json import to_jsonable
from ._orders import parse_q, q_key
from ._progress import ProgressCallback, report
from ._validation import check_features, check_option, check_positive
from .exceptions import DiversityInputError
from .kernels import median_distance
from .spectrum import Spectrum, compute_spectrum

__all__ = [
    "SensitivityResult",
    "bandwidth_sweep",
    "fingerprint_radius_sweep",
    "DEFAULT_FACTORS",
    "DEFAULT_RADII",
]

#: Multiples of the median pairwise distance swept by default (log-spaced, 1/8 to 8).
DEFAULT_FACTORS = (0.125, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0, 8.0)
#: Morgan radii swept by default.
DEFAULT_RADII = (0, 1, 2, 3, 4)
#: Label of the whole dataset when no groups are given.
ALL = "all items"


@dataclass(frozen=True)
class SensitivityResult:
    """Spectra of one or more item sets over a range of kernel parameters.

    Attributes
    ----------
    parameter : str
        The swept parameter: ``"sigma"`` or ``"radius"``.
    values : ndarray of shape (m,)
        The parameter values, ascending.
    groups : tuple of str
        The groups swept, in order of first appearance, or ``("all items",)``.
    spectra : tuple of tuple of Spectrum
        ``spectra[i][j]`` is the spectrum of group ``groups[i]`` at ``values[j]``.
    kernel : str
        The kernel's name (``"rbf"``, ``"laplacian"`` or ``"tanimoto"``).
    reference : float or None
        The default value of the parameter (the median distance for a bandwidth, 2 for the
        radius), to mark on a plot.
    sizes : tuple of int
        Number of items in each set.
    """

    parameter: str
    values: np.ndarray
    groups: Tuple[str, ...]
    spectra: Tuple[Tuple[Spectrum, ...], ...] = field(repr=False)
    kernel: str
    reference: Optional[float] = None
    sizes: Tuple[int, ...] = ()

    def __post_init__(self):
        values = np.array(self.values, dtype=np.float64)
        values.setflags(write=False)
        object.__setattr__(self, "values", values)

    @property
    def labels(self) -> Tuple[str, ...]:
        """Deprecated name of :attr:`groups`."""
        warnings.warn("SensitivityResult.labels is deprecated; use .groups", DeprecationWarning, stacklevel=2)
        return self.groups

    def vendi(self, q=1.0) -> np.ndarray:
        """Vendi scores of order ``q``, shape (len(groups), len(values)); O(m) per spectrum."""
        return np.array([[s.vendi(q) for s in row] for row in self.spectra], dtype=np.float64)

    def to_dict(self, *, qs: Sequence = (1.0,)) -> Dict[str, Any]:
        """Plain-Python form with stable keys; ``scores`` holds VS_q for each q in ``qs``."""
        return to_jsonable({
            "parameter": self.parameter,
            "kernel": self.kernel,
            "values": self.values,
            "groups": self.groups,
            "sizes": self.sizes,
            "reference": self.reference,
            "scores": {q_key(parse_q(q)): self.vendi(q) for q in qs},
        })


def _split(n: int, groups) -> Tuple[Tuple[str, ...], list]:
    """Labels and index arrays of the sets to sweep."""
    if groups is None:
        return (ALL,), [np.arange(n)]
    g = np.asarray(groups).astype(str)
    if g.shape != (n,):
        raise DiversityInputError(f"groups must have one entry per item ({n}); got shape {g.shape}.")
    labels = tuple(dict.fromkeys(g.tolist()))
    index = [np.flatnonzero(g == label) for label in labels]
    small = [label for label, idx in zip(labels, index) if idx.size < 2]
    if small:
        raise DiversityInputError(
            f"every group needs at least 2 items for a spectrum; {', '.join(repr(s) for s in small)} "
            "has fewer. Filter those groups out."
        )
    return labels, index


def _weights_of(weights, idx) -> Optional[np.ndarray]:
    return None if weights is None else np.asarray(weights, dtype=np.float64)[idx]


def bandwidth_sweep(
    X,
    *,
    kernel: str = "rbf",
    sigmas: Optional[Sequence[float]] = None,
    factors: Sequence[float] = DEFAULT_FACTORS,
    groups=None,
    weights=None,
    progress: Optional[ProgressCallback] = None,
) -> SensitivityResult:
    r"""Spectra under the RBF or Laplacian kernel for a range of bandwidths.

    .. math:: k_\sigma(x, y) = \exp(-\|x - y\|^2 / (2\sigma^2)) \quad\text{(rbf)},\qquad
              \exp(-\|x - y\|_1 / \sigma) \quad\text{(laplacian)}

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
        Item features.
    kernel : {"rbf", "laplacian"}, default "rbf"
    sigmas : sequence of float, optional
        The bandwidths. Default: ``factors`` times the median pairwise distance of all of X
        (Euclidean for rbf, L1 for laplacian), the kernels' default bandwidth.
    factors : sequence of float
        Multiples of the median distance used when ``sigmas`` is omitted.
    groups : array-like of shape (n,), optional
        Sweep each group separately with the same bandwidths.
    weights : array-like of shape (n,), optional
        Item weights (each group's are renormalised).
    progress : callable, optional
        ``progress(done, total, message)``, one step per spectrum.

    Returns
    -------
    SensitivityResult

    Notes
    -----
    Cost: one dense O(m^3) eigendecomposition per set of m items and bandwidth; sweeping
    groups separately is cheaper than sweeping their union.
    """
    check_option(kernel, ("rbf", "laplacian"), "sweep kernel")
    X = check_features(X, allow_sparse=True)
    X = X.toarray() if hasattr(X, "toarray") else X
    n = X.shape[0]
    labels, index = _split(n, groups)
    reference = None
    if sigmas is None:
        reference = median_distance(X, metric="euclidean" if kernel == "rbf" else "cityblock")
        values = np.array([check_positive(f, "factor") * reference for f in factors], dtype=np.float64)
    else:
        values = np.array([check_positive(s, "sigma") for s in sigmas], dtype=np.float64)
    if values.size == 0:
        raise DiversityInputError("the sweep needs at least one bandwidth.")
    values = np.unique(values)
    total = len(labels) * values.size
    rows = []
    for i, (label, idx) in enumerate(zip(labels, index)):
        row = []
        for j, sigma in enumerate(values):
            report(progress, i * values.size + j, total, f"{label}: sigma = {sigma:.4g}")
            row.append(compute_spectrum(X[idx], kernel=kernel, sigma=float(sigma), weights=_weights_of(weights, idx)))
        rows.append(tuple(row))
    report(progress, total, total, "done")
    values.setflags(write=False)
    return SensitivityResult(
        parameter="sigma",
        values=values,
        groups=labels,
        spectra=tuple(rows),
        kernel=kernel,
        reference=reference,
        sizes=tuple(int(idx.size) for idx in index),
    )


def fingerprint_radius_sweep(
    smiles: Sequence[str],
    *,
    radii: Sequence[int] = DEFAULT_RADII,
    n_bits: int = 2048,
    groups=None,
    weights=None,
    progress: Optional[ProgressCallback] = None,
) -> SensitivityResult:
    """Spectra under the Tanimoto kernel on Morgan fingerprints of several radii.

    Parameters
    ----------
    smiles : sequence of str
        Valid SMILES (as loaded by :func:`diversity_core.data.load_dataset`).
    radii : sequence of int, default (0, 1, 2, 3, 4)
        Morgan radii (2 is the usual ECFP4-like choice and the app's default).
    n_bits : int, default 2048
        Fingerprint length.
    groups, weights, progress
        As in :func:`bandwidth_sweep`.

    Returns
    -------
    SensitivityResult
        ``parameter="radius"``, ``reference=2``.
    """
    from .featurizers.molecules import morgan_fingerprints

    if isinstance(smiles, str):
        raise DiversityInputError("smiles must be a sequence of SMILES strings, not a single string.")
    smiles = list(smiles)
    labels, index = _split(len(smiles), groups)
    values = np.unique(np.asarray(list(radii), dtype=np.int64))
    if values.size == 0 or values.min() < 0:
        raise DiversityInputError(f"radii must be non-negative integers; got {list(radii)!r}.")
    total = values.size * (len(labels) + 1)
    step = 0
    rows: list = [[] for _ in labels]
    for radius in values:
        report(progress, step, total, f"fingerprints of radius {radius}")
        F = morgan_fingerprints(smiles, radius=int(radius), n_bits=n_bits)
        step += 1
        for i, (label, idx) in enumerate(zip(labels, index)):
            report(progress, step, total, f"{label}: radius {radius}")
            rows[i].append(compute_spectrum(F[idx], kernel="tanimoto", weights=_weights_of(weights, idx)))
            step += 1
    report(progress, total, total, "done")
    values = values.astype(np.float64)
    values.setflags(write=False)
    return SensitivityResult(
        parameter="radius",
        values=values,
        groups=labels,
        spectra=tuple(tuple(r) for r in rows),
        kernel="tanimoto",
        reference=2.0,
        sizes=tuple(int(idx.size) for idx in index),
    )
