"""Result types of the differential spectra: :class:`NoveltySpectrum`, :class:`ModeNull`, :class:`NoveltyReport`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .._display import NotebookDisplay, format_array, format_interval, format_kernel, format_value, short_repr
from .._json import to_jsonable
from ..entropy import support_tol
from ..evaluation._pack_results import _estimate_row, _estimate_text
from ..evaluation._results import Estimate
from ..exceptions import DiversityInputError
from ..spectrum import _eigenvector_ends

__all__ = ["NoveltySpectrum", "ModeNull", "NoveltyReport", "ken_from_eigenvalues", "positive_eigenvalues"]

ROLES = ("novel", "missing")
SIDES = ("generated", "reference")


def positive_eigenvalues(eigenvalues: np.ndarray, dim: int) -> np.ndarray:
    r"""The eigenvalues above round-off: :math:`\lambda > d\,\varepsilon \max_i |\lambda_i|` (the support rule)."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    if lam.size == 0:
        return lam
    scale = float(np.abs(lam).max())
    if scale <= 0:
        return lam[:0]
    return lam[lam > support_tol(max(int(dim), 1), scale)]


def ken_from_eigenvalues(eigenvalues: np.ndarray, dim: int) -> float:
    r""":math:`\mathrm{KEN} = -\sum_{\lambda_i > 0} \lambda_i \log \lambda_i` over the positive eigenvalues (natural log)."""
    pos = positive_eigenvalues(eigenvalues, dim)
    return float(-(pos * np.log(pos)).sum()) if pos.size else 0.0


def _frozen(a) -> Optional[np.ndarray]:
    if a is None:
        return None
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, repr=False)
class NoveltySpectrum(NotebookDisplay):
    r"""The spectrum of :math:`\Lambda = C_{own} - \eta\, C_{other}` and its top modes' item loadings.

    ``role="novel"``: own = the candidate (generated) set G, other = the reference R: the positive
    eigenvalues are the modes G expresses more than :math:`\eta` times as often as R
    (:func:`~diversity_core.differential.novelty_spectrum`). ``role="missing"``: the roles swapped,
    the modes R has that G lacks (:func:`~diversity_core.differential.missing_modes`).

    Attributes
    ----------
    eigenvalues : ndarray of shape (p,)
        Every eigenvalue of :math:`\Lambda`, descending (p: the route's dimension).
    loadings_generated, loadings_reference : ndarray of shape (n_G, k) and (n_R, k)
        :math:`\langle \phi(x), v_j\rangle` for each item and the unit eigenvectors :math:`v_j` of the k
        largest eigenvalues, each signed so that the owning set's loadings sum to a non-negative number
        (the reference code's convention).
    role : {"novel", "missing"}
    eta : float
    method : {"dense", "features", "rff"}
        The route (:mod:`diversity_core.differential._routes`).
    exact : bool
        False on the rff route (an estimate: ``kind == "estimate"``).
    mass : float
        :math:`\operatorname{tr} C_{own}` (1 for kernels with unit diagonal): shares are eigenvalues over it.
    dim : int
        p, the order of the decomposed matrix (the support rule's m).
    kernel : dict
    eigenvalue_se : ndarray of shape (k,) or None
        rff only: the sketch's standard error of each top eigenvalue, from replicates (frequency groups).
    ken_se : float or None
        rff only: the same for KEN.
    confidence_level : float
        Level of :meth:`ken_interval` and :meth:`eigenvalue_interval` (rff).
    settings : dict
    """

    eigenvalues: np.ndarray
    loadings_generated: np.ndarray
    loadings_reference: np.ndarray
    role: str
    eta: float
    method: str
    exact: bool
    mass: float
    dim: int
    kernel: dict = field(default_factory=dict)
    eigenvalue_se: Optional[np.ndarray] = None
    ken_se: Optional[float] = None
    df: Optional[float] = None
    confidence_level: float = 0.95
    settings: dict = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """``"exact"`` (dense and feature routes) or ``"estimate"`` (random Fourier features)."""
        return "exact" if self.exact else "estimate"

    @property
    def n_modes(self) -> int:
        """k, the number of top modes whose loadings were kept."""
        return int(self.loadings_generated.shape[1])

    @property
    def positive(self) -> np.ndarray:
        """The eigenvalues above round-off (descending): the modes of :attr:`role`."""
        return positive_eigenvalues(self.eigenvalues, self.dim)

    @property
    def shares(self) -> np.ndarray:
        r"""Each kept mode's eigenvalue over :math:`\operatorname{tr} C_{own}`, its share of the owning set's mass."""
        return self.eigenvalues[: self.n_modes] / self.mass

    @property
    def ken(self) -> float:
        r"""KEN, :math:`-\sum_{\lambda_i>0}\lambda_i\log\lambda_i` (Zhang, Li & Farnia 2024)."""
        return ken_from_eigenvalues(self.eigenvalues, self.dim)

    @property
    def ken_reference_code(self) -> float:
        r"""KEN as the authors' code prints it: :math:`S\,H(\lambda_+/S) = \mathrm{KEN} + S\log S`, S the positive mass."""
        s = float(self.positive.sum())
        return self.ken + (s * math.log(s) if s > 0 else 0.0)

    @property
    def positive_mass(self) -> float:
        """S, the sum of the positive eigenvalues (the paper's total novel frequency)."""
        return float(self.positive.sum())

    def ken_interval(self):
        """rff: the sketch's t-interval of KEN (a :class:`~diversity_core.ConfidenceInterval`); None when exact."""
        return self._interval(self.ken, self.ken_se)

    def eigenvalue_interval(self, j: int):
        """rff: the sketch's t-interval of eigenvalue j; None when exact."""
        self._check_mode(j)
        return None if self.eigenvalue_se is None else self._interval(float(self.eigenvalues[j]),
                                                                      float(self.eigenvalue_se[j]))

    def _interval(self, value: float, se: Optional[float]):
        if se is None or self.df is None or not math.isfinite(se):
            return None
        from scipy import stats

        from .._stats import ConfidenceInterval

        half = float(stats.t.ppf(0.5 + self.confidence_level / 2.0, self.df)) * se
        return ConfidenceInterval(value - half, value + half, level=self.confidence_level)

    @property
    def owner(self) -> str:
        """The set whose modes these are: ``"generated"`` (novel) or ``"reference"`` (missing)."""
        return "generated" if self.role == "novel" else "reference"

    def loadings(self, side: str) -> np.ndarray:
        """The loadings of ``side`` (``"generated"`` or ``"reference"``)."""
        if side not in SIDES:
            raise DiversityInputError(f"side must be one of {SIDES}; got {side!r}.")
        return self.loadings_generated if side == "generated" else self.loadings_reference

    def top_items(self, j: int, k: int, *, side: Optional[str] = None) -> np.ndarray:
        """The ``k`` items of ``side`` (default: the owning set) that load most on mode ``j`` (see :func:`top_mode_items`)."""
        self._check_mode(j)
        return _eigenvector_ends(self.loadings(side or self.owner), j, int(k))[0]

    def _check_mode(self, j: int) -> None:
        if not 0 <= int(j) < self.n_modes:
            raise DiversityInputError(f"mode {j} was not kept ({self.n_modes} kept); ask for n_modes > {j}.")

    def to_dict(self, *, include_loadings: bool = False) -> dict[str, Any]:
        """JSON-ready dict (loadings only on request)."""
        ci = self.ken_interval()
        out = {
            "role": self.role, "kind": self.kind, "exact": self.exact, "method": self.method, "eta": self.eta,
            "ken": self.ken, "ken_reference_code": self.ken_reference_code, "positive_mass": self.positive_mass,
            "n_positive": int(self.positive.size), "ken_se": self.ken_se,
            "ken_ci": None if ci is None else [ci.low, ci.high], "mass": self.mass, "dim": self.dim,
            "eigenvalues": self.eigenvalues[: max(self.n_modes, 50)].tolist(), "shares": self.shares.tolist(),
            "eigenvalue_se": None if self.eigenvalue_se is None else self.eigenvalue_se.tolist(),
            "confidence_level": self.confidence_level, "kernel": self.kernel, "settings": self.settings,
        }
        if include_loadings:
            out["loadings_generated"] = self.loadings_generated.tolist()
            out["loadings_reference"] = self.loadings_reference.tolist()
        return to_jsonable(out)

    # -- notebook display ------------------------------------------------------------------------
    def __repr__(self) -> str:
        ci = self.ken_interval()
        return short_repr(f"NoveltySpectrum(role={self.role!r}, eta={format_value(self.eta)}, method={self.method!r}, "
                          f"{self.kind}, kernel={format_kernel(self.kernel)})", [
            ("KEN", format_interval(self.ken, ci, kind=self.kind)),
            ("positive modes", f"{self.positive.size} of {self.dim} eigenvalues, mass {format_value(self.positive_mass)}"),
            ("shares", format_array(self.shares)),
            ("eigenvalues", format_array(self.eigenvalues)),
            ("loadings", f"{self.loadings_generated.shape} (generated), {self.loadings_reference.shape} (reference)"),
        ])

    def to_frame(self):
        """A tidy pandas DataFrame: ``KEN``, ``positive mass``, then one ``eigenvalue`` row per kept mode.

        Columns of :mod:`diversity_core._display`; ``kind`` is :attr:`kind` (``"estimate"`` on the
        rff route, with the sketch's interval where it has one), then ``se``, ``role``, ``mode``
        (1-based; kept modes, negative eigenvalues included) and ``share``.
        """
        from .._display import frame_row, tidy_frame

        def row(score, value, ci, se=None, **extra):
            return frame_row(score, value, ci, kind=None if ci is not None else self.kind, se=se, role=self.role,
                             **extra)

        rows = [row("KEN", self.ken, self.ken_interval(), self.ken_se, mode=None, share=None),
                row("positive mass", self.positive_mass, None, mode=None, share=None)]
        for j in range(self.n_modes):
            se = None if self.eigenvalue_se is None else float(self.eigenvalue_se[j])
            rows.append(row("eigenvalue", float(self.eigenvalues[j]), self.eigenvalue_interval(j), se, mode=j + 1,
                            share=float(self.shares[j])))
        return tidy_frame(rows)


@dataclass(frozen=True, repr=False)
class ModeNull(NotebookDisplay):
    r"""The label-permutation null of the top eigenvalue, and which observed modes stand outside it.

    Under :math:`H_0` (G and R drawn from one distribution) the labels are exchangeable: each
    permutation reassigns n of the pooled items to G and the rest to R and records the largest
    eigenvalue of :math:`C_{G'} - \eta C_{R'}` (or of the swapped difference for missing modes).
    Mode j is outside the noise when its permutation p-value
    :math:`p_j = (1 + \#\{b: \lambda^{(b)}_{\max} \ge \lambda_j\}) / (B + 1)` is at most
    :math:`1 - \text{level}`; comparing every mode with the null of the *largest* eigenvalue makes the
    error family-wise (the chance that any mode of a null pair is called real is at most 1 - level).

    Attributes
    ----------
    null : ndarray of shape (B,)
        The top eigenvalue under each permutation.
    threshold : float
        The null's ``level`` quantile (the eigenvalue a mode must exceed, up to ties).
    observed : ndarray of shape (k,)
        The observed top eigenvalues.
    p_values : ndarray of shape (k,)
    outside : ndarray of bool, shape (k,)
        ``p_values <= 1 - level``.
    level : float
    role : {"novel", "missing"}
    n_generated, n_reference : int
        Items per set the permutations used (fewer than given when ``note`` says so).
    note : str
    """

    null: np.ndarray
    threshold: float
    observed: np.ndarray
    p_values: np.ndarray
    outside: np.ndarray
    level: float
    role: str
    n_generated: int
    n_reference: int
    note: str = ""

    @property
    def n_permutations(self) -> int:
        return int(self.null.size)

    @property
    def n_outside(self) -> int:
        """How many of the observed modes are outside the noise."""
        return int(np.count_nonzero(self.outside))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return to_jsonable({
            "role": self.role, "level": self.level, "threshold": self.threshold, "n_permutations": self.n_permutations,
            "observed": self.observed.tolist(), "p_values": self.p_values.tolist(), "outside": self.outside.tolist(),
            "n_generated": self.n_generated, "n_reference": self.n_reference, "null": self.null.tolist(),
            "note": self.note,
        })

    # -- notebook display ------------------------------------------------------------------------
    def __repr__(self) -> str:
        return short_repr(f"ModeNull(role={self.role!r}, level={format_value(self.level)}, "
                          f"{self.n_permutations} permutations, n_generated={self.n_generated}, "
                          f"n_reference={self.n_reference})", [
            ("outside the noise", f"{self.n_outside} of {self.observed.size} modes (p <= "
                                  f"{format_value(1.0 - self.level)}; threshold {format_value(self.threshold)})"),
            ("p_values", format_array(self.p_values)),
            ("observed", format_array(self.observed)),
            ("null", format_array(self.null)),
            ("note", self.note or None),
        ])

    def to_frame(self):
        """A tidy pandas DataFrame: one ``eigenvalue`` row per observed mode (as observed, ``kind`` exact).

        Then the columns ``role``, ``mode`` (1-based), ``p_value``, ``outside`` (bool) and ``threshold``.
        """
        from .._display import frame_row, tidy_frame

        return tidy_frame([frame_row("eigenvalue", float(v), None, role=self.role, mode=j + 1,
                                     p_value=float(self.p_values[j]), outside=bool(self.outside[j]),
                                     threshold=self.threshold)
                           for j, v in enumerate(self.observed)])


@dataclass(frozen=True, repr=False)
class NoveltyReport(NotebookDisplay):
    """What G has that R lacks and what it misses, with scores, intervals and the null (``diversity evaluate --novelty``).

    Attributes
    ----------
    novel, missing : NoveltySpectrum
    ken, ken_missing : Estimate
        KEN of G against R and of R against G, with intervals from the subsampling engine.
    rrke : Estimate
        RRKE of G against R (order in ``settings["rrke_order"]``).
    novel_null, missing_null : ModeNull or None
    settings : dict
    """

    novel: NoveltySpectrum
    missing: NoveltySpectrum
    ken: Estimate
    ken_missing: Estimate
    rrke: Estimate
    novel_null: Optional[ModeNull] = None
    missing_null: Optional[ModeNull] = None
    settings: dict = field(default_factory=dict)

    def modes(self, role: str, *, n_items: int = 5, generated_ids=None, reference_ids=None) -> list:
        """One dict per kept mode of ``role``: eigenvalue, share, whether outside the null, its top items' ids.

        Only modes with a positive eigenvalue are listed (the others are not modes of ``role``).
        """
        spec = self.novel if role == "novel" else self.missing
        null = self.novel_null if role == "novel" else self.missing_null
        ids = generated_ids if spec.owner == "generated" else reference_ids
        rows = []
        n_pos = spec.positive.size
        for j in range(min(spec.n_modes, n_pos)):
            items = spec.top_items(j, n_items)
            rows.append({
                "mode": j + 1, "eigenvalue": float(spec.eigenvalues[j]), "share": float(spec.shares[j]),
                "outside_null": None if null is None else bool(null.outside[j]),
                "p_value": None if null is None else float(null.p_values[j]),
                "items": [int(i) for i in items],
                "ids": [str(ids[i]) for i in items] if ids is not None else [str(int(i)) for i in items],
            })
        return rows

    def to_dict(self, *, n_items: int = 5, generated_ids=None, reference_ids=None) -> dict[str, Any]:
        """JSON-ready dict: the scores, both spectra, the nulls and each mode's top items."""
        return to_jsonable({
            "ken": self.ken.to_dict(), "ken_missing": self.ken_missing.to_dict(), "rrke": self.rrke.to_dict(),
            "novel": self.novel.to_dict(), "missing": self.missing.to_dict(),
            "novel_null": None if self.novel_null is None else self.novel_null.to_dict(),
            "missing_null": None if self.missing_null is None else self.missing_null.to_dict(),
            "novel_modes": self.modes("novel", n_items=n_items, generated_ids=generated_ids,
                                      reference_ids=reference_ids),
            "missing_modes": self.modes("missing", n_items=n_items, generated_ids=generated_ids,
                                        reference_ids=reference_ids),
            "settings": self.settings,
        })

    # -- notebook display ------------------------------------------------------------------------
    def _modes_text(self, role: str) -> str:
        spec = self.novel if role == "novel" else self.missing
        null = self.novel_null if role == "novel" else self.missing_null
        n_pos = min(spec.n_modes, spec.positive.size)
        shares = ", ".join(format_value(float(x)) for x in spec.shares[: min(n_pos, 3)])
        verdict = ("no null computed" if null is None
                   else f"{int(np.count_nonzero(null.outside[:n_pos]))} outside the null")
        return f"{spec.positive.size} positive; top shares [{shares}]; {verdict}"

    def __repr__(self) -> str:
        s = self.settings
        order = s.get("rrke_order")
        return short_repr(f"NoveltyReport(method={self.novel.method!r}, eta={format_value(self.novel.eta)}, "
                          f"{self.novel.kind}, n_generated={s.get('n_generated', self.novel.loadings_generated.shape[0])}, "
                          f"n_reference={s.get('n_reference', self.novel.loadings_reference.shape[0])})", [
            ("KEN (novel)", _estimate_text(self.ken)),
            ("KEN (missing)", _estimate_text(self.ken_missing)),
            ("RRKE" if order is None else f"RRKE (order {format_value(order)})", _estimate_text(self.rrke)),
            ("novel modes", self._modes_text("novel")),
            ("missing modes", self._modes_text("missing")),
            ("kernel", format_kernel(self.novel.kernel)),
        ])

    def to_frame(self):
        """A tidy pandas DataFrame: the scores, then one row per mode of :meth:`modes` (both roles).

        Rows ``KEN`` (``role`` novel and missing) and ``RRKE`` (``"estimate"`` with their intervals
        and on the rff route; columns ``se``, ``method``, ``note``), then ``eigenvalue`` rows with ``role``, ``mode``,
        ``share``, ``p_value`` and ``outside_null`` (``kind`` of the spectrum: ``"estimate"`` on the
        rff route, with the sketch's interval, method ``"replicates"``).
        """
        from .._display import frame_row, tidy_frame

        sketch = self.novel.kind == "estimate"  # rff: every score is an estimate, with or without an interval
        rows = [_estimate_row("KEN", self.ken, estimate=sketch, role="novel"),
                _estimate_row("KEN", self.ken_missing, estimate=sketch, role="missing"),
                _estimate_row("RRKE", self.rrke, estimate=sketch, role=None)]
        for role, spec in (("novel", self.novel), ("missing", self.missing)):
            for m in self.modes(role, n_items=1):
                j = m["mode"] - 1
                ci = spec.eigenvalue_interval(j)
                se = None if spec.eigenvalue_se is None else float(spec.eigenvalue_se[j])
                rows.append(frame_row("eigenvalue", m["eigenvalue"], ci, kind=None if ci is not None else spec.kind,
                                      se=se, method="replicates" if ci is not None else "none", note="", role=role,
                                      mode=m["mode"], share=m["share"], p_value=m["p_value"],
                                      outside_null=m["outside_null"]))
        return tidy_frame(rows)

    def plot(self, *, generated: Optional[str] = None, reference: Optional[str] = None,
             title: Optional[str] = None):
        """The figure the report and the Compare page draw for it: each novel and missing mode's share.

        :func:`~diversity_core.report.figures.novelty.novelty_figure`'s own figure; ``generated``
        and ``reference`` name the sets in its labels and title (escaped there).
        """
        from .._display import require_plotly

        require_plotly("NoveltyReport.plot()")
        from ..report.figures.novelty import novelty_figure

        return novelty_figure(self, generated=generated, reference=reference, title=title)
