"""The training-loop metrics (issue 25): batched updates equal one call; two gloo processes equal one."""

from __future__ import annotations

import json
import os
import socket

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

import diversity_core as dc  # noqa: E402
from diversity_core.evaluation import memorization, prdc  # noqa: E402
from diversity_core.exceptions import DiversityInputError  # noqa: E402
from diversity_core.metrics import PRDC, Memorization, VendiScore  # noqa: E402

RTOL = 1e-12
MEMORIZATION_KEYS = ("fraction_flagged", "authenticity", "baseline_fraction", "excess")


def _memorization_values(res) -> dict:
    """Every value ``Memorization.compute`` returns, from the one-shot result (with a reference)."""
    return {
        "fraction_flagged": res.fraction_flagged.value,
        "authenticity": res.authenticity,
        "baseline_fraction": res.baseline_fraction.value,
        "excess": res.excess,
    }


@pytest.fixture
def rng():
    return np.random.default_rng(25)


def _batches(X, sizes):
    start = 0
    for s in sizes:
        yield torch.as_tensor(X[start : start + s])
        start += s
    assert start == X.shape[0]


@pytest.mark.parametrize("kernel", ["cosine", "linear"])
@pytest.mark.parametrize("q", [0.5, 1.0, 2.0, "inf"])
def test_vendi_batched_equals_one_shot(rng, kernel, q):
    X = rng.normal(size=(150, 12))
    if kernel == "linear":
        X /= np.linalg.norm(X, axis=1, keepdims=True)  # unit rows: no diagonal warning
    m = VendiScore(kernel=kernel, q=q)
    for b in _batches(X, [1, 40, 64, 45]):
        m.update(b)
    assert float(m.compute()) == pytest.approx(dc.vendi_score(X, kernel=kernel, q=q), rel=RTOL)
    # memory independent of n: a d x d state, no feature list
    assert tuple(m.second_moment.shape) == (12, 12) and not hasattr(m, "features")


def test_vendi_weighted_and_several_orders(rng):
    X, w = rng.normal(size=(90, 8)), rng.uniform(0.1, 2.0, size=90)
    m = VendiScore(q=[0.0, 1.0, 2.0])
    m.update(torch.as_tensor(X[:50]), weights=torch.as_tensor(w[:50]))
    m.update(torch.as_tensor(X[50:]), weights=w[50:])
    want = dc.compute_spectrum(X, weights=w).profile([0.0, 1.0, 2.0])
    np.testing.assert_allclose(m.compute().numpy(), want, rtol=RTOL)


def test_vendi_other_kernels_keep_features_up_to_the_cap(rng):
    X = rng.normal(size=(60, 5))
    m = VendiScore(kernel="rbf", q=2.0, sigma=1.5, max_samples=60)
    for b in _batches(X, [30, 30]):
        m.update(b)
    assert float(m.compute()) == pytest.approx(dc.vendi_score(X, kernel="rbf", q=2.0, sigma=1.5), rel=RTOL)
    with pytest.raises(DiversityInputError, match="max_samples=60"):
        m.update(torch.as_tensor(X[:1]))


def test_vendi_reset_and_errors(rng):
    m = VendiScore()
    with pytest.raises(DiversityInputError, match="seen no items"), pytest.warns(UserWarning, match="before"):
        m.compute()
    m.update(torch.eye(3, dtype=torch.float64))
    with pytest.raises(DiversityInputError, match="5 columns but earlier batches had 3"):
        m.update(torch.ones(2, 5, dtype=torch.float64))
    assert int(m.n_items) == 3  # a refused batch leaves the state as it was
    m.reset()
    m.update(torch.eye(4, dtype=torch.float64))
    assert float(m.compute()) == pytest.approx(4.0, rel=RTOL)
    m.update(torch.zeros(2, 4, dtype=torch.float64))
    with pytest.raises(DiversityInputError, match="NaN or infinite values, or all-zero rows"):
        m.compute()
    m.reset()
    m.update(torch.tensor([[float("nan"), 1.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]))
    with pytest.raises(DiversityInputError, match="NaN or infinite"):
        m.compute()


@pytest.mark.parametrize("kernel", ["cosine", "linear", "rbf"])
def test_vendi_forward_gives_the_batch_value_and_accumulates(rng, kernel):
    # forward = update + the batch's own value; the first call sums a batch state into an empty one
    X = rng.normal(size=(70, 6))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    m = VendiScore(kernel=kernel, q=2.0)
    start = 0
    for b in _batches(X, [20, 35, 15]):
        batch = b.numpy()
        assert float(m(b)) == pytest.approx(dc.vendi_score(batch, kernel=kernel, q=2.0), rel=RTOL)
        start += batch.shape[0]
        assert int(m.n_items) == start
    assert float(m.compute()) == pytest.approx(dc.vendi_score(X, kernel=kernel, q=2.0), rel=RTOL)


@pytest.mark.parametrize("num_features", [None, 9])
def test_vendi_merge_state_equals_one_metric_over_both(rng, num_features):
    X, w = rng.normal(size=(50, 9)), rng.uniform(0.5, 2.0, size=50)
    a, b = VendiScore(q=1.0, num_features=num_features), VendiScore(q=1.0, num_features=num_features)
    a.update(torch.as_tensor(X[:30]), weights=w[:30])
    b.update(torch.as_tensor(X[30:]), weights=w[30:])
    a.merge_state(b)
    want = dc.vendi_score(X, q=1.0, weights=w)
    assert float(a.compute()) == pytest.approx(want, rel=RTOL)

    empty = VendiScore(q=1.0, num_features=num_features)  # an empty metric on the receiving side ...
    empty.merge_state(a)
    # torchmetrics counts update calls only, so a metric filled by merge_state alone warns
    with pytest.warns(UserWarning, match="called before the ``update`` method"):
        assert float(empty.compute()) == pytest.approx(want, rel=RTOL)
    a.merge_state(VendiScore(q=1.0, num_features=num_features))  # ... and on the incoming side
    assert float(a.compute()) == pytest.approx(want, rel=RTOL)
    assert tuple(a.second_moment.shape) == (9, 9)

    other = VendiScore()
    other.update(torch.ones(2, 4, dtype=torch.float64))
    with pytest.raises(DiversityInputError, match="VendiScore of 9 features with one of 4"):
        a.merge_state(other)
    with pytest.raises(DiversityInputError, match="num_features must be a positive integer"):
        VendiScore(num_features=0)


def test_prdc_and_memorization_batched_equal_one_call(rng):
    R, G = rng.normal(size=(80, 6)), rng.normal(size=(70, 6)) + 0.3
    m = PRDC(k=5)
    for b in _batches(R, [25, 55]):
        m.update(b, real=True)
    for b in _batches(G, [10, 60]):
        m.update(b, real=False)
    got, want = m.compute(), prdc(R, G, k=5, nn_method="exact", n_resamples=0)
    for name in ("precision", "recall", "density", "coverage"):
        assert float(got[name]) == pytest.approx(getattr(want, name).value, rel=RTOL, abs=0)

    T = rng.normal(size=(60, 6))
    G2 = np.vstack([T[:10] + 1e-3, rng.normal(size=(30, 6))])
    mem = Memorization()
    mem.update(torch.as_tensor(G2[:15]), train=torch.as_tensor(T[:30]), reference=torch.as_tensor(R[:20]))
    mem.update(torch.as_tensor(G2[15:]), train=torch.as_tensor(T[30:]), reference=torch.as_tensor(R[20:]))
    got, want = mem.compute(), _memorization_values(memorization(G2, T, reference=R, nn_method="exact"))
    assert set(got) == set(want) == set(MEMORIZATION_KEYS)
    for name in MEMORIZATION_KEYS:
        assert float(got[name]) == pytest.approx(want[name], rel=RTOL, abs=0), name
    assert float(got["fraction_flagged"]) >= 10 / 40  # the ten near-copies are flagged


def test_reference_metrics_cap_and_missing_sets(rng):
    m = PRDC(max_samples=10)
    m.update(torch.zeros(10, 2), real=True)
    with pytest.raises(DiversityInputError, match="max_samples=10"):
        m.update(torch.zeros(1, 2), real=True)
    with pytest.raises(DiversityInputError, match="real=False"):
        m.compute()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world, port, X, R, G, T, folder):
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        vendi, rbf, pr = VendiScore(num_features=X.shape[1]), VendiScore(kernel="rbf", sigma=2.0), PRDC(k=3)
        lone = VendiScore(q=2.0)  # no num_features, and only rank 0 sees batches: rank 1's state stays 0 x 0
        for i in range(rank, X.shape[0] // 10, world):  # batches of 10 dealt round-robin
            vendi.update(torch.as_tensor(X[10 * i : 10 * i + 10]))
            rbf.update(torch.as_tensor(X[10 * i : 10 * i + 10]))
        if rank == 0:
            lone.update(torch.as_tensor(X))
        half = slice(rank * R.shape[0] // world, (rank + 1) * R.shape[0] // world)
        pr.update(torch.as_tensor(R[half]), real=True)
        pr.update(torch.as_tensor(G[half]), real=False)
        mem = Memorization()
        for what, A in (("generated", G), ("train", T), ("reference", R)):
            part = slice(rank * A.shape[0] // world, (rank + 1) * A.shape[0] // world)
            mem.update(**{what: torch.as_tensor(A[part])})
        values = {"vendi": float(vendi.compute()), "rbf": float(rbf.compute()), "lone": float(lone.compute())}
        values.update({f"prdc.{k}": float(v) for k, v in pr.compute().items()})
        values.update({f"memorization.{k}": float(v) for k, v in mem.compute().items()})
        with open(os.path.join(folder, f"rank{rank}.json"), "w") as f:
            json.dump(values, f)
    finally:
        dist.destroy_process_group()


def test_two_gloo_processes_equal_one(rng, tmp_path):
    X, R, G = rng.normal(size=(60, 7)), rng.normal(size=(40, 7)), rng.normal(size=(40, 7))
    T = np.vstack([G[:8] + 1e-3, rng.normal(size=(42, 7))])  # eight generated items copy training items
    torch.multiprocessing.start_processes(
        _worker, args=(2, _free_port(), X, R, G, T, str(tmp_path)), nprocs=2, join=True, start_method="spawn"
    )
    one = {
        "vendi": dc.vendi_score(X),
        "rbf": dc.vendi_score(X, kernel="rbf", sigma=2.0),
        "lone": dc.vendi_score(X, q=2.0),
    }
    res = prdc(R, G, k=3, nn_method="exact", n_resamples=0)
    one.update({f"prdc.{k}": getattr(res, k).value for k in ("precision", "recall", "density", "coverage")})
    mem = _memorization_values(memorization(G, T, reference=R, nn_method="exact"))
    assert mem["fraction_flagged"] >= 8 / 40  # the copies are flagged: the comparison can fail
    one.update({f"memorization.{k}": v for k, v in mem.items()})
    for rank in (0, 1):
        got = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert set(got) == set(one)
        for name, value in one.items():
            assert got[name] == pytest.approx(value, rel=RTOL, abs=0), (rank, name)


def test_lightning_callback_logs_every_n_epochs():
    L = pytest.importorskip("lightning")
    from diversity_core.metrics import DiversityCallback

    seen = []

    class Recorded(VendiScore):
        def compute(self):
            seen.append(int(self.n_items))
            return super().compute()

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(4, 4)

        def training_step(self, batch, batch_idx):
            out = self.net(batch[0])
            return {"loss": out.pow(2).mean(), "outputs": out.detach()}

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(40, 4)), batch_size=10)
    cb = DiversityCallback({"vendi": Recorded()}, every_n_epochs=2, features=lambda m, o, b: o["outputs"])
    trainer = L.Trainer(
        max_epochs=3,
        callbacks=[cb],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )
    trainer.fit(Module(), data)
    assert seen == [40]  # epoch 2 of 3 only, with that epoch's 40 items
    assert 1.0 <= float(trainer.callback_metrics["vendi"]) <= 4.0
    with pytest.raises(DiversityInputError, match="every_n_epochs"):
        DiversityCallback({"vendi": VendiScore()}, every_n_epochs=0)
