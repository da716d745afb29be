"""The large-data policy: which path, which sketch and which sizes score n items within the memory budget.

- :func:`plan_scores` is the one policy the CLI (``diversity score``) and the app both call: from
  n, d, the kernel, the orders asked for, the weights, where the rows are, the budget and the
  caller's overrides (``approx``, ``m``, ``D``, ``k``, ``probes``, ``steps``) it returns a frozen
  :class:`ScorePlan` naming the path (dense, dual, streamed dual, blocked VS_2, VS_inf by Lanczos,
  SLQ, bounds, sketch), the estimator and its sizes (each sized to the budget by a model of its working
  memory), and why. Beyond the exact paths the default (``approx="auto"``) is the SLQ estimate
  of the full-sample value for q > 0 (:func:`~diversity_core.approx.vendi_slq`), with the
  guaranteed bounds beside it (q = 0, and a certain band). Pure: nothing is computed, nothing
  is read but the sizes.
- :func:`exact_plan` asks the spectrum module's own rule (dual when the kernel has a feature map
  and d < n; dense when its n x n matrices fit the memory budget) without computing anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import scipy.sparse as sp

from .. import _config
from .._config import (
    check_memory,
    config_context,
    fits_memory,
    format_bytes,
    get_config,
    memory_budget,
    parse_bytes,
)
from .._deprecation import UNSET, renamed_argument
from .._orders import check_q, q_key
from .._validation import check_option, check_scalar
from ..blocked import _workers
from ..exceptions import DiversityInputError, MemoryBudgetError
from ..kernels import DEFAULT_KERNEL, get_kernel
from ..sources import DaskSource, RowSource
from ..spectrum import _choose_method, _dense_bytes
from ._operators import _tile_rows
from ._results import ExactPlan
from .bounds import _auto_storage, _steps
from .sketches import DEFAULT_SIZE, _choose_estimator, _is_binary
from .slq._api import HEAD_STEPS

__all__ = ["exact_plan", "plan_scores", "binary_features", "ScorePlan", "SketchPlan", "BoundsPlan", "SLQPlan", "PATHS", "EXACT_PATHS",
           "APPROX", "MIN_SKETCH", "API_NAMES", "CLI_NAMES"]


def exact_plan(n: int, d: int, *, kernel=DEFAULT_KERNEL, n_eigenvectors: int = 0, **kernel_params) -> ExactPlan:
    """The exact path ``compute_spectrum(method="auto")`` would take for n items of dimension d.

    Parameters
    ----------
    n, d : int
        Number of items and feature dimension (for ``kernel="precomputed"``, d = n).
    kernel : str or Kernel, default "cosine"
        The default of every function that takes a kernel (:data:`~diversity_core.kernels.DEFAULT_KERNEL`),
        so a bound or estimate is of the value the exact function gives without naming a kernel.
    n_eigenvectors : int, default 0
        Eigenvectors the caller will ask for (they raise the dense path's memory).
    **kernel_params
        e.g. ``sigma=0.5`` (no effect on the decision; accepted so a caller can pass its settings).

    Returns
    -------
    ExactPlan
        ``method`` is ``"dual"``, ``"dense"`` or None (beyond the memory budget); ``dense_bytes``
        is what forcing the dense path would take.

    Notes
    -----
    Nothing is computed: the rule and the memory estimate are those of
    :func:`~diversity_core.spectrum.compute_spectrum`, evaluated on the sizes alone, against the
    current budget (:func:`~diversity_core.set_config`, ``DIVERSITY_MEMORY_BUDGET``).

    Examples
    --------
    >>> from diversity_core import config_context
    >>> with config_context(memory_budget="1G"):
    ...     exact_plan(100_000, 64, kernel="rbf").method is None
    True
    >>> exact_plan(100_000, 64, kernel="cosine").method
    'dual'
    """
    n = check_scalar(n, "n", int, min_val=1)
    d = check_scalar(d, "d", int, min_val=1)
    n_eigenvectors = check_scalar(n_eigenvectors, "n_eigenvectors", int, min_val=0)
    kern = get_kernel(kernel, **kernel_params)
    try:
        method = _choose_method("auto", kern, n, d, n_eigenvectors)
    except MemoryBudgetError:
        method = None
    return ExactPlan(method=method, n=n, d=d, kernel=kern.name, dense_bytes=float(_dense_bytes(n, n_eigenvectors)),
                     budget=memory_budget())


# ---------------------------------------------------------------------------------------
# the large-data policy: which path, which sketch, which sizes
# ---------------------------------------------------------------------------------------
#: The paths a plan names: five exact ones, then guaranteed bounds, sketch estimates and SLQ
#: estimates of the full-sample value.
PATHS = ("dense", "dual", "streamed", "blocked", "lanczos", "bounds", "sketch", "slq")

#: From this many items an exact VS_2 alone is computed by blocks of K (O(n^2 d)) rather than from
#: the dense spectrum (O(n^3)), even when the dense matrices fit. Measured with one BLAS thread,
#: d = 384, rbf, on the busy 2-core machine (load 9): dense / blocked = 5.8 at n = 500, 2.6 at 1,000,
#: 8.2 at 2,000 and 25 at 4,000 (30.4 s against 1.2 s); below 500 both take well under a second.
BLOCKED_FROM = 500
#: From this many items an exact VS_inf (alone, or with VS_2) is computed from the top eigenvalue by
#: Lanczos on the kernel operator (O(n^2 d) to form it, then a few tens of O(n^2) products) rather than
#: from the dense spectrum (O(n^3)), even when the dense matrices fit. Measured with one BLAS thread,
#: d = 384, clustered data, load 0.8-1.4 (benchmarks/bench_vs_inf_path.py): dense / Lanczos = 0.95 at
#: n = 250, 1.1 at 500, 1.5 at 1,000, 4.2 at 2,000 and 20 at 4,000 (rbf; 10.3 s against 0.53 s); at load
#: 6-12: 0.69, 1.04, 1.4, 3.9 and 7.4. Cosine crosses at 500 too (docs/scale.md).
LANCZOS_FROM = 500
EXACT_PATHS = PATHS[:5]
#: Values of ``approx``: None (exact only) or one of these.
APPROX = ("auto", "bounds", "slq", "nystrom", "rff", "tanimoto_rf")
#: SLQ's defaults (:func:`~diversity_core.approx.vendi_slq`), and the smallest sizes the budget may shrink them to.
SLQ_DEFAULTS = {"k": 512, "block": 64, "probes": 64, "batch": 32, "steps": 30}
SLQ_MIN = {"k": 64, "block": 16, "batch": 8, "steps": 12}
#: Smallest sketch worth running (landmarks m, or frequencies/hashes D): below it the sketch's
#: rank caps VS_1 near the sketch size (measured: m >= 60-80 VS_1 for ~5% at q = 1), so a
#: smaller one says little more than the first-look subsample does.
MIN_SKETCH = 64
#: Landmarks of the Nystrom bounds when none are given (``vendi_bounds``' default m).
BOUNDS_M = 2000
#: Rows per streamed chunk that a sketch's size must leave room for: the size shrinks before the
#: chunks do, since chunks of a few rows cost a Python round trip each.
MIN_CHUNK_ROWS = 256
#: How the knobs are named in messages: the API's parameter names, or the CLI's flags.
API_NAMES = {"m": "m", "D": "D", "k": "k", "memory_budget": "memory_budget", "approx": "approx",
             "bounds_method": "bounds_method", "probes": "probes", "steps": "steps"}
CLI_NAMES = {"m": "--m", "D": "--D", "k": "--k", "memory_budget": "--memory-budget", "approx": "--approx",
             "bounds_method": "--bounds-method", "probes": "--probes", "steps": "--steps"}

_F8 = 8.0  # bytes of a float64
# MinHash: entries of the (hashes x non-zeros) rank table of one group of hashes (sketches'
# _MinHashKernel keeps it near 4e6)
_MINHASH_TABLE = 4e6
#: Share of the budget a sketch is sized to: the model follows the arrays the sketches allocate
#: (measured within a few percent by tracemalloc), and the rest absorbs what it leaves out.
_MODEL_SHARE = 0.9


@dataclass(frozen=True)
class SketchPlan:
    """A sketch sized to the memory budget.

    Attributes
    ----------
    method : {"nystrom", "rff", "tanimoto_rf"}
    size : int
        Landmarks m (nystrom) or frequencies/hashes D (rff: 2D features; tanimoto_rf: D).
    pool : int or None
        Rows the Nystrom landmarks are chosen among (the estimator's default rule).
    peak_bytes : float
        Modelled peak of the sketch's working memory at this size and chunk.
    chunk_bytes : int
        The ``chunk_bytes`` setting to run it with (streamed chunks small enough to fit).
    sized : {"given", "default", "budget"}
        The caller's size, the default size, or the largest below the default that fits.
    """

    method: str
    size: int
    pool: Optional[int]
    peak_bytes: float
    chunk_bytes: int
    sized: str

    @property
    def width(self) -> int:
        """Feature columns of the sketch (2D Fourier features, D hashes, m landmarks)."""
        return 2 * self.size if self.method == "rff" else self.size

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`~diversity_core.approx.vendi_estimate` for this sketch."""
        return {"method": self.method, ("m" if self.method == "nystrom" else "D"): self.size}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"method": self.method, "size": self.size, "pool": self.pool, "peak_bytes": self.peak_bytes,
                "chunk_bytes": self.chunk_bytes, "sized": self.sized}


@dataclass(frozen=True)
class BoundsPlan:
    """Guaranteed bounds sized to the memory budget.

    Attributes
    ----------
    method : {"lanczos", "nystrom"}
        Exact top eigenvalues by Lanczos, or lower bounds from a Nystrom sketch.
    storage : str or None
        Lanczos: how the operator holds rho (``"float64"``, ``"float32"``, ``"matrix-free"``).
    ks : tuple of int
        Lanczos: the steps of k whose Lanczos vectors fit beside the operator (may be empty: the
        bounds from the trace and the exact VS_2 alone).
    m, pool : int or None
        Nystrom: landmarks and the rows they are chosen among.
    peak_bytes : float
        Modelled peak working memory.
    chunk_bytes : int
        The ``chunk_bytes`` setting to run them with.
    sized : {"given", "default", "budget"}
        As for :class:`SketchPlan` (of m, or of the largest k).
    """

    method: str
    storage: Optional[str]
    ks: tuple
    m: Optional[int]
    pool: Optional[int]
    peak_bytes: float
    chunk_bytes: int
    sized: str

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`~diversity_core.approx.vendi_bounds` for these bounds."""
        if self.method == "nystrom":
            return {"method": "nystrom", "m": self.m}
        return {"method": "lanczos", "k": list(self.ks)}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"method": self.method, "storage": self.storage, "ks": list(self.ks), "m": self.m, "pool": self.pool,
                "peak_bytes": self.peak_bytes, "chunk_bytes": self.chunk_bytes, "sized": self.sized}


@dataclass(frozen=True)
class SLQPlan:
    """Stochastic Lanczos quadrature sized to the memory budget (:func:`~diversity_core.approx.vendi_slq`).

    Attributes
    ----------
    k, block : int
        Dimension of the deflated head and its block size.
    probes, batch : int
        Most probes, and probes per batch (per pass over K).
    steps : int
        Most Lanczos steps per probe.
    peak_bytes : float
        Modelled peak: the rows (and their centred copies), the head's Krylov basis
        (n x block (k / block + min(steps, 16))), the probes' Lanczos vectors
        (n x batch (steps + 1)), the blocks in and out of a pass and the operator's tiles.
    sized : {"given", "default", "budget"}
        The caller's sizes, the defaults, or smaller ones that fit (k halved, then the block,
        the batch and the steps).
    """

    k: int
    block: int
    probes: int
    batch: int
    steps: int
    peak_bytes: float
    sized: str

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`~diversity_core.approx.vendi_slq` for this plan."""
        return {"k": self.k, "block": self.block, "probes": self.probes, "batch": self.batch, "steps": self.steps}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"k": self.k, "block": self.block, "probes": self.probes, "batch": self.batch, "steps": self.steps,
                "peak_bytes": self.peak_bytes, "sized": self.sized}


@dataclass(frozen=True)
class ScorePlan:
    """Which path scores n items within the memory budget, and why (:func:`plan_scores`).

    Attributes
    ----------
    path : {"dense", "dual", "streamed", "blocked", "lanczos", "slq", "bounds", "sketch"}
        Exact paths: the dense n x n spectrum, the dual d x d one (``"streamed"``: its rows read
        in chunks from a source), exact VS_2 by blocks of K (``"blocked"``, only q = 2 asked),
        exact VS_inf from the top eigenvalue by Lanczos (``"lanczos"``, only q = inf, or q = 2
        and inf, asked; VS_2 comes from the same operator).
        Beyond them: the SLQ estimate of the full-sample VS_q for q > 0 (:attr:`slq`, the
        default), guaranteed bounds on every VS_q (:attr:`bounds`) or a sketch estimate for
        q >= 1 (:attr:`sketch`).
    reason : str
        Why, in one sentence with the sizes.
    n, d : int
    kernel : str
    qs : tuple of float
        The orders asked for, ascending (empty: every order).
    weighted : bool
    budget : int
        The memory budget the decision used (bytes).
    method : {"dense", "dual"} or None
        ``compute_spectrum``'s method on the spectral exact paths.
    dense_bytes : float
        What the dense path would take (what forcing it past the budget costs).
    sketch : SketchPlan or None
        The sketch of path ``"sketch"``; with ``approx="auto"`` beyond the exact paths also a
        sketch that fits beside the others, for callers that ask for one (not run by default).
    bounds : BoundsPlan or None
        The bounds of path ``"bounds"``; beside ``"slq"`` the guaranteed companion (q = 0, and a
        certain band for every order).
    slq : SLQPlan or None
        The SLQ estimate of path ``"slq"``.
    """

    path: str
    reason: str
    n: int
    d: int
    kernel: str
    qs: tuple
    weighted: bool
    budget: int
    method: Optional[str]
    dense_bytes: float
    sketch: Optional[SketchPlan] = None
    bounds: Optional[BoundsPlan] = None
    slq: Optional[SLQPlan] = None

    @property
    def exact(self) -> bool:
        """Whether the path is exact (dense, dual, streamed, blocked or lanczos)."""
        return self.path in EXACT_PATHS

    def dense_seconds(self, sample_seconds: float, sample_n: int, *, eigenvectors: bool = True) -> float:
        """Approximate time of the dense path from a measured one on ``sample_n`` items (scales as n^3).

        Keeping eigenvectors (LAPACK's divide-and-conquer driver) takes about twice the time of
        the eigenvalues alone; ``sample_seconds`` is the time of the eigenvalues.
        """
        return (2.0 if eigenvectors else 1.0) * float(sample_seconds) * (self.n / sample_n) ** 3

    def context(self, part: Optional[str] = None):
        """``config_context`` with the plan's budget, and the chunk size of ``part`` (``"sketch"``/``"bounds"``)."""
        sized = None if part is None else getattr(self, part)
        return config_context(memory_budget=self.budget, chunk_bytes=None if sized is None else sized.chunk_bytes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"path": self.path, "reason": self.reason, "n": self.n, "d": self.d, "kernel": self.kernel,
                "qs": [q_key(q) for q in self.qs], "weighted": self.weighted, "budget": self.budget,
                "method": self.method, "dense_bytes": self.dense_bytes,
                "sketch": None if self.sketch is None else self.sketch.to_dict(),
                "bounds": None if self.bounds is None else self.bounds.to_dict(),
                "slq": None if self.slq is None else self.slq.to_dict()}


def plan_scores(
    n: int,
    d: int,
    *,
    kernel="cosine",
    q=None,
    weighted: bool = False,
    method: str = "auto",
    approx: Optional[str] = None,
    bounds_method: str = "auto",
    m: Optional[int] = None,
    D: Optional[int] = None,
    k=None,
    sketch_size: Optional[int] = None,
    probes: Optional[int] = None,
    steps: Optional[int] = None,
    n_eigenvectors: int = 0,
    streamed: bool = False,
    density: Optional[float] = None,
    binary: Optional[bool] = None,
    memory_budget=None,
    names: Optional[dict] = None,
    qs=UNSET,
    **kernel_params,
) -> ScorePlan:
    r"""The one large-data policy: which path, which sketch and which sizes score n items in the budget.

    Nothing is computed: the decision reads the sizes, the kernel and the budget. The exact
    rule is that of :func:`~diversity_core.spectrum.compute_spectrum`; beyond it every sketch is
    sized to the budget by a model of its working memory (below).

    Parameters
    ----------
    n, d : int
        Items and feature dimension (for ``kernel="precomputed"``, d = n).
    kernel : str or Kernel, default "cosine"
    q : float, 'inf' or sequence of orders, optional
        The orders asked for; default: every order (a spectrum, never the VS_2-only path).
        ``qs`` is its deprecated name (a :class:`DeprecationWarning`).
    weighted : bool, default False
        Whether item weights are given (weighted chunks take one more copy).
    method : {"auto", "dense", "dual"}, default "auto"
        The exact spectral path; ``"dense"``/``"dual"`` force it (checked against the budget).
    approx : {None, "auto", "bounds", "slq", "nystrom", "rff", "tanimoto_rf"}, default None
        None: exact paths only (a :class:`MemoryBudgetError` naming the options when none
        fits). ``"auto"``: the exact path when one fits, else the SLQ estimate of the
        full-sample value when an order q > 0 is asked (path ``"slq"``, with the guaranteed
        bounds beside it), else (or when SLQ does not fit) guaranteed bounds. The others force
        that path.
    bounds_method : {"auto", "lanczos", "nystrom"}, default "auto"
        How the bounds see the top of the spectrum; ``"auto"`` is
        :func:`~diversity_core.approx.bounds_method`'s rule (Nystrom once not even the float32
        n x n matrix fits, where each Lanczos product would be a pass over K).
    m, D : int, optional
        The sketch's size as given by the user: honoured as it is, or a
        :class:`MemoryBudgetError` naming the largest that fits. Default: the largest up to the
        estimator's default (1024; 2000 landmarks for the bounds) that fits, at least
        :data:`MIN_SKETCH`.
    k : int or sequence of int, optional
        Lanczos steps (as ``vendi_bounds``' k); an int given here is honoured or refused like m.
        Default 200 (the steps below it first); steps whose Lanczos vectors do not fit are left out.
        An int is also SLQ's head dimension (default 512).
    probes, steps : int, optional
        SLQ: most probes and Lanczos steps per probe (defaults 64 and 40), honoured or refused
        like m.
    sketch_size : int, optional
        The auto rule's preferred size, in place of the estimator's default (the app asks for
        smaller sketches that answer quickly).
    n_eigenvectors : int, default 0
        Eigenvectors the caller will keep (they raise the dense path's memory).
    streamed : bool, default False
        The rows come from a source (file, shards, Dask) rather than memory: the dense path must
        read them (n d x 8 bytes more) and the dual path is ``"streamed"``.
    density : float, optional
        Share of stored entries of sparse features (fingerprints); None: dense rows.
    binary : bool, optional
        Whether the features are 0/1 (tanimoto_rf needs it; :func:`binary_features` tells); None:
        assumed when the kernel is tanimoto.
    memory_budget : int or str, optional
        Default: the current budget (:func:`~diversity_core.set_config`).
    names : dict, optional
        How messages name the knobs; default :data:`API_NAMES`, the CLI passes :data:`CLI_NAMES`.
    **kernel_params
        e.g. ``sigma=0.5`` (no effect on the decision).

    Returns
    -------
    ScorePlan
        ``path``, ``reason``, and the sizes (``sketch``, ``bounds``) to run it with; run the
        scalable parts inside ``plan.context("sketch")`` / ``plan.context("bounds")``, which set
        the budget and a chunk size that fits.

    Raises
    ------
    MemoryBudgetError
        Nothing fits: no exact path (``approx=None``), a given m, D or k over the budget (the
        message names the largest that fits), or no sketch of at least :data:`MIN_SKETCH`. The
        message names the knobs (``names``) and the budget needed.
    DiversityInputError
        Bad sizes or options; a sketch that does not fit the kernel (rff without rbf/laplacian).

    Notes
    -----
    The order of the rule: the dual path when the kernel has a feature map, d < n and its
    :math:`3 d^2 \times 8` bytes fit; the dense path when :math:`2 n^2 \times 8` bytes fit
    (:math:`5 n^2` with eigenvectors, plus :math:`n d` to read streamed rows), except that exact
    VS_2 by blocks is taken whenever only q = 2 is asked of at least :data:`BLOCKED_FROM` items
    (cheaper as well as smaller), or of fewer when the dense path does not fit; likewise exact VS_inf
    (and VS_2 beside it) from the top eigenvalue by Lanczos whenever only q = inf, or q = 2 and inf,
    is asked of at least :data:`LANCZOS_FROM` items, or of fewer when the dense path does not fit
    (the operator stored in float64, float32, or recomputed by blocks at each product, as
    :func:`~diversity_core.approx.vs_inf_exact`); then, with ``approx``, the bounds and sketches.
    A sketch of size s is modelled stage by stage: choosing Nystrom landmarks holds an (pool x s)
    pivoted-Cholesky factor, then :math:`W = k(Z, Z)` and its
    eigendecomposition (about :math:`5 s^2`); streaming holds the :math:`w \times w` dual sum,
    the chunk's product and the eigensolver's copy (:math:`3 w^2`, w the sketch's width) and a
    few (rows x w) arrays per chunk; random Fourier features hold the (d x s) frequencies;
    MinHash its (s x d) permutation ranks and signs and a rank table of about 4e6 entries. The
    largest s whose modelled peak, with chunks of :data:`MIN_CHUNK_ROWS` rows, stays within 90% of
    the budget (the rest absorbs what the model leaves out; tracemalloc measures the sketches within
    a few percent of it) is found by bisection, the model growing with s; the chunk size then takes
    what the budget leaves, at most the configured ``chunk_bytes``, so a large budget changes
    nothing. Cost O(log s).

    Examples
    --------
    >>> plan_scores(100_000, 64, kernel="cosine").path
    'dual'
    >>> p = plan_scores(4000, 16, kernel="rbf", approx="nystrom", memory_budget="40M")
    >>> p.path, p.sketch.method, p.sketch.sized, p.sketch.size < 1024
    ('sketch', 'nystrom', 'budget', True)
    """
    n = check_scalar(n, "n", int, min_val=1)
    d = check_scalar(d, "d", int, min_val=1)
    qs = _check_orders(renamed_argument(q, qs, new="q", old="qs"))
    check_option(method, ("auto", "dense", "dual"), "method")
    if approx is not None:
        check_option(approx, APPROX, "approx")
    check_option(bounds_method, ("auto", "lanczos", "nystrom"), "bounds_method")
    m, D, sketch_size = (None if v is None else check_scalar(v, name, int, min_val=1)
                         for v, name in ((m, "m"), (D, "D"), (sketch_size, "sketch_size")))
    probes, steps = (None if v is None else check_scalar(v, name, int, min_val=2)
                     for v, name in ((probes, "probes"), (steps, "steps")))
    if k is not None:
        _steps(k)  # an int or a sequence of ints >= 1
    n_eigenvectors = check_scalar(n_eigenvectors, "n_eigenvectors", int, min_val=0)
    if density is not None:
        density = check_scalar(density, "density", float, min_val=0.0, max_val=1.0, include_boundaries="right")
    budget = _config.memory_budget() if memory_budget is None else parse_bytes(memory_budget)
    kern = get_kernel(kernel, **kernel_params)
    knobs = dict(API_NAMES, **(names or {}))
    with config_context(memory_budget=budget):
        return _plan(n, d, kern, qs, bool(weighted), method, approx, bounds_method, m, D, k, sketch_size,
                     n_eigenvectors, bool(streamed), d if density is None else max(1.0, density * d), binary,
                     knobs, budget, probes, steps)


def binary_features(X) -> bool:
    """Whether every stored value of X is 0 or 1: the MinHash sketch (``tanimoto_rf``) needs bits.

    X may be an array, a sparse matrix, a :class:`~diversity_core.sources.RowSource` (read chunk
    by chunk, stopping at the first chunk with another value) or a Dask array. The one test the
    plan's callers use (the CLI and the app), so that count fingerprints never get a plan whose
    sketch then refuses them. O(nnz).
    """
    if isinstance(X, DaskSource):
        X = X.X
    if isinstance(X, RowSource):
        return all(_is_binary(block) for _, block in X.chunks())
    if hasattr(X, "dask"):  # a dask array
        import dask.array as da

        return bool(da.isin(X, [0, 1]).all().compute())
    return _is_binary(X if sp.issparse(X) else np.asarray(X))


def _check_orders(q) -> Optional[tuple]:
    """The orders as an ascending tuple of floats (None: every order)."""
    if q is None:
        return None
    values = np.unique(check_q(q).ravel())
    if values.size == 0:
        raise DiversityInputError("q must name at least one order q (a number >= 0 or 'inf').")
    return tuple(float(v) for v in values)


def _plan(n, d, kern, qs, weighted, method, approx, bounds_method, m, D, k, sketch_size, n_eig, streamed, nnz_row,
          binary, knobs, budget, probes=None, steps=None) -> ScorePlan:
    """:func:`plan_scores` on checked inputs, inside a context holding the budget."""
    dense = float(_dense_bytes(n, n_eig) + (_F8 * n * d if streamed else 0.0))
    base = {"n": n, "d": d, "kernel": kern.name, "qs": qs if qs is not None else (), "weighted": weighted,
            "budget": budget, "dense_bytes": dense}
    over = f"the dense spectrum needs {format_bytes(dense)}, over the memory budget of {format_bytes(budget)}"
    if approx in (None, "auto"):
        exact = _exact_path(kern, n, d, qs, method, n_eig, streamed, dense)
        if exact is not None:
            return ScorePlan(path=exact[0], method=exact[1], reason=exact[2], **base)
        if approx is None:
            _refuse_exact(kern, n, d, method, n_eig, streamed, dense, knobs)
    sizes = _Sizes(n=n, d=d, weighted=weighted, nnz_row=nnz_row, streamed=streamed, knobs=knobs, budget=budget)
    if approx == "bounds":
        b = _plan_bounds(kern, bounds_method, m, k, n_eig, sizes)
        return ScorePlan(path="bounds", method=None, bounds=b, reason=f"guaranteed bounds asked for: {_describe(b)}",
                         **base)
    if approx == "slq":
        q = _plan_slq(k, probes, steps, sizes)
        return ScorePlan(path="slq", method=None, slq=q, reason=f"an SLQ estimate asked for: {_describe(q)}", **base)
    if approx in ("nystrom", "rff", "tanimoto_rf"):
        s = _plan_sketch(kern, approx, m, D, sketch_size, binary, sizes)
        return ScorePlan(path="sketch", method=None, sketch=s, reason=f"a sketch estimate asked for: {_describe(s)}",
                         **base)
    # approx="auto" beyond the exact paths: bounds for every order, an estimate beside them for q >= 1
    try:
        b = _plan_bounds(kern, bounds_method, m, k, n_eig, sizes)
    except MemoryBudgetError as exc:
        if m is not None or k is not None:
            raise  # the caller's own size does not fit: say so rather than switch paths
        b, failed = None, exc
    s = None
    if kern.name != "precomputed" and (qs is None or qs[-1] >= 1):
        try:
            s = _plan_sketch(kern, "auto", None, D, sketch_size, binary, sizes)
        except MemoryBudgetError:
            s = None
    # the default estimate for q > 0: SLQ of the full-sample value (the bounds beside it)
    q = None
    if qs is None or qs[-1] > 0:
        try:
            q = _plan_slq(k, probes, steps, sizes)
        except MemoryBudgetError:
            if probes is not None or steps is not None:
                raise
            q = None
    if q is not None:
        return ScorePlan(path="slq", method=None, slq=q, bounds=b, sketch=s, reason=f"{over}: {_describe(q)}"
                         + ("" if b is None else f"; beside it {_describe(b)}"), **base)
    if b is not None:
        return ScorePlan(path="bounds", method=None, bounds=b, sketch=s, reason=f"{over}: {_describe(b)}"
                         + ("" if s is None else f"; beside them {_describe(s)}"), **base)
    if s is not None:
        return ScorePlan(path="sketch", method=None, sketch=s, reason=f"{over}, and no bounds fit: {_describe(s)}",
                         **base)
    raise failed


def _exact_path(kern, n, d, qs, method, n_eig, streamed, dense) -> Optional[tuple]:
    """``(path, method, reason)`` of the exact rule, or None when no exact path fits (method ``"auto"``)."""
    if method != "auto":
        # forced: the spectrum's own checks (a dual without features, a dense over the budget) raise
        chosen = _choose_method(method, kern, n, d, n_eig, in_memory=not streamed)
        path = "streamed" if chosen == "dual" and streamed else chosen
        return path, chosen, f"method={method!r} asked for"
    if kern.has_feature_map and d < n:
        # the d x d sum, the chunk's product and the eigensolver's copy (streaming's own check)
        dual = 3 * _F8 * d * d + _F8 * n * n_eig
        if fits_memory(dual):
            return ("streamed" if streamed else "dual", "dual",
                    f"the {kern.name} kernel has a feature map and d = {d} < n = {n}: the exact dual path, "
                    f"O(n d^2), {format_bytes(dual)}")
    only_vs2 = qs is not None and all(q == 2.0 for q in qs) and n_eig == 0
    # VS_inf = 1 / lambda_max needs the top eigenvalue only; VS_2 comes from the same operator
    top = (qs is not None and math.inf in qs and all(q in (2.0, math.inf) for q in qs) and n_eig == 0
           and (not streamed or fits_memory(_F8 * n * d)))
    if only_vs2 and n >= BLOCKED_FROM:
        # cheaper, not only smaller: VS_2 needs ||K||_F, O(n^2 d), where the spectrum costs O(n^3)
        return ("blocked", None, f"only q = 2 is asked: exact VS_2 by blocks of K, O(n^2 d), cheaper than the "
                                 f"dense spectrum's O(n^3) from n = {BLOCKED_FROM}")
    fits = fits_memory(dense)
    if top and (n >= LANCZOS_FROM or not fits):
        why = (f"cheaper than the dense spectrum's O(n^3) from n = {LANCZOS_FROM}" if fits
               else f"the dense matrices ({format_bytes(dense)}) exceed the budget")
        also = "" if len(qs) == 1 else ", VS_2 from the same operator"
        return ("lanczos", None, f"only {_top_orders(qs)} asked: exact VS_inf from the top eigenvalue by "
                                 f"Lanczos {_lanczos_operator(n)}{also}; {why}")
    if fits:
        return "dense", "dense", f"the dense n x n matrices ({format_bytes(dense)}) fit the memory budget"
    if only_vs2:
        return ("blocked", None, f"only q = 2 is asked and the dense matrices ({format_bytes(dense)}) exceed the "
                                 "budget: exact VS_2 by blocks of K")
    return None


def _top_orders(qs) -> str:
    """The orders of the Lanczos path in words."""
    return "q = inf is" if len(qs) == 1 else "q = 2 and inf are"


def _lanczos_operator(n: int) -> str:
    """How :func:`~diversity_core.approx.vs_inf_exact` holds the operator of n items, and its cost."""
    storage = _auto_storage(n)
    if storage == "matrix-free":
        return ("on blocks of K recomputed at each product (the n x n matrix does not fit: each of some "
                "20-60 products is a pass over K, O(n^2 d))")
    size = format_bytes(np.dtype(storage).itemsize * n * n)
    return f"on the {storage} n x n operator ({size}; O(n^2 d) to form)"


def _refuse_exact(kern, n, d, method, n_eig, streamed, dense, knobs) -> None:
    """Raise the exact rule's refusal: the dual matrix, or the dense one with every option named."""
    if method == "auto" and kern.has_feature_map and d < n:
        check_memory(3 * _F8 * d * d + _F8 * n * n_eig,
                     what=f"the {d} x {d} dual matrix and its eigensolver" + (" and eigenvectors" if n_eig else ""),
                     hint=f"The dense path needs {format_bytes(dense)} here; reduce d (PCA), or use "
                          f"{knobs['approx']} auto for guaranteed bounds.")
    _choose_method(method, kern, n, d, n_eig, in_memory=not streamed)
    raise MemoryBudgetError(  # not reached: the rule above refuses what _exact_path found no room for
        f"no exact path fits the memory budget of {format_bytes(_config.memory_budget())}; raise "
        f"{knobs['memory_budget']} or use {knobs['approx']} auto."
    )


def _describe(part) -> str:
    """The sized part of a plan in words."""
    if isinstance(part, SLQPlan):
        how = {"given": "as given", "default": "the defaults", "budget": "sized to the budget"}[part.sized]
        return (f"an SLQ estimate of the full-sample value (head k = {part.k}, up to {part.probes} probes and "
                f"{part.steps} Lanczos steps; {how}; peak {format_bytes(part.peak_bytes)})")
    if isinstance(part, SketchPlan):
        name = {"nystrom": "Nystrom", "rff": "random Fourier features", "tanimoto_rf": "MinHash features"}[part.method]
        sym = "m" if part.method == "nystrom" else "D"
        how = {"given": "as given", "default": "the default", "budget": "the largest that fits"}[part.sized]
        return f"{name} with {sym} = {part.size} ({how}; peak {format_bytes(part.peak_bytes)})"
    if part.method == "nystrom":
        how = {"given": "as given", "default": "the default", "budget": "the largest that fits"}[part.sized]
        return (f"Nystrom bounds with m = {part.m} landmarks ({how}; peak {format_bytes(part.peak_bytes)})")
    top = f"top k up to {part.ks[-1]}" if part.ks else "no Lanczos step fits: trace and exact VS_2 only"
    return f"Lanczos bounds on the {part.storage} operator, {top}"


# ---------------------------------------------------------------------------------------
# sizing a sketch: a model of its working memory
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Sizes:
    """What the sizing reads: the data's shape, the weights, where the rows are, the knobs' names, the budget."""

    n: int
    d: int
    weighted: bool
    nnz_row: float
    streamed: bool
    knobs: dict
    budget: int


@dataclass(frozen=True)
class _Sketch:
    """One sketch to size: its method, its Nystrom pool rule (``pool = max(4000, factor s)``), bytes held throughout."""

    method: str
    factor: int = 8
    held: float = 0.0

    @property
    def symbol(self) -> str:
        return "m" if self.method == "nystrom" else "D"

    def pool(self, z: _Sizes, s: int) -> int:
        """The Nystrom pool's default: ``min(n, max(4000, factor s))`` (8 for estimates, 4 for bounds)."""
        return min(z.n, max(4000, self.factor * s))

    def cost(self, z: _Sizes, s: int) -> tuple:
        """``(setup, fixed, per_row, capped_per_row, cap)`` bytes at size s.

        The peak with chunks of r rows is ``max(setup, fixed + r per_row + min(cap, r capped_per_row))``.
        """
        d, w = z.d, (2 * s if self.method == "rff" else s)
        dual = 3 * _F8 * w * w            # the w x w sum, the chunk's product, the eigensolver's copy
        copy = w if z.weighted else 0     # Phi diag(sqrt p) of a weighted chunk
        if self.method == "rff":
            # W (d x s) is drawn then scaled (two copies); a chunk's X W, cos, sin, their stack and
            # the scaled stack (7 s columns), and the chunk's rows as float64
            setup, fixed, per_row, capped, cap = 2 * _F8 * d * s, _F8 * d * s + dual, _F8 * (d + 7 * s + copy), 0, 0
        elif self.method == "tanimoto_rf":
            itemsize = 2 if d < 2**16 else 4
            # the argsort of an (s x d) uniform draw, then the ranks and the (s x d + 1) signs;
            # per chunk its features, the CSR rows, the minima of a group of hashes (ranks, int
            # indices, gathered signs: at most s per row) and the group's rank table (s x nnz)
            setup = s * d * (16.0 + itemsize) + _F8 * s * (d + 1)
            fixed = s * d * itemsize + _F8 * s * (d + 1) + dual
            per_row = _F8 * (s + copy) + (itemsize + 16.0) * s + 12.0 * z.nnz_row
            capped, cap = itemsize * s * z.nnz_row, itemsize * _MINHASH_TABLE
        else:
            # Nystrom: the pool's rows, its (pool x s) pivoted-Cholesky factor and, per block of pivots,
            # the kernel columns, their residual, its product and the new factor columns (measured:
            # about six pool x block arrays at once); then Z, W = k(Z, Z) and eigh's copy, vectors
            # and workspace (about 5 s^2)
            block = max(8, min(128, s // 16))
            pool = self.pool(z, s)
            setup = max(_F8 * pool * (d + s + 6 * block), _F8 * (pool * d + s * d + 5.0 * s * s))
            # streaming: Z and T = U w^-1/2 beside the dual sums; per row the kernel block k(x, Z)
            # with its distance temporaries, the features, and the chunk's centred copies
            fixed, per_row, capped, cap = _F8 * (s * d + s * s) + dual, _F8 * (4 * d + 3 * s + copy), 0, 0
        # the previous replicate's map is still referenced while the next one is drawn
        setup += {"rff": _F8 * d * s, "tanimoto_rf": fixed - dual}.get(self.method, _F8 * (s * s + s * d))
        return setup + self.held, fixed + self.held, per_row, capped, cap

    def peak(self, z: _Sizes, s: int, rows: float) -> float:
        """Peak bytes at size s with chunks of ``rows`` rows."""
        setup, fixed, per_row, capped, cap = self.cost(z, s)
        return max(setup, fixed + rows * per_row + min(cap, rows * capped))

    def fits(self, z: _Sizes, s: int) -> bool:
        """Whether size s fits with chunks of :data:`MIN_CHUNK_ROWS` rows (all of them when n is smaller)."""
        return self.peak(z, s, min(z.n, MIN_CHUNK_ROWS)) <= _MODEL_SHARE * z.budget

    def chunk(self, z: _Sizes, s: int) -> tuple[int, float]:
        """``(chunk_bytes, peak)``: the configured chunk, shrunk until the streaming stage fits the budget."""
        _, fixed, per_row, capped, cap = self.cost(z, s)
        room = _MODEL_SHARE * z.budget - fixed
        rows = room / (per_row + capped)
        if rows * capped > cap:
            rows = (room - cap) / per_row   # past the cap the rank table stops growing with the chunk
        rows = max(rows, min(z.n, MIN_CHUNK_ROWS))
        # a sketch's chunks hold max(d, width) float64 columns per row (sketches' _sketch_eigenvalues)
        per_chunk_row = _F8 * max(z.d, 2 * s if self.method == "rff" else s)
        configured = int(get_config()["chunk_bytes"])
        if rows * per_chunk_row >= configured:
            return configured, self.peak(z, s, min(z.n, configured / per_chunk_row))
        rows = math.floor(rows)
        return int(rows * per_chunk_row), self.peak(z, s, min(z.n, rows))

    def size(self, z: _Sizes, given: Optional[int], default: int, what: str) -> tuple[int, str]:
        """``(size, sized)``: the given size checked, else the largest up to the default that fits."""
        cap = z.n if self.method == "nystrom" else 2**31 - 1
        sym, knobs = self.symbol, z.knobs

        def need(s):
            return self.peak(z, s, min(z.n, MIN_CHUNK_ROWS))

        if given is not None:
            size = min(given, cap)
            if self.fits(z, size):
                return size, "given"
            best = _largest(lambda s: self.fits(z, s), 1, size - 1)
            way = (f"the largest {sym} that fits is {best}: use {_knob(knobs, sym, best)} or less"
                   if best is not None else f"no {sym} fits")
            raise MemoryBudgetError(
                f"{what} with {sym} = {size} needs about {format_bytes(need(size))}, over the memory budget of "
                f"{format_bytes(z.budget)}; {way}, or raise {knobs['memory_budget']} to at least "
                f"{format_bytes(need(size) / _MODEL_SHARE)}."
            )
        top, low = min(default, cap), min(MIN_SKETCH, cap)
        size = _largest(lambda s: self.fits(z, s), low, top)
        if size is None:
            raise MemoryBudgetError(
                f"no {what} fits the memory budget of {format_bytes(z.budget)}: even {sym} = {low} (smaller "
                f"sketches are of little use) needs about {format_bytes(need(low))}. Raise {knobs['memory_budget']} to "
                f"at least {format_bytes(need(low) / _MODEL_SHARE)}, or choose the sketch's size yourself with {knobs['m']} "
                f"(Nystrom landmarks) or {knobs['D']} (random features)."
            )
        return size, ("default" if size == top else "budget")


def _largest(fits, low: int, high: int) -> Optional[int]:
    """The largest s in [low, high] with ``fits(s)``, by bisection (the model grows with s), or None."""
    if high < low or not fits(low):
        return None
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if fits(mid) else (low, mid - 1)
    return low


def _knob(knobs: dict, name: str, value) -> str:
    """A knob with its value as the caller writes it: ``--m 512`` (CLI) or ``m=512`` (API)."""
    flag = knobs[name]
    return f"{flag} {value}" if flag.startswith("-") else f"{flag}={value}"


def _plan_sketch(kern, requested: str, m, D, sketch_size, binary, z: _Sizes) -> SketchPlan:
    """The estimate's sketch (``requested``: a method, or ``"auto"``), sized to the budget."""
    if requested == "auto":
        if kern.name == "precomputed":
            raise DiversityInputError("a precomputed K has no features to sketch; use the bounds (Lanczos on K).")
        method = _choose_estimator("auto", kern, None)
        if method == "tanimoto_rf" and binary is False:
            method = "nystrom"   # MinHash needs 0/1 bits
    else:
        method = _choose_estimator(requested, kern, None)
    if method == "nystrom":
        given, what = m, "Nystrom sketch"
    else:
        if m is not None and requested != "auto":
            raise DiversityInputError(f"{z.knobs['m']} (landmarks) is a Nystrom setting; {method} takes "
                                      f"{z.knobs['D']}.")
        given, what = D, ("random-feature sketch" if method == "rff" else "MinHash sketch")
    # an estimate streams its rows, whatever their source: nothing is held but the sketch
    sketch = _Sketch(method, factor=8)
    size, sized = sketch.size(z, given, sketch_size or DEFAULT_SIZE, what)
    chunk, peak = sketch.chunk(z, size)
    return SketchPlan(method=method, size=size, pool=sketch.pool(z, size) if method == "nystrom" else None,
                      peak_bytes=peak, chunk_bytes=chunk, sized=sized)


def _plan_bounds(kern, bounds_method: str, m, k, n_eig: int, z: _Sizes) -> BoundsPlan:
    """Guaranteed bounds: Lanczos with the steps of k that fit, or Nystrom bounds sized to the budget."""
    n, knobs = z.n, z.knobs
    # both bound methods read streamed rows into memory first
    held = _F8 * n * z.d if z.streamed else 0.0
    storage = _auto_storage(n)
    method = bounds_method
    if method == "auto":
        # bounds_method's rule: past the float32 matrix each Lanczos product is a pass over K
        method = "nystrom" if storage == "matrix-free" and kern.name != "precomputed" else "lanczos"
    if method == "nystrom":
        if kern.name == "precomputed":
            raise DiversityInputError("Nystrom bounds sketch the items' features; a precomputed K has none here. "
                                      f"Use {_knob(knobs, 'bounds_method', 'lanczos')}.")
        sketch = _Sketch("nystrom", factor=4, held=held)
        size, sized = sketch.size(z, m, BOUNDS_M, "Nystrom sketch for the bounds")
        chunk, peak = sketch.chunk(z, size)
        return BoundsPlan(method="nystrom", storage=None, ks=(), m=size, pool=sketch.pool(z, size), peak_bytes=peak,
                          chunk_bytes=chunk, sized=sized)
    # the operator's matrix (a quarter more for its temporaries; matrix-free blocks size themselves
    # to the budget), ARPACK's 2k + 1 Lanczos vectors of n entries, and the kept eigenvectors
    matrix = {"float64": 10.0, "float32": 5.0}.get(storage, 0.0) * n * n + held

    def need(step):
        return matrix + _F8 * n * (2 * step + 2 + n_eig)

    steps = [s for s in _steps(200 if k is None else k) if s < n - 1]
    kept = tuple(s for s in steps if need(s) <= z.budget)
    given = k is not None and np.ndim(k) == 0
    if given and steps and kept != tuple(steps):
        best = kept[-1] if kept else None
        way = f"the largest k that fits is {best}: use {_knob(knobs, 'k', best)}" if best else "no Lanczos step fits"
        raise MemoryBudgetError(
            f"Lanczos bounds with k = {steps[-1]} need about {format_bytes(need(steps[-1]))} (the {storage} operator "
            f"and {2 * steps[-1] + 1} Lanczos vectors of {n} entries), over the memory budget of "
            f"{format_bytes(z.budget)}; {way}, or raise {knobs['memory_budget']}."
        )
    return BoundsPlan(method="lanczos", storage=storage, ks=kept, m=None, pool=None,
                      peak_bytes=need(kept[-1]) if kept else matrix, chunk_bytes=int(get_config()["chunk_bytes"]),
                      sized="given" if given else ("default" if kept == tuple(steps) else "budget"))


# ---------------------------------------------------------------------------------------
# sizing SLQ
# ---------------------------------------------------------------------------------------
def _slq_bytes(z: _Sizes, k: int, block: int, batch: int, steps: int) -> float:
    """Modelled peak of :func:`~diversity_core.approx.vendi_slq` (see :class:`SLQPlan`)."""
    n, d = z.n, z.d
    s = math.ceil(min(k, n) / block) if k else 0
    head = _F8 * n * min(n, block * (s + min(steps, HEAD_STEPS))) if s else 0.0
    tail = _F8 * n * batch * (steps + 1)
    io = 4 * _F8 * n * (block + batch)
    rows = 3 * _F8 * n * d                   # the validated rows and their centred copies
    workers = _workers()
    tile = _tile_rows(n, workers)
    return head + tail + io + rows + 4 * _F8 * workers * tile * tile


def _plan_slq(k, probes, steps, z: _Sizes) -> SLQPlan:
    """SLQ's sizes: the given ones checked, else the defaults shrunk until they fit the budget."""
    knobs = z.knobs
    given_k = k if k is not None and np.ndim(k) == 0 else None
    sizes = dict(SLQ_DEFAULTS)
    given = {name: v for name, v in (("k", given_k), ("probes", probes), ("steps", steps)) if v is not None}
    sizes.update(given)
    sizes["batch"] = min(sizes["batch"], sizes["probes"])

    def need(c):
        return _slq_bytes(z, c["k"], c["block"], c["batch"], c["steps"])

    if need(sizes) <= _MODEL_SHARE * z.budget:
        return SLQPlan(**sizes, peak_bytes=need(sizes), sized="given" if given else "default")
    trial = dict(sizes)
    # shrink what was not given: the head first (by halves, then its block), the batch, the steps
    for name in ("k", "block", "batch", "steps"):
        if name in given:
            continue
        while trial[name] > SLQ_MIN[name] and need(trial) > _MODEL_SHARE * z.budget:
            trial[name] = max(SLQ_MIN[name], trial[name] // 2 if name != "steps" else trial[name] - 8)
        if need(trial) <= _MODEL_SHARE * z.budget:
            return SLQPlan(**trial, peak_bytes=need(trial), sized="budget")
    shown = ", ".join(f"{_knob(knobs, name, v)}" for name, v in given.items()) or "the smallest sizes"
    raise MemoryBudgetError(
        f"SLQ at n = {z.n} needs about {format_bytes(need(trial))} with {shown}, over the memory budget of "
        f"{format_bytes(z.budget)}: its Lanczos vectors hold n x (k + steps x batch) numbers. Lower "
        f"{knobs['k']}, {knobs['probes']} or {knobs['steps']}, or raise {knobs['memory_budget']} to at least "
        f"{format_bytes(need(trial) / _MODEL_SHARE)}."
    )
