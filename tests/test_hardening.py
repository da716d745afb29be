"""Issue 26, items 12, 13 and 16: a column that is not SMILES is refused, an all-black image does
not fail its folder, and row sources travel to a Dask cluster without re-checking their files."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from diversity_core.data import load_dataset
from diversity_core.exceptions import DiversityInputError

SENTENCES = [f"I went to the market on day {i}." if i % 18 == 0 else f"The cat sat on mat number {i}."
             for i in range(1200)]


# ---------------------------------------------------------------------------------------------
# item 12: a SMILES column that holds no SMILES
# ---------------------------------------------------------------------------------------------
@pytest.mark.requires("rdkit")
class TestNotSmiles:
    def test_sentences_named_as_the_smiles_column_are_refused_with_counts(self, tmp_path):
        """67 sentences starting with "I " parse (iodine): the column used to load with 1,133 skips."""
        import pandas as pd

        path = tmp_path / "sentences.csv"
        pd.DataFrame({"sentence": SENTENCES, "model": ["a", "b"] * 600}).to_csv(path, index=False)
        with pytest.raises(DiversityInputError, match=r"1,133 of the 1,200 entries of column 'sentence' are not "
                                                      r"valid SMILES \(only 67 parsed\).*holds text.*text_column="):
            load_dataset(path, smiles_column="sentence")
        assert load_dataset(path, text_column="sentence").modality == "text"  # the suggestion works

    def test_a_text_file_named_smi_is_refused(self, tmp_path):
        path = tmp_path / "notes.smi"
        path.write_text("\n".join(SENTENCES[:40]) + "\n")
        with pytest.raises(DiversityInputError, match=r"37 of the 40 entries of the file are not valid SMILES.*"
                                                      r"modality='text'"):
            load_dataset(path)

    def test_a_numeric_column_suggests_embeddings(self, tmp_path):
        path = tmp_path / "n.csv"
        path.write_text("x,y\n" + "".join(f"{i}.5,{i}\n" for i in range(10)))
        with pytest.raises(DiversityInputError, match=r"10 of the 10 entries.*holds numbers.*embeddings"):
            load_dataset(path, smiles_column="x")

    def test_a_minority_of_invalid_smiles_is_still_skipped(self, tmp_path):
        """Half or fewer invalid: skipped and listed, as before (blank cells do not count)."""
        path = tmp_path / "m.csv"
        path.write_text("smiles\nCCO\nnot_a_smiles\nc1ccccc1\nxx\n\n\n\n")
        ds = load_dataset(path)
        assert ds.items == ["CCO", "c1ccccc1"] and len(ds.skipped) == 2


# ---------------------------------------------------------------------------------------------
# item 13: an all-black image
# ---------------------------------------------------------------------------------------------
@pytest.mark.requires("PIL")
class TestBlackImages:
    def _folder(self, tmp_path, black: int = 1):
        from PIL import Image

        rng = np.random.default_rng(0)
        folder = tmp_path / "imgs"
        folder.mkdir()
        for i in range(6):
            Image.fromarray(rng.integers(1, 255, (16, 16, 3), dtype=np.uint8)).save(folder / f"r{i}.png")
        for i in range(black):
            Image.fromarray(np.zeros((16, 16, 3), dtype=np.uint8)).save(folder / f"black{i}.png")
        return folder

    def test_a_black_image_is_skipped_and_the_folder_scores_under_cosine(self, tmp_path):
        import diversity_core as dc
        from diversity_core.data._load import BLACK_IMAGE_REASON
        from diversity_core.featurizers import featurize

        ds = load_dataset(self._folder(tmp_path))
        assert ds.n == 6 and "black0.png" not in ds.ids
        assert [(s.where, s.reason) for s in ds.skipped] == [("imgs/black0.png", BLACK_IMAGE_REASON)]
        assert ds.summary()["skipped"]["reasons"] == {"an all-black image": 1}
        vs = dc.compute_spectrum(featurize(ds, "pixels"), kernel="cosine").vendi(1.0)  # used to raise
        assert 1.0 < vs <= 6.0

    def test_black_images_in_an_npy_array_and_a_zip(self, tmp_path):
        import zipfile

        folder = self._folder(tmp_path)
        with zipfile.ZipFile(tmp_path / "imgs.zip", "w") as zf:
            for f in sorted(folder.iterdir()):
                zf.write(f, f.name)
        ds = load_dataset(tmp_path / "imgs.zip")
        assert ds.n == 6 and [s.where for s in ds.skipped] == ["imgs.zip:black0.png"]
        arr = np.zeros((5, 8, 8), dtype=np.uint8)
        arr[1:] = np.random.default_rng(1).integers(1, 255, (4, 8, 8))
        np.save(tmp_path / "a.npy", arr)
        ds = load_dataset(tmp_path / "a.npy")
        assert ds.n == 4 and [s.where for s in ds.skipped] == ["a.npy row 1"]

    def test_too_few_images_with_content_is_one_clear_error(self, tmp_path):
        folder = self._folder(tmp_path, black=3)
        for f in folder.glob("r*.png"):
            if f.name != "r0.png":
                f.unlink()
        with pytest.raises(DiversityInputError, match=r"3 of the 4 images are all black.*leaves 1"):
            load_dataset(folder)


# ---------------------------------------------------------------------------------------------
# item 14: scale warning, FIFO in the data folder
# ---------------------------------------------------------------------------------------------
def test_scale_warning_never_nan_and_quiet_on_cnn_features(rng):
    from diversity_core.preprocess import scale_spread, scale_warning

    huge = rng.normal(size=(50, 4)) * 1e200  # every variance overflowed: inf / inf = NaN
    huge[:, :3] *= 1e-5
    message = scale_warning(huge)
    assert message is not None and "nan" not in message.lower() and "5.0 orders of magnitude" in message
    assert not np.isnan(scale_spread(rng.normal(size=(50, 3)) * 1e200))
    # non-negative activations spanning orders of magnitude, no few of them dominant (a CNN's
    # features): standardising would inflate the rarely active units, so no advice is given
    acts = np.maximum(rng.normal(size=(300, 256)), 0) * rng.lognormal(0, 1.2, size=256)
    acts[:, :20] *= 1e-3  # rarely active units
    assert scale_spread(acts) > 100 and scale_warning(acts) is None


def test_scale_warning_stays_quiet_on_efficientnet_features_of_the_demos():
    pytest.importorskip("efficientnet_lite_pytorch")
    from diversity_core.data import load_demo
    from diversity_core.featurizers import featurize
    from diversity_core.preprocess import scale_spread, scale_warning

    ds = load_demo("shapes")
    X = featurize(ds.subset(np.arange(0, ds.n, 8)), "efficientnet_lite0")
    assert X.min() >= 0 and scale_spread(X) > 100  # the old rule fired here
    assert scale_warning(X) is None


def test_a_fifo_in_the_data_folder_gets_the_policys_one_message(tmp_path):
    import os

    from diversity_core.data import resolve_user_path

    os.mkfifo(tmp_path / "pipe.npy")
    with pytest.raises(DiversityInputError) as fifo:
        resolve_user_path("pipe.npy", data_dir=tmp_path)
    with pytest.raises(DiversityInputError) as missing:
        resolve_user_path("missing.npy", data_dir=tmp_path)
    assert str(fifo.value).replace("pipe.npy", "X") == str(missing.value).replace("missing.npy", "X")
    assert str(tmp_path) not in str(fifo.value)


# ---------------------------------------------------------------------------------------------
# item 16: sources on a real Dask cluster
# ---------------------------------------------------------------------------------------------
def _shards(folder, rng):
    folder.mkdir(parents=True)
    X = rng.normal(size=(300, 6))
    np.save(folder / "part-0000.npy", X[:170])
    np.save(folder / "part-0001.npy", X[170:])
    return X


@pytest.mark.parametrize("kind", ["npy", "shards", "parquet"])
def test_sources_unpickle_without_touching_files(kind, tmp_path, rng, monkeypatch):
    """Unpickling in another working folder (the scheduler's) re-opened the relative path there."""
    from diversity_core.sources import open_source

    data = tmp_path / "client"
    X = _shards(data / "shards", rng)
    if kind == "npy":
        np.save(data / "x.npy", X)
    elif kind == "parquet":
        pytest.importorskip("pyarrow")
        import pandas as pd

        pd.DataFrame({"emb": list(X)}).to_parquet(data / "x.parquet")
    monkeypatch.chdir(data)
    source = open_source({"npy": "x.npy", "shards": "shards", "parquet": "x.parquet"}[kind])  # relative
    assert source.path.is_absolute()
    blob = pickle.dumps(source)
    elsewhere = tmp_path / "scheduler"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    copy = pickle.loads(blob)  # used to raise: no such file, relative to this folder
    np.testing.assert_allclose(copy.read(), X)
    # nothing is read on unpickling: a copy unpickled where the file is gone still loads
    data.rename(tmp_path / "moved")
    pickle.loads(blob)


DASK_WAIT_S = 90


@pytest.fixture
def dask_cluster(tmp_path):
    """Start a ``dask scheduler`` and two ``dask worker`` processes in a folder of their own.

    Returns ``start(hide=None)`` -> the scheduler's address; ``hide`` is a folder the second worker
    cannot open (a preload refuses it: a worker on a machine without that path). Every process
    is killed at the end, waits are bounded.
    """
    pytest.importorskip("distributed")
    import subprocess
    import sys
    import time

    home = tmp_path / "cluster"
    home.mkdir()
    procs: list = []

    def spawn(*args, env=None):
        log = open(home / f"log-{len(procs)}.txt", "w")
        proc = subprocess.Popen([sys.executable, "-m", "dask", *map(str, args)], cwd=home, stdout=log,
                                stderr=subprocess.STDOUT, env=_own_code(env), start_new_session=True)
        procs.append((proc, log))
        return proc

    def start(hide=None):
        import json
        import os

        import distributed

        scheduler_file = home / "scheduler.json"
        spawn("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
              scheduler_file)
        deadline = time.monotonic() + DASK_WAIT_S
        while not scheduler_file.exists():
            assert time.monotonic() < deadline, (home / "log-0.txt").read_text()
            time.sleep(0.2)
        time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        preload = home / "hide_folder.py"
        preload.write_text(HIDE_PRELOAD)
        for i in range(2):
            env = dict(os.environ)
            extra = []
            if hide is not None and i == 1:
                env["HIDDEN_FOLDER"] = str(hide)
                extra = ["--preload", preload]
            spawn("worker", address, "--nthreads", "1", "--no-dashboard", "--local-directory", home / f"w{i}",
                  *extra, env=env)
        with distributed.Client(address, timeout=DASK_WAIT_S) as client:
            client.wait_for_workers(2, timeout=DASK_WAIT_S)
        return address

    try:
        yield start
    finally:
        import os
        import signal

        for proc, log in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=20)
            log.close()


#: A worker preload that makes one folder unreadable in that worker (as if it lay on another machine).
HIDE_PRELOAD = '''
import builtins, os

_hidden = os.environ["HIDDEN_FOLDER"]
_open = builtins.__dict__.setdefault("_open_before_hiding", builtins.open)  # the worker loads a preload twice


def _guarded(file, *args, **kwargs):
    if isinstance(file, (str, os.PathLike)) and os.path.abspath(os.fspath(file)).startswith(_hidden):
        raise FileNotFoundError(2, "No such file or directory", os.fspath(file))
    return _open(file, *args, **kwargs)


builtins.open = _guarded
'''


def _cli(*args, cwd):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "diversity_core.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=240, env=_own_code())


def _own_code(env=None) -> dict:
    """The environment with this checkout first on the path: the processes run the code under test."""
    import os
    from pathlib import Path

    env = dict(os.environ if env is None else env)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


@pytest.mark.requires("distributed")
def test_score_shards_by_a_relative_path_on_a_separate_scheduler(dask_cluster, tmp_path, rng):
    """`diversity score shards/ --scheduler ...` from another folder: exit 1 with "Error during
    deserialization of the task graph" before; now the scores of the in-memory path."""
    import json

    import diversity_core as dc

    X = _shards(tmp_path / "client" / "shards", rng)
    address = dask_cluster()
    res = _cli("score", "shards", "--scheduler", address, "--q", "1", "--format", "json", cwd=tmp_path / "client")
    assert res.returncode == 0, res.stderr
    (row,) = json.loads(res.stdout)["results"]
    assert row["n"] == 300 and "2 worker(s)" in res.stderr
    expected = dc.compute_spectrum(X, kernel="cosine").vendi(1.0)
    assert row["vendi"]["1"] == pytest.approx(expected, rel=1e-9)


@pytest.mark.requires("distributed")
def test_a_worker_that_cannot_see_the_data_is_named(dask_cluster, tmp_path, rng):
    _shards(tmp_path / "client" / "shards", rng)
    address = dask_cluster(hide=tmp_path / "client")
    res = _cli("score", "shards", "--scheduler", address, cwd=tmp_path / "client")
    assert res.returncode == 2, (res.returncode, res.stderr)
    message = [ln for ln in res.stderr.splitlines() if ln.startswith("diversity:")]
    assert len(message) == 1 and "Traceback" not in res.stderr, res.stderr
    assert "1 of the 2 Dask worker(s) cannot see the data: tcp://127.0.0.1:" in message[0]
    assert str(tmp_path / "client" / "shards" / "part-0000.npy") in message[0]
