"""Diversity Explorer: the Streamlit entry point.

Run with ``streamlit run app.py``. This script runs on every interaction: it sets the shared
state (defaults, then the URL's settings on a session's first run), draws the sidebar every
page shares, mirrors the settings in the URL, and hands over to the current page through
``st.navigation``. Pages live in ``app_pages/`` (a folder named ``pages/`` would put a fresh
server in Streamlit's legacy multipage mode); Streamlit-only helpers in ``ui/``; all the
mathematics in ``diversity_core``.
"""

from pathlib import Path

from diversity_core import configure_environment

# Offline model loading and torch's OpenMP wait policy must be set before anything imports torch.
configure_environment()

import streamlit as st  # noqa: E402

from ui import first_paint, heap, runlog  # noqa: E402
from ui.data import check_demo_link, refuse_local_path  # noqa: E402
from ui.feedback import literal  # noqa: E402
from ui.fragments import begin_page  # noqa: E402
from ui.sidebar import keyboard_section, render_sidebar  # noqa: E402
from ui.state import init_state, write_query_params  # noqa: E402
from ui.workers import ensure_started  # noqa: E402

FAVICON = Path(__file__).resolve().parent / "static" / "favicon.svg"
_run = runlog.start()  # the server's own time per run, with DIVERSITY_RUN_LOG set (benchmarks)
# the favicon is a file of this checkout, served by this server: a `:material/...:` or emoji icon makes
# every browser fetch it from a public host (issue 26, item 15; tests/e2e/test_no_external_requests.py)
st.set_page_config(page_title="Diversity Explorer", page_icon=str(FAVICON), layout="wide")
init_state()
begin_page()  # the page about to run names its own q views (ui.fragments)
# A link's source is checked before the sidebar reads it: a local path with reading turned off is
# refused without touching the file system; an unknown demo name is shown as literal text.
refuse_local_path(st.session_state)
check_demo_link(st.session_state)

PAGES = [
    ("app_pages/1_dataset.py", "Dataset", ":material/dataset:", "dataset"),
    ("app_pages/2_scores.py", "Scores", ":material/leaderboard:", "vendi"),
    ("app_pages/3_spectrum.py", "Spectrum", ":material/equalizer:", "spectrum"),
    ("app_pages/4_magnitude.py", "Magnitude", ":material/straighten:", "magnitude"),
    ("app_pages/5_rnd.py", "RND", ":material/model_training:", "rnd"),
    ("app_pages/6_projection.py", "Projection", ":material/scatter_plot:", "projection"),
    ("app_pages/7_compare.py", "Compare", ":material/compare_arrows:", "compare"),
    ("app_pages/8_curate.py", "Curate", ":material/cleaning_services:", "curate"),
    ("app_pages/9_robustness.py", "Robustness", ":material/swap_vert:", "robustness"),
]
pages = [st.Page(path, title=title, icon=icon, url_path=url, default=(url == "vendi"))
         for path, title, icon, url in PAGES]  # pages[1], Scores, is the default page
current = st.navigation(pages)
# A session's first Scores run stops after its headline and draws no sidebar widgets: their code
# would load before the headline's (ui.first_paint). The settings are settled all the same.
sidebar = first_paint.sidebar(holds=current is pages[1])
render_sidebar(sidebar)
write_query_params()
keyboard_section(pages, sidebar)  # Shift + a page's place in the menu opens it; the help lists every key
if st.session_state.get("link_error"):
    # composed by ui.data.check_demo_link with the link's value escaped
    st.warning(st.session_state["link_error"], icon=":material/link_off:")
if st.session_state.get("load_error"):
    kept = st.session_state["dataset"]
    # the message quotes a path, file or column name a visitor chose: literal text only
    st.error(f"{literal(st.session_state['load_error'])}\n\nThe previous dataset stays loaded: "
             f"**{literal(kept.name)}** ({kept.n} items).")
# read now, for the run log: once a run has called st.stop(), reading the session state raises
q_drawn, held = str(st.session_state.get("q")), first_paint.holding()
try:
    current.run()
finally:
    # logged however the page ends (st.stop, as a first paint's held run does, or st.rerun)
    runlog.end(_run, "page", current.url_path, q=q_drawn, held=held)
first_paint.drawn()  # a page ran to its end: no later page of this session holds its charts back
heap.settle()  # after the first page, the imported modules' objects leave the collector's walks
# Heavy jobs go to worker processes (ui.workers). The pool starts in the background 10 s after the
# first page: its processes' imports would share the cores with the browser still drawing that page
# (a job asked for sooner starts it at once, and runs here while it starts).
ensure_started(delay=10.0)
