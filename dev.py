#!/usr/bin/env python3
"""Set up and run Diversity Explorer with nothing but Python 3.11+.

    python3 dev.py app     install into .venv (first time only, with progress) and start the app on the
                           demo data, listening on 127.0.0.1 only; the URL is printed in a banner once
                           the app answers
    python3 dev.py test    install the test extras too (and Debian's chromium for the browser
                           tests, when missing) and run ruff and the whole test suite (the
                           browser tests last and alone, the others in parallel processes)
    python3 dev.py bench   run the benchmarks (prints ratios, writes benchmarks/results/*.json)

Both commands are idempotent: the install is redone only when pyproject.toml changes or the
command needs extras that were not installed. ``.venv/.setup-stamp.json`` records the digest of
pyproject.toml and the extras installed with it (nested extras such as ``all`` expanded), so
``dev.py app`` after ``dev.py test`` (``all,test`` is a superset of ``all``) installs nothing.
Extra arguments after ``test`` go to pytest (``python3 dev.py test -k vendi``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
import venv
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
STAMP_NAME = ".setup-stamp.json"
#: The stamps of earlier dev.py versions: ``.setup-stamp-all-test`` held the digest for ``all,test``.
LEGACY_STAMP_PREFIX = ".setup-stamp-"


def _run(cmd: list, **kw) -> int:
    """Run a command from the repository root, echoing it."""
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call([str(c) for c in cmd], cwd=ROOT, **kw)


def _check(cmd: list, what: str) -> None:
    """Run a command and stop with a clear message when it fails."""
    if _run(cmd) != 0:
        sys.exit(f"dev.py: {what} failed (command above); fix the error it printed and rerun.")


def pyproject_digest(root: Optional[Path] = None) -> str:
    """The first 16 hex digits of pyproject.toml's SHA-256 (what an install stamp is valid for)."""
    root = ROOT if root is None else root
    return hashlib.sha256((root / "pyproject.toml").read_bytes()).hexdigest()[:16]


def extras_closure(extras, root: Optional[Path] = None) -> frozenset:
    """``extras`` with the extras they include (``all`` -> ``all, app, dask, parquet, ...``).

    Read from ``[project.optional-dependencies]``: an entry ``diversity-explorer[app,dask]`` of an
    extra names extras of the project itself. Unknown extras are kept as they are.
    """
    root = ROOT if root is None else root
    try:
        import tomllib

        project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
        optional = project.get("optional-dependencies", {})
        name = re.sub(r"[-_.]+", "-", project.get("name", "")).lower()
    except (OSError, KeyError, ValueError, ImportError):
        optional, name = {}, ""
    done: set = set()
    todo = [e.strip() for e in extras if e.strip()]
    while todo:
        extra = todo.pop()
        if extra in done:
            continue
        done.add(extra)
        for requirement in optional.get(extra, ()):
            m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*\[([^\]]*)\]", requirement)
            if m and re.sub(r"[-_.]+", "-", m.group(1)).lower() == name:
                todo += [e.strip() for e in m.group(2).split(",") if e.strip()]
    return frozenset(done)


def read_stamp(venv: Optional[Path] = None) -> dict:
    """``{digest: extras installed with it}`` from the stamp (and the stamps of older dev.py versions)."""
    venv = VENV if venv is None else venv  # read when called: tests point VENV elsewhere
    installed: dict = {}
    try:
        data = json.loads((venv / STAMP_NAME).read_text())
        installed[str(data["digest"])] = frozenset(data["extras"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    for legacy in venv.glob(LEGACY_STAMP_PREFIX + "*"):
        if legacy.name == STAMP_NAME:
            continue
        try:
            digest = legacy.read_text().strip()
        except OSError:
            continue
        extras = frozenset(legacy.name[len(LEGACY_STAMP_PREFIX):].split("-"))
        installed[digest] = installed.get(digest, frozenset()) | extras
    return installed


def install_needed(extra: str, *, venv: Optional[Path] = None, root: Optional[Path] = None) -> tuple:
    """``(needed, extras to install)`` for a request of ``extra`` (``"all,test"``).

    Satisfied — nothing to install — when the stamp of the current pyproject.toml digest records a
    superset of the requested extras (both with their nested extras expanded). Otherwise the
    extras to install are the requested ones plus those already installed with the same digest,
    so that the stamp stays true.
    """
    venv = VENV if venv is None else venv  # read when called: tests point VENV elsewhere
    root = ROOT if root is None else root
    requested = extras_closure(extra.split(","), root)
    already = read_stamp(venv).get(pyproject_digest(root), frozenset())
    if requested <= extras_closure(already, root):
        return False, already
    return True, frozenset(e.strip() for e in extra.split(",") if e.strip()) | already


def write_stamp(extras, *, venv: Optional[Path] = None, root: Optional[Path] = None) -> None:
    """Record that ``extras`` are installed for the current pyproject.toml."""
    venv = VENV if venv is None else venv  # read when called: tests point VENV elsewhere
    root = ROOT if root is None else root
    text = json.dumps({"digest": pyproject_digest(root), "extras": sorted(extras)}) + "\n"
    tmp = venv / (STAMP_NAME + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, venv / STAMP_NAME)


def ensure_venv(extra: str) -> None:
    """Create .venv and install the project with ``extra`` unless an install covering it is recorded."""
    if sys.version_info < (3, 11):  # noqa: UP036 - dev.py may be started by an older python3
        sys.exit(f"dev.py: Python 3.11 or newer is needed; this is {sys.version.split()[0]}.")
    if not PY.exists():
        print(f"creating {VENV}", flush=True)
        try:
            venv.EnvBuilder(with_pip=True).create(VENV)
        except Exception as exc:  # Debian without python3-venv, for example
            sys.exit(f"dev.py: could not create a virtual environment ({exc}); install python3-venv.")
    needed, extras = install_needed(extra)
    if not needed:
        return
    target = f".[{','.join(sorted(extras))}]"
    print(f"dev.py: installing Diversity Explorer with the '{','.join(sorted(extras))}' extras into {VENV} "
          "(first time, or pyproject.toml changed, or new extras). This takes a few minutes (torch alone is "
          "large); pip's progress follows.", flush=True)
    started = time.monotonic()
    # torch is pinned to 2.13.0 in pyproject.toml (CPU wheel where one is provided locally).
    _check([PY, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "on", "-e", target],
           "pip install")
    write_stamp(extras)
    print(f"dev.py: installed in {time.monotonic() - started:.0f} s.", flush=True)


def ensure_chromium() -> None:
    """Install Debian's chromium for the browser tests when it is missing (needs root and apt)."""
    if shutil.which("chromium") or Path("/usr/bin/chromium").exists():
        return
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        print("dev.py: chromium is missing and cannot be installed here (needs root and apt-get); "
              "the browser tests will fail. Install Debian's 'chromium' package.", flush=True)
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    _run(["apt-get", "update", "-qq"], env=env)
    _check(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium", "fonts-dejavu-core"],
           "apt-get install chromium")


def _option(args: list, name: str):
    """The value of ``--name=value`` or ``--name value`` in Streamlit's arguments, else None."""
    value = None
    for i, arg in enumerate(args):
        if arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
        elif arg == name and i + 1 < len(args):
            value = args[i + 1]
    return value


def app_url(args: list) -> str:
    """The URL that answers once the app runs: the bound address (127.0.0.1 by default) and port.

    ``--server.port`` in ``args``, else Streamlit's 8501. ``--server.address``, else 127.0.0.1
    (what :func:`cmd_app` passes); a wildcard address (``0.0.0.0``, ``::``) answers on the
    loopback address of its family. The banner prints this address, not ``localhost``, which may
    resolve to an address the server does not listen on.
    """
    port = _option(args, "--server.port") or "8501"
    address = (_option(args, "--server.address") or "127.0.0.1").strip()
    address = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1", "[::]": "::1"}.get(address, address)
    if ":" in address and not address.startswith("["):
        address = f"[{address}]"
    return f"http://{address}:{port}"


def wait_until_ready(url: str, proc, timeout: float = 300.0, poll: float = 0.5) -> bool:
    """Wait for the app's health check to answer; print the URL in a banner when it does.

    Returns False when the server exits or does not answer within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    line = f"  Diversity Explorer is ready: {url}  "
                    print("\n" + "=" * len(line) + "\n" + line + "\n" + "=" * len(line)
                          + "\n  (open it in a browser; Ctrl+C stops the app)\n", flush=True)
                    return True
        except OSError:
            time.sleep(poll)
    print(f"dev.py: the app did not answer on {url} within {timeout:.0f} s; see the messages above.", flush=True)
    return False


def cmd_app(args: list) -> int:
    """Install (with progress) and launch the Streamlit app; print its URL once it answers."""
    ensure_venv("all")
    print("dev.py: starting the app…", flush=True)
    # this machine only unless the caller asks otherwise (--server.address 0.0.0.0); server files are
    # readable only with DIVERSITY_DATA_DIR set (see `diversity app --data-dir` and docs/security.md)
    address = [] if any(a.startswith("--server.address") for a in args) else ["--server.address", "127.0.0.1"]
    # ui.serve is `streamlit run` with the first page's modules imported while the server starts
    cmd = [str(PY), "-m", "ui.serve", "app.py", "--server.headless", "true", *address, *args]
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, cwd=ROOT)
    try:
        wait_until_ready(app_url(args), proc)
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        return proc.wait()


#: Thread pools of a test worker process: one thread each, so that the workers share the cores
#: instead of oversubscribing them (each BLAS/OpenMP/torch pool would start one thread per core).
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                     "NUMEXPR_NUM_THREADS", "NUMBA_NUM_THREADS")}


def pytest_processes() -> int:
    """Processes for the tests that do not drive a browser: one per core and one more, 3 to 5.

    The extra process fills the time the others spend waiting (a CLI test's subprocess starting,
    AppTest polling its script thread, a LocalCluster's handshake): on the 2-core development
    machine the suite took 640 s in 3 processes and 759 s in 2 (2026-11-28, quiet).
    """
    return max(3, min((os.cpu_count() or 1) + 1, 5))


def cmd_test(args: list) -> int:
    """Install the test extras and run ruff and pytest.

    With no arguments the suite runs in two steps: every test but the browser tests in
    ``pytest_processes()`` processes (pytest-xdist; each test file stays in one process, so its
    fixtures are built once; one BLAS thread per process), then the browser tests alone, one
    at a time (they time a real server and Chromium, which would compete with the other tests
    for the cores). Arguments go to a single pytest run as given.
    """
    ensure_venv("all,test")
    ensure_chromium()
    if _run([PY, "-m", "ruff", "check", "."]) != 0:
        print("dev.py: ruff found problems (listed above).", flush=True)
        return 1
    if args:
        return _run([PY, "-m", "pytest", *args])
    env = {**os.environ, **ONE_THREAD}
    status = _run([PY, "-m", "pytest", "-n", str(pytest_processes()), "--dist", "loadfile", "--ignore", "tests/e2e"],
                  env=env)
    status |= _run([PY, "-m", "pytest", "tests/e2e"])
    return status


def cmd_bench(args: list) -> int:
    """Run every benchmark script."""
    ensure_venv("all,test")
    status = 0
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        status |= _run([PY, script, *args])
    return status


COMMANDS = {"app": cmd_app, "test": cmd_test, "bench": cmd_bench}


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        print(__doc__)
        return 2
    return COMMANDS[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
