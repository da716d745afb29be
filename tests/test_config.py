"""One configuration entry point: ``set_config`` / ``config_context`` / ``get_config`` (issue 39, item 8).

They set the memory budget, the result store (``store.configure`` / ``store.configured``) and the
download permission of ``hf:`` featurizers (``featurizers.downloads_allowed``); the old entry
points stay as aliases and show in ``get_config``.
"""

from __future__ import annotations

import threading

import pytest

import diversity_core as dc
from diversity_core import _config, featurizers, store
from diversity_core.exceptions import DiversityInputError


@pytest.fixture(autouse=True)
def _restore():
    """Every test leaves the process-wide settings as it found them."""
    config, stored = dict(_config._global), dict(store._global)
    yield
    _config._global.clear()
    _config._global.update(config)
    store._global.clear()
    store._global.update(stored)


def _permission_seen(monkeypatch) -> bool:
    """The ``allow_download`` a featurizer call would pass on (the featurizer stopped before any work)."""
    seen = []

    def fake(name, *, allow_download=False):
        seen.append(allow_download)
        raise DiversityInputError("stop here")

    monkeypatch.setattr(featurizers._api, "resolve_featurizer", lambda dataset, name: name)
    monkeypatch.setattr(featurizers._api, "get_featurizer", fake)
    with pytest.raises(DiversityInputError, match="stop here"):
        featurizers._api._run_plan(None, "hf:some-org/some-model", {})
    return seen[-1]


def test_get_config_reports_every_setting(tmp_path):
    dc.set_config(store_folder=tmp_path, store_max_bytes="1M", store_enabled=False)
    cfg = dc.get_config()
    assert {"memory_budget", "chunk_bytes", "allow_downloads", "store_folder", "store_max_bytes",
            "store_enabled", "store_key_file"} <= set(cfg)
    assert cfg["store_folder"] == tmp_path and cfg["store_max_bytes"] == 1 << 20
    assert cfg["store_enabled"] is False and cfg["allow_downloads"] is False


def test_set_config_sets_the_store_through_store_configure(tmp_path):
    dc.set_config(store_folder=tmp_path / "cache", store_enabled=True)
    assert store.settings()["folder"] == tmp_path / "cache"
    assert store.get_store().folder == tmp_path / "cache"
    dc.set_config(store_enabled=False)
    assert store.get_store() is None
    assert store.settings()["folder"] == tmp_path / "cache"  # None left the folder as it was


def test_config_context_sets_the_store_for_the_block(tmp_path):
    dc.set_config(store_folder=tmp_path, store_enabled=True)
    with dc.config_context(store_enabled=False, memory_budget="1G"):
        assert store.get_store() is None and dc.get_config()["memory_budget"] == 1 << 30
    assert store.get_store() is not None and dc.get_config()["store_enabled"] is True


def test_allow_downloads_process_wide_and_per_block(monkeypatch):
    assert _permission_seen(monkeypatch) is False  # the default: the local cache only
    dc.set_config(allow_downloads=True)
    assert _permission_seen(monkeypatch) is True
    result = []
    worker = threading.Thread(target=lambda: result.append(dc.get_config()["allow_downloads"]))
    worker.start()
    worker.join()
    assert result == [True]  # process-wide: other threads see it too
    with dc.config_context(allow_downloads=False):
        assert _permission_seen(monkeypatch) is False and dc.get_config()["allow_downloads"] is False
    with featurizers.downloads_allowed(False):  # the old entry point wins inside its block as before
        assert _permission_seen(monkeypatch) is False
    assert _permission_seen(monkeypatch) is True


def test_the_old_entry_points_still_work_and_show_in_get_config(monkeypatch, tmp_path):
    with featurizers.downloads_allowed():
        assert dc.get_config()["allow_downloads"] is True and _permission_seen(monkeypatch) is True
    assert dc.get_config()["allow_downloads"] is False
    with store.configured(enabled=False):
        assert dc.get_config()["store_enabled"] is False
    store.configure(folder=tmp_path)
    assert dc.get_config()["store_folder"] == tmp_path


def test_an_invalid_setting_sets_nothing():
    before = dc.get_config()
    with pytest.raises(DiversityInputError):
        dc.set_config(memory_budget="2G", store_max_bytes="lots")
    after = dc.get_config()
    assert after["memory_budget"] == before["memory_budget"]
    assert after["store_max_bytes"] == before["store_max_bytes"]
    with pytest.raises(DiversityInputError):
        with dc.config_context(memory_budget="2G", store_max_bytes="lots"):
            pass  # pragma: no cover - never entered
    assert dc.get_config()["memory_budget"] == before["memory_budget"]
