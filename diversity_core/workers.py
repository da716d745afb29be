"""Heavy jobs in worker processes: a Dask cluster sized so that jobs never oversubscribe the cores.

The app's script threads only draw; featurizing, spectra, magnitude, RND, comparisons and
curation run here, one job a worker, each with its BLAS/OpenMP/torch thread pools limited to
its share of the cores. The CLI sizes its thread pools with the same rule when it runs several
jobs at once.

- :func:`threads_per_job` is the rule: ``max(1, cores // jobs)`` threads for each of ``jobs``
  concurrent jobs on ``cores`` cores (1 thread each for 2 jobs on 2 cores).
- :func:`start_pool` starts a :class:`JobPool` on a ``distributed.LocalCluster`` of worker
  processes (:func:`default_workers`: more than the cores, single-threaded jobs), or connects it to a running scheduler (``address``); an
  unreachable scheduler is a :class:`~diversity_core.exceptions.DiversityInputError` at once.
- :meth:`JobPool.submit` runs ``fn(progress)`` on a worker and returns a :class:`Job`: its
  progress reports, its cancellation and its result. ``progress(done, total, message, **data)``
  reports travel to the submitting process (``data`` carries small JSON-like payloads such as a
  training curve's last point); a cancelled job stops at its next report, freeing its worker.
- A worker that dies while running a job (killed, out of memory) gives a
  :class:`WorkerLostError` with what to do; the job can be submitted again.
- A local pool speaks TLS with a key and certificate made for it when it starts (mutual
  authentication: a connection without them is refused, so another account of the machine
  cannot run code on the workers), has no dashboard unless asked for one (then on 127.0.0.1),
  and ends with the process that started it (:class:`_ClusterProcess`).

Dask (``distributed``) comes with the ``[dask]`` extra and is imported when a pool starts.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from .exceptions import DiversityError, DiversityInputError, DiversityWarning

__all__ = [
    "Job",
    "JobCancelledError",
    "JobPool",
    "WorkerLostError",
    "default_workers",
    "limit_threads",
    "thread_environment",
    "start_pool",
    "threads_per_job",
]

#: Seconds between two cancellation checks inside a job (each is one scheduler round trip).
_CANCEL_CHECK_INTERVAL = 0.25
#: Seconds between two progress messages sent from a job (later reports in between are dropped,
#: but the last report before the job ends is always sent).
_PROGRESS_INTERVAL = 0.2
#: Environment variables that size the BLAS and OpenMP thread pools when a library loads.
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                     "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


class JobCancelledError(DiversityError):
    """A job stopped because it was cancelled (raised inside the job at its next progress report)."""


class WorkerLostError(DiversityError):
    """The worker process running a job died (killed, or out of memory); the job can be retried."""


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS reports it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_workers(cores: Optional[int] = None) -> int:
    """Worker processes of a local pool: ``min(2 * cores, cores + 8)``, at least 2.

    More workers than cores, each job single-threaded when they outnumber the cores: a short
    job submitted while a few long ones run starts at once and shares the cores with them
    (the OS divides its time fairly between single-threaded processes), instead of queueing
    behind them. Each idle worker costs memory only (its imported libraries).

    Examples
    --------
    >>> default_workers(2), default_workers(16)
    (4, 24)
    """
    cores = available_cores() if cores is None else int(cores)
    return max(2, min(2 * cores, cores + 8))


def threads_per_job(jobs: int, cores: Optional[int] = None) -> int:
    """Threads each of ``jobs`` concurrent jobs may use so that together they fit ``cores``.

    ``max(1, cores // jobs)``: 2 jobs on 2 cores get 1 thread each, 1 job gets both. More jobs
    than cores still get one thread each (the OS then shares the cores, without the
    oversubscription of every job's BLAS pool spinning on all of them).

    Parameters
    ----------
    jobs : int
        Jobs running at once, at least 1.
    cores : int, optional
        Cores available; the process's CPU affinity by default.

    Returns
    -------
    int
        Threads per job, at least 1.

    Examples
    --------
    >>> threads_per_job(2, cores=2), threads_per_job(1, cores=8), threads_per_job(3, cores=2)
    (1, 8, 1)
    """
    if int(jobs) < 1:
        raise DiversityInputError(f"jobs must be at least 1; got {jobs}.")
    cores = available_cores() if cores is None else int(cores)
    if cores < 1:
        raise DiversityInputError(f"cores must be at least 1; got {cores}.")
    return max(1, cores // int(jobs))


def thread_environment(threads: int) -> dict:
    """The environment variables that size BLAS and OpenMP thread pools to ``threads`` when they load.

    For processes started with it (Dask workers): ``{"OMP_NUM_THREADS": "1", ...}``.
    """
    return {name: str(max(1, int(threads))) for name in _THREAD_VARIABLES}


class limit_threads:
    """Context manager: BLAS/OpenMP (threadpoolctl) and torch thread pools limited to ``n`` threads.

    The previous limits come back on exit. torch is limited only when it is already imported
    (importing it here would cost seconds for jobs that never use it).
    """

    def __init__(self, n: int):
        self.n = max(1, int(n))
        self._controller = None
        self._torch_threads: Optional[int] = None

    def __enter__(self) -> limit_threads:
        from threadpoolctl import threadpool_limits

        self._controller = threadpool_limits(limits=self.n)
        torch = _imported_torch()
        if torch is not None:
            self._torch_threads = torch.get_num_threads()
            torch.set_num_threads(self.n)
        return self

    def __exit__(self, *exc) -> None:
        if self._controller is not None:
            self._controller.restore_original_limits()
        torch = _imported_torch()
        if torch is not None and self._torch_threads is not None:
            torch.set_num_threads(self._torch_threads)


def _imported_torch():
    """The torch module when some code already imported it, else None."""
    return sys.modules.get("torch")


@dataclass(frozen=True)
class Progress:
    """One progress report of a job: ``done`` of ``total``, a message and an optional payload."""

    done: float
    total: float
    message: str = ""
    data: Optional[dict] = None


class _Reporter:
    """The ``progress`` callback a job receives on its worker: sends reports, raises when cancelled."""

    def __init__(self, queue, event):
        self._queue, self._event = queue, event
        self._last_sent = 0.0
        self._last_check = 0.0
        self._pending: Optional[tuple] = None

    def __call__(self, done, total, message: str = "", **data) -> None:
        now = time.monotonic()
        if now - self._last_check >= _CANCEL_CHECK_INTERVAL:
            self._last_check = now
            if self._event.is_set():
                raise JobCancelledError("cancelled")
        item = (float(done), float(total), str(message), data or None)
        # payloads (a curve's new point) are never dropped; plain reports are thinned out
        if data or now - self._last_sent >= _PROGRESS_INTERVAL:
            self._queue.put(item)
            self._last_sent, self._pending = now, None
        else:
            self._pending = item

    def flush(self) -> None:
        if self._pending is not None:
            self._queue.put(self._pending)
            self._pending = None


def _run_job(fn: Callable, job_id: str, threads: int) -> tuple:
    """Worker side of a job: ``(fn(progress), the project's warnings meanwhile)`` under the thread limits."""
    from distributed import Event, Queue

    queue, event = Queue(f"progress-{job_id}"), Event(f"cancel-{job_id}")
    reporter = _Reporter(queue, event)
    if event.is_set():
        raise JobCancelledError("cancelled")
    with limit_threads(threads), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn(reporter)
        finally:
            reporter.flush()
    # the warnings travel as text, once each: their classes may not unpickle in the caller
    notes = list(dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, DiversityWarning)))
    return value, notes


class Job:
    """A job submitted to a :class:`JobPool`: poll its progress, cancel it, wait for its result."""

    def __init__(self, pool: JobPool, future, job_id: str, label: str):
        self._pool, self._future, self.job_id, self.label = pool, future, job_id, label
        from distributed import Event, Queue

        self._queue = Queue(f"progress-{job_id}", client=pool.client)
        self._event = Event(f"cancel-{job_id}", client=pool.client)
        self._cancelled = False
        self._notes: list = []

    def reports(self) -> list[Progress]:
        """Every progress report that arrived since the last call, oldest first (never blocks long)."""
        out = []
        try:
            size = self._queue.qsize()
        except Exception:  # noqa: BLE001 - the scheduler went away: the result says why
            return out
        if size:
            for item in self._queue.get(batch=size):
                out.append(Progress(*item))
        return out

    def done(self) -> bool:
        """Whether the job has finished (result, error or cancellation)."""
        return self._future.done()

    def cancel(self) -> None:
        """Stop the job: a queued job never starts, a running one stops at its next progress report."""
        if self._cancelled:
            return
        self._cancelled = True
        try:
            self._event.set()
            self._future.cancel()
        except Exception:  # noqa: BLE001 - cancelling a job whose cluster is gone has nothing left to stop
            pass
        self._pool._forget(self)

    def warnings(self) -> list:
        """The project's warnings (:class:`~diversity_core.exceptions.DiversityWarning`) the job raised, as text."""
        return list(self._notes)

    def result(self, timeout: Optional[float] = None) -> Any:
        """The job's value; its own exception when it failed; :class:`WorkerLostError` when its worker died."""
        from distributed import KilledWorker

        try:
            value, self._notes = self._future.result(timeout=timeout)
            return value
        except KilledWorker:
            raise WorkerLostError(
                f"the worker process running '{self.label}' stopped before it finished (it may have run "
                "out of memory or been killed); try again, or with less data or a smaller memory budget."
            ) from None
        finally:
            if self._future.done():
                self._pool._forget(self)


class JobPool:
    """Worker processes for heavy jobs: a LocalCluster of its own, or a running Dask scheduler.

    Use :func:`start_pool` to make one. Each job runs with ``threads`` BLAS/OpenMP/torch threads
    (the cores of a worker's machine divided by the jobs it runs at once).
    """

    def __init__(self, client, *, cluster=None, threads: int = 1):
        self.client, self.cluster, self.threads = client, cluster, int(threads)
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        """The scheduler's address."""
        return self.client.scheduler.address

    def workers(self) -> int:
        """Workers connected now."""
        return len(self.client.scheduler_info().get("workers", {}))

    def submit(self, fn: Callable, *, label: str = "job") -> Job:
        """Run ``fn(progress)`` on a worker; returns at once with the :class:`Job`.

        ``fn`` and what it closes over travel to the worker (cloudpickle); its return value
        travels back. ``progress(done, total, message, **data)`` inside it reports to the job.
        """
        job_id = uuid.uuid4().hex
        future = self.client.submit(_run_job, fn, job_id, self.threads, key=f"{_key_name(label)}-{job_id}",
                                    pure=False, retries=0)
        job = Job(self, future, job_id, label)
        with self._lock:
            self._jobs[job_id] = job
        return job

    def running(self) -> int:
        """Jobs submitted through this pool that have not finished or been cancelled."""
        with self._lock:
            return sum(1 for j in self._jobs.values() if not j.done())

    def _forget(self, job: Job) -> None:
        with self._lock:
            self._jobs.pop(job.job_id, None)

    def close(self) -> None:
        """Cancel the jobs still running and shut the pool (and its own cluster) down."""
        with self._lock:
            jobs = list(self._jobs.values())
        for job in jobs:
            job.cancel()
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def _key_name(label: str) -> str:
    """A Dask key prefix from a job's label (letters, digits and dashes)."""
    cleaned = "".join(c if c.isalnum() else "-" for c in label.lower()).strip("-")
    return cleaned[:40] or "job"


def start_pool(address: Optional[str] = None, *, workers: Optional[int] = None,
               threads: Optional[int] = None, timeout: float = 10.0,
               memory_limit: Any = 0, pythonpath: Sequence[str] = (), nice: int = 0,
               dashboard: bool = False) -> JobPool:
    """Start a :class:`JobPool`: a LocalCluster of worker processes, or a connection to ``address``.

    The LocalCluster runs in a process of its own (``python -m diversity_core.workers``), which
    stops when the pool closes or this process ends. Started from here, its worker processes
    would be spawned from this process and re-import its main module, which in a Streamlit
    server is the app's script: every worker would run the app.

    The LocalCluster listens on 127.0.0.1 and speaks TLS only, with a key and a self-signed
    certificate made for it here (:func:`_credentials`): they travel to its process through a pipe
    and live in memory only, so no other account of the machine can read them, and Dask refuses
    every connection that does not present them (a plain ``tcp://`` client, or another
    certificate). A scheduler given by ``address`` is reached with Dask's own security settings
    (``distributed.comm.tls.*`` in the Dask configuration: ``tls://`` and the cluster's certificates).

    Parameters
    ----------
    address : str, optional
        A running Dask scheduler (``tcp://host:8786``). None starts a LocalCluster.
    workers : int, optional
        Worker processes of the LocalCluster, one job each; :func:`default_workers` by default.
    threads : int, optional
        BLAS/OpenMP/torch threads per job: :func:`threads_per_job` (cores // workers) for a
        LocalCluster; 1 with a scheduler unless given (its workers' machines are unknown here).
    timeout : float
        Seconds to wait for the scheduler to answer (a LocalCluster gets 60 s more to start).
    memory_limit : str or int
        Memory per LocalCluster worker past which Dask restarts it; 0 (the default) sets none:
        each job keeps to the project's memory budget, and a worker the OS stops for lack of
        memory gives :class:`WorkerLostError`.
    nice : int
        Niceness added to the LocalCluster's processes (Unix): a server gives its jobs a lower
        CPU priority than its own drawing, so pages answer while jobs run.
    pythonpath : sequence of str
        Folders the LocalCluster's workers import from first (the app's folder, whose ``ui``
        package defines its jobs); then this process's ``sys.path``.
    dashboard : bool
        Serve the LocalCluster's Dask dashboard on a free port of 127.0.0.1 (it needs ``bokeh``).
        Off by default: it shows every job's name and the workers' state without any login.

    Returns
    -------
    JobPool

    Raises
    ------
    DiversityInputError
        The scheduler cannot be reached, or the cluster cannot start.
    MissingDependencyError
        ``distributed`` is not installed (extra ``[dask]``).
    """
    from ._optional import require

    distributed = require("distributed", purpose="running jobs in worker processes")
    cluster = None
    try:
        if address is not None:
            client = distributed.Client(address, timeout=float(timeout))
            threads = 1 if threads is None else int(threads)
        else:
            n = default_workers() if workers is None else int(workers)
            if n < 1:
                raise DiversityInputError(f"workers must be at least 1; got {workers}.")
            threads = threads_per_job(n) if threads is None else int(threads)
            cluster = _ClusterProcess(n, threads, memory_limit, pythonpath, timeout=60.0 + float(timeout),
                                      nice=int(nice), dashboard=bool(dashboard))
            client = distributed.Client(cluster.address, security=cluster.security, timeout=float(timeout))
    except (OSError, TimeoutError, ValueError) as exc:
        if cluster is not None:
            cluster.close()
        raise unreachable(address, exc, "or leave the scheduler out to use local worker processes") from None
    return JobPool(client, cluster=cluster, threads=threads)


def unreachable(address: Optional[str], exc: BaseException, alternative: str) -> DiversityInputError:
    """The error for a Dask scheduler (or a local cluster, ``address=None``) that did not answer."""
    where = f"the Dask scheduler at {address}" if address else "a local Dask cluster"
    return DiversityInputError(
        f"cannot reach {where} ({type(exc).__name__}: {exc}); start one with `dask scheduler` and "
        f"`dask worker ADDRESS`, {alternative}."
    )


#: Seconds the cluster's process gives its workers to stop before it exits anyway.
_CLOSE_TIMEOUT = 20


def _credentials() -> tuple:
    """``(certificate, private key)`` in PEM: a fresh self-signed pair for one local pool's TLS.

    Made by Dask (:meth:`distributed.security.Security.temporary`, which needs ``cryptography``),
    else by the ``openssl`` command in a private folder (mode 0700) that is removed at once: the
    pair then lives in memory only, in this process and the pool's.

    Raises
    ------
    DiversityInputError
        Neither ``cryptography`` nor ``openssl`` is available.
    """
    from distributed.security import Security

    try:
        security = Security.temporary()
    except ImportError:
        pass
    else:
        return security.tls_ca_file, security.tls_client_key
    openssl = shutil.which("openssl")
    if openssl is None:
        raise DiversityInputError(
            "the local worker processes speak TLS with a key made for them, which needs the `cryptography` "
            "package or the `openssl` command; install one (pip install cryptography), or run the jobs in "
            "the app's own process (--workers 0).")
    folder = tempfile.mkdtemp(prefix="diversity-pool-")  # mode 0700: this user only
    try:
        cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
        # an elliptic-curve key (20 ms) where this openssl makes one, else RSA (0.4 s)
        for algorithm in (["ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"], ["rsa:2048"]):
            done = subprocess.run([openssl, "req", "-x509", "-newkey", *algorithm, "-nodes", "-days", "3650",
                                   "-subj", "/CN=dask-internal", "-keyout", key, "-out", cert],
                                  capture_output=True, text=True, timeout=60)
            if done.returncode == 0:
                with open(cert, encoding="ascii") as f_cert, open(key, encoding="ascii") as f_key:
                    return f_cert.read(), f_key.read()
        raise DiversityInputError(f"openssl could not make the worker pool's TLS key: {done.stderr.strip()[-300:]}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _security(cert: str, key: str):
    """The Dask :class:`~distributed.security.Security` of every role of a local pool.

    The scheduler, the workers and the client: TLS required, both sides showing ``cert``, also the
    only trusted authority.
    """
    from distributed.security import Security

    return Security(require_encryption=True, tls_ca_file=cert, tls_client_cert=cert, tls_client_key=key,
                    tls_scheduler_cert=cert, tls_scheduler_key=key, tls_worker_cert=cert, tls_worker_key=key)


class _ClusterProcess:
    """A LocalCluster in a child process: its scheduler's address, the ``security`` to reach it, :meth:`close`.

    The child reads the pool's TLS key and certificate as the first line of its standard input
    (never its command line or environment, which other accounts may read), prints the address as
    one JSON line, then waits until its standard input closes (:meth:`close`, or this process
    ending for any reason: killed included) and shuts the cluster down; SIGTERM, SIGINT and SIGHUP
    shut it down too. Its workers end with it (Dask's nanny processes watch their parent).
    """

    def __init__(self, workers: int, threads: int, memory_limit: Any, pythonpath: Sequence[str], *,
                 timeout: float, nice: int = 0, dashboard: bool = False):
        env = dict(os.environ)
        # the workers import what this process can (as spawned children of it would): its
        # sys.path after the folders asked for
        here = [p for p in sys.path if p and os.path.isdir(p)]
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([*map(str, pythonpath), *here]))
        cert, key = _credentials()
        self.security = _security(cert, key)
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "diversity_core.workers", json.dumps(
                {"workers": workers, "threads": threads, "memory_limit": memory_limit, "nice": nice,
                 "dashboard": dashboard})],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
        try:
            self._proc.stdin.write(json.dumps({"cert": cert, "key": key}) + "\n")
            self._proc.stdin.flush()
        except OSError:
            pass  # it ended already: its answer below says so
        line = _read_line(self._proc, timeout)
        try:
            self.address = json.loads(line)["address"]
        except (ValueError, KeyError, TypeError):
            self.close()
            raise OSError(f"the local cluster did not start ({line.strip()[:200] or 'no answer'})") from None

    @property
    def pid(self) -> int:
        """The cluster process's id."""
        return self._proc.pid

    def close(self) -> None:
        if self._proc.poll() is None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=_CLOSE_TIMEOUT + 10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


def _read_line(proc: subprocess.Popen, timeout: float) -> str:
    """The first line ``proc`` prints, waiting at most ``timeout`` seconds ("" when none came)."""
    out: list = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return out[0] if out else ""


def _stop_on_signals() -> None:
    """SIGTERM and SIGHUP end this process the way SIGINT does.

    An exception that unwinds the ``finally`` blocks (the cluster's shutdown), instead of an exit
    that skips them.
    """

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), stop)


def local_cluster(n_workers: int, *, env: dict, security=None, dashboard: bool = False, memory_limit=0):
    """A ``distributed.LocalCluster`` that only this user can reach: TLS on 127.0.0.1, no dashboard.

    Every local pool of the project starts here (the app's :func:`start_pool` in a process of its
    own, and ``diversity score --dask local:N``). The scheduler and the workers listen on
    127.0.0.1 and require TLS with ``security`` (:func:`_security`; default: a fresh key pair from
    :func:`_credentials`, held in memory only), so another local account that finds the port
    cannot submit work (Dask runs what a client submits). The dashboard is off unless asked for,
    and then on 127.0.0.1; the HTTP ports Dask opens anyway serve no route.

    Parameters
    ----------
    n_workers : int
        Worker processes, one thread each.
    env : dict
        Environment of the workers (their BLAS/OpenMP thread counts).
    security : distributed.security.Security, optional
    dashboard : bool, default False
    memory_limit : int or str, default 0
        Per worker; 0 sets none.

    Returns
    -------
    distributed.LocalCluster
        A ``distributed.Client(cluster)`` takes its security from it.
    """
    import dask
    import distributed

    if security is None:
        security = _security(*_credentials())
    config = {
        # a job that kills its worker (out of memory) fails at once instead of being re-run on the
        # next worker, three times over, by Dask's default
        "distributed.scheduler.allowed-failures": 0, "distributed.worker.daemon": False,
    }
    if not dashboard:
        # the scheduler and each worker still open an HTTP port (no TLS, no login): it serves nothing
        # (Dask's routes include an HTTP API and a proxy), on 127.0.0.1
        config.update({"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": []})
    with dask.config.set(config):
        return distributed.LocalCluster(
            n_workers=n_workers, threads_per_worker=1, processes=True,
            # no dashboard unless asked (it has no login); either way on this machine only, any free
            # port (not 8787, where the scheduler's HTTP port goes by default)
            dashboard_address="127.0.0.1:0", scheduler_kwargs={"dashboard": dashboard},
            memory_limit=memory_limit, env=env, scheduler_port=0, host="127.0.0.1",
            protocol="tls://", security=security)


def _serve(options: dict) -> None:
    """The child of :class:`_ClusterProcess`: run a LocalCluster until standard input closes."""
    _stop_on_signals()
    secret = json.loads(sys.stdin.readline() or "null")
    if not secret:
        return  # the parent ended before it sent the key

    threads = int(options["threads"])
    if options.get("nice"):
        os.nice(int(options["nice"]))  # the workers inherit it
    cluster = local_cluster(int(options["workers"]), env=thread_environment(threads),
                            security=_security(secret["cert"], secret["key"]),
                            dashboard=bool(options.get("dashboard")), memory_limit=options["memory_limit"])
    del secret
    try:
        print(json.dumps({"address": cluster.scheduler_address}), flush=True)
        sys.stdin.read()  # until the parent closes it, or ends
    finally:
        cluster.close(timeout=_CLOSE_TIMEOUT)


if __name__ == "__main__":
    _serve(json.loads(sys.argv[1]))
