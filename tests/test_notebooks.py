"""The notebook under ``docs/notebooks/`` runs in Jupyter and shows its results (issue 42, item 3).

``docs/notebooks/quickstart.ipynb`` is the session of ``docs/notebooks.md`` (one code cell per python
block of the document, checked here). It is executed with nbclient in a kernel of this interpreter
(``sys.executable``): the kernel spec is written to a temporary folder and handed to the kernel
manager, so nothing is installed and no network is used. The test then reads the outputs: every
result shown at the end of a cell must have come back as an HTML table (its ``_repr_html_``) with a
short plain-text repr, and every ``.plot()`` as a plotly figure (the JSON of its mimetype). The
committed notebook carries no outputs.

:func:`execute` is also what ``benchmarks/notebook_screenshot.py`` runs before rendering the
notebook to HTML.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "notebooks.md"
NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.ipynb"))
QUICKSTART = ROOT / "docs" / "notebooks" / "quickstart.ipynb"
KERNEL = "diversity-explorer-test"
PLOTLY = "application/vnd.plotly.v1+json"
#: Most lines a result's plain-text repr may have (issue 42, item 1: "at most ~10 lines").
REPR_LINES = 12


def kernel_manager(folder: Path, env: dict | None = None):
    """A manager for a kernel of this interpreter, its spec in ``folder`` (nothing installed).

    The kernel inherits this process's environment plus one BLAS thread, no worker processes, the
    Hugging Face hub offline, its own IPython folder and ``env``.
    """
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    spec = folder / "kernels" / KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    kernel_env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "DIVERSITY_WORKERS": "0",
                  "HF_HUB_OFFLINE": "1", "IPYTHONDIR": str(folder / "ipython"), **(env or {})}
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (diversity-explorer tests)",
        "language": "python",
        "env": kernel_env,
    }))
    return KernelManager(kernel_name=KERNEL, connection_file=str(folder / "connection.json"),
                         kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(folder / "kernels")]))


def execute(path: Path, folder: Path, *, env: dict | None = None, timeout: int = 600):
    """Run the notebook at ``path`` in a fresh kernel, in the working folder ``folder/work``.

    Returns the executed notebook (``nbformat.NotebookNode``); a cell that raises stops the run
    with nbclient's ``CellExecutionError``, which names the cell and shows the traceback.
    """
    import nbformat
    from nbclient import NotebookClient

    folder.mkdir(parents=True, exist_ok=True)
    work = folder / "work"
    work.mkdir(exist_ok=True)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, km=kernel_manager(folder, env), timeout=timeout,
                            resources={"metadata": {"path": str(work)}})
    client.execute()
    return nb


def python_blocks(doc: Path) -> list[str]:
    """The ``python`` code blocks of a Markdown document, as text."""
    return [m.group(1).rstrip("\n") for m in
            re.finditer(r"^```python\n(.*?)^```$", doc.read_text(encoding="utf-8"), re.S | re.M)]


def code_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


def shown_name(source: str) -> str | None:
    """The name a cell ends by showing (its last line is a bare name), else None."""
    last = source.strip().splitlines()[-1]
    return last if re.fullmatch(r"[A-Za-z_]\w*", last) else None


def plots(source: str) -> bool:
    """Whether a cell ends by showing a figure (its last line calls ``.plot(...)``)."""
    return re.fullmatch(r"[\w.]+\.plot\(.*\)", source.strip().splitlines()[-1]) is not None


def rich_output(cell) -> dict:
    """The data of the cell's ``execute_result`` (the value of its last line), or {}."""
    results = [o for o in cell.outputs if o.output_type == "execute_result"]
    displays = [o for o in cell.outputs if o.output_type == "display_data"]
    chosen = results or displays
    return dict(chosen[-1].data) if chosen else {}


# --------------------------------------------------------------------------------------------
# the committed notebooks
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_committed_notebook_has_no_outputs(path):
    import nbformat

    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for k, cell in enumerate(code_cells(nb)):
        assert cell.outputs == [] and cell.execution_count is None, (
            f"{path.name}, code cell {k + 1}: outputs are committed; clear them "
            "(jupyter nbconvert --clear-output --inplace)"
        )
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3", "the notebook names a generic kernel"


def test_quickstart_is_the_documented_session():
    """One code cell per python block of docs/notebooks.md, in order and verbatim."""
    import nbformat

    cells = [c.source.rstrip("\n") for c in code_cells(nbformat.read(QUICKSTART, as_version=4))]
    blocks = python_blocks(DOC)
    assert blocks, "docs/notebooks.md has no python blocks"
    assert cells == blocks, "docs/notebooks/quickstart.ipynb and docs/notebooks.md differ: keep them the same"


def test_the_checks_see_what_cells_show():
    """The rules below find the shown results and figures of the quickstart."""
    sources = python_blocks(DOC)
    names = [shown_name(s) for s in sources]
    assert {"digits", "samples", "spec", "cmp", "dups", "keep", "table"} <= set(names)
    assert sum(plots(s) for s in sources) >= 3
    assert shown_name("x = 1\ncmp") == "cmp" and shown_name("cmp.to_frame()") is None
    assert plots("cmp.plot()") and plots("fig = x.plot(kind='q')") is False


# --------------------------------------------------------------------------------------------
# the executed notebook
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    pytest.importorskip("plotly", reason="the notebook draws figures: pip install 'diversity-explorer[report]'")
    return execute(QUICKSTART, tmp_path_factory.mktemp("notebook"))  # the result store: conftest's folder


def test_every_cell_ran(executed):
    cells = code_cells(executed)
    assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1))
    for k, cell in enumerate(cells):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors, f"code cell {k + 1} raised {errors[0].ename}: {errors[0].evalue}"


def test_results_show_as_html_tables_with_short_reprs(executed):
    """A value shown at the end of a cell (a result, a Dataset): a short repr and an HTML table."""
    checked = []
    for cell in code_cells(executed):
        name = shown_name(cell.source)
        if name is None:
            continue
        data = rich_output(cell)
        text = data.get("text/plain", "")
        assert 0 < len(text.splitlines()) <= REPR_LINES, f"`{name}`'s repr has {len(text.splitlines())} lines"
        assert "text/html" in data, f"`{name}` showed no HTML (its _repr_html_): {sorted(data)}"
        assert "<table" in data["text/html"], f"`{name}`'s HTML has no table"
        checked.append(name)
    assert {"digits", "samples", "spec", "cmp", "dups", "keep", "table"} <= set(checked)


def test_plots_show_as_plotly_figures(executed):
    figures = 0
    for cell in code_cells(executed):
        if not plots(cell.source):
            continue
        data = rich_output(cell)
        assert PLOTLY in data, f"`{cell.source.strip().splitlines()[-1]}` showed no plotly figure: {sorted(data)}"
        fig = data[PLOTLY]
        assert fig.get("data"), "the figure has no traces"
        assert "layout" in fig
        figures += 1
    assert figures >= 3


def test_tables_show_as_html(executed):
    """``to_frame()`` and the other pandas tables come out as HTML tables too."""
    frames = [c for c in code_cells(executed) if re.search(r"\.(to_frame|head)\(\)$", c.source.strip())]
    assert frames
    for cell in frames:
        assert "<table" in rich_output(cell).get("text/html", "")
