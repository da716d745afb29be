"""Streamlit-only helpers of the Diversity Explorer app (the maths stays in ``diversity_core``).

What lives where
----------------
state        session-state keys and defaults of the shared settings; the URL query string
             (read once per session, written on every run); :func:`state.settings`.
sidebar      the sidebar every page shares (dataset, representation, kernel, q, subsample, groups).
data         a package: the server's data-folder policy (``folder``), ``uploads``, ``loading`` demos /
             uploads / local paths (the previous dataset stays on failure), the sidebar's ``search``,
             the linked ``selection`` and the working :class:`data.View` with its cache key (``view``).
cache        byte-bounded caches shared by every session, one computation per key in flight
             (:func:`cache.shared_cache`; pools as shares of the memory budget).
compute      cached wrappers around the core keyed by the view's key + parameters
             (``shared_cache`` pools for spectra, baselines, heatmaps, PCA); features come from
             the core's one feature cache.
tasks        the one pattern of long tasks (magnitude, RND, UMAP, kernel sweeps, comparisons):
             start -> ``st.status`` with progress from the core's callback -> stored by inputs -> shown.
fragments    O(n) controls redraw their ``st.fragment`` only; the sidebar's q reruns a page's q views
             (:func:`fragments.q_view`) when the page reads q nowhere else (:func:`fragments.q_local`).
live_q       the Scores headline, a component that draws its own markup and redraws it as the q slider
             moves, from a table of every q's text the page computed (:func:`live_q.live_headline`).
feedback     progress bars fed by the core's callbacks; errors as ``st.error`` without traceback.
page         the header every page starts with, returning its :class:`page.Context`.
gallery      items on screen: image thumbnails, text snippets, molecule drawings.
sensitivity  the kernel-sensitivity sweep (Scores page).
magnitude_ui, rnd_ui, compare_ui
             the settings forms, tasks and result views of the Magnitude, RND and Compare pages.

For another page: ``ctx = ui.page.header(title, sentence)`` gives the view, the settings and the
featurizer; ``ui.compute.spectrum(*ctx.kernel_args)`` and ``ui.compute.group_spectra(*ctx.kernel_args)``
the cached spectra; ``ui.tasks.stored(kind, key)`` the stored outcome of a long task (see
``ui.magnitude_ui.result_key`` and ``ui.rnd_ui.result_key``).
"""
