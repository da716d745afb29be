"""Issue 40 (items 1, 3, 8): a team server's worker pool, its processes' lifetime and its options.

- The local pool speaks TLS with a key made for it: a client without that key is refused, another
  account of the machine can neither reach the pool nor read the key, and no port of the pool
  listens beyond 127.0.0.1 or serves a dashboard (:mod:`diversity_core.workers`).
- Every process ``diversity app`` starts ends with it: SIGTERM, SIGINT, SIGHUP, or killed
  (:mod:`diversity_core.cli._app`, ``ui.serve``), with a real server, a session and its pool.
- Every option of ``diversity app`` reaches the server or is refused.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed", reason="the worker pool needs the [dask] extra")
psutil = pytest.importorskip("psutil")

from diversity_core.exceptions import DiversityInputError  # noqa: E402
from diversity_core.workers import _credentials, _security, start_pool  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: The memory budget the pool's processes are started under (they must read it).
BUDGET = 123_456_789
#: Seconds every bounded wait below may take at most on a loaded machine (polled, not slept).
BOUND = 90.0


@pytest.fixture(scope="module")
def pool():
    before = os.environ.get("DIVERSITY_MEMORY_BUDGET")
    os.environ["DIVERSITY_MEMORY_BUDGET"] = str(BUDGET)
    try:
        p = start_pool(workers=1, threads=1)
    finally:
        if before is None:
            os.environ.pop("DIVERSITY_MEMORY_BUDGET", None)
        else:
            os.environ["DIVERSITY_MEMORY_BUDGET"] = before
    yield p
    p.close()


def _pool_processes(p) -> list:
    """The pool's own process and every process under it (its nannies' workers)."""
    root = psutil.Process(p.cluster.pid)
    return [root, *root.children(recursive=True)]


def _listening(processes) -> list:
    """``(ip, port)`` of every listening TCP socket of ``processes``."""
    found = []
    for proc in processes:
        try:
            found += [(c.laddr.ip, c.laddr.port) for c in proc.net_connections("inet") if c.status == psutil.CONN_LISTEN]
        except psutil.NoSuchProcess:
            continue
    return found


def _budget(progress):
    from diversity_core._config import memory_budget

    return memory_budget()


# ------------------------------------------------------------------------------------------
# 40.1: who can reach the pool
# ------------------------------------------------------------------------------------------
def test_the_pools_own_client_runs_jobs_over_tls_under_the_servers_budget(pool):
    assert pool.address.startswith("tls://127.0.0.1:")
    # the worker processes inherit the environment of the process that starts the pool: the budget of
    # `diversity app --memory-budget` (DIVERSITY_MEMORY_BUDGET) holds in the jobs too
    assert pool.submit(_budget, label="budget").result(timeout=120) == BUDGET


def test_a_client_without_the_pools_credentials_is_refused(pool):
    host_port = pool.address.split("://", 1)[1]
    with pytest.raises((OSError, TimeoutError)):
        distributed.Client(f"tcp://{host_port}", timeout=5)  # no TLS at all
    other = _security(*_credentials())  # TLS, with a key and certificate of its own
    with pytest.raises((OSError, TimeoutError)):
        distributed.Client(pool.address, security=other, timeout=5)
    assert pool.submit(_budget, label="after").result(timeout=120) == BUDGET  # the pool is unharmed


def test_the_pool_listens_on_loopback_only_and_serves_no_dashboard(pool):
    listening = _listening(_pool_processes(pool))
    assert listening
    assert {ip for ip, _ in listening} == {"127.0.0.1"}, listening
    # the scheduler's and workers' HTTP ports (Dask opens them even without a dashboard) serve nothing:
    # no status pages, no JSON API, no proxy
    for _, port in listening:
        for path in ("/health", "/status", "/json/identity.json", "/info/main/workers.html"):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
                    code = answer.status
            except urllib.error.HTTPError as exc:
                code = exc.code
            except (OSError, ValueError):  # a TLS port: no HTTP
                continue
            assert code == 404, (port, path, code)


_OTHER_USER = """
import glob, json, os, sys, tempfile
import asyncio, ssl  # imported while the interpreter's files are readable: after setuid they may not be
import distributed, distributed.comm.tcp, distributed.security
from diversity_core.workers import _credentials, _security

address, pids = sys.argv[1], json.loads(sys.argv[2])
other = _security(*_credentials())  # a key and certificate of its own
os.setgroups([])
os.setgid(65534)
os.setuid(65534)
out = {"uid": os.getuid(), "connected": [], "refused": [], "key_seen": []}
host_port = address.split("://", 1)[1]
for addr, security in ((f"tcp://{host_port}", None), (address, other)):
    try:
        client = distributed.Client(addr, security=security, timeout=5)
    except Exception as exc:  # noqa: BLE001
        out["refused"].append([addr, type(exc).__name__])
        continue
    out["connected"].append([addr, client.run_on_scheduler(os.getuid)])  # runs as the pool's user
    client.close()
# copying the key: what this account can read of the pool's processes and of the temporary folder
for pid in pids:
    for name in ("cmdline", "environ"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as f:
                data = f.read()
        except OSError:
            continue
        if b"PRIVATE KEY" in data or b"BEGIN CERTIFICATE" in data:
            out["key_seen"].append(f"/proc/{pid}/{name}")
tmp = tempfile.gettempdir()
for path in glob.glob(os.path.join(tmp, "diversity-pool-*", "*")) + glob.glob(os.path.join(tmp, "*", "*.pem")):
    try:
        with open(path, "rb") as f:
            if b"PRIVATE KEY" in f.read():
                out["key_seen"].append(path)
    except OSError:
        continue
print(json.dumps(out))
"""


@pytest.mark.skipif(not hasattr(os, "setuid") or os.geteuid() != 0,
                    reason="running a process as another account (uid 65534) needs root")
def test_another_account_can_neither_reach_the_pool_nor_read_its_key(pool):
    pids = [proc.pid for proc in _pool_processes(pool)]
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_OTHER_USER), pool.address, json.dumps(pids)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["uid"] == 65534
    assert out["connected"] == [], out  # before issue 40: [["tcp://...", 0]], its code ran as root
    assert [addr.split("://")[0] for addr, _ in out["refused"]] == ["tcp", "tls"], out
    assert out["key_seen"] == [], out


# ------------------------------------------------------------------------------------------
# 40.8: every option of `diversity app` reaches the server, or is refused
# ------------------------------------------------------------------------------------------
def _app_options() -> dict:
    """``dest -> option string`` of every option of ``diversity app`` (help aside)."""
    import argparse

    from diversity_core.cli import build_parser

    parser = build_parser(["app"])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["app"]
    return {a.dest: a.option_strings[-1] for a in sub._actions if a.option_strings and a.dest != "help"}


def test_every_option_of_diversity_app_reaches_the_server_or_is_refused(tmp_path):
    pytest.importorskip("streamlit", reason="diversity app needs the [app] extra")
    from diversity_core.cli import build_parser
    from diversity_core.cli._app import streamlit_command

    values = {  # a value other than the default for each option (a new option needs one here)
        "data_dir": [str(tmp_path)], "port": ["8600"], "address": ["0.0.0.0"],
        "scheduler": ["tls://127.0.0.1:8786"], "workers": ["3"], "debug": [], "memory_budget": ["1G"],
        "cache_dir": [str(tmp_path / "cache")], "no_cache": [], "allow_download": [],
    }
    options = _app_options()
    assert set(options) == set(values), "a new option of diversity app: say here what it changes in the server"
    base = streamlit_command(build_parser(["app"]).parse_args(["app"]))
    for dest, option in options.items():
        args = build_parser(["app"]).parse_args(["app", option, *values[dest]])
        try:
            changed = streamlit_command(args)
        except DiversityInputError:
            continue  # refused, with a message
        assert changed != base, f"diversity app {option} does not reach the server"


def test_the_memory_budget_reaches_the_server_from_either_side_of_the_command():
    pytest.importorskip("streamlit", reason="diversity app needs the [app] extra")
    from diversity_core.cli import build_parser
    from diversity_core.cli._app import MEMORY_BUDGET_ENV, streamlit_command

    for argv in (["app", "--memory-budget", "1G"], ["--memory-budget", "1G", "app"]):
        _, env = streamlit_command(build_parser(["app"]).parse_args(argv))
        assert env[MEMORY_BUDGET_ENV] == str(2**30), argv


def test_allow_download_is_refused_by_diversity_app():
    pytest.importorskip("streamlit", reason="diversity app needs the [app] extra")
    done = subprocess.run([sys.executable, "-m", "diversity_core.cli", "app", "--allow-download", "--port",
                           str(_free_port())],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2
    assert "does not take --allow-download" in done.stderr and "Traceback" not in done.stderr


# ------------------------------------------------------------------------------------------
# 40.3: every process the app starts ends with it
# ------------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(condition, what: str, bound: float = BOUND):
    """Poll ``condition()`` until it gives something true; fail naming ``what`` after ``bound`` seconds."""
    deadline = time.monotonic() + bound
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not after {bound:.0f} s")
        time.sleep(0.2)


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


async def _open_page(port: int) -> None:
    """One browser session's first runs (the app starts its worker pool after the first page)."""
    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    async with websockets.connect(f"ws://127.0.0.1:{port}/_stcore/stream", subprotocols=["streamlit"],
                                  max_size=None) as ws:
        for _ in range(2):  # the first run may hold its charts back until the browser asks again
            msg = BackMsg()
            msg.rerun_script.query_string = ""
            await ws.send(msg.SerializeToString())
            while True:
                forward = ForwardMsg()
                forward.ParseFromString(await asyncio.wait_for(ws.recv(), timeout=BOUND))
                if forward.WhichOneof("type") == "script_finished":
                    break


def _pool_started(app: psutil.Process):
    """The app's descendants once its pool's process and worker run, else None."""
    try:
        tree = app.children(recursive=True)
        cluster = [p for p in tree if "diversity_core.workers" in " ".join(p.cmdline())]
        if cluster and any("spawn_main" in " ".join(p.cmdline()) for p in cluster[0].children(recursive=True)):
            return tree
    except psutil.NoSuchProcess:
        pass
    return None


def _alive(proc: psutil.Process) -> bool:
    """Whether ``proc`` still runs (a zombie waiting for its parent to read its status has ended)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT", "SIGHUP", "SIGKILL"])
def test_every_process_of_the_app_ends_with_it(sig, tmp_path):
    pytest.importorskip("streamlit", reason="diversity app needs the [app] extra")
    pytest.importorskip("websockets", reason="the test opens a session like a browser")
    port = _free_port()
    env = dict(os.environ, DIVERSITY_NO_CACHE="1")
    log = open(tmp_path / "app.log", "w")  # noqa: SIM115 - closed below
    cli = subprocess.Popen([sys.executable, "-m", "diversity_core.cli", "app", "--port", str(port),
                            "--workers", "1"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                           start_new_session=True)  # its own group: the signal goes to the app's process only
    app = psutil.Process(cli.pid)
    tree: list = []
    try:
        _wait_for(lambda: _healthy(port), "the server answering its health check")
        asyncio.run(_open_page(port))
        tree = _wait_for(lambda: _pool_started(app), "the worker pool running")
        processes = [app, *tree]
        ports = [port for _, port in _listening(processes)]
        assert port in ports and len(ports) >= 4  # the app, the scheduler, a nanny, a worker
        cli.send_signal(getattr(signal, sig))
        _wait_for(lambda: not any(_alive(p) for p in processes), f"every process of the app gone after {sig}")
        _wait_for(lambda: not any(_port_open(p) for p in ports), f"every port of the app closed after {sig}")
        code = cli.wait(timeout=BOUND)
        if sig != "SIGKILL":
            assert code == 128 + getattr(signal, sig), code
    finally:
        for proc in [app, *tree]:  # whatever is left (a failure above) goes, by its own id
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass
        if cli.poll() is None:
            cli.wait(timeout=BOUND)
        log.close()
