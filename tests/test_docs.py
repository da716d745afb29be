"""Every code block of README.md and docs/*.md runs (issue 21, item 7).

- ``python`` blocks run, in order, one namespace per document (a block may use what an earlier
  block of the same document defined), in a fresh folder per document: blocks that need files
  write them, or use the built-in demos.
- ``bash`` blocks: every ``diversity ...`` command runs through the CLI, in one folder holding
  small stand-ins for the files the docs name (:data:`FILES`), and must exit 0. Two kinds are
  only parsed, by the real parser, so that their flags are still checked: ``diversity app``
  (it serves until stopped) and the commands of a block marked ``parse-only``. ``python3 dev.py X``
  lines are checked to name a command of ``dev.py``, never run (they install).
- Untagged blocks that start with ``diversity SUBCOMMAND`` are usage synopses: every ``--flag``
  they show must be one the sub-command has.
- A block is skipped or parsed only when the line right before it says so with a reason, visible
  in the document: ``<!-- doctest: skip (reason) -->`` or ``<!-- doctest: parse-only (reason) -->``.
  A block that needs an extra which is not installed is skipped, the reason naming the extra (and
  so is a later block of the same document that uses a name the skipped one defined); a command
  that exits 2 naming a missing extra likewise.

The blocks run in two subprocesses (all python blocks; all commands), so that the test pays the
imports once and no block changes this process's settings; this file is also their runner.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"<!--\s*doctest:\s*(skip|parse-only)\s*(?:\((.*)\))?\s*-->")
FENCE = re.compile(r"^```(\S*)\s*$")
#: Commands that never end by themselves: parsed only.
SERVING = {"app"}
#: How long each runner may take (all blocks together; on a quiet machine about 60 s in all).
TIMEOUT = 900


@dataclass(frozen=True)
class Block:
    doc: str  # path relative to the repository
    line: int  # line of the first line of code
    lang: str
    code: str
    mode: str  # "run", "skip" or "parse-only"
    reason: str

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def parse_blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file, with the marker of the line before each."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        prev = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        mark = MARKER.fullmatch(prev)
        blocks.append(Block(doc=str(path.relative_to(ROOT)), line=i + 2, lang=m.group(1),
                            code="\n".join(lines[i + 1:j]) + "\n", mode=mark.group(1) if mark else "run",
                            reason=(mark.group(2) or "").strip() if mark else ""))
        i = j + 1
    return blocks


ALL_BLOCKS = [b for path in DOCS for b in parse_blocks(path)]
PYTHON = [b for b in ALL_BLOCKS if b.lang == "python"]


def _commands(block: Block) -> list[tuple[int, str]]:
    """(line, command) of each command line of a bash block, comments removed."""
    out = []
    for k, line in enumerate(block.code.splitlines()):
        text = line.split(" #")[0].strip()
        if text and not text.startswith("#"):
            out.append((block.line + k, text))
    return out


COMMANDS = [(b, line, text) for b in ALL_BLOCKS if b.lang == "bash" for line, text in _commands(b)]
CLI = [(b, line, text) for b, line, text in COMMANDS if text.startswith("diversity ")]
OTHER = [(b, line, text) for b, line, text in COMMANDS if not text.startswith("diversity ")]
SYNOPSES = [b for b in ALL_BLOCKS if b.lang == "" and re.match(r"diversity [a-z]", b.code)]


# --------------------------------------------------------------------------------------------
# stand-ins for the files the docs name
# --------------------------------------------------------------------------------------------


def _samples_csv(path: Path, rng) -> None:
    """Three groups ("real" and two models) of 120 items, 8 features and a weight column."""
    groups = np.repeat(["real", "model_a", "model_b"], 120)
    X = rng.normal(size=(groups.size, 8))
    w = rng.random(groups.size) + 0.5
    rows = ["model,weight," + ",".join(f"f{j}" for j in range(8))]
    rows += [f"{g},{wi:.6f}," + ",".join(f"{v:.6f}" for v in x) for g, wi, x in zip(groups, w, X)]
    path.write_text("\n".join(rows) + "\n")


def _shards(path: Path, rng) -> None:
    path.mkdir()
    for k in range(3):
        np.save(path / f"part-{k}.npy", rng.normal(size=(100, 16)))


FILES = {
    "samples.csv": _samples_csv,
    "embeddings.npy": lambda p, rng: np.save(p, rng.normal(size=(300, 16))),
    "emb.npy": lambda p, rng: np.save(p, rng.normal(size=(300, 16))),
    "big.npy": lambda p, rng: np.save(p, rng.normal(size=(400, 16))),
    "A.npy": lambda p, rng: np.save(p, rng.normal(size=(40, 8))),
    "B.npy": lambda p, rng: np.save(p, rng.normal(size=(40, 8)) * [1, 1, 1, 1, 0.1, 0.1, 0.1, 0.1]),
    "C.npy": lambda p, rng: np.save(p, rng.normal(size=(40, 8)) + 0.5),
    "shards": _shards,
    "real.npy": lambda p, rng: np.save(p, rng.normal(size=(120, 8))),
    "generated.npy": lambda p, rng: np.save(p, rng.normal(size=(100, 8)) * 0.8),
    "train.npy": lambda p, rng: np.save(p, rng.normal(size=(150, 8))),
}


# --------------------------------------------------------------------------------------------
# the runners (this file run as a script, in a subprocess)
# --------------------------------------------------------------------------------------------


def _missing_extra(exc: BaseException):
    """'needs X: pip install ...' when ``exc`` says an optional package is missing, else None.

    Our errors name the extra (``pip install 'diversity-explorer[images]'``); a bare import error
    names the package.
    """
    from diversity_core._optional import EXTRAS

    named = re.search(r"pip install 'diversity-explorer\[([\w,]+)\]'", str(exc))
    if named:
        return f"needs the extra [{named.group(1)}]"
    if not isinstance(exc, ImportError):
        return None
    text = f"{getattr(exc, 'name', '') or ''} {exc}"
    for module, extra in EXTRAS.items():
        if re.search(rf"\b{re.escape(module)}\b", text):
            return f"needs {module}: pip install 'diversity-explorer[{extra}]'"
    return None


def _run_python(blocks: list[dict], workdir: Path) -> dict:
    import traceback

    from diversity_core import _config

    results = {}
    by_doc: dict[str, list[dict]] = {}
    for b in blocks:
        by_doc.setdefault(b["doc"], []).append(b)
    saved = dict(_config._global)
    for doc, doc_blocks in by_doc.items():
        folder = workdir / re.sub(r"\W", "_", doc)
        folder.mkdir(parents=True)
        os.chdir(folder)
        namespace = {"__name__": "__main__"}
        stop = None  # why the rest of this document does not run
        skipped = None  # the last block skipped for a missing extra: later ones may need what it defined
        for b in doc_blocks:
            key = f"{doc}:{b['line']}"
            if stop is not None:
                results[key] = stop
                continue
            code = "\n" * (b["line"] - 1) + b["code"]  # tracebacks show the document's line numbers
            try:
                exec(compile(code, str(ROOT / doc), "exec"), namespace)  # the docs' own code
                results[key] = {"status": "ok"}
            except BaseException as exc:  # noqa: BLE001 - reported to the test
                missing = _missing_extra(exc)
                if missing:
                    results[key] = {"status": "skip", "reason": missing}
                    skipped = (key, missing)
                elif skipped is not None and isinstance(exc, NameError):
                    results[key] = {"status": "skip", "reason": f"uses a name from {skipped[0]}, which {skipped[1]}"}
                else:
                    results[key] = {"status": "fail", "error": traceback.format_exc(limit=-8)}
                    stop = {"status": "fail", "error": f"not run: the block at {key} failed"}
            finally:
                _config._global.clear()
                _config._global.update(saved)
    return results


def _run_cli(commands: list[dict], workdir: Path) -> dict:
    import contextlib
    import io
    import time

    from diversity_core import _config
    from diversity_core.cli import main

    os.chdir(workdir)
    saved = dict(_config._global)
    results = {}
    for c in commands:
        out, err = io.StringIO(), io.StringIO()
        start = time.perf_counter()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(c["argv"])
            except SystemExit as exc:  # argparse
                rc = exc.code if isinstance(exc.code, int) else 2
            except BaseException:  # noqa: BLE001 - main() should never raise; report it
                import traceback

                traceback.print_exc()
                rc = 1
        _config._global.clear()
        _config._global.update(saved)
        results[c["key"]] = {"rc": rc, "stdout": out.getvalue()[-2000:], "stderr": err.getvalue()[-3000:],
                             "seconds": round(time.perf_counter() - start, 2)}
    return results


def _runner(kind: str, spec: Path, out: Path, workdir: Path) -> None:
    jobs = json.loads(spec.read_text())
    results = _run_python(jobs, workdir) if kind == "python" else _run_cli(jobs, workdir)
    out.write_text(json.dumps(results))


def _spawn(kind: str, jobs: list, workdir: Path) -> dict:
    spec, out = workdir / f"{kind}-jobs.json", workdir / f"{kind}-results.json"
    spec.write_text(json.dumps(jobs))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "DIVERSITY_WORKERS": "0", "HF_HUB_OFFLINE": "1"}
    res = subprocess.run([sys.executable, __file__, kind, str(spec), str(out), str(workdir)], cwd=workdir,
                         capture_output=True, text=True, timeout=TIMEOUT, env=env)
    assert res.returncode == 0 and out.exists(), f"the {kind} runner failed:\n{res.stderr[-4000:]}"
    return json.loads(out.read_text())


# --------------------------------------------------------------------------------------------
# the tests
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def python_results(tmp_path_factory) -> dict:
    jobs = [{"doc": b.doc, "line": b.line, "code": b.code} for b in PYTHON if b.mode == "run"]
    return _spawn("python", jobs, tmp_path_factory.mktemp("docs-python"))


@pytest.fixture(scope="module")
def cli_results(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("docs-cli")
    rng = np.random.default_rng(0)
    for name, make in FILES.items():
        make(folder / name, rng)
    jobs = [{"key": f"{b.doc}:{line}", "argv": shlex.split(text)[1:]} for b, line, text in CLI
            if b.mode == "run" and shlex.split(text)[1] not in SERVING]
    return _spawn("cli", jobs, folder)


def test_markers_give_a_reason():
    for b in ALL_BLOCKS:
        assert b.mode == "run" or b.reason, f"{b.id}: a doctest marker needs a reason in parentheses"
        assert b.mode != "parse-only" or b.lang == "bash", f"{b.id}: parse-only applies to bash blocks"
    text = "\n".join(p.read_text(encoding="utf-8") for p in DOCS)
    assert len(re.findall(r"<!--\s*doctest", text)) == sum(b.mode != "run" for b in ALL_BLOCKS), (
        "a doctest marker must be the line right before a code block"
    )


def test_every_block_is_known():
    """Blocks are python, bash, or untagged text; a new language needs a rule here first."""
    for b in ALL_BLOCKS:
        assert b.lang in ("python", "bash", ""), f"{b.id}: no rule to check a {b.lang!r} block"


@pytest.mark.parametrize("block", PYTHON, ids=[b.id for b in PYTHON])
def test_python_block(block, python_results):
    if block.mode == "skip":
        pytest.skip(f"{block.id}: {block.reason}")
    result = python_results[block.id]
    if result["status"] == "skip":
        pytest.skip(f"{block.id}: {result['reason']}")
    assert result["status"] == "ok", f"{block.id}:\n{result['error']}"


@pytest.mark.parametrize("command", CLI, ids=[f"{b.doc}:{line}" for b, line, _ in CLI])
def test_cli_command(command, cli_results):
    from diversity_core.cli import build_parser

    block, line, text = command
    argv = shlex.split(text)[1:]
    if block.mode == "skip":
        pytest.skip(f"{block.doc}:{line}: {block.reason}")
    if block.mode == "parse-only" or argv[0] in SERVING:
        args = build_parser([argv[0]]).parse_args(argv)  # exits 2 on an unknown flag or a bad value
        assert args.command == argv[0]
        return
    result = cli_results[f"{block.doc}:{line}"]
    missing = re.search(r"pip install 'diversity-explorer\[([\w,]+)\]'", result["stderr"])
    if result["rc"] == 2 and missing:
        pytest.skip(f"{block.doc}:{line}: needs the extra [{missing.group(1)}]")
    assert result["rc"] == 0, f"{block.doc}:{line}: `{text}` exited {result['rc']}:\n{result['stderr']}"
    assert result["stdout"].strip() or "--out" in argv, f"`{text}` printed nothing"


@pytest.mark.parametrize("command", OTHER, ids=[f"{b.doc}:{line}" for b, line, _ in OTHER])
def test_other_commands_exist(command):
    """``python3 dev.py X``: X is one of dev.py's commands (not run here: it installs)."""
    block, line, text = command
    words = shlex.split(text)
    assert words[:2] == ["python3", "dev.py"], f"{block.doc}:{line}: no rule to check `{text}`"
    dev = (ROOT / "dev.py").read_text(encoding="utf-8")
    table = re.search(r"^COMMANDS = \{(.*?)\}", dev, re.S | re.M)
    assert table and f'"{words[2]}"' in table.group(1), f"dev.py has no command {words[2]!r}"


@pytest.mark.parametrize("block", SYNOPSES, ids=[b.id for b in SYNOPSES])
def test_synopsis_flags_exist(block):
    from diversity_core.cli import build_parser

    command = block.code.split()[1]
    parser = build_parser([command])
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    known = {s for a in sub._actions for s in a.option_strings}
    shown = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", block.code))
    assert shown <= known, f"{block.id}: `diversity {command}` has no {sorted(shown - known)}"


def test_readme_names_every_page():
    """The README's tour of the app names every page that app.py registers."""
    pages = re.findall(r'\("app_pages/[^"]+", "([^"]+)"', (ROOT / "app.py").read_text(encoding="utf-8"))
    assert len(pages) == len(list((ROOT / "app_pages").glob("*.py"))), "app.py's page list changed shape"
    tour = (ROOT / "README.md").read_text(encoding="utf-8").split("## The app", 1)[1].split("\n## ", 1)[0]
    assert [p for p in pages if p not in tour] == []


def test_docs_name_only_existing_functions():
    """``_json``'s docstring and the like: every ``diversity_core...`` dotted name in the docs exists."""
    import importlib

    text = "\n".join(p.read_text(encoding="utf-8") for p in DOCS)
    names = set(re.findall(r"`(diversity_core(?:\.\w+)+)", text))
    for name in sorted(names):
        parts = name.split(".")
        obj, k = None, len(parts)
        while k > 0:  # the longest importable module, then attributes
            try:
                obj = importlib.import_module(".".join(parts[:k]))
                break
            except ModuleNotFoundError:
                k -= 1
        for attr in parts[k:]:
            assert hasattr(obj, attr), f"the docs name {name}, which does not exist"
            obj = getattr(obj, attr)


if __name__ == "__main__":  # the runner: python test_docs.py KIND SPEC OUT WORKDIR
    _runner(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
