"""RND page helpers: the settings form, the run with live progress, the stored results."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd
import streamlit as st

from diversity_core.figures import bar_figure, rnd_figure
from diversity_core.rnd import rnd_score

from . import compute
from .feedback import ProgressBar, error_message

#: Architectures offered (``resnet18`` needs a GPU to be practical).
ARCHITECTURES = {
    "auto": "auto: MLP on features, small CNN on image pixels",
    "mlp": "MLP on the chosen representation",
    "cnn": "small CNN on image pixels",
    "resnet18": "ResNet-18 on image pixels (the paper's; slow without a GPU)",
}
ALL = "all selected items"


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
        return dict(train_size=self.train_size, epochs=self.epochs, average_last=self.average_last,
                    runs=self.runs, lr=self.lr, architecture=arch, rng=self.seed)


def settings_form(view) -> RNDSettings:
    """Draw the RND settings (kept in session state while the page is open)."""
    ds = view.data
    groups = ds.group_names()
    smallest = min((int(np.sum(ds.groups == g)) for g in groups), default=ds.n)
    c1, c2, c3, c4 = st.columns(4)
    arch_options = list(ARCHITECTURES) if ds.modality == "images" else ["auto", "mlp"]
    arch = c1.selectbox("Network", arch_options, format_func=ARCHITECTURES.get, key="rnd_arch")
    per_group = c1.checkbox("Per group", value=bool(groups), key="rnd_per_group", disabled=not groups)
    fit = int(min(200, max(10, smallest - 50)))  # leave at least one validation batch of 50
    train = c2.number_input("Training items per run", min_value=10, max_value=max(10, ds.n), value=fit, step=10,
                            key="rnd_train", help="Each run trains on this many random items and validates on "
                            "the rest (at least one batch of 50 must remain in every set).")
    epochs = c2.number_input("Epochs", min_value=2, max_value=500, value=30, step=5, key="rnd_epochs")
    last = c3.number_input("Average the last … epochs", min_value=1, max_value=int(epochs),
                           value=int(min(10, epochs)), key="rnd_last")
    runs = c3.number_input("Runs", min_value=2, max_value=200, value=10, step=1, key="rnd_runs")
    lr = c4.number_input("Learning rate", min_value=1e-5, max_value=1.0, value=0.01, format="%.4g", key="rnd_lr")
    seed = c4.number_input("Seed", min_value=0, value=0, step=1, key="rnd_seed")
    st.caption("The paper's protocol: ResNet-18, 200 training items, 50 epochs averaged over the last 10, "
               "40 runs, lr 0.01 (SGD, momentum 0.9). Scores are comparable only under the same settings.")
    return RNDSettings(arch, int(train), int(epochs), int(last), int(runs), float(lr), int(seed),
                       bool(per_group and groups))


def _input(view, featurizer: str, arch: str):
    """The pixels (convolutional networks) or features (MLP) of the view, and the resolved arch."""
    ds = view.data
    if ds.modality == "images" and arch in ("auto", "cnn", "resnet18"):
        return np.asarray(ds.items), ("cnn" if arch == "auto" else arch)
    return compute.dense(compute.features(view, featurizer)), "mlp"


def result_key(view, featurizer: str, s: RNDSettings) -> tuple:
    return (view.key, featurizer, s)


class _LiveCurves:
    """``on_epoch`` callback: redraws the RND_i curves as they grow (at most every 0.4 s)."""

    def __init__(self, chart, finished: dict, name: str, s: RNDSettings):
        self.chart, self.finished, self.name, self.s = chart, finished, name, s
        self.last = 0.0

    def __call__(self, curves) -> None:
        now = time.monotonic()
        if now - self.last < 0.4:
            return
        self.last = now
        self.chart.plotly_chart(rnd_figure({**self.finished, self.name: curves}, average_last=self.s.average_last,
                                           total_epochs=self.s.epochs))


def run(view, featurizer: str, s: RNDSettings) -> Optional[dict]:
    """Train under a progress bar; the curves of finished sets appear as they finish."""
    ds = view.data
    X, arch = _input(view, featurizer, s.architecture)
    sets = {g: ds.group_indices(g) for g in ds.group_names()} if s.per_group else {ALL: np.arange(ds.n)}
    results: dict = {}
    chart = st.empty()
    for i, (name, idx) in enumerate(sets.items()):
        bar = ProgressBar(f"RND on {name} ({i + 1} of {len(sets)})")
        live = _LiveCurves(chart, {k: r.curves for k, r in results.items()}, name, s)
        try:
            results[name] = rnd_score(X[idx], progress=bar, on_epoch=live, **s.kwargs(arch))
        except Exception as exc:  # noqa: BLE001 - shown to the user, the other sets still run
            st.error(error_message(f"RND on {name}", exc))
        finally:
            bar.empty()
        if results:
            chart.plotly_chart(rnd_figure({k: r.curves for k, r in results.items()}, average_last=s.average_last,
                                          total_epochs=s.epochs))
    chart.empty()
    if not results:
        return None
    out = {"results": results, "architecture": arch}
    compute.store("rnd", 16).put(result_key(view, featurizer, s), out)
    return out


def show(out: dict, s: RNDSettings) -> None:
    """The score with its interval, the per-set table and bars, the RND_i curves."""
    results = out["results"]
    first = next(iter(results.values()))
    if len(results) == 1:
        name, r = next(iter(results.items()))
        st.metric("RND score", f"{r.score:.4f}", help="Higher means more diverse; about 0 for data with no variety.")
        st.caption(f"95 % interval over {r.run_scores.size} runs: [{r.ci_low:.4f}, {r.ci_high:.4f}] · "
                   f"network {first.settings['architecture']} on {first.settings['n_items']} items")
    else:
        table = pd.DataFrame([{"group": k, "items": r.settings["n_items"], "RND score": r.score,
                               "95% low": r.ci_low, "95% high": r.ci_high, "std over runs": r.std}
                              for k, r in results.items()])
        st.dataframe(table, hide_index=True, width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="%.4f") for c in table.columns[2:]})
        st.plotly_chart(bar_figure(table["group"], table["RND score"], low=table["95% low"], high=table["95% high"],
                                   y_title="RND score", title="RND score per group (95 % interval)"),
                        key="rnd_bars")
        st.caption(f"Network {first.settings['architecture']}; {first.settings['runs']} runs of "
                   f"{first.settings['epochs']} epochs, averaged over the last {first.settings['average_last']}.")
    st.plotly_chart(rnd_figure({k: r.curves for k, r in results.items()}, average_last=s.average_last,
                               total_epochs=s.epochs), key="rnd_curves")
