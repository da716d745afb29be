"""The app reads finished spectra from the on-disk result store (issue 22: a cold start on a warm store)."""

from __future__ import annotations

from test_app import assert_clean, headline, start


def test_a_restarted_server_reads_the_spectrum_from_the_store(monkeypatch):
    import diversity_core as dc
    from ui.cache import clear_caches

    clear_caches()
    first = headline(start()).value
    # a new server process: the in-memory caches are empty, the store on disk is not
    clear_caches()

    def refuse(*args, **kwargs):
        raise AssertionError("the spectrum was computed again instead of read from the store")

    monkeypatch.setattr(dc, "compute_spectrum", refuse)
    at = start()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert headline(at).value == first


def test_without_the_store_the_spectrum_is_computed(monkeypatch):
    import diversity_core as dc
    from ui.cache import clear_caches

    monkeypatch.setenv("DIVERSITY_NO_CACHE", "1")
    clear_caches()
    calls = []
    real = dc.compute_spectrum
    monkeypatch.setattr(dc, "compute_spectrum", lambda *a, **k: calls.append(1) or real(*a, **k))
    start()
    clear_caches()
    start()
    assert len(calls) == 2


def test_the_first_view_does_not_wait_for_a_sweep_nobody_asked_for():
    """Issue 22/27: the digits demo's Scores page (4 x 300 items) offers the kernel sweep behind a button."""
    from ui import tasks

    tasks.clear_stores()
    at = start()
    assert any(b.key == "run_sweep" for b in at.button)
    assert not tasks.store("sensitivity").values()
