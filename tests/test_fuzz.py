"""Fuzzing the loaders: any bytes, under any supported name, load or raise DiversityInputError.

Two kinds of input per format: random bytes, and a valid file of that format with random bytes
overwritten, inserted or cut off (which reaches far deeper into the parsers than random bytes
do). Nothing else may escape: no RecursionError, NotImplementedError, UnicodeError, KeyError,
pandas or pyarrow exception, and no hang (hypothesis runs each format ``max_examples`` times
with no deadline; pytest-timeout bounds the whole test).
"""

from __future__ import annotations

import io
import json
import tempfile
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diversity_core.data import load_dataset
from diversity_core.exceptions import DiversityInputError, DiversityWarning, MissingDependencyError

pytestmark = pytest.mark.timeout(600)


def _png(colour) -> bytes:
    Image = pytest.importorskip("PIL.Image", reason="image files need Pillow (extra [images])")

    buf = io.BytesIO()
    Image.new("RGB", (6, 5), colour).save(buf, format="PNG")
    return buf.getvalue()


def _npy() -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.arange(12, dtype=np.float64).reshape(4, 3))
    return buf.getvalue()


def _npz() -> bytes:
    buf = io.BytesIO()
    np.savez(buf, features=np.arange(12.0).reshape(4, 3), groups=np.array(["a", "a", "b", "b"]))
    return buf.getvalue()


def _zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("set/a.png", _png((200, 0, 0)))
        z.writestr("set/b.png", _png((0, 200, 0)))
        z.writestr("set/c.png", _png((0, 0, 200)))
    return buf.getvalue()


def _parquet() -> bytes:
    import pandas as pd

    pytest.importorskip("pyarrow", reason="Parquet files need pyarrow (extra [parquet])")

    buf = io.BytesIO()
    pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [0.5, 0.1, 0.2], "model": ["x", "y", "x"]}).to_parquet(buf)
    return buf.getvalue()


def _sdf() -> bytes:
    Chem = pytest.importorskip("rdkit.Chem", reason="SDF files need RDKit (extra [molecules])")

    return "".join(Chem.MolToMolBlock(Chem.MolFromSmiles(s)) + "$$$$\n" for s in ("CCO", "c1ccccc1", "CC(=O)O")).encode()


#: A valid file of each format, the seed of the mutations; a function where writing it needs an
#: optional package (built by :func:`seed` when a test first asks, so the test skips without it).
SEEDS = {
    ".csv": b"a,b,c\n0.1,0.2,0.3\n0.4,0.5,0.6\n1,2,3\n",
    ".tsv": b"text\tmodel\nhello world\ta\nthe cat sat\tb\nabc\ta\n",
    ".jsonl": b'{"text": "a b c", "w": 1}\n{"text": "d e", "w": 2.5}\n{"text": "f", "w": 0.1}\n',
    ".txt": b"smiles\tname\nCCO\tethanol\nc1ccccc1\tbenzene\nCC(=O)O\tacid\n",
    ".smi": b"CCO ethanol\nc1ccccc1 benzene\nCC(=O)O\nC1CC\n",
    ".npy": _npy(),
    ".npz": _npz(),
    ".zip": _zip,
    ".png": lambda: _png((10, 20, 30)),
    ".parquet": _parquet,
    ".sdf": _sdf,
}


def seed(ext: str) -> bytes:
    """The seed file of ``ext`` (built on first use)."""
    if callable(SEEDS[ext]):
        SEEDS[ext] = SEEDS[ext]()
    return SEEDS[ext]


@st.composite
def mutated(draw, seed: bytes) -> bytes:
    """``seed`` with a few bytes overwritten, inserted or deleted, or cut off."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 6))):
        if not data:
            break
        op = draw(st.sampled_from(("set", "insert", "delete", "truncate", "repeat")))
        i = draw(st.integers(0, len(data) - 1))
        if op == "set":
            data[i] = draw(st.integers(0, 255))
        elif op == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[i:i + draw(st.integers(1, 8))]
        elif op == "truncate":
            del data[i:]
        else:  # repeat a slice: deep nesting, long lines, duplicated records
            data[i:i] = bytes(data[i:i + draw(st.integers(1, 16))]) * draw(st.integers(2, 200))
    return bytes(data)


def inputs(ext: str):
    return st.one_of(st.binary(max_size=2048), mutated(seed(ext)))


def _load(ext: str, data: bytes) -> None:
    """Write ``data`` under the name ``x<ext>`` (a PNG goes into a folder with a valid one) and load it."""
    with tempfile.TemporaryDirectory() as tmp:
        if ext == ".png":
            folder = Path(tmp) / "imgs"
            folder.mkdir()
            (folder / "a.png").write_bytes(seed(".png"))
            (folder / "b.png").write_bytes(data)
            target = folder
        else:
            target = Path(tmp) / f"x{ext}"
            target.write_bytes(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DiversityWarning)
            warnings.simplefilter("ignore", UserWarning)  # e.g. zipfile's duplicate names
            try:
                ds = load_dataset(target)
            except DiversityInputError:
                return
            except MissingDependencyError as exc:  # e.g. SMILES without RDKit: the extra is named
                pytest.skip(str(exc))
        assert ds.n >= 2
        json.dumps(ds.summary())


@pytest.mark.parametrize("ext", sorted(SEEDS))
def test_seed_files_load(ext):
    """The seeds are valid, so the mutations start from files that parse."""
    _load(ext, seed(ext))


@pytest.mark.parametrize("ext", sorted(SEEDS))
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_loaders_raise_only_our_error(ext, data):
    _load(ext, data.draw(inputs(ext)))


def test_a_parquet_footer_that_aborts_pyarrow_is_refused_not_fatal():
    # found by test_loaders_raise_only_our_error: building this file's column-chunk metadata throws
    # inside pyarrow 26's C++ ("Definition level histogram size mismatch") and aborts the process
    pytest.importorskip("pyarrow")
    path = Path(__file__).resolve().parent / "fixtures" / "aborts_pyarrow.parquet"
    with pytest.raises(DiversityInputError, match="metadata is malformed"):
        load_dataset(path)
