"""Diversity Explorer: the Streamlit entry point.

Run with ``streamlit run app.py``. This script runs on every interaction: it sets the shared
state (defaults, then the URL's settings on a session's first run), draws the sidebar every
page shares, mirrors the settings in the URL, and hands over to the current page through
``st.navigation``. Pages live in ``pages/``; Streamlit-only helpers in ``ui/``; all the
mathematics in ``diversity_core``.
"""

import os

# A Hugging Face hub lookup retries for ~24 s before failing offline; the models ship as packages.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# torch's OpenMP threads spin while waiting; on a busy small machine that made RND 2-5x slower.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from pathlib import Path  # noqa: E402

import streamlit as st  # noqa: E402

from ui.sidebar import render_sidebar  # noqa: E402
from ui.state import init_state, write_query_params  # noqa: E402

HERE = Path(__file__).parent

st.set_page_config(page_title="Diversity Explorer", page_icon=":material/diversity_3:", layout="wide")

init_state()
render_sidebar()
write_query_params()

PAGES = [
    ("pages/1_dataset.py", "Dataset", ":material/dataset:", "dataset"),
    ("pages/2_scores.py", "Scores", ":material/leaderboard:", "vendi"),
    ("pages/3_spectrum.py", "Spectrum", ":material/equalizer:", "spectrum"),
    ("pages/4_magnitude.py", "Magnitude", ":material/straighten:", "magnitude"),
    ("pages/5_rnd.py", "RND", ":material/model_training:", "rnd"),
    ("pages/6_projection.py", "Projection", ":material/scatter_plot:", "projection"),
    ("pages/7_compare.py", "Compare", ":material/compare_arrows:", "compare"),
]
pages = [
    st.Page(path, title=title, icon=icon, url_path=url, default=(url == "vendi"))
    for path, title, icon, url in PAGES
    if (HERE / path).exists()  # the Compare page arrives with the comparison issue
]


def _scores_alias() -> None:
    """``/scores`` opens the Scores page: the default page lives at ``/`` and its own path is not served."""
    st.switch_page("pages/2_scores.py")


pages.append(st.Page(_scores_alias, title="Scores", url_path="scores", visibility="hidden"))
current = st.navigation(pages)
if st.session_state.get("load_error"):
    kept = st.session_state["dataset"]
    st.error(f"{st.session_state['load_error']}\n\nThe previous dataset stays loaded: **{kept.name}** ({kept.n} items).")
current.run()
