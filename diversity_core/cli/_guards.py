"""Bounds on the CLI's numeric options, the scale of the data and the output paths, checked before any work.

Extreme values (``--n-scales 1000000000``, ``--lr 1e308``, ``--sigma 1e-300``, ``--degree 1000``,
data of order 1e200) used to crash deep inside a computation (an exhausted memory, a torch
overflow, a ``ZeroDivisionError``, a failed eigensolver) or silently give nonsense. Each guard
here raises :class:`~diversity_core.exceptions.DiversityInputError` (exit 2) with the bound and
what to do. The bounds are generous: they only exclude values no computation can carry out in
float64.

:func:`check_outputs` checks every output path of a sub-command before it loads anything: an
empty path, a folder, a block device, a missing or read-only folder, an output that is one of the
inputs (the same file, also through a link), and two outputs naming one file are refused.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence, Tuple

import numpy as np

from .._atomic import Destination, check_output_folder, check_output_path
from ..exceptions import DiversityInputError

#: Most scales of a magnitude function (each costs one n x n Cholesky factorisation).
MAX_N_SCALES = 10_000

#: Largest learning rate of the RND predictor (the paper's is 0.01; far above 1 training diverges).
MAX_LR = 10.0

#: Largest absolute feature value: squared distances and norms of larger values overflow float64
#: (1e150 squared is 1e300, leaving room for sums over many features).
MAX_FEATURE_ABS = 1e150

#: Smallest largest-absolute feature value of non-zero data: below it squares underflow to 0 and
#: every point looks like every other.
MIN_FEATURE_ABS = 1e-150

#: Bandwidths whose square (rbf) or reciprocal (laplacian) stay finite and non-zero.
SIGMA_RANGE = (1e-150, 1e150)

#: Highest polynomial degree; the overflow check below is data-dependent and applies too.
MAX_DEGREE = 100

#: Largest natural logarithm of a float64 (about 709.78).
_LOG_MAX = math.log(sys.float_info.max)


def check_int_range(value: int, flag: str, low: int, high: int) -> int:
    """``low <= value <= high`` for an integer option, else an error naming the flag and the range."""
    if not low <= value <= high:
        raise DiversityInputError(f"{flag} must be between {low} and {high}; got {value}.")
    return value


def check_n_scales(value: int, flag: str = "--n-scales", low: int = 2) -> int:
    """The number of magnitude scales, at most :data:`MAX_N_SCALES`."""
    return check_int_range(value, flag, low, MAX_N_SCALES)


def check_lr(value: float) -> float:
    """The RND learning rate: finite, positive, at most :data:`MAX_LR`."""
    if not (math.isfinite(value) and 0 < value <= MAX_LR):
        raise DiversityInputError(
            f"--lr must be a number in (0, {MAX_LR:g}]; got {value:g}. The paper uses 0.01; training diverges "
            "far above 1."
        )
    return value


def check_feature_scale(X, source: str) -> None:
    """Refuse features whose squares overflow or underflow float64 (divide them by a constant instead).

    Sparse matrices (counts) and empty inputs pass; only the largest absolute value is looked at.
    """
    try:
        import scipy.sparse as sp

        if sp.issparse(X):
            data = X.data
        else:
            data = np.asarray(X)
    except ImportError:  # pragma: no cover - SciPy is a core dependency
        data = np.asarray(X)
    if data.size == 0 or not np.issubdtype(data.dtype, np.number):
        return
    top = float(np.max(np.abs(data)))
    if not math.isfinite(top):
        return  # NaN/inf are the loaders' and validators' concern, with row numbers
    if top > MAX_FEATURE_ABS:
        raise DiversityInputError(
            f"{source}: feature values reach {top:.3g}; squared distances and norms of values above "
            f"{MAX_FEATURE_ABS:.0e} overflow float64. Divide the data by a constant (e.g. its largest value); "
            "Vendi scores with cosine or rescaled kernels and magnitude curves in rescaled t are unchanged."
        )
    if 0 < top < MIN_FEATURE_ABS:
        raise DiversityInputError(
            f"{source}: every feature value is below {MIN_FEATURE_ABS:.0e} in size (largest {top:.3g}); their "
            "squares underflow to 0, so all points would look identical. Multiply the data by a constant."
        )


def check_kernel_params(X, kernel: str, params: dict) -> None:
    """Refuse kernel parameters that overflow float64 on ``X`` (rbf/laplacian bandwidth, polynomial)."""
    sigma = params.get("sigma")
    if sigma is not None and kernel in ("rbf", "laplacian"):
        low, high = SIGMA_RANGE
        if math.isfinite(sigma) and sigma > 0 and not low <= sigma <= high:
            raise DiversityInputError(
                f"--sigma must lie in [{low:.0e}, {high:.0e}] (its square and reciprocal must be finite in "
                f"float64); got {sigma:g}. Rescale the data instead of the bandwidth."
            )
    if kernel != "polynomial":
        return
    degree = params.get("degree", 3)
    check_int_range(int(degree), "--degree", 1, MAX_DEGREE)
    gamma = params.get("gamma")
    coef0 = params.get("coef0", 1.0)
    if gamma is None:
        gamma = 1.0 / max(1, X.shape[1])
    if not (math.isfinite(gamma) and gamma > 0 and math.isfinite(coef0) and coef0 >= 0):
        return  # the kernel's own validation names these
    # p(x, x) = (gamma |x|^2 + coef0)^degree must be finite and non-zero for the normalisation
    import scipy.sparse as sp

    if sp.issparse(X):
        sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    else:
        A = np.asarray(X, dtype=np.float64)
        with np.errstate(over="ignore"):
            sq = np.einsum("ij,ij->i", A, A)
    with np.errstate(over="ignore", divide="ignore"):
        base = gamma * sq.astype(np.float64) + coef0
        log_top = degree * math.log(float(np.max(base))) if np.max(base) > 0 else -math.inf
        positive = base[base > 0]
        log_low = degree * math.log(float(np.min(positive))) if positive.size else -math.inf
    if not math.isfinite(log_top) or log_top > _LOG_MAX:
        raise DiversityInputError(
            f"the polynomial kernel overflows float64 on this data: (gamma |x|^2 + coef0)^degree reaches about "
            f"e^{log_top:.0f} (degree {degree}, gamma {gamma:g}, coef0 {coef0:g}). Lower --degree or --gamma, or "
            "scale the data down."
        )
    if log_low < -_LOG_MAX:
        raise DiversityInputError(
            f"the polynomial kernel underflows float64 on this data: (gamma |x|^2 + coef0)^degree falls to about "
            f"e^{log_low:.0f} (degree {degree}, gamma {gamma:g}, coef0 {coef0:g}). Raise --gamma or --coef0, or "
            "lower --degree."
        )


def _same_file(dest: Destination, path: str) -> bool:
    """Whether the output ``dest`` is the existing file ``path`` (hard links and symbolic links included)."""
    if dest.kind == "descriptor" or not dest.exists:
        return False
    try:
        return os.path.samefile(dest.path, path)
    except (OSError, ValueError):
        return False


def check_outputs(
    outputs: Mapping[str, Optional[str]],
    *,
    inputs: Iterable[Optional[str]] = (),
    folders: Optional[Mapping[str, Tuple[Optional[str], Sequence[str]]]] = None,
) -> None:
    """Refuse, before any work, output paths that cannot be written or would destroy an input.

    Parameters
    ----------
    outputs : mapping of str to str or None
        Flag (``"--out"``) to the path given, None when the flag is absent. An empty path is
        refused (it used to write nothing and exit 0).
    inputs : iterable of str or None
        The files read (``demo:`` names and None are skipped).
    folders : mapping of str to (str or None, sequence of str), optional
        Flag (``"--figures"``) to ``(folder, names)``: a folder written into, and the file names
        that may be written there.

    Raises
    ------
    DiversityInputError
        For the first problem, naming the flag and the path: see
        :func:`~diversity_core._atomic.check_output_path` and
        :func:`~diversity_core._atomic.check_output_folder`; an output that is one of the inputs;
        two outputs that name one file.
    """
    sources = [str(p) for p in inputs if p is not None and not str(p).startswith("demo:")]
    named: list = []
    for flag, value in outputs.items():
        if value is not None:
            named.append((flag, check_output_path(value, what=flag)))
    for flag, (folder, names) in (folders or {}).items():
        if folder is None:
            continue
        root = check_output_folder(folder, what=flag)
        for name in names:
            candidate = Path(root) / name
            if os.path.lexists(candidate):
                named.append((flag, check_output_path(candidate, what=flag)))
    for i, (flag, dest) in enumerate(named):
        for source in sources:
            if _same_file(dest, source):
                raise DiversityInputError(
                    f"{flag} {dest.given} is the input {source}: writing it would destroy the data. "
                    "Choose another output path."
                )
        for other_flag, other in named[:i]:
            if dest.same_as(other):
                raise DiversityInputError(
                    f"{other_flag} {other.given} and {flag} {dest.given} name the same file; give each output "
                    "its own path."
                )
