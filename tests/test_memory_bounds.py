"""Issue 40 item 9: a table is read within about twice its decoded size, and the check before reading
estimates the peak the reader really reaches.

The peaks are measured in a child process (``VmHWM``, reset through ``/proc/self/clear_refs`` after
the libraries are imported and a small file of the same format was read once: the interpreter's
baseline), so neither the imports' own peak nor anything else in the test process counts. A 335 KB Parquet file of 40 M x 2 float64 peaked at 8.7 times its 640 MB in
``diversity inspect``: pandas' frame, its float64 copy, a Python string id per row ("row N") and
three temporaries of the feature-scale check.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from diversity_core.data import load_dataset
from diversity_core.data._dataset import content_hash
from diversity_core.data._tables import RowIds

ROOT = Path(__file__).resolve().parents[1]

#: Peak over the baseline allowed per decoded byte (the issue asks for about 2x): Parquet
#: measured 1.87x, CSV 3.2x (pandas' parser: its column chunks, their concatenation, the frame).
PEAK_PER_DECODED = 2.5
CSV_PEAK_PER_DECODED = 3.5
#: Slack for the allocator's and pyarrow's own pools, whatever the file's size.
SLACK = 12 << 20

_CHILD = r"""
import json, sys
import numpy as np, pandas
from diversity_core.data import load_dataset
from diversity_core.preprocess import scale_warning
from diversity_core.data import _tables
from diversity_core._config import memory_budget

def status(field):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(field + ":"))

def peak():
    return status("VmHWM")

small, big, kind = sys.argv[1:4]
scale_warning(load_dataset(small).features)  # the baseline: libraries loaded, one small file read
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")  # the peak so far (the imports') is forgotten: VmHWM restarts from VmRSS
base = status("VmRSS")
if kind == "parquet":
    import pyarrow.parquet as pq
    estimate = _tables.parquet_decoded_bytes(pq.ParquetFile(big).metadata)[0]
else:
    n, d = map(int, sys.argv[4:6])
    estimate = _tables.delimited_peak_bytes(n + 1, d)
ds = load_dataset(big, max_bytes=1 << 31)
scale_warning(ds.features)  # what `diversity inspect` runs next
print(json.dumps({"peak": peak() - base, "decoded": int(ds.features.nbytes), "estimate": estimate,
                  "c_order": bool(ds.features.flags["C_CONTIGUOUS"]), "row_ids": type(ds.ids).__name__}))
"""


def _measure(small: Path, big: Path, kind: str, *extra) -> dict:
    done = subprocess.run([sys.executable, "-c", _CHILD, str(small), str(big), kind, *map(str, extra)],
                          capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "DIVERSITY_MEMORY_BUDGET": "8G",
                               "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.requires("pyarrow")
def test_parquet_peak_stays_within_twice_the_decoded_size(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    small, big = tmp_path / "small.parquet", tmp_path / "big.parquet"
    pq.write_table(pa.table({"x": np.arange(10.0), "y": np.ones(10)}), small)
    n = 1_500_000
    rng = np.random.default_rng(0)
    pq.write_table(pa.table({"x": rng.normal(size=n), "y": np.zeros(n)}), big, compression="zstd")
    got = _measure(small, big, "parquet")
    assert got["decoded"] == n * 2 * 8
    # was 8.3x: pandas' frame, its float64 copy and a Python string per row id
    assert got["peak"] <= PEAK_PER_DECODED * got["decoded"] + SLACK, got
    assert got["row_ids"] == "RowIds" and got["c_order"]
    assert got["peak"] <= got["estimate"] + SLACK, got  # the check before reading sees the real peak


def test_csv_peak_stays_within_the_estimate_and_about_twice_the_decoded_size(tmp_path):
    small, big = tmp_path / "small.csv", tmp_path / "big.csv"
    small.write_text("a,b\n1,2\n3,4\n5,6\n")
    n, d = 150_000, 8
    X = np.random.default_rng(1).normal(size=(n, d))
    np.savetxt(big, X, delimiter=",", header=",".join(f"f{j}" for j in range(d)), comments="", fmt="%.17g")
    got = _measure(small, big, "csv", n, d)
    assert got["decoded"] == n * d * 8
    # was 4.2x here (7.5x on 50,000 x 64, 14.5x on 1,000,000 x 2): the text, a UCS-4 copy of it in
    # a StringIO, pandas' frame, its float64 copy and a string per row id
    assert got["peak"] <= CSV_PEAK_PER_DECODED * got["decoded"] + SLACK, got
    assert got["peak"] <= got["estimate"] + SLACK, got
    assert got["row_ids"] == "RowIds" and got["c_order"]


def test_numeric_tables_view_one_float_matrix(tmp_path):
    """The features of a numeric table are the matrix the reader filled, not a copy of the frame."""
    path = tmp_path / "t.csv"
    path.write_text("id,a,b,group\nx1,1.5,2,g1\nx2,3,4.25,g2\nx3,5,6,g1\n")
    ds = load_dataset(path, group_column="group")
    np.testing.assert_array_equal(ds.features, [[1.5, 2], [3, 4.25], [5, 6]])
    assert ds.ids == ["x1", "x2", "x3"] and list(ds.groups) == ["g1", "g2", "g1"]


@pytest.mark.requires("pyarrow")
def test_parquet_keeps_its_other_columns_and_nulls(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"label": ["a", "b", "a", "b"], "f1": [1.0, 2.0, 3.0, 4.0],
                             "k": pa.array([1, 2, 3, 4], type=pa.int32()),
                             "f2": pa.array([0.5, 1.5, 2.5, 3.5], type=pa.float32())}), path,
                   row_group_size=3)
    ds = load_dataset(path, group_column="label")
    np.testing.assert_array_equal(ds.features, [[1, 1, 0.5], [2, 2, 1.5], [3, 3, 2.5], [4, 4, 3.5]])
    assert list(ds.groups) == ["a", "b", "a", "b"]
    pq.write_table(pa.table({"f1": [1.0, None, 3.0], "f2": [1.0, 2.0, 3.0]}), path)
    with pytest.raises(Exception, match="NaN or infinite values at"):
        load_dataset(path)


def test_row_ids_stand_for_the_list_of_row_names():
    ids = RowIds(5)
    names = [f"row {i}" for i in range(1, 6)]
    assert ids == names and names == ids and list(ids) == names and len(ids) == 5
    assert ids[0] == "row 1" and ids[np.int64(4)] == "row 5" and ids[-1] == "row 5"
    assert ids[1:3] == ["row 2", "row 3"] and ids + ["x"] == names + ["x"]
    assert "row 3" in ids and "row 6" not in ids and ids.index("row 4") == 3
    with pytest.raises(IndexError):
        ids[5]
    assert pickle.loads(pickle.dumps(ids)) == ids
    # the content hash is that of the list of the same names: caches and the store keep their keys
    X = np.zeros((5, 2))
    assert content_hash("embeddings", None, X, None, None, ids) == content_hash("embeddings", None, X, None, None,
                                                                                 names)
