"""Compare: every score of every group at one n, with intervals, pairwise verdicts and a report."""

import math
import warnings

import pandas as pd
import streamlit as st

from diversity_core import DiversityWarning
from diversity_core.compare import compare
from diversity_core.figures import format_q
from diversity_core.report import FIGURE_TITLES, comparison_figures, report_html
from ui import compute
from ui.feedback import error_message, progress_bar
from ui.page import header

QS = (0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, math.inf)
NONE = "(none)"
PRESENTATION_CSS = """<style>
.stMainBlockContainer, .block-container { max-width: 100% !important; padding-left: 3rem; padding-right: 3rem; }
.stMainBlockContainer p, .stMainBlockContainer li, .stMainBlockContainer td, .stMainBlockContainer th,
.stMainBlockContainer label { font-size: 1.35rem !important; }
.stMainBlockContainer h1 { font-size: 3rem !important; } .stMainBlockContainer h2 { font-size: 2.2rem !important; }
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none !important; }
</style>"""

ctx = header(
    "Compare",
    "Which group is more diverse, and by how much? Every score is computed at the **same number of items n** "
    "(groups larger than n are subsampled without replacement and averaged), each with an interval, and each "
    "pair of groups is called **resolved** only when the interval of its difference excludes 0.",
)
view, s = ctx.view, ctx.settings
ds = view.data
groups = ds.group_names()
if len(groups) < 2:
    st.info("Compare needs at least two groups: load a dataset with a group column (or sub-folders), "
            "or select two or more groups in the sidebar.")
    st.stop()
sizes = {g: int(ds.group_indices(g).size) for g in groups}
smallest = min(sizes.values())
if ds.weights is not None:
    st.caption("This dataset has item weights; the comparison ignores them (every subset is a uniform sample).")

presentation = st.toggle("Presentation layout (wide, large type)", key="cmp_presentation",
                         help="For a projector: the sidebar hides, type and charts grow. Switch off to get it back.")
if presentation:
    st.markdown(PRESENTATION_CSS, unsafe_allow_html=True)
with st.form("cmp_settings"):
    c1, c2, c3 = st.columns(3)
    qs = c1.multiselect("Orders q", QS, default=[0.5, 1.0, 2.0, math.inf], format_func=format_q, key="cmp_qs")
    n = c1.number_input("Items per group n", min_value=min(10, smallest), max_value=smallest, value=smallest,
                        help=f"At most the smallest group's {smallest} items: every group is scored at the same n.")
    level = c2.select_slider("Confidence level", [0.8, 0.9, 0.95, 0.99], value=0.95, key="cmp_level")
    reference = c2.selectbox("MagDiff reference", [NONE] + groups, index=1,
                             help="MagDiff = ∫ (Mag_group − Mag_reference) dt over [0, t_conv(reference)].")
    magnitude = c3.checkbox("Magnitude (MagArea, MagDiff)", value=True, key="cmp_magnitude")
    rnd = c3.checkbox("RND score (slow)", value=False, key="cmp_rnd")
    with st.expander("Replicates and seed"):
        e1, e2, e3, e4 = st.columns(4)
        n_subsamples = e1.number_input("n-subsets averaged", 1, 1000, 100, key="cmp_nsub")
        n_resamples = e2.number_input("Subsets per curve size", 3, 500, 50, key="cmp_nres")
        mag_reps = e3.number_input("Magnitude subsets per size", 3, 200, 10, key="cmp_nmag")
        seed = e4.number_input("Seed", 0, 2**31 - 1, s.seed, key="cmp_seed")
    submitted = st.form_submit_button("Run comparison", type="primary")

options = (tuple(sorted(qs)), int(n), float(level), None if reference == NONE else reference, bool(magnitude),
           bool(rnd), int(n_subsamples), int(n_resamples), int(mag_reps), int(seed))
key = (view.key, ctx.featurizer, s.kernel, s.kernel_params, options)
out = compute.stored("compare", key, max_entries=8)
if out is None and submitted:
    if not qs:
        st.warning("Choose at least one order q.")
        st.stop()
    X = compute.features(view, ctx.featurizer)
    data = {g: X[ds.group_indices(g)] for g in groups}
    sources = {g: {"dataset": ds.name, "source": ds.source, "dataset_hash": view.full.content_hash,
                   "featurizer": ctx.featurizer} for g in groups}
    with warnings.catch_warnings(record=True) as caught, progress_bar("Comparing the groups") as bar:
        warnings.simplefilter("always")
        try:
            result = compare(data, kernel=s.kernel, qs=sorted(qs), reference=options[3], n=int(n), level=level,
                             magnitude=magnitude, rnd=rnd, n_subsamples=int(n_subsamples),
                             n_resamples=int(n_resamples), magnitude_replicates=int(mag_reps), sources=sources,
                             rng=int(seed), progress=bar, **s.kernel_kwargs)
        except Exception as exc:  # noqa: BLE001 - shown as a message, the page keeps working
            st.error(error_message("Comparing the groups", exc))
            st.stop()
    notes = list(dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, DiversityWarning)))
    out = {"comparison": result, "notes": notes, "reports": {}}
    compute.store("compare", 8).put(key, out)
if out is None:
    st.info(f"{len(groups)} groups ({', '.join(f'{g}: {sizes[g]}' for g in groups)}). Choose the settings and "
            "press **Run comparison**; results stay cached for these settings.")
    st.stop()

cmp = out["comparison"]
st.caption(f"n = **{cmp.n}** items per group ({cmp.settings['n_rule']}) · kernel {cmp.settings['kernel_description']}"
           f" · {cmp.level:.0%} intervals · seed {cmp.settings['seed']}"
           + (f" · MagDiff reference **{cmp.reference}**" if cmp.reference else ""))
for note in out["notes"]:
    st.info(note)

st.subheader("Every score, every group")
table = pd.DataFrame(cmp.table_rows()).set_index("score")
table.columns = [f"{g} (N={size})" for g, size in zip(cmp.groups, cmp.group_sizes)]
if presentation:
    st.table(table)
else:
    st.dataframe(table, width="stretch")
st.subheader("Pairwise differences")
pairs = pd.DataFrame(cmp.pairwise_rows())
if presentation:
    st.table(pairs)
else:
    st.dataframe(pairs, hide_index=True, width="stretch")
with st.expander("How the intervals are made"):
    st.write(cmp.settings["interval_description"])

fmt = st.radio("Figure download format (camera button of each chart)", ["png", "svg"], horizontal=True,
               key="cmp_figfmt")
figs = comparison_figures(cmp, presentation=presentation)
config = {"displaylogo": False, "toImageButtonOptions": {"format": fmt, "scale": 2}}
if presentation:
    for name, fig in figs.items():
        st.subheader(FIGURE_TITLES[name])
        st.plotly_chart(fig, key=f"cmp_fig_{name}", config=config)
else:
    for tab, (name, fig) in zip(st.tabs([FIGURE_TITLES[k] for k in figs]), figs.items()):
        tab.plotly_chart(fig, key=f"cmp_fig_{name}", config=config)

st.subheader("Take it to the meeting")
report = out["reports"].get(presentation)
if report is None:
    with st.spinner("Writing the report…"):
        report = report_html(cmp, datasets=ds, presentation=presentation)
    out["reports"][presentation] = report
d1, d2, d3 = st.columns(3)
d1.download_button("Download report (HTML)", report, file_name="diversity-comparison.html", mime="text/html",
                   type="primary", key="cmp_dl_report")
d2.download_button("Download comparison (JSON)", cmp.to_json(), file_name="diversity-comparison.json",
                   mime="application/json", key="cmp_dl_json")
d3.download_button("Download table (CSV)", cmp.to_csv(), file_name="diversity-comparison.csv", mime="text/csv",
                   key="cmp_dl_csv")
st.caption("The report is one self-contained HTML file (works offline): settings and data hashes, the tables, "
           "every figure with PNG/SVG buttons, and a gallery per group.")
