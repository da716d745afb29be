"""RND page helpers: the settings form, the training task with live curves, the results.

Training follows :mod:`ui.tasks`: the task draws its live curves inside its status box, each
frame under its own key (a frame can equal the finished chart, and two charts with equal
content and no key in one run raise ``StreamlitDuplicateElementId``: issue 16), and the result
is stored before the page draws it.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
import streamlit as st

from diversity_core import DETAIL_SEPARATOR
from diversity_core.report.figures import bar_figure, rnd_figure
from diversity_core.rnd import (
    MIN_ITEMS,
    MIN_TRAIN_SIZE,
    MIN_VALIDATION,
    MLP_MAX_FEATURES,
    PAPER_TRAIN_SIZE,
    PCA_COMPONENTS,
    default_train_size,
    rnd_regime_warning,
    rnd_reliable_setting,
    rnd_score,
    rnd_small_groups_warning,
)

from . import compute
from .data import current_colours
from .feedback import attempt, error_message, show_error, show_warning
from .state import KEEP
from .tasks import Outcome

#: Architectures offered (``resnet18`` needs a GPU to be practical).
ARCHITECTURES = {
    "auto": "auto: MLP on features, small CNN on image pixels",
    "mlp": "MLP on the chosen representation",
    "mlp_pca": f"MLP on the chosen representation's {PCA_COMPONENTS} principal components",
    "mlp_pixels": "MLP on the image pixels",
    "cnn": "small CNN on image pixels",
    "resnet18": "ResNet-18 on image pixels (the paper's; slow without a GPU)",
}
ALL = "all selected items"
#: The form's own defaults (the paper's lr; fewer epochs and runs than the paper, for speed).
DEFAULT_EPOCHS, DEFAULT_LAST, DEFAULT_RUNS, DEFAULT_LR = 30, 10, 10, 0.01
#: Seconds between two frames of the live curves.
LIVE_INTERVAL = 0.4


@dataclass(frozen=True)
class RNDSettings:
    architecture: str
    train_size: int
    epochs: int
    average_last: int
    runs: int
    lr: float
    seed: int
    per_group: bool

    def kwargs(self, arch: str) -> dict:
        """Keyword arguments of :func:`~diversity_core.rnd.rnd_score` for the network ``arch`` (the
        principal components too when the option is ``"mlp_pca"``)."""
        return dict(train_size=self.train_size, epochs=self.epochs, average_last=self.average_last,
                    runs=self.runs, lr=self.lr, architecture=arch, rng=self.seed,
                    n_components=PCA_COMPONENTS if self.architecture == "mlp_pca" else None)


def _smallest_group(ds) -> int:
    """The number of items of the smallest group (all items when there are no groups)."""
    return min((int(np.sum(ds.groups == g)) for g in ds.group_names()), default=ds.n)


def _group_sizes(ds) -> dict:
    """Items per group (``{"all": n}`` without groups)."""
    return {g: int(np.sum(ds.groups == g)) for g in ds.group_names()} or {"all": ds.n}


def _train_default(ds, per_group: bool) -> int:
    """Training items per run for the set scored (the core's rule: the paper's 200 when it fits)."""
    return default_train_size(_group_sizes(ds), per_group=per_group)


def small_groups_warning(view, s: RNDSettings):
    """The core's message naming the scored sets too small for a meaningful RND score, or None."""
    return rnd_small_groups_warning(_group_sizes(view.data), per_group=s.per_group)


def _per_group_default(ds) -> bool:
    """Score per group by default only when every group is large enough for the ordering to hold.

    The regime study found data and noise separated in sets of at least
    :data:`~diversity_core.rnd.MIN_ITEMS` items only, so groups smaller than that open pooled
    (the user may still tick "Per group", with the warning).
    """
    return bool(ds.group_names()) and _smallest_group(ds) >= MIN_ITEMS


def scored_size(view, s: RNDSettings) -> int:
    """Items of the smallest set the settings score: the smallest group per group, else all items."""
    return _smallest_group(view.data) if s.per_group else view.data.n


def _option(rec: dict):
    """The form's option for a :func:`~diversity_core.rnd.rnd_reliable_setting` answer (None: not offered)."""
    if rec["architecture"] != "mlp":
        return rec["architecture"]
    if rec["input"] == "features":
        return "mlp" if rec["n_components"] is None else "mlp_pca"
    return "mlp_pixels" if rec["n_components"] is None else None


def reliable_option(view, featurizer: str, s: RNDSettings | None = None):
    """``(option, settings)`` of a network the regime study calls reliable here, or None.

    With ``s`` the user's other settings (training length, lr) are kept when the network alone
    makes them reliable; otherwise (and without ``s``) the form's defaults are used, and the
    returned settings say so. The features' width counts only when they are in the core's cache
    already; without it the MLP on their principal components, which reads at most
    :data:`~diversity_core.rnd.PCA_COMPONENTS` whatever the width, is still a candidate.
    """
    ds = view.data
    pixels = np.shape(ds.items[0]) if ds.modality == "images" else None
    X = attempt(lambda: compute.features_at_hand(view, featurizer), f"Reading {featurizer} features")
    features = None if X is None else X.shape[1:]
    tries = [] if s is None else [s]
    per_group = s.per_group if s else _per_group_default(ds)
    tries.append(RNDSettings("auto", _train_default(ds, per_group), DEFAULT_EPOCHS, DEFAULT_LAST,
                             s.runs if s else DEFAULT_RUNS, DEFAULT_LR, s.seed if s else 0, per_group))
    for t in tries:
        rec = rnd_reliable_setting(t.kwargs("auto"), pixel_shape=pixels, feature_shape=features, has_features=True)
        if rec is not None and _option(rec) is not None:
            return _option(rec), t
    return None


def _use(option: str, s: RNDSettings) -> None:
    """``on_click`` of the one-click reliable setting: the network and, when needed, the defaults."""
    st.session_state["rnd_arch"] = option
    st.session_state["rnd_epochs"] = s.epochs
    st.session_state["rnd_last"] = s.average_last
    st.session_state["rnd_lr"] = s.lr


def _follow_scoring(ds) -> None:
    """``on_change`` of "Per group": the training split follows the set now scored (pooled or per group)."""
    st.session_state["rnd_train"] = _train_default(ds, bool(st.session_state.get("rnd_per_group")))


def _pool(ds) -> None:
    """``on_click`` of "score all items together": untick "Per group" (and train on the pooled set's split)."""
    st.session_state["rnd_per_group"] = False
    _follow_scoring(ds)


def offer_reliable(view, featurizer: str, s: RNDSettings) -> None:
    """Under a regime warning: one click to what the study calls reliable, or why there is none.

    The set size and the network are judged apart: groups too small are offered pooled (when
    all the items together are enough), a network outside the regime the reliable network.
    """
    n = scored_size(view, s)
    if n < MIN_ITEMS:
        if s.per_group and view.data.n >= MIN_ITEMS:
            st.button(f"Score all {view.data.n} items together", key="rnd_pool", on_click=_pool, args=(view.data,),
                      icon=":material/verified:",
                      help=f"Its smallest group has {n} items; the regime study (docs/rnd.md) found data and noise "
                           f"apart only in sets of {MIN_ITEMS} items or more.")
        else:
            st.caption(f"These {view.data.n} items are fewer than the {MIN_ITEMS} in which the regime study "
                       "(docs/rnd.md) found data and noise apart: read the score as a comparison under one setting.")
    if s.train_size < MIN_TRAIN_SIZE <= _train_default(view.data, s.per_group):
        st.button(f"Train on {_train_default(view.data, s.per_group)} items per run", key="rnd_train_default",
                  on_click=_follow_scoring, args=(view.data,), icon=":material/verified:",
                  help=f"The paper trains on {PAPER_TRAIN_SIZE}; this set allows this many and keeps "
                       f"{MIN_VALIDATION} for validation.")
    if regime_warning(view, featurizer, s, sized=False) is None:
        return  # the network and its training are in the regime
    found = reliable_option(view, featurizer, s)
    if found is None:
        st.caption("No network offered here is known to be reliable for these items: the regime study "
                   f"(docs/rnd.md) found the ordering only for an MLP on at most {MLP_MAX_FEATURES} inputs, or on "
                   f"{PCA_COMPONENTS} principal components, with a small training budget. Read the score as a "
                   "comparison under one setting.")
        return
    option, t = found
    label = ARCHITECTURES[option].split(":")[0]
    changed = "" if t is s else f", {t.epochs} epochs, lr {t.lr:g}"
    st.button(f"Use a reliable setting: {label}{changed}", key="rnd_use_reliable", on_click=_use,
              args=(option, t), icon=":material/verified:",
              help="A setting the project's regime study (docs/rnd.md) found to rank structured data (digits, "
                   "text, molecules) above unstructured noise.")


def settings_form(view, featurizer: str) -> RNDSettings:
    """Draw the RND settings (kept in session state while the page is open).

    The network defaults to one the regime study calls reliable for these items
    (:func:`reliable_option`), else to ``"auto"``.
    """
    ds = view.data
    groups = ds.group_names()
    c1, c2, c3, c4 = st.columns(4)
    arch_options = list(ARCHITECTURES) if ds.modality == "images" else ["auto", "mlp", "mlp_pca"]
    found = reliable_option(view, featurizer)
    default = found[0] if found is not None and found[0] in arch_options else "auto"
    arch = c1.selectbox("Network", arch_options, index=arch_options.index(default), format_func=ARCHITECTURES.get,
                        key="rnd_arch", **KEEP,
                        help="The default is a setting the regime study (docs/rnd.md) found reliable for such "
                             "items, when there is one.")
    per_group = c1.checkbox("Per group", value=_per_group_default(ds), key="rnd_per_group", **KEEP,
                            disabled=not groups, on_change=_follow_scoring, args=(ds,),
                            help=f"Score each group on its own (the default when every group has at least {MIN_ITEMS} "
                                 "items: in smaller sets the regime study found data and noise not apart).")
    fit = _train_default(ds, bool(per_group and groups))
    scored = "the smallest group's" if per_group and groups else "the"
    train = c2.number_input("Training items per run", min_value=10, max_value=max(10, ds.n), value=fit, step=10,
                            key="rnd_train", **KEEP,
                            help=f"Each run trains on this many random items and validates on the rest. Default: the "
                                 f"paper's {PAPER_TRAIN_SIZE}, or {scored} set's items minus {MIN_VALIDATION} "
                                 f"validation items when fewer remain (here {fit}); it follows \"Per group\".")
    epochs = c2.number_input("Epochs", min_value=2, max_value=500, value=DEFAULT_EPOCHS, step=5, key="rnd_epochs",
                             **KEEP)
    last = c3.number_input("Average the last … epochs", min_value=1, max_value=int(epochs),
                           value=int(min(DEFAULT_LAST, epochs)), key="rnd_last", **KEEP)
    runs = c3.number_input("Runs", min_value=2, max_value=200, value=DEFAULT_RUNS, step=1, key="rnd_runs", **KEEP)
    lr = c4.number_input("Learning rate", min_value=1e-5, max_value=1.0, value=DEFAULT_LR, format="%.4g",
                         key="rnd_lr", **KEEP)
    seed = c4.number_input("Seed", min_value=0, value=0, step=1, key="rnd_seed", **KEEP)
    scored_n = min(_group_sizes(ds).values()) if per_group and groups else ds.n
    where = f"its smallest group has {scored_n} items" if per_group and groups else f"all {scored_n} items scored together"
    split = (f"the paper's {PAPER_TRAIN_SIZE} training items per run" if fit == PAPER_TRAIN_SIZE else
             f"{fit} training items per run, fewer than the paper's {PAPER_TRAIN_SIZE}: {where}, and "
             f"{MIN_VALIDATION} must stay for validation")
    st.caption(f"Default here: {split}. The paper's protocol: ResNet-18, {PAPER_TRAIN_SIZE} training items, 50 "
               "epochs averaged over the last 10, 40 runs, lr 0.01 (SGD, momentum 0.9). Scores are comparable only "
               "under the same settings.")
    return RNDSettings(arch, int(train), int(epochs), int(last), int(runs), float(lr), int(seed),
                       bool(per_group and groups))


def _convolutional(ds, arch: str) -> bool:
    """Whether ``arch`` trains a convolutional network on the image pixels of ``ds``."""
    return ds.modality == "images" and arch in ("auto", "cnn", "resnet18")


def _input(view, featurizer: str, arch: str):
    """The pixels (convolutional networks) or features (MLP) of the view, and the resolved arch."""
    ds = view.data
    if _convolutional(ds, arch):
        return np.asarray(ds.items), ("cnn" if arch == "auto" else arch)
    if arch == "mlp_pixels":  # the MLP flattens and standardises them
        return np.asarray(ds.items), "mlp"
    # "mlp" and "mlp_pca" (rnd_score reduces them: RNDSettings.kwargs)
    return compute.dense(compute.features(view, featurizer, show_progress=False)), "mlp"


def regime_warning(view, featurizer: str, s: RNDSettings, *, sized: bool = True):
    """The core's warning (:func:`~diversity_core.rnd.rnd_regime_warning`) for these settings, or None.

    With ``sized`` the number of items of the smallest scored set (:func:`scored_size`) and the
    training split are judged too; without it only the network and its training.

    The input shape is one image's (convolutional networks) or the representation's number of
    features (MLP). The features are never computed for it: when they are not in the core's
    cache yet (no other page needed them), there is no warning before training (the MLP on the
    principal components is judged on its components alone), and the result carries its own
    (``RNDResult.reliability``).
    """
    ds = view.data
    if _convolutional(ds, s.architecture):
        arch, shape = ("cnn" if s.architecture == "auto" else s.architecture), np.shape(ds.items[0])
    elif s.architecture == "mlp_pixels":
        arch, shape = "mlp", (int(np.prod(np.shape(ds.items[0]))),)
    else:
        X = attempt(lambda: compute.features_at_hand(view, featurizer), f"Reading {featurizer} features")
        if X is None and s.architecture != "mlp_pca":
            return None
        arch, shape = "mlp", ((PCA_COMPONENTS,) if X is None else X.shape[1:])
    return rnd_regime_warning(s.kwargs(arch), input_shape=shape, n_items=scored_size(view, s) if sized else None,
                              sized=sized)


def show_reliability(messages) -> None:
    """Each distinct regime warning once, as literal text (``RNDResult.reliability``)."""
    for message in dict.fromkeys(m for m in messages if m):
        show_warning(message, icon=":material/warning:")


def result_key(view, featurizer: str, s: RNDSettings) -> tuple:
    """The key of the RND result in the ``"rnd"`` task store."""
    return (view.key, featurizer, s)


class LiveCurves:
    """Draws the RND_i curves into one placeholder as they grow (``on_data`` of :func:`ui.tasks.run`).

    The training runs on a worker process; each set's curves arrive as progress payloads
    (``{"live": name, "curves": runs x epochs}``, at most every LIVE_INTERVAL s, and once more
    when the set is finished) and are drawn here. Every frame gets a key of its own: a frame may
    hold exactly the figure of an earlier one (or of the finished chart), and Streamlit
    identifies unkeyed charts by their content.
    """

    def __init__(self, s: RNDSettings):
        self.s = s
        self._frames = itertools.count()
        self.slot = None  # made at the first payload, inside the task's status box
        self.curves: dict = {}

    def __call__(self, data: dict) -> None:
        if "live" not in data:
            return
        if self.slot is None:
            self.slot = st.empty()
        self.curves[data["live"]] = np.asarray(data["curves"], dtype=float)
        self.slot.plotly_chart(rnd_figure(self.curves, average_last=self.s.average_last,
                                          total_epochs=self.s.epochs, colours=current_colours()),
                               key=f"rnd_live_{next(self._frames)}")


def task(view, featurizer: str, s: RNDSettings) -> Callable:
    """``fn(progress)`` training every set in turn; the growing curves travel as progress payloads.

    Returns ``{"results": {set: RNDResult}, "architecture": arch, "errors": [...]}``; a set that
    fails is listed in ``errors`` while the others still run (all failing raises the first error).
    ``fn`` draws nothing (it may run on a worker process): :class:`LiveCurves` draws the payloads.
    """
    ds = view.data
    sets = {g: ds.group_indices(g) for g in ds.group_names()} if s.per_group else {ALL: np.arange(ds.n)}

    def fn(progress):
        X, arch = _input(view, featurizer, s.architecture)
        results: dict = {}
        failures: list = []
        last = {"report": (0, 1, ""), "sent": 0.0}
        for i, (name, idx) in enumerate(sets.items()):
            def report(done, total, message="", i=i, name=name):
                # one bar for all sets: set i covers the i-th share of it; one phase ("set # of #", the
                # stage before the separator) for them all, so the bar's time left spans the sets
                last["report"] = (i * total + done, len(sets) * total,
                                  f"set {i + 1} of {len(sets)}{DETAIL_SEPARATOR}{name}: {message}")
                progress(*last["report"])

            def on_epoch(curves, name=name):
                now = time.monotonic()
                if now - last["sent"] >= LIVE_INTERVAL:
                    last["sent"] = now
                    progress(*last["report"], live=name, curves=np.asarray(curves).tolist())

            try:
                results[name] = rnd_score(X[idx], progress=report, on_epoch=on_epoch, **s.kwargs(arch))
            except Exception as exc:  # noqa: BLE001 - reported with the result, the other sets still run
                if len(sets) == 1:
                    raise
                failures.append((name, exc))
                continue
            progress(*last["report"], live=name, curves=np.asarray(results[name].curves).tolist())
        if not results:
            raise failures[0][1]
        errors = [error_message(f"RND on {name}", exc) for name, exc in failures]
        return {"results": results, "architecture": arch, "errors": errors}

    return fn


def show(out: Outcome, s: RNDSettings) -> None:
    """The score with its interval, the per-set table and bars, the RND_i curves."""
    for message in out.value["errors"]:
        show_error(message)
    results = out.value["results"]
    first = next(iter(results.values()))
    show_reliability(r.reliability for r in results.values())
    if len(results) == 1:
        name, r = next(iter(results.items()))
        st.metric("RND score", f"{r.score:.4f}", help="Higher means more diverse; about 0 for data with no variety.")
        lo, hi = r.confidence_interval
        st.caption(f"95 % interval over {r.run_scores.size} runs: [{lo:.4f}, {hi:.4f}] · "
                   f"network {first.settings['architecture']} on {first.settings['n_items']} items")
    else:
        table = pd.DataFrame([{"group": k, "items": r.settings["n_items"], "RND score": r.score,
                               "95% low": r.confidence_interval.low, "95% high": r.confidence_interval.high,
                               "std over runs": r.std}
                              for k, r in results.items()])
        st.dataframe(table, hide_index=True, width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="%.4f") for c in table.columns[2:]})
        st.plotly_chart(bar_figure(table["group"], table["RND score"], low=table["95% low"], high=table["95% high"],
                                   y_title="RND score", title="RND score per group (95 % interval)",
                                   colours=current_colours()),
                        key="rnd_bars")
        st.caption(f"Network {first.settings['architecture']}; {first.settings['runs']} runs of "
                   f"{first.settings['epochs']} epochs, averaged over the last {first.settings['average_last']}.")
    st.plotly_chart(rnd_figure({k: r.curves for k, r in results.items()}, average_last=s.average_last,
                               total_epochs=s.epochs, colours=current_colours()), key="rnd_curves")
