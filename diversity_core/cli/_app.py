"""``diversity app``: serve the Streamlit app, reading server files only from ``--data-dir``.

The command runs ``python -m ui.serve app.py`` (``streamlit run app.py`` that imports the first
page's modules while the web server starts: ``ui/serve.py``) with

- the data folder in the environment variable ``DIVERSITY_DATA_DIR`` (the app reads it in
  ``ui.data.data_dir``; unset, the default, means visitors cannot read any server file and the
  "Local path" source is hidden). An environment variable reaches the script on every rerun and
  in every session, needs no secrets file, and cannot be set by a visitor;
- ``--server.address`` (default 127.0.0.1: only this machine; ``--address 0.0.0.0`` serves
  every interface, on purpose) and ``--server.port``;
- the result store's folder and use: ``--cache-dir DIR`` becomes ``DIVERSITY_CACHE_DIR`` and
  ``--no-cache`` ``DIVERSITY_NO_CACHE=1`` in the app's environment (otherwise the app inherits
  them), so the app reads the features the command line kept, and the other way round;
- ``DIVERSITY_WORKERS`` (``--workers``) and ``DIVERSITY_SCHEDULER`` (``--scheduler``): where the
  heavy jobs run (``ui.workers``: local worker processes by default, or a Dask cluster, which
  must answer at start);
- ``--server.maxUploadSize`` equal to the loaders' ``DEFAULT_MAX_BYTES`` in MiB, so an upload
  Streamlit accepts is one the loader accepts (the same 1024 as ``.streamlit/config.toml``);
- ``--memory-budget SIZE`` as ``DIVERSITY_MEMORY_BUDGET`` (the server, its caches and its worker
  processes keep to it), and ``--debug`` as Streamlit's ``--logger.level debug`` (tracebacks in
  the server's log, never on the visitors' pages). ``--allow-download`` is refused: visitors
  would make the server download any model they name. Every option of ``diversity app`` reaches
  the server or is refused (:func:`streamlit_command`);
- ``DIVERSITY_PARENT_PID``: the server (``ui.serve``) ends when this process does, even when it
  is killed; SIGTERM, SIGINT and SIGHUP sent to this process are passed on to the server, which
  stops its worker processes before it exits (:func:`run`).

Streamlit is an optional dependency (the ``app`` extra); the app's files (``app.py``,
``app_pages/``, ``ui/``) are those of the source checkout this package is installed from.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .._optional import require
from ..data import DEFAULT_MAX_BYTES
from ..exceptions import DiversityInputError

#: The environment variable the app reads its data folder from (``ui.data.DATA_DIR_ENV``).
DATA_DIR_ENV = "DIVERSITY_DATA_DIR"
#: The app's worker processes and Dask scheduler (``ui.workers.WORKERS_ENV``, ``SCHEDULER_ENV``).
WORKERS_ENV, SCHEDULER_ENV = "DIVERSITY_WORKERS", "DIVERSITY_SCHEDULER"
#: The memory budget every process of the server reads (``diversity_core._config``).
MEMORY_BUDGET_ENV = "DIVERSITY_MEMORY_BUDGET"
#: The process the server ends with (``ui.serve.PARENT_ENV``).
PARENT_ENV = "DIVERSITY_PARENT_PID"
#: Seconds the server gets to stop (its worker processes first) after a signal, before it is killed.
STOP_GRACE = 30.0
#: The signals passed on to the server: each stops it, and with it its worker processes.
FORWARDED_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))
DEFAULT_ADDRESS = "127.0.0.1"
DEFAULT_PORT = 8501


def app_script() -> Path:
    """``app.py`` of the source checkout this package belongs to."""
    return Path(__file__).resolve().parents[2] / "app.py"


def upload_limit_mb(max_bytes: int = DEFAULT_MAX_BYTES) -> int:
    """Streamlit's ``server.maxUploadSize`` (MiB: Streamlit multiplies by 1024 * 1024) for a byte limit."""
    return max(1, max_bytes >> 20)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``app``."""
    parser = subparsers.add_parser(
        "app",
        help="serve the browser app (server files readable only inside --data-dir)",
        description="Start the Streamlit app. Visitors can upload files and open the demos; with --data-dir "
        "they can also open files inside that folder (and nothing outside it). The app listens on "
        f"{DEFAULT_ADDRESS} (this machine only) unless --address says otherwise.",
    )
    parser.add_argument("--data-dir", default=None, metavar="DIR",
                        help="folder whose files visitors may open by path (default: none; reading server "
                             "files is turned off)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--address", default=DEFAULT_ADDRESS,
                        help=f"address to listen on (default {DEFAULT_ADDRESS}; 0.0.0.0 for every interface)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="run the heavy jobs on the Dask cluster at ADDRESS (tcp://host:8786) instead of "
                             "local worker processes; checked at start")
    parser.add_argument("--workers", default="auto", metavar="N",
                        help="local worker processes for heavy jobs: auto (one per core, the default), a "
                             "number, or 0 to run jobs in the server's own process")
    return parser


def store_environment(args: argparse.Namespace) -> dict:
    """The result store's environment variables for ``--cache-dir`` / ``--no-cache`` (empty without them)."""
    from ..store import ENV_DIR, ENV_DISABLED

    env = {}
    if getattr(args, "cache_dir", None) is not None:
        env[ENV_DIR] = str(Path(args.cache_dir).expanduser().resolve())
    if getattr(args, "no_cache", False):
        env[ENV_DISABLED] = "1"
    return env


def streamlit_command(args: argparse.Namespace) -> tuple:
    """``(argv, env)`` of the ``streamlit run`` process for parsed ``args`` (validated here)."""
    if not 1 <= args.port <= 65535:
        raise DiversityInputError(f"--port must be between 1 and 65535; got {args.port}.")
    if not args.address.strip():
        raise DiversityInputError("--address is empty; give 127.0.0.1 (this machine) or 0.0.0.0 (every interface).")
    if getattr(args, "allow_download", False):
        raise DiversityInputError(
            "diversity app does not take --allow-download: every visitor could make the server download any "
            "model they name. Put the models in the Hugging Face cache first (e.g. `diversity score FILE "
            "--featurizer hf:ORG/NAME --allow-download` on this machine), or save them in a folder "
            "(visitors type hf:FOLDER).")
    env = dict(os.environ)
    env.pop(DATA_DIR_ENV, None)  # only --data-dir turns reading on, never an inherited variable
    if getattr(args, "memory_budget", None) is not None:
        # the server and its worker processes read the budget from the environment (parsed already)
        env[MEMORY_BUDGET_ENV] = str(int(args.memory_budget))
    workers = str(getattr(args, "workers", "auto")).strip().lower()
    if workers != "auto" and not (workers.isdigit()):
        raise DiversityInputError(f"--workers must be auto, 0 or a number of worker processes; got {workers!r}.")
    env[WORKERS_ENV] = workers
    env.pop(SCHEDULER_ENV, None)
    if getattr(args, "scheduler", None):
        env[SCHEDULER_ENV] = args.scheduler.strip()
    if args.data_dir is not None:
        folder = Path(args.data_dir)
        if not folder.is_dir():
            raise DiversityInputError(f"--data-dir {args.data_dir!r} is not a folder.")
        env[DATA_DIR_ENV] = str(folder.resolve())
    env.update(store_environment(args))
    script = app_script()
    if not script.is_file():
        raise DiversityInputError(f"the app's files are not installed next to this package ({script} is "
                                  "missing); run it from a source checkout (pip install -e '.[app]').")
    # ``ui.serve`` is ``streamlit run`` that imports the first page's modules while the server starts
    argv = [sys.executable, "-m", "ui.serve", str(script),
            "--server.address", args.address.strip(), "--server.port", str(args.port),
            "--server.maxUploadSize", str(upload_limit_mb()), "--server.headless", "true"]
    if getattr(args, "debug", False):
        argv += ["--logger.level", "debug"]
    return argv, env


def run(args: argparse.Namespace) -> int:
    """Run the app's server (``streamlit run app.py`` through ``ui.serve``) in the foreground until it stops (Ctrl+C)."""
    require("streamlit", purpose="the browser app (diversity app)")
    argv, env = streamlit_command(args)
    if env.get(SCHEDULER_ENV):
        # an unreachable scheduler is an error now, not on the first job of the first visitor
        from ..workers import start_pool

        start_pool(env[SCHEDULER_ENV], timeout=10).close()
        if not env[SCHEDULER_ENV].startswith("tls://"):
            print(f"diversity app: warning: the Dask cluster at {env[SCHEDULER_ENV]} takes connections without "
                  "credentials: whoever can reach it runs code as its workers' user. Use tls:// with the cluster's "
                  "certificates (docs/security.md, 'The worker pool').", file=sys.stderr)
    folder = env.get(DATA_DIR_ENV)
    print(f"diversity app: http://{args.address.strip()}:{args.port} · "
          + (f"files readable inside {folder}" if folder else "reading server files is turned off (no --data-dir)"),
          file=sys.stderr)
    env[PARENT_ENV] = str(os.getpid())
    return serve(argv, cwd=app_script().parent, env=env)


def serve(argv: list, *, cwd, env: dict) -> int:
    """Run the server process ``argv`` until it ends; its exit status (128 + N after signal N here).

    SIGTERM, SIGINT and SIGHUP sent to this process are passed on to the server (SIGINT as
    SIGINT, the others as SIGTERM, which Streamlit handles by stopping cleanly: its worker
    processes stop first); a server still running :data:`STOP_GRACE` seconds later is killed,
    and its worker processes then end with it. When this process is killed (no signal to pass
    on), the server sees it through ``DIVERSITY_PARENT_PID`` (``ui.serve``).
    """
    received: list = []
    proc = subprocess.Popen(argv, cwd=cwd, env=env)

    def pass_on(signum, frame):
        received.append(signum)
        try:
            proc.send_signal(signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM)
        except OSError:
            pass  # it ended already

    previous = {}
    for sig in FORWARDED_SIGNALS:
        try:
            previous[sig] = signal.signal(sig, pass_on)
        except ValueError:  # not the main thread (a test calling run): no handlers, the server still ends
            break
    try:
        deadline = None
        while True:
            try:
                code = proc.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                if received and deadline is None:
                    deadline = time.monotonic() + STOP_GRACE
                if deadline is not None and time.monotonic() > deadline:
                    proc.kill()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if proc.poll() is None:  # an exception here (none expected): the server does not outlive us
            proc.kill()
            proc.wait()
    return 128 + int(received[0]) if received else code
