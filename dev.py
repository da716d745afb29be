#!/usr/bin/env python3
"""Set up and run Diversity Explorer with nothing but Python 3.11+.

    python3 dev.py app     install into .venv (first time only) and open the app on the demo data
    python3 dev.py test    install the test extras too (and Debian's chromium for the browser
                           tests, when missing) and run ruff and the whole test suite
    python3 dev.py bench   run the benchmarks (prints ratios, writes benchmarks/results/*.json)

Both commands are idempotent: the install is redone only when pyproject.toml changes.
Extra arguments after ``test`` go to pytest (``python3 dev.py test -k vendi``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"


def _run(cmd: list, **kw) -> int:
    """Run a command from the repository root, echoing it."""
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call([str(c) for c in cmd], cwd=ROOT, **kw)


def _check(cmd: list, what: str) -> None:
    """Run a command and stop with a clear message when it fails."""
    if _run(cmd) != 0:
        sys.exit(f"dev.py: {what} failed (command above); fix the error it printed and rerun.")


def ensure_venv(extra: str) -> None:
    """Create .venv and install the project (with ``extra``) unless pyproject.toml is unchanged."""
    if sys.version_info < (3, 11):  # noqa: UP036 - dev.py may be started by an older python3
        sys.exit(f"dev.py: Python 3.11 or newer is needed; this is {sys.version.split()[0]}.")
    if not PY.exists():
        print(f"creating {VENV}", flush=True)
        try:
            venv.EnvBuilder(with_pip=True).create(VENV)
        except Exception as exc:  # Debian without python3-venv, for example
            sys.exit(f"dev.py: could not create a virtual environment ({exc}); install python3-venv.")
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:16]
    stamp = VENV / f".setup-stamp-{extra.replace(',', '-')}"
    if stamp.exists() and stamp.read_text() == digest:
        return
    target = f".[{extra}]"
    # torch is pinned to 2.13.0 in pyproject.toml (CPU wheel where one is provided locally).
    _check([PY, "-m", "pip", "install", "--disable-pip-version-check", "-q", "-e", target], "pip install")
    stamp.write_text(digest)


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


def cmd_app(args: list) -> int:
    """Install and launch the Streamlit app."""
    ensure_venv("all")
    return _run([PY, "-m", "streamlit", "run", "app.py", *args])


def cmd_test(args: list) -> int:
    """Install the test extras and run ruff and pytest."""
    ensure_venv("all,test")
    ensure_chromium()
    if _run([PY, "-m", "ruff", "check", "."]) != 0:
        print("dev.py: ruff found problems (listed above).", flush=True)
        return 1
    return _run([PY, "-m", "pytest", *args])


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
