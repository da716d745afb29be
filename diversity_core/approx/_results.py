"""Result types of the scalable Vendi paths: guaranteed bounds and estimates with error bars."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .._deprecation import UNSET, renamed_argument, warn_renamed
from .._display import NotebookDisplay, format_kernel, order_lines, order_rows, require_plotly, short_repr
from .._orders import check_q, q_key
from .._stats import ConfidenceInterval
from ..exceptions import DiversityInputError
from ..spectrum import _eigenvector_ends
from ._band import bounds_from_eigenvalues, bounds_from_lower_eigenvalues

__all__ = ["VendiBounds", "VendiEstimate", "ExactPlan"]


def _frozen(a) -> np.ndarray:
    """A read-only float64 copy."""
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


def _index(qs: np.ndarray, q, what: str) -> int:
    """Position of order ``q`` in ``qs`` (exact match), or a DiversityInputError listing the orders."""
    value = float(check_q(q).ravel()[0])
    hit = np.flatnonzero(qs == value)
    if hit.size == 0:
        shown = ", ".join(q_key(x) for x in qs[:12]) + (" ..." if qs.size > 12 else "")
        raise DiversityInputError(f"order q = {q_key(value)} was not computed for these {what}; computed: {shown}.")
    return int(hit[0])


def _orders_summary(qs: np.ndarray) -> str:
    """``"42 orders, 0 .. inf"``: how many orders a result has and their range."""
    if qs.size == 0:
        return "none"
    return f"{qs.size} order{'s' if qs.size > 1 else ''}, {q_key(qs.min())} .. {q_key(qs.max())}"


def estimate_label(estimate) -> str:
    """The legend entry of an estimate on ``vendi_bounds_figure``: the method and its sizes."""
    if getattr(estimate, "method", "") == "slq":
        return f"SLQ estimate ({estimate.probes} probes, k = {estimate.k})"
    size = ", ".join(f"{k} = {estimate.settings[k]}" for k in ("m", "D") if k in estimate.settings)
    return f"{estimate.method} estimate" + (f" ({size})" if size else "")


@dataclass(frozen=True, repr=False)
class VendiBounds(NotebookDisplay):
    """Guaranteed lower and upper bounds on VS_q for every requested order.

    Attributes
    ----------
    qs : ndarray of shape (m,)
        Orders, ascending (0 and inf allowed).
    low, high : ndarray of shape (m,)
        ``low[j] <= VS_{qs[j]} <= high[j]``, with certainty up to the stated solver tolerance.
    k : int
        Number of exact top eigenvalues used (0: only the trace and, when known, VS_2).
    n : int
        Number of items.
    exact_orders : tuple of str
        Orders whose value is exact up to round-off (e.g. ``("2", "inf")``), as :func:`q_key`.
    top_eigenvalues : ndarray of shape (k,)
        The Ritz values of the density matrix used (descending); for Nystrom bounds
        (``settings["method"] == "nystrom"``) the sketch's eigenvalues, lower bounds on the top
        of the spectrum, already lowered by ``tolerance``.
    residual_mass : float
        ``1 - sum(top_eigenvalues)``: the trace left to the n - k unseen eigenvalues.
    tolerance : float
        Absolute error allowed on each top eigenvalue (solver residual and matrix storage), already
        folded into ``low`` and ``high``.
    kernel : dict
        The resolved kernel.
    settings : dict
        How the bounds were computed: ``method`` (``"lanczos"`` or ``"nystrom"``); Lanczos:
        ``matrix`` (``"float64"``, ``"float32"`` or ``"matrix-free"``), ``ks`` tried, ``stopped``
        (why the progression ended); Nystrom: ``m``, ``landmarks``, ``pool``, ``replicates``,
        ``captured_trace``, ``exact_vs2``; both: ``seconds``.
    purity : float or None
        The exact :math:`\\sum_i \\lambda_i^2` (``1 / VS_2``) the bounds used; with
        ``top_eigenvalues`` and ``tolerance`` it gives the bounds at any other order
        (:meth:`bounds_at`) without a new Lanczos run.
    eigenvectors : ndarray of shape (n, j) or None
        Unit-norm Ritz vectors of rho for the j largest of ``top_eigenvalues`` (column i belongs
        to ``top_eigenvalues[i]``), item space, for galleries; kept only when asked for
        (``n_eigenvectors`` of :func:`~diversity_core.approx.iter_vendi_bounds`).
    """

    qs: np.ndarray
    low: np.ndarray
    high: np.ndarray
    k: int
    n: int
    exact_orders: tuple = ()
    top_eigenvalues: np.ndarray = field(default_factory=lambda: _frozen([]))
    residual_mass: float = 1.0
    tolerance: float = 0.0
    kernel: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    purity: Optional[float] = None
    eigenvectors: Optional[np.ndarray] = None

    exact = False
    kind = "bounds"

    def interval(self, q) -> ConfidenceInterval:
        """``ConfidenceInterval(low, high)`` certain to contain VS_q (level 1, kind ``"bound"``), for ``q`` in :attr:`qs`.

        The counterpart of :meth:`VendiEstimate.interval` (a t-interval there, a guaranteed range
        here); bounds have no point value, so there is no float ``.vendi(q)`` as on
        :class:`~diversity_core.spectrum.Spectrum` and :class:`VendiEstimate`.
        """
        j = _index(self.qs, q, "bounds")
        return ConfidenceInterval.bound(float(self.low[j]), float(self.high[j]))

    def bounds_at(self, q=None, *, qs=UNSET) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)`` at any orders ``q``, from the stored eigenvalues, tolerance and purity (O(k) each).

        Equal to :attr:`low` / :attr:`high` at the computed orders (Nystrom bounds from several
        replicates: at least as wide, from the best sketch alone); moving to another order needs
        no new Lanczos run or sketch. ``qs`` is the deprecated name of ``q``.
        """
        q = renamed_argument(q, qs, new="q", old="qs")
        if self.settings.get("method") == "nystrom":
            # the stored values are lower bounds already lowered by the tolerance
            return bounds_from_lower_eigenvalues(self.top_eigenvalues, self.n, q, purity=self.purity,
                                                 tolerance=0.0)
        return bounds_from_eigenvalues(self.top_eigenvalues, self.n, q, purity=self.purity,
                                       tolerance=self.tolerance)

    def eigenvector_ends(self, j: int, m: int) -> tuple[np.ndarray, np.ndarray]:
        """Items at both ends of Ritz vector ``j``: the rule of :meth:`Spectrum.eigenvector_ends`."""
        kept = 0 if self.eigenvectors is None else self.eigenvectors.shape[1]
        if not 0 <= j < kept:
            raise DiversityInputError(f"Ritz vector {j} was not kept ({kept} kept); ask for n_eigenvectors > {j}.")
        return _eigenvector_ends(self.eigenvectors, j, m)

    def vendi(self, q) -> ConfidenceInterval:
        """Deprecated: ``(low, high)`` for order ``q``; use :meth:`interval`.

        ``.vendi(q)`` is a float on :class:`~diversity_core.spectrum.Spectrum` and
        :class:`VendiEstimate`; bounds have no point value, so the pair is :meth:`interval`.
        """
        warn_renamed("VendiBounds.vendi(q)", "VendiBounds.interval(q)",
                     why="the same (low, high); .vendi(q) is a float wherever there is a point value")
        return self.interval(q)

    def width(self, q) -> float:
        """Relative width ``high / low - 1`` at order ``q``."""
        lo, hi = self.interval(q)
        return hi / lo - 1.0

    def contains(self, q, value: float, *, rtol: float = 0.0) -> bool:
        """Whether ``value`` lies in the band at order ``q`` (widened by ``rtol`` relative)."""
        lo, hi = self.interval(q)
        return lo * (1 - rtol) <= value <= hi * (1 + rtol)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (orders as :func:`q_key` strings)."""
        return {
            "kind": "bounds",
            "exact": False,
            "qs": [q_key(q) for q in self.qs],
            "low": self.low.tolist(),
            "high": self.high.tolist(),
            "k": self.k,
            "n": self.n,
            "exact_orders": list(self.exact_orders),
            "top_eigenvalues": self.top_eigenvalues.tolist(),
            "residual_mass": self.residual_mass,
            "tolerance": self.tolerance,
            "purity": self.purity,
            "kernel": self.kernel,
            "settings": self.settings,
        }

    # -- display (a notebook's repr, HTML table, tidy frame and figure) --------------------------
    def __repr__(self) -> str:
        method = self.settings.get("method", "lanczos")
        return short_repr(
            f"VendiBounds(n={self.n}, method={method!r}, k={self.k}, kernel={format_kernel(self.kernel)})",
            [*order_lines(self.qs, None, self.low, self.high, kind="bound"),
             ("orders", _orders_summary(self.qs)),
             ("exact orders", ", ".join(self.exact_orders) or "none"),
             ("top_eigenvalues", self.top_eigenvalues),
             ("residual mass", f"{self.residual_mass:.4g} (tolerance {self.tolerance:.3g})")],
        )

    def to_frame(self):
        """Tidy DataFrame: one row per order, ``low``/``high`` the guaranteed range, ``value`` NaN, kind ``"bound"``."""
        from .._display import tidy_frame

        return tidy_frame(order_rows("vendi", self.qs, None, self.low, self.high, kind="bound"))

    def plot(self, *, q=None):
        """The app's figure of the bounds: the guaranteed band against q (``vendi_bounds_figure``).

        ``q`` marks an order. Returns a plotly Figure; raises MissingDependencyError without plotly
        (``pip install 'diversity-explorer[report]'``).
        """
        require_plotly("VendiBounds.plot()")
        from ..report.figures import vendi_bounds_figure

        return vendi_bounds_figure(None, self, q=q, n=self.n)


@dataclass(frozen=True, repr=False)
class VendiEstimate(NotebookDisplay):
    """Point estimates of VS_q with error bars from independent replicates of a sketch.

    Attributes
    ----------
    qs : ndarray of shape (m,)
        Orders (all >= 1: below 1 the sketches are biased beyond what replicates can show).
    value : ndarray of shape (m,)
        Mean over replicates.
    stderr : ndarray of shape (m,)
        Standard error of the mean over replicates (``sd / sqrt(r)``).
    low, high : ndarray of shape (m,)
        Student-t interval at ``confidence_level`` over the replicates.
    replicates : ndarray of shape (r, m)
        Each replicate's VS_q.
    target : str
        The quantity the interval is an interval for (see Notes of
        :func:`~diversity_core.approx.vendi_estimate`).
    method : {"nystrom", "rff", "tanimoto_rf"}
    n : int
    confidence_level : float
        Two-sided level of ``low``/``high`` (``level`` is its deprecated name; the JSON key
        of :meth:`to_dict` stays ``"level"``).
    kernel : dict
    settings : dict
        ``m`` / ``D``, ``replicates``, ``landmarks``, ``tail``, mean ``captured_trace``, ``seconds``.
    guaranteed_low, guaranteed_high : ndarray of shape (m,) or None
        Nystrom only: a range that contains the full-sample VS_q with certainty, from the same
        sketches (their eigenvalues bound the true ones from below in the PSD order; see
        :func:`~diversity_core.approx.nystrom_bounds`), intersected over replicates. None for
        random features (no such order) and for data streamed from disk.
    """

    qs: np.ndarray
    value: np.ndarray
    stderr: np.ndarray
    low: np.ndarray
    high: np.ndarray
    replicates: np.ndarray
    target: str
    method: str
    n: int
    confidence_level: float = 0.95
    kernel: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    guaranteed_low: Optional[np.ndarray] = None
    guaranteed_high: Optional[np.ndarray] = None

    exact = False
    kind = "estimate"

    @property
    def level(self) -> float:
        """Deprecated name of :attr:`confidence_level`."""
        warn_renamed("VendiEstimate.level", "VendiEstimate.confidence_level")
        return self.confidence_level

    def guaranteed(self, q) -> Optional[ConfidenceInterval]:
        """``ConfidenceInterval(low, high)`` certain to contain the full-sample VS_q, or None (see the attribute)."""
        if self.guaranteed_low is None:
            return None
        j = _index(self.qs, q, "estimates")
        return ConfidenceInterval.bound(float(self.guaranteed_low[j]), float(self.guaranteed_high[j]))

    def vendi(self, q) -> float:
        """The point estimate at order ``q`` (one of :attr:`qs`)."""
        return float(self.value[_index(self.qs, q, "estimates")])

    def interval(self, q) -> ConfidenceInterval:
        """``ConfidenceInterval(low, high)``: the replicate t-interval at order ``q``, at :attr:`confidence_level`."""
        j = _index(self.qs, q, "estimates")
        return ConfidenceInterval(float(self.low[j]), float(self.high[j]), level=self.confidence_level)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (orders as :func:`q_key` strings)."""
        return {
            "kind": "estimate",
            "exact": False,
            "qs": [q_key(q) for q in self.qs],
            "value": self.value.tolist(),
            "stderr": self.stderr.tolist(),
            "low": self.low.tolist(),
            "high": self.high.tolist(),
            "replicates": self.replicates.tolist(),
            "target": self.target,
            "guaranteed_low": None if self.guaranteed_low is None else self.guaranteed_low.tolist(),
            "guaranteed_high": None if self.guaranteed_high is None else self.guaranteed_high.tolist(),
            "method": self.method,
            "n": self.n,
            "level": self.confidence_level,
            "kernel": self.kernel,
            "settings": self.settings,
        }

    # -- display (a notebook's repr, HTML table, tidy frame and figure) --------------------------
    def __repr__(self) -> str:
        size = ", ".join(f"{k}={self.settings[k]}" for k in ("m", "D", "replicates") if k in self.settings)
        return short_repr(
            f"VendiEstimate(n={self.n}, method={self.method!r}, {size or 'sketch'}, "
            f"kernel={format_kernel(self.kernel)})",
            [*order_lines(self.qs, self.value, self.low, self.high, kind="estimate", level=self.confidence_level),
             ("orders", _orders_summary(self.qs)),
             ("replicates", self.replicates),
             ("guaranteed range", "none" if self.guaranteed_low is None else "kept (.guaranteed(q))"),
             ("target", self.target)],
        )

    def to_frame(self):
        """Tidy DataFrame: one row per order, the replicate t-interval (kind ``"estimate"``).

        Extra columns ``stderr`` and, for Nystrom, ``guaranteed_low``/``guaranteed_high``.
        """
        from .._display import tidy_frame

        extra = {"stderr": self.stderr}
        if self.guaranteed_low is not None:
            extra.update(guaranteed_low=self.guaranteed_low, guaranteed_high=self.guaranteed_high)
        return tidy_frame(order_rows("vendi", self.qs, self.value, self.low, self.high, kind="estimate",
                                     level=self.confidence_level, **extra))

    def plot(self, *, q=None):
        """The app's figure of the estimate: VS_q with error bars against q (``vendi_bounds_figure``).

        ``q`` marks an order. Returns a plotly Figure; raises MissingDependencyError without plotly.
        """
        require_plotly("VendiEstimate.plot()")
        from ..report.figures import vendi_bounds_figure

        return vendi_bounds_figure(None, None, self, q=q, n=self.n, estimate_label=estimate_label(self))


@dataclass(frozen=True)
class ExactPlan:
    """Which exact path ``method="auto"`` takes for n items, or None beyond the dense limit.

    Attributes
    ----------
    method : {"dual", "dense"} or None
        The exact path of :func:`~diversity_core.spectrum.compute_spectrum` with
        ``method="auto"``; None when the dense matrices exceed the memory budget (then only the
        scalable paths of :mod:`diversity_core.approx` run, or the budget must be raised).
    n, d : int
        Items and feature dimension.
    kernel : str
        The kernel's name.
    dense_bytes : float
        Peak bytes of the dense path (the n x n matrix and the eigensolver's copies).
    budget : int
        The memory budget the decision used (bytes).
    """

    method: Optional[str]
    n: int
    d: int
    kernel: str
    dense_bytes: float
    budget: int

    @property
    def fits(self) -> bool:
        """Whether an exact path runs within the budget."""
        return self.method is not None

    def dense_seconds(self, sample_seconds: float, sample_n: int, *, eigenvectors: bool = True) -> float:
        """Approximate time of the dense path on the n items, from a measured one on fewer.

        ``sample_seconds`` is the time of the eigenvalues of ``sample_n`` items; the dense path
        scales as n^3, and keeping eigenvectors (LAPACK's divide-and-conquer driver) takes about
        twice the time of the eigenvalues alone.

        Examples
        --------
        >>> from diversity_core.approx import exact_plan
        >>> exact_plan(2000, 8, kernel="rbf").dense_seconds(0.5, 1000)
        8.0
        """
        return (2.0 if eigenvectors else 1.0) * float(sample_seconds) * (self.n / sample_n) ** 3

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"method": self.method, "n": self.n, "d": self.d, "kernel": self.kernel,
                "dense_bytes": self.dense_bytes, "budget": self.budget}
