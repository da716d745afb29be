#!/usr/bin/env python3
"""Set up and run Diversity Explorer with nothing but Python 3.11+.

    python3 dev.py app     install into .venv (first time only, with progress) and start the app on the
                           demo data, listening on 127.0.0.1 only; the URL is printed in a banner once
                           the app answers
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
import time
import urllib.request
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
    print(f"dev.py: installing Diversity Explorer with the '{extra}' extras into {VENV} (first time, or "
          "pyproject.toml changed). This takes a few minutes (torch alone is large); pip's progress "
          "follows.", flush=True)
    started = time.monotonic()
    # torch is pinned to 2.13.0 in pyproject.toml (CPU wheel where one is provided locally).
    _check([PY, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "on", "-e", target],
           "pip install")
    stamp.write_text(digest)
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


def app_url(args: list) -> str:
    """The local URL the app will answer on (``--server.port`` in ``args``, else Streamlit's 8501)."""
    port = "8501"
    for i, arg in enumerate(args):
        if arg.startswith("--server.port="):
            port = arg.split("=", 1)[1]
        elif arg == "--server.port" and i + 1 < len(args):
            port = args[i + 1]
    return f"http://localhost:{port}"


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
    cmd = [str(PY), "-m", "streamlit", "run", "app.py", "--server.headless", "true", *address, *args]
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, cwd=ROOT)
    try:
        wait_until_ready(app_url(args), proc)
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        return proc.wait()


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
