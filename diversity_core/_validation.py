"""Input validation shared by the public functions (the scikit-learn split: validate once, then compute)."""

from __future__ import annotations

import math
from typing import Iterable, Optional, Sequence, Union

import numpy as np
import scipy.sparse as sp

from ._orders import check_q, parse_q  # noqa: F401 - re-exported: one parser of q
from .exceptions import DiversityInputError

RandomLike = Union[None, int, np.random.Generator]


def _rows_list(mask: np.ndarray, limit: int = 5) -> str:
    """Format the first offending row indices of a boolean mask."""
    rows = np.flatnonzero(mask)
    shown = ", ".join(str(int(r)) for r in rows[:limit])
    more = f", ... ({rows.size} in all)" if rows.size > limit else ""
    return f"{shown}{more}"


def check_option(value: str, options: Iterable[str], name: str) -> str:
    """Return ``value`` if it is one of ``options``, else raise listing the valid ones."""
    options = tuple(options)
    if value not in options:
        raise DiversityInputError(
            f"unknown {name} {value!r}; choose one of: {', '.join(repr(o) for o in options)}."
        )
    return value


def check_features(
    X,
    *,
    name: str = "X",
    min_samples: int = 2,
    dtype: Optional[Sequence] = (np.float64, np.float32),
    allow_sparse: bool = False,
):
    """Validate a 2-D feature matrix: numeric, finite, at least ``min_samples`` rows.

    float32 and float64 keep their dtype; anything else becomes float64. Sparse CSR input is
    accepted when ``allow_sparse``.
    """
    if allow_sparse and sp.issparse(X):
        X = sp.csr_matrix(X)
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        data = X.data
        if not np.all(np.isfinite(data)):
            raise DiversityInputError(f"{name} contains NaN or infinite values; remove or impute them.")
    else:
        if sp.issparse(X):
            raise DiversityInputError(f"{name} must be a dense array here; call .toarray() first.")
        try:
            X = np.asarray(X)
        except (TypeError, ValueError) as exc:  # ragged nested lists
            raise DiversityInputError(
                f"{name} must be a rectangular numeric array (every row the same length); {exc}"
            ) from None
        if X.dtype == object or not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
            raise DiversityInputError(
                f"{name} must be numeric; got dtype {X.dtype}. Convert or drop non-numeric columns."
            )
        if X.ndim == 1:
            raise DiversityInputError(
                f"{name} must be 2-D (items x features); got a 1-D array of length {X.shape[0]}. "
                "Use X.reshape(-1, 1) for a single feature."
            )
        if X.ndim != 2:
            raise DiversityInputError(f"{name} must be 2-D (items x features); got shape {X.shape}.")
        if dtype is not None and X.dtype not in dtype:
            X = X.astype(np.float64)
        # one summation pass proves finiteness in the common case; only a non-finite sum
        # (NaN/inf, or an overflow of huge finite values) pays for the elementwise check
        if X.size and not np.isfinite(X.sum()) and not np.isfinite(X).all():
            bad = ~np.isfinite(X).all(axis=1)
            raise DiversityInputError(
                f"{name} contains NaN or infinite values in rows {_rows_list(bad)}; "
                "remove or impute those rows."
            )
    if X.shape[1] < 1:
        raise DiversityInputError(f"{name} has no feature columns.")
    if X.shape[0] < min_samples:
        raise DiversityInputError(
            f"{name} needs at least {min_samples} items to measure diversity; got {X.shape[0]}."
        )
    return X


def check_square_matrix(A, *, name: str, min_samples: int = 2) -> np.ndarray:
    """Validate a square, finite, symmetric float64 matrix."""
    A = check_features(A, name=name, min_samples=min_samples, dtype=(np.float64,))
    n, m = A.shape
    if n != m:
        raise DiversityInputError(f"{name} must be square (n x n); got shape {A.shape}.")
    scale = max(float(np.max(np.abs(A))), 1.0)
    asym = float(np.max(np.abs(A - A.T))) if n else 0.0
    if asym > 1e-8 * scale:
        raise DiversityInputError(
            f"{name} must be symmetric; the largest |A - A^T| is {asym:.3g}. "
            "Symmetrise it with (A + A.T) / 2 if the asymmetry is round-off."
        )
    return A


def check_kernel_matrix(K, *, min_samples: int = 2) -> np.ndarray:
    """Validate a precomputed kernel: square, finite, symmetric, positive diagonal.

    The unit-diagonal and PSD checks happen where the matrix is used
    (:func:`diversity_core.kernels.normalize_diagonal` and the spectrum), which can warn and
    rescale or clip.
    """
    K = check_square_matrix(K, name="K", min_samples=min_samples)
    diag = np.diagonal(K)
    if np.any(diag <= 0):
        raise DiversityInputError(
            f"K must have a positive diagonal (k(x, x) > 0); rows {_rows_list(diag <= 0)} are not. "
            "A similarity matrix has ones on its diagonal."
        )
    return 0.5 * (K + K.T)


def check_distance_matrix(D, *, min_samples: int = 1) -> np.ndarray:
    """Validate a precomputed distance matrix: square, symmetric, finite, zero diagonal, non-negative."""
    D = check_square_matrix(D, name="D", min_samples=min_samples)
    if np.any(np.diagonal(D) != 0):
        raise DiversityInputError(
            f"D must have a zero diagonal; rows {_rows_list(np.diagonal(D) != 0)} do not."
        )
    if np.any(D < 0):
        raise DiversityInputError("D must be non-negative; it has negative entries.")
    return 0.5 * (D + D.T)


def check_weights(weights, n: int) -> Optional[np.ndarray]:
    """Validate probability weights: ``n`` finite non-negative numbers with a positive sum.

    Returns ``None`` for ``None`` (uniform) and otherwise the weights normalised to sum 1.
    """
    if weights is None:
        return None
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise DiversityInputError("weights must be numbers; got non-numeric values.") from None
    if w.ndim != 1:
        w = w.reshape(-1) if w.size == n else w
    if w.ndim != 1 or w.shape[0] != n:
        raise DiversityInputError(
            f"weights must have one value per item: expected {n}, got {w.size}."
        )
    if not np.isfinite(w).all():
        raise DiversityInputError(
            f"weights contain NaN or infinite values (rows {_rows_list(~np.isfinite(w))}); fix those rows."
        )
    if np.any(w < 0):
        neg = w < 0
        raise DiversityInputError(
            f"weights must be non-negative and sum to a positive number; got {int(neg.sum())} "
            f"negative values (rows {_rows_list(neg)}). Drop or fix those rows."
        )
    top = float(w.max())
    if top <= 0:
        raise DiversityInputError("weights are all zero; at least one item needs a positive weight.")
    # divide by the largest first: the sum of weights near 1e308 would overflow to inf
    w = w / top
    return w / w.sum()


def check_random_state(rng: RandomLike) -> np.random.Generator:
    """Return a ``numpy.random.Generator`` from ``None``, an int seed or a Generator."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (int, np.integer)):
        return np.random.default_rng(rng)
    raise DiversityInputError(
        f"rng must be None, an int seed or a numpy.random.Generator; got {type(rng).__name__}."
    )


def check_positive(value, name: str, *, allow_zero: bool = False) -> float:
    """Validate a finite positive scalar parameter."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise DiversityInputError(f"{name} must be a number; got {value!r}.") from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise DiversityInputError(f"{name} must be a finite number {bound}; got {value!r}.")
    return v


def check_scalar(
    value,
    name: str,
    target_type: type = float,
    *,
    min_val=None,
    max_val=None,
    include_boundaries: str = "both",
):
    """Validate a scalar parameter and return it as ``target_type`` (the spirit of sklearn's ``check_scalar``).

    ``target_type=int`` accepts whole numbers, including whole floats such as ``3.0`` (as read
    from JSON or a URL), and refuses ``True``/``False``; ``target_type=float`` accepts any
    finite real number. ``include_boundaries`` is ``"both"``, ``"left"``, ``"right"`` or
    ``"neither"``.

    Raises
    ------
    DiversityInputError
        Wrong type, not finite, or outside ``[min_val, max_val]``; the message states the range.
    """
    kind = "an integer" if target_type is int else "a number"
    lo_closed = include_boundaries in ("both", "left")
    hi_closed = include_boundaries in ("both", "right")
    if min_val is not None and max_val is not None:
        rng_text = f" {'from' if lo_closed else 'above'} {min_val} {'to' if hi_closed else 'below'} {max_val}"
    elif min_val is not None:
        rng_text = f" {'>=' if lo_closed else '>'} {min_val}"
    elif max_val is not None:
        rng_text = f" {'<=' if hi_closed else '<'} {max_val}"
    else:
        rng_text = ""
    message = f"{name} must be {kind}{rng_text}; got {value!r}."
    if isinstance(value, (bool, np.bool_)) or isinstance(value, str):
        raise DiversityInputError(message)
    try:
        f = float(value)
    except (TypeError, ValueError, OverflowError):
        raise DiversityInputError(message) from None
    if not math.isfinite(f):
        raise DiversityInputError(message)
    if target_type is int:
        if f != int(f):
            raise DiversityInputError(message)
        out = int(f)
    else:
        out = f
    if min_val is not None and (out < min_val or (out == min_val and not lo_closed)):
        raise DiversityInputError(message)
    if max_val is not None and (out > max_val or (out == max_val and not hi_closed)):
        raise DiversityInputError(message)
    return out
