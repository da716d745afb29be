"""Issue 26, items 11-14 as the app sees them: every featurizer x kernel pair the sidebar offers
scores on every demo, hidden pairs say why, user text keeps Streamlit's directives literal, and
the feature-scale warning never shows NaN."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import diversity_core as dc
from diversity_core.data import list_demos, load_demo
from diversity_core.exceptions import DiversityInputError
from diversity_core.featurizers import featurize, kernel_support, list_featurizers
from diversity_core.scoring import score_groups
from ui.state import BANDWIDTH_KERNELS, KERNEL_CHOICES

APP = str(Path(__file__).resolve().parents[2] / "app.py")
#: Items per demo in the enumeration (a seeded subsample: the pairs, not the size, are tested).
N_ITEMS = 90


def _offered_featurizers(ds) -> list:
    """The sidebar's representations (ui.compute.featurizer_options): installed, embeddings when present."""
    return [f.name for f in list_featurizers(ds.modality)
            if f.available() and (f.name != "embeddings" or ds.features is not None)]


def _scores_page_path(X, ds, kernel: str, params: dict) -> float:
    """What the Scores page computes (ui.compute): the spectrum, the baselines (the core fixes their
    kernel), and the per-group scores on the kernel fixed on all items."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dc.DiversityWarning)
        spec = dc.compute_spectrum(X, kernel=kernel, weights=ds.weights, n_eigenvectors=10, **params)
        base = dc.baseline_scores(X, kernel=kernel, weights=ds.weights, **params)
        if ds.groups is not None:
            score_groups(X, ds.groups, kernel=kernel, weights=ds.weights, include_all=False,
                         small_groups="skip", **params)
    assert np.isfinite(base["intdiv"])
    return spec.vendi(1.0)


@pytest.mark.parametrize("demo", list_demos())
def test_every_offered_featurizer_kernel_pair_scores(demo):
    """Item 11: each pair the sidebar offers computes; each pair it hides is one the core refuses."""
    full = load_demo(demo)
    ds = full.subset(np.sort(np.random.default_rng(0).choice(full.n, size=N_ITEMS, replace=False)))
    for featurizer in _offered_featurizers(ds):
        X = featurize(ds, featurizer, copy=False)
        for kernel in KERNEL_CHOICES:
            reason = kernel_support(featurizer, kernel)
            if reason is not None:  # hidden with a reason: the core indeed cannot use it
                with pytest.raises(DiversityInputError, match=kernel):
                    dc.get_kernel(kernel).validate(X)
                continue
            settings = [{}] + ([{"sigma": 0.5}] if kernel in BANDWIDTH_KERNELS else [])  # median and manual
            for params in settings:
                vs = _scores_page_path(X, ds, kernel, params)
                assert 1.0 - 1e-9 <= vs <= ds.n + 1e-9, (featurizer, kernel, params, vs)


@pytest.mark.parametrize("query", [{"kernel": "rbf"}, {"kernel": "rbf", "sigma": "0.7"},
                                   {"kernel": "laplacian"}])
def test_scores_page_on_ngram_text_with_a_bandwidth_kernel(query):
    """Item 11, the reported case: text through n-grams with the rbf kernel drew an error."""
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update({"demo": "text", "feat": "ngram", "n": "80", "seed": "1", **query})
    at.run()
    at.switch_page("app_pages/2_scores.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.session_state["kernel"] == query["kernel"]
    from test_app import headline

    assert headline(at).label.startswith("Vendi score (q = ")


def test_sidebar_hides_undefined_kernels_and_says_why():
    """Item 11: MiniLM's real-valued features are not offered the Tanimoto kernel; the help says why."""
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update({"demo": "text", "feat": "minilm", "kernel": "tanimoto", "n": "40"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    box = at.sidebar.selectbox(key="kernel")
    assert "tanimoto" not in box.options and "probability_product" not in box.options
    assert at.session_state["kernel"] == "cosine"  # the link's undefined kernel fell back to the default
    assert "Not offered: tanimoto, as the tanimoto kernel needs non-negative features" in box.help


# ------------------------------------------------------------------------------------------
# item 14: one message for everything outside the data-folder policy, no server path
# ------------------------------------------------------------------------------------------
def _load_error(monkeypatch, folder: Path, typed: str) -> str:
    monkeypatch.setenv("DIVERSITY_DATA_DIR", str(folder))
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update({"path": typed})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [e.value for e in at.error if "Could not load" in e.value]
    assert len(shown) == 1, [e.value for e in at.error]
    return re.sub(r"\\(.)", r"\1", shown[0]).replace("\u2060", "")  # the text as the visitor reads it


def test_a_fifo_in_the_data_folder_gets_the_one_refusal(tmp_path, monkeypatch):
    """A FIFO got a message of its own quoting the server's absolute path; missing and outside
    files got the policy's message. Now all three read alike, but for the typed path."""
    import os

    folder = tmp_path / "served"
    folder.mkdir()
    os.mkfifo(folder / "pipe.npy")
    (tmp_path / "outside.npy").write_bytes(b"x")
    messages = {typed: _load_error(monkeypatch, folder, typed) for typed in ("pipe.npy", "missing.npy",
                                                                              "../outside.npy")}
    assert len({m.replace(repr(t), "PATH") for t, m in messages.items()}) == 1, messages
    assert all(str(tmp_path) not in m for m in messages.values()), messages


def test_a_bad_file_in_the_data_folder_is_named_without_the_server_path(tmp_path, monkeypatch):
    folder = tmp_path / "served"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "broken.npy").write_bytes(b"this is not a numpy file")
    message = _load_error(monkeypatch, folder, "sub/broken.npy")
    assert "broken" in message and str(tmp_path) not in message and str(folder) not in message


# ------------------------------------------------------------------------------------------
# item 14: Streamlit's own Markdown in user strings is escaped, every kind
# ------------------------------------------------------------------------------------------
from ui.feedback import literal  # noqa: E402

#: Every kind of Markdown Streamlit adds, with the reason it used to render: checked in a browser
#: by tests/e2e/test_no_external_requests.py (the rendered text equals the typed one).
STREAMLIT_MARKDOWN = [
    ":red[x] $x^2$",  # a colour directive (":red" vanished) and inline maths
    ":blue-background[y] :orange-badge[b] :small[c] :help[d] :red",  # backgrounds, badges, a bare directive
    ":material/home: icon",  # a Material icon (drawn from the icon font)
    ":material_home: x",  # the form Streamlit rewrites icons to before parsing
    "smile :smile: and :+1: :-1: :100:",  # emoji shortcodes
    ":streamlit: logo",  # the Streamlit logo
    "$$x$$ and $5 and \\(y\\)",  # display maths and dollars
    "a -> b <- c <-> d -- e >= f <= g ~= h",  # arrows and signs replaced after parsing
    "**b** _i_ `c` <b>h</b> [l](http://e.com) www.e.com ~~s~~ # h",  # CommonMark and GFM
]


@pytest.mark.parametrize("text", STREAMLIT_MARKDOWN)
def test_literal_escapes_streamlits_own_markdown(text):
    out = literal(text)
    # only backslash escapes and invisible joiners added: undone, they give the text back
    assert re.sub(r"\\(.)", r"\1", out).replace("\u2060", "") == text
    assert not re.search(r"(?<!\\):(?=[\w+/-])", out)  # no colon that starts a directive, icon or shortcode
    assert ":material/" not in out and "$" not in out.replace("\\$", "")


def test_the_feature_scale_warning_is_plain_text_and_never_nan(monkeypatch, tmp_path):
    """It showed a literal **...** (a Markdown fix inside an escaped message) and "nan orders"."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4)) * 1e200  # squares overflow: the spread was inf / inf
    X[:, :3] *= 1e-5  # one feature five orders of magnitude wider than the others: the warning is due
    path = tmp_path / "huge.npy"
    np.save(path, X)
    at = AppTest.from_file(APP, default_timeout=240)
    at.run()
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.file_uploader(key="upload").upload("huge.npy", path.read_bytes()).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [w.value for w in at.warning if "orders of magnitude" in w.value]
    assert len(shown) == 1, [w.value for w in at.warning]
    assert "nan" not in shown[0].lower() and "**" not in shown[0].replace("\\*", "")


# ------------------------------------------------------------------------------------------
# item 12: a column that is not SMILES, named as the SMILES column
# ------------------------------------------------------------------------------------------
def test_a_text_column_named_as_smiles_is_refused_in_the_app():
    pytest.importorskip("rdkit")
    rows = ["sentence,model"] + [f"{'I went out' if i % 18 == 0 else 'The cat sat'} on day {i},m{i % 2}"
                                 for i in range(300)]
    at = AppTest.from_file(APP, default_timeout=240)
    at.run()
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.text_input(key="smiles_column").input("sentence").run()
    at.sidebar.file_uploader(key="upload").upload("s.csv", "\n".join(rows).encode()).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [e.value.replace("\\", "") for e in at.error if "not valid SMILES" in e.value.replace("\\", "")]
    assert len(shown) == 1, [e.value for e in at.error]
    assert "283 of the 300 entries of column 'sentence'" in shown[0] and "the Text column option" in shown[0]
    assert at.session_state["dataset"].modality != "molecules"  # the previous dataset stays
