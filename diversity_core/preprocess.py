"""Feature preprocessing before a kernel: standardise, L2-normalise, PCA to k dimensions.

Tabular features are often used raw, and then one column in the thousands decides every
distance and every cosine: the wine table (13 chemical measurements, proline in the hundreds
to thousands) gives VS_1 = 1.02 of 178 under the cosine kernel, as if the wines were one. The
steps here put the features on a common footing first:

- ``"standardize"``: each feature centred and divided by its standard deviation (z-scores;
  a constant feature becomes 0, it carries no information);
- ``"pca"``: centred and projected on the top ``n_components`` principal directions (SVD);
- ``"l2"``: each row divided by its Euclidean norm (the cosine kernel's own normalisation,
  useful before a linear or RBF kernel).

The steps always run in that order (``standardize`` before ``pca``, ``l2`` last), whatever the
order they are given in. :func:`scale_spread` measures how far feature scales differ and
:func:`scale_warning` turns a spread of orders of magnitude into a message (the app shows it,
the CLI prints it).
"""

from __future__ import annotations

import math
from typing import Iterable, Optional, Union

import numpy as np
import scipy.sparse as sp

from ._validation import check_features, check_option, check_scalar
from .exceptions import DiversityInputError

__all__ = ["PREPROCESS_STEPS", "parse_steps", "preprocess", "scale_spread", "scale_warning"]

#: The steps, in the order they are applied.
PREPROCESS_STEPS = ("standardize", "pca", "l2")
#: Spread of feature scales (largest / smallest standard deviation) above which a warning is given.
SCALE_WARNING_RATIO = 100.0


def parse_steps(steps: Union[None, str, Iterable[str]]) -> tuple:
    """The steps in application order from None, ``"none"``, ``"standardize,pca"`` or a sequence.

    Raises
    ------
    DiversityInputError
        An unknown step (the valid ones are listed).
    """
    if steps is None:
        return ()
    if isinstance(steps, str):
        steps = [s for s in steps.replace("+", ",").split(",")]
    names = []
    for s in steps:
        s = str(s).strip().lower()
        if s in ("", "none"):
            continue
        s = {"standardise": "standardize", "zscore": "standardize", "l2-normalize": "l2",
             "l2-normalise": "l2", "normalize": "l2"}.get(s, s)
        names.append(check_option(s, PREPROCESS_STEPS, "preprocessing step"))
    return tuple(step for step in PREPROCESS_STEPS if step in names)


def _standardize(X: np.ndarray) -> np.ndarray:
    """Z-scores per feature; constant features (std 0) become 0."""
    std = X.std(axis=0)
    # dividing by 1 where std == 0 leaves the centred (all-zero) column as it is
    return (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)


def _pca(X: np.ndarray, k: int) -> np.ndarray:
    """Scores on the top k principal directions of centred X (thin SVD, signs fixed)."""
    Xc = X - X.mean(axis=0)
    U, S, _ = np.linalg.svd(Xc, full_matrices=False)
    k = min(k, S.size)
    U = U[:, :k]
    # fix each direction's sign (largest |entry| positive) so results do not depend on LAPACK
    signs = np.sign(U[np.abs(U).argmax(axis=0), np.arange(k)])
    signs[signs == 0] = 1.0
    return U * (S[:k] * signs)


def _l2(X):
    """Rows divided by their Euclidean norm (zero rows stay zero)."""
    if sp.issparse(X):
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        inv = np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0)
        return sp.diags(inv) @ X
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.where(norms > 0, norms, 1.0)


def preprocess(X, *, steps: Union[None, str, Iterable[str]] = ("standardize",),
               n_components: Optional[int] = None):
    r"""Standardise, project with PCA and/or L2-normalise features (in that order).

    .. math::

        z_{ik} = \frac{x_{ik} - \bar{x}_k}{\sigma_k}, \qquad
        \mathrm{PCA}_k(X) = U_k \Sigma_k, \qquad
        \tilde{x}_i = x_i / \lVert x_i \rVert_2

    with :math:`\bar{x}_k, \sigma_k` the mean and standard deviation of feature k and
    :math:`U \Sigma V^T` the thin SVD of the centred features.

    Parameters
    ----------
    X : array-like of shape (n, d), or scipy sparse (``"l2"`` only)
    steps : str or sequence of str, default ("standardize",)
        Any of ``"standardize"``, ``"pca"``, ``"l2"`` (``"none"`` or empty: X unchanged, as
        float64). A string may list several: ``"standardize,pca"``.
    n_components : int, optional
        Dimensions kept by ``"pca"`` (required with it; at most min(n, d) are returned).

    Returns
    -------
    ndarray of shape (n, d) or (n, n_components), float64; sparse input stays sparse.

    Raises
    ------
    DiversityInputError
        An unknown step; ``"pca"`` without ``n_components``; ``"standardize"`` or ``"pca"`` on
        sparse features (they would densify them: use ``"l2"``, or dense features).

    Notes
    -----
    Cost O(n d) for standardise and L2, O(n d min(n, d)) for PCA.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 1000.0], [2.0, 3000.0], [3.0, 2000.0]])
    >>> preprocess(X, steps="standardize").std(axis=0)
    array([1., 1.])
    >>> preprocess(X, steps="l2").round(3)[0]
    array([0.001, 1.   ])
    """
    names = parse_steps(steps)
    if "pca" in names:
        if n_components is None:
            raise DiversityInputError("the 'pca' step needs n_components (the dimensions to keep), e.g. 10.")
        n_components = check_scalar(n_components, "n_components", int, min_val=1)
    X = check_features(X, allow_sparse=True)
    if sp.issparse(X):
        dense_steps = [s for s in names if s != "l2"]
        if dense_steps:
            raise DiversityInputError(
                f"{' and '.join(dense_steps)} would densify these sparse features ({X.shape[0]} x {X.shape[1]}); "
                "use the 'l2' step only, or a dense representation."
            )
        return _l2(sp.csr_matrix(X, dtype=np.float64)) if names else X
    return _preprocess(np.asarray(X, dtype=np.float64), names, n_components)


def _preprocess(X: np.ndarray, steps: tuple, n_components: Optional[int]) -> np.ndarray:
    """The steps on validated dense float64 X, in application order."""
    if "standardize" in steps:
        X = _standardize(X)
    if "pca" in steps:
        X = _pca(X, n_components)
    if "l2" in steps:
        X = _l2(X)
    return X


def _feature_scales(X: np.ndarray) -> np.ndarray:
    """Standard deviation of each column, finite for any finite data.

    Each column is divided by its largest absolute value and the result scaled back: the squares
    of values near 1e200 overflowed to inf, and inf / inf made the spread NaN.
    Read in blocks of rows (two passes, float64 sums): ``diversity inspect`` of 40 million rows held
    three temporary copies of the features here (issue 40 item 9).
    """
    from ._config import chunk_rows

    X = np.asarray(X)
    n, d = X.shape
    step = max(1, chunk_rows(d) // 8)  # blocks of about 8 MiB: a few temporaries each
    peak = np.zeros(d)
    for start in range(0, n, step):
        np.maximum(peak, np.max(np.abs(np.asarray(X[start:start + step], dtype=np.float64)), axis=0), out=peak)
    safe = np.where(peak > 0, peak, 1.0)
    total = np.zeros(d)
    for start in range(0, n, step):
        total += (np.asarray(X[start:start + step], dtype=np.float64) / safe).sum(axis=0)
    mean = total / max(n, 1)
    squares = np.zeros(d)
    for start in range(0, n, step):
        squares += ((np.asarray(X[start:start + step], dtype=np.float64) / safe - mean) ** 2).sum(axis=0)
    return np.sqrt(squares / max(n, 1)) * safe


def scale_spread(X) -> float:
    """Largest over smallest non-zero feature standard deviation (1.0 for one feature or sparse X).

    Finite data give a number, never NaN (``inf`` only when the ratio itself exceeds float64).

    Examples
    --------
    >>> import numpy as np
    >>> scale_spread(np.array([[0.0, 0.0], [1.0, 1000.0]]))
    1000.0
    """
    X = check_features(X, allow_sparse=True)
    if sp.issparse(X) or X.shape[1] < 2:
        return 1.0
    std = _feature_scales(X)
    std = std[std > 0]
    if std.size < 2:
        return 1.0
    with np.errstate(over="ignore"):
        return float(std.max() / std.min())


#: A feature is "wide" when its standard deviation exceeds this many times the (lower) median one.
WIDE_FACTOR = 10.0
#: Share of the total variance the wide features must carry for the scale warning.
WIDE_SHARE = 0.5


def scale_warning(X, *, ratio: float = SCALE_WARNING_RATIO) -> Optional[str]:
    """A message when a few wide features decide every distance (None otherwise).

    It fires when the feature scales differ by more than ``ratio`` *and* the wide features
    (standard deviation above :data:`WIDE_FACTOR` times the lower median one) carry more than
    :data:`WIDE_SHARE` of the total variance: a table mixing units (the wine table's proline,
    in the thousands, holds 99.8 % of its variance). Learned features such as a CNN's
    non-negative activations also span orders of magnitude, from rarely active units to busy
    ones, but no few of them dominate (EfficientNet-Lite0 on the demos: 6-14 % of the variance in
    its widest features); standardising them would blow the rare units up to the scale of the
    rest, so no warning is given. The message names the widest and the narrowest feature (by
    column index), their share and the fix; it never shows NaN.
    """
    X = check_features(X, allow_sparse=True)
    spread = scale_spread(X)
    if spread <= ratio:
        return None
    std = _feature_scales(X)
    nonzero = np.flatnonzero(std > 0)
    scales = std[nonzero] / std[nonzero].max()  # in (0, 1]: the squares below cannot overflow
    reference = np.partition(scales, (scales.size - 1) // 2)[(scales.size - 1) // 2]
    wide = scales > WIDE_FACTOR * reference
    share = float(np.sum(scales[wide] ** 2) / np.sum(scales ** 2))
    if share <= WIDE_SHARE:
        return None
    widest = int(nonzero[np.argmax(std[nonzero])])
    narrow = int(nonzero[np.argmin(std[nonzero])])
    orders = math.log10(std[widest]) - math.log10(std[narrow])  # finite, whatever the ratio
    count = int(wide.sum())
    which = "the widest feature carries" if count == 1 else f"the {count} widest features carry"
    return (f"Feature scales differ by {orders:.1f} orders of magnitude (standard deviation {std[widest]:.4g} for "
            f"feature {widest} against {std[narrow]:.4g} for feature {narrow}), and {which} {share:.0%} of the "
            "variance, deciding every distance and similarity. Standardise the features first "
            "(preprocessing 'standardize').")
