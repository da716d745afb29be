"""Diversity Explorer: Streamlit entry point (a first page; the full multipage app builds on it)."""

import streamlit as st

from diversity_core import compute_spectrum
from diversity_core.data import load_demo
from diversity_core.featurizers import default_kernel, featurize

st.set_page_config(page_title="Diversity Explorer", layout="wide")
st.title("Diversity Explorer")
dataset = load_demo("digits")
X = featurize(dataset)
spec = compute_spectrum(X, kernel=default_kernel("default", dataset=dataset))
q = st.slider("order q", 0.0, 10.0, 1.0, 0.1)
st.metric(f"Vendi score of order {q:g}", f"{spec.vendi(q):.2f}", help=f"effective number of distinct items out of {spec.n}")
