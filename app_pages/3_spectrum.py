"""Spectrum: eigenvalues of the density matrix, galleries along the top eigenvectors, the kernel heatmap."""

import streamlit as st

from diversity_core.report.figures import kernel_heatmap, spectrum_figure
from ui import compute, scalable
from ui.feedback import attempt
from ui.fragments import q_local
from ui.gallery import show_items
from ui.page import header
from ui.state import KEEP

ctx = header(
    "Spectrum",
    "The Vendi score is the exponential of the entropy of these eigenvalues: one dominant eigenvalue means "
    "the items are variations of one theme, a flat spectrum means many distinct ones; each top eigenvector "
    "is a direction of variation, shown by the items at its two ends.",
)
view, s = ctx.view, ctx.settings
data = view.data
plan = scalable.plan(ctx)
beyond = scalable.active(ctx, plan)


@st.fragment
def galleries(values, vectors, ends) -> None:
    """Items at both ends of each top eigenvector (dense, dual or Lanczos); its sliders redraw only it."""
    available = 0 if vectors is None else vectors.shape[1]
    c1, c2 = st.columns(2)
    k = (c1.slider("Eigenvectors", 1, available, min(3, available), key="spectrum_k", **KEEP)
         if available > 1 else available)
    m = c2.slider("Items per end", 2, 16, 8, key="spectrum_m", **KEEP)
    for j in range(min(k, available)):
        share = values[j]
        high, low = ends(j, m)
        u = vectors[:, j]
        with st.container(border=True):
            st.markdown(f"**Eigenvector {j + 1}** · eigenvalue {share:.4f} ({share:.1%} of the mass)")
            st.caption("largest entries")
            show_items(data, high, columns=8, notes=[f"{u[i]:+.3f}" for i in high])
            st.caption("smallest entries")
            show_items(data, low, columns=8, notes=[f"{u[i]:+.3f}" for i in low])


top = None
if beyond:
    scalable.draw_badge(plan)
    job = scalable.ensure_job(ctx)
    b = scalable.spectrum_panel(job, view.n, scalable.job_key(ctx))
    if b is not None and b.eigenvectors is not None:
        st.subheader("Items at both ends of the top eigenvectors")
        st.caption(f"Ritz vectors of the top {b.k} eigenvalues from Lanczos on all {view.n} items.")
        galleries(b.top_eigenvalues, b.eigenvectors, b.eigenvector_ends)
        top = (scalable.job_key(ctx) + (b.k,), b.eigenvectors[:, 0])
    scalable.force_exact_control(ctx, plan, scalable.first_look(*ctx.kernel_args))
else:
    spec = scalable.exact_spectrum(ctx, plan)
    st.plotly_chart(spectrum_figure(spec.eigenvalues), key="spectrum")
    st.caption(f"{spec.rank} eigenvalues in the support out of {spec.eigenvalues.size} ({spec.method} path; "
               f"kernel {spec.kernel.get('name')}" + "".join(f", {k} = {v:.4g}" for k, v in spec.kernel.items()
                                                            if isinstance(v, float)) + ").")
    st.subheader("Items at both ends of the top eigenvectors")
    galleries(spec.eigenvalues, spec.eigenvectors, spec.eigenvector_ends)


@st.fragment
def kernel_matrix(top) -> None:
    """The kernel heatmap; its sort redraws only it (each order's matrix is cached)."""
    options = ["group", "top eigenvector"] if data.groups is not None else ["top eigenvector"]
    sort = st.radio("Sort items by", options, horizontal=True, key="heatmap_sort", **KEEP)
    how = "group" if sort == "group" else "eigenvector"
    if beyond:
        hm = attempt(lambda: scalable.heatmap(*ctx.kernel_args, how, top[0] if top else (),
                                              None if top is None else top[1]), "Computing the kernel matrix")
    else:
        hm = attempt(lambda: compute.heatmap(*ctx.kernel_args, how), "Computing the kernel matrix")
    if hm is not None:
        ids = [data.ids[i] for i in hm["indices"]]
        st.plotly_chart(kernel_heatmap(hm["K"], labels=hm["labels"], hover=ids,
                                       title=f"k(x_i, x_j), sorted by {sort}"), key="heatmap")
        if hm["sampled"]:
            st.caption(f"Drawn for a seeded random subsample of {len(ids)} of the {data.n} items "
                       f"(a {data.n} × {data.n} heatmap would not be readable); the spectrum uses every item.")


st.subheader("Kernel matrix")
kernel_matrix(top)
if not beyond:
    q_local()  # q appears only in the settings line (a q view)
