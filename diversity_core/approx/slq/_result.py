"""The result of stochastic Lanczos quadrature: an estimate of the full-sample VS_q with its error budget."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._display import NotebookDisplay, format_kernel, order_lines, order_rows, require_plotly, short_repr
from ..._orders import q_key
from ..._stats import ConfidenceInterval
from .._results import _index, _orders_summary, estimate_label

__all__ = ["VendiSLQ", "TARGET"]

#: What every SLQ interval is an interval for.
TARGET = ("estimate of the full-sample value: VS_q of all n items with the exact path's kernel and weights "
          "(eigenvalues at or below the support threshold counted as zero)")


@dataclass(frozen=True, repr=False)
class VendiSLQ(NotebookDisplay):
    r"""Estimates of VS_q of the full sample by stochastic Lanczos quadrature, with intervals.

    Every finite order's interval is built on the trace :math:`\mathrm{tr} f_q(\rho)`
    (:math:`f_q(x) = x^q`, or :math:`-x \log x` at q = 1) and mapped to VS_q through the monotone
    map :math:`T \mapsto T^{1/(1-q)}` (:math:`e^T` at q = 1); its half-width on the trace is

    ``statistical`` (Student-t over the probes at ``confidence_level``) + ``quadrature`` (half the
    Gauss / Gauss-Radau brackets of the head and the mean probe: a bound on the quadrature error)
    + ``rounding`` (the operator's stated rounding and the support threshold, a bound).

    Attributes
    ----------
    qs : ndarray of shape (m,)
        Orders, ascending, in (0, inf] (inf from the top Ritz value).
    value : ndarray of shape (m,)
        Point estimates of VS_q.
    low, high : ndarray of shape (m,)
        The interval of each VS_q (see above); at q = inf: ``[1 / (theta + r), 1 / theta]`` from
        the top Ritz value theta and its residual r.
    trace, trace_low, trace_high : ndarray of shape (m,)
        The estimate of :math:`\mathrm{tr} f_q(\rho)` and its interval (the entropy at q = 1;
        ``lambda_max`` at q = inf).
    stderr : ndarray of shape (m,)
        Standard error of ``trace`` over the probes.
    statistical, quadrature, rounding : ndarray of shape (m,)
        The three parts of the half-width on the trace.
    probes : int
        Rademacher probes used.
    steps : int
        Lanczos steps per probe (the largest over the batches; ``settings["batches"]`` lists them).
    k : int
        Dimension of the deflated head: the block Krylov space whose part of the trace is
        computed by quadrature on its own vectors (Hutch++ split).
    n : int
    confidence_level : float
    target : str
        ``"estimate of the full-sample value..."``.
    kernel : dict
    settings : dict
        ``block``, ``head_steps``, ``batches``, ``passes`` (products with K), ``precision``,
        ``backend``, ``tile``, ``entry_rtol``, ``seconds``, ``stopped`` (why the progression ended),
        ``rtol``, ``max_seconds``.
    """

    qs: np.ndarray
    value: np.ndarray
    low: np.ndarray
    high: np.ndarray
    trace: np.ndarray
    trace_low: np.ndarray
    trace_high: np.ndarray
    stderr: np.ndarray
    statistical: np.ndarray
    quadrature: np.ndarray
    rounding: np.ndarray
    probes: int
    steps: int
    k: int
    n: int
    confidence_level: float = 0.95
    target: str = TARGET
    kernel: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)

    exact = False
    kind = "estimate"
    method = "slq"

    def vendi(self, q) -> float:
        """The point estimate of VS_q (q one of :attr:`qs`)."""
        return float(self.value[_index(self.qs, q, "SLQ estimates")])

    def interval(self, q) -> ConfidenceInterval:
        """``ConfidenceInterval(low, high)`` of VS_q: probes' t-interval plus the quadrature and rounding bounds."""
        j = _index(self.qs, q, "SLQ estimates")
        return ConfidenceInterval(float(self.low[j]), float(self.high[j]), level=self.confidence_level)

    def relative_half_width(self, q) -> float:
        """``(high - low) / (2 value)`` at order q."""
        j = _index(self.qs, q, "SLQ estimates")
        return float((self.high[j] - self.low[j]) / (2.0 * self.value[j]))

    def contains(self, q, value: float) -> bool:
        """Whether ``value`` lies in the interval at order q."""
        lo, hi = self.interval(q)
        return lo <= value <= hi

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (orders as :func:`q_key` strings); ``kind`` ``"estimate"``, ``method`` ``"slq"``."""
        return {
            "kind": "estimate",
            "method": "slq",
            "exact": False,
            "target": self.target,
            "qs": [q_key(q) for q in self.qs],
            "value": self.value.tolist(),
            "low": self.low.tolist(),
            "high": self.high.tolist(),
            "trace": self.trace.tolist(),
            "trace_low": self.trace_low.tolist(),
            "trace_high": self.trace_high.tolist(),
            "stderr": self.stderr.tolist(),
            "statistical": self.statistical.tolist(),
            "quadrature": self.quadrature.tolist(),
            "rounding": self.rounding.tolist(),
            "probes": self.probes,
            "steps": self.steps,
            "k": self.k,
            "n": self.n,
            "level": self.confidence_level,
            "kernel": self.kernel,
            "settings": self.settings,
        }

    # -- display (a notebook's repr, HTML table, tidy frame and figure) --------------------------
    def __repr__(self) -> str:
        return short_repr(
            f"VendiSLQ(n={self.n}, probes={self.probes}, steps={self.steps}, k={self.k}, "
            f"kernel={format_kernel(self.kernel)})",
            [*order_lines(self.qs, self.value, self.low, self.high, kind="estimate", level=self.confidence_level),
             ("orders", _orders_summary(self.qs)),
             ("stopped", self.settings.get("stopped")),
             ("target", self.target)],
        )

    def to_frame(self):
        """Tidy DataFrame: one row per order, the interval of :meth:`interval` (kind ``"estimate"``).

        Extra columns: the half-width's parts on the trace (``statistical``, ``quadrature``, ``rounding``).
        """
        from ..._display import tidy_frame

        return tidy_frame(order_rows("vendi", self.qs, self.value, self.low, self.high, kind="estimate",
                                     level=self.confidence_level, statistical=self.statistical,
                                     quadrature=self.quadrature, rounding=self.rounding))

    def plot(self, *, q=None):
        """The app's figure of the estimate: VS_q with its intervals against q (``vendi_bounds_figure``).

        ``q`` marks an order. Returns a plotly Figure; raises MissingDependencyError without plotly.
        """
        require_plotly("VendiSLQ.plot()")
        from ...report.figures import vendi_bounds_figure

        return vendi_bounds_figure(None, None, self, q=q, n=self.n, estimate_label=estimate_label(self))
