"""Serve the app with its modules imported while the server starts: ``python -m ui.serve ARGS``.

``ARGS`` are those of ``streamlit run`` (``app.py`` first). Streamlit runs nothing of the app
before a browser connects, so a fresh server's first visitor would wait for the imports of
``app.py`` and of the default page (Streamlit, pandas, plotly, the app's ``ui`` modules: about a
second). Here a background thread imports them while the web server starts, and the first page
finds them in ``sys.modules``. Used by ``dev.py app`` and ``diversity app``; the modules are read
from the scripts' own ``import`` statements, so the list cannot go stale.

Started by ``diversity app`` (``DIVERSITY_PARENT_PID`` set), the server ends with that process
even when it is killed (:func:`end_with_parent`); SIGHUP stops it cleanly like SIGTERM and
SIGINT. Its worker pool's process ends with it (``diversity_core.workers``).
"""

from __future__ import annotations

import ast
import importlib
import os
import signal
import sys
import threading
from pathlib import Path

#: The page Streamlit opens first (``default=True`` in ``app.py``).
DEFAULT_PAGE = "app_pages/2_scores.py"


def imported_modules(script: Path) -> list[str]:
    """The absolute modules a script imports at its top level, in order (relative imports skipped)."""
    tree = ast.parse(script.read_text(encoding="utf-8"), filename=str(script))
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
            # ``from package import submodule`` imports the submodule too
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return list(dict.fromkeys(names))


def compile_sources(folders: list[Path]) -> int:
    """Byte-compile the ``.py`` files under ``folders`` whose ``__pycache__`` entry is missing or stale.

    Python writes that cache on import unless ``PYTHONDONTWRITEBYTECODE`` is set (as in many
    container images, and on this project's machines); then every server start compiled the
    app's and the core's sources again (0.2 s of a first page's held run here). ``compileall``
    writes it either way, and only checks timestamps when it is up to date (11-20 ms here). Returns
    the number of folders where a file could not be compiled or written (a read-only install, a
    syntax error): their imports compile in memory as before, and report any error themselves.
    """
    import compileall

    failed = 0
    for folder in folders:
        if folder.is_dir() and not compileall.compile_dir(str(folder), quiet=2, workers=1):
            failed += 1
    return failed


def preload(app: Path) -> list[str]:
    """Byte-compile the app's and the core's sources, import what ``app`` and the default page
    import, and draw one figure; the names that imported.

    plotly builds its validators on a process's first figure (0.3 s of the first page's 0.4 s
    for its q profile here); a two-point q profile does that now.
    """
    import diversity_core

    compile_sources([app.parent / "ui", Path(diversity_core.__file__).parent])
    done = []
    for script in (app, app.parent / DEFAULT_PAGE):
        if not script.is_file():
            continue
        for name in imported_modules(script):
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - a name that is not a module (a function) or fails now fails later, in the page
                continue
            done.append(name)
    try:  # st.set_page_config reads the favicon file with PIL (35 ms of a first run otherwise)
        importlib.import_module("PIL.Image")
    except ImportError:
        pass
    # A process's first element checks whether it runs in a REPL with inspect.stack(), reading the
    # source of every frame of the first visitor's script run (40-70 ms of a held run, py-spy).
    # The answer is known here: this is `streamlit run`, whose warning flag says "checked".
    dg = sys.modules.get("streamlit.delta_generator")
    if dg is not None and hasattr(dg, "_use_warning_has_been_displayed"):
        dg._use_warning_has_been_displayed = True
    try:
        from diversity_core.report.figures import q_profile_figure

        q_profile_figure(([0.5, 1.0, 2.0], [1.0, 1.0, 1.0]), q=1.0, n=3).to_json()
    except Exception:  # noqa: BLE001 - without plotly the first page says what is missing
        pass
    return done


#: The BLAS libraries' thread variables: one thread each in the server process (server_blas_threads).
BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: How this module tells ``ui.workers`` the BLAS threads of a job run in the server process.
JOB_THREADS_ENV = "DIVERSITY_JOB_THREADS"


def server_blas_threads() -> bool:
    """One BLAS thread for the server process's own threads, unless the user set a count; whether set.

    The script runs' maths is small (a page's group spectra, a q change). Split over both cores
    of this machine, a small product waits for the core the browser or another session holds: a
    300 x 64 Gram matrix took 16 ms with 2 threads and 0.07 ms with 1 while both cores were busy
    (2026-11-29), and such waits were 50 ms of a cold first page. A heavy job that runs in this
    process gets every core while it runs (``ui.workers.job_threads``, told by
    ``DIVERSITY_JOB_THREADS``, which ``ui.workers`` reads and removes); the worker processes size their own pools.
    Set in the environment, before NumPy loads its BLAS, so that libraries loaded later (SciPy's)
    start with one thread too.
    """
    if any(name in os.environ for name in BLAS_VARIABLES):
        return False
    from diversity_core.workers import available_cores

    os.environ.update({name: "1" for name in BLAS_VARIABLES})
    os.environ.setdefault(JOB_THREADS_ENV, str(available_cores()))
    return True


#: The process a server started by ``diversity app`` ends with (read and removed at start, so that
#: the server's own children do not read it).
PARENT_ENV = "DIVERSITY_PARENT_PID"
#: Seconds between two checks that the parent is still there.
PARENT_POLL = 0.5


def end_with_parent(pid: int, poll: float = PARENT_POLL) -> threading.Thread:
    """Stop this server (SIGTERM: Streamlit's clean stop) once process ``pid`` is no longer its parent.

    The parent ending for any reason, killed included, makes this process a child of another
    (init, or a subreaper): a daemon thread notices within ``poll`` seconds.
    """

    def watch() -> None:
        while os.getppid() == pid:
            threading.Event().wait(poll)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=watch, name="diversity-parent-watch", daemon=True)
    thread.start()
    return thread


def stop_on_hangup() -> None:
    """SIGHUP (the terminal closed) stops the server cleanly, as SIGTERM does (Streamlit handles that)."""
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, lambda signum, frame: os.kill(os.getpid(), signal.SIGTERM))


def main(argv: list[str]) -> None:
    """Start the preloading thread, then ``streamlit run`` with ``argv``."""
    if not argv:
        raise SystemExit("usage: python -m ui.serve app.py [streamlit run options]")
    parent = os.environ.pop(PARENT_ENV, "").strip()
    if parent.isdigit():
        end_with_parent(int(parent))
    stop_on_hangup()
    app = Path(argv[0]).resolve()
    server_blas_threads()  # before anything loads a BLAS library
    # configure the environment before anything imports torch (app.py does the same on its first run)
    from diversity_core import configure_environment

    configure_environment()
    sys.path.insert(0, str(app.parent))
    threading.Thread(target=preload, args=(app,), name="diversity-preload", daemon=True).start()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", *argv]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main(sys.argv[1:])
