"""Training runs of the RND score: the predictor learns the target on each run's training split.

Two paths. The MLP path trains every run at once: each run's network lives in a slice of
stacked weight tensors (runs, in, out) and all runs step together with batched matrix products
(the runs stay mathematically independent; SGD and Adam act elementwise). The image path trains
one pair of ``torch.nn.Module`` networks (small CNN or ResNet-18) per run, one run after the
other. Both return the train and validation MSEs of Eq. (1) after every epoch.
"""

from __future__ import annotations

import math

import numpy as np

from .._progress import report
from .networks import _build_network, _mlp_dims, _mlp_forward, _stacked_mlp, _torch

# Upper bound on activations held at once while evaluating (floats), so memory stays bounded.
_EVAL_FLOATS = 1 << 25


def _batch_bounds(train_size: int, batch_size: int):
    """(start, stop) of each mini-batch of an epoch; a lone last item joins the previous batch."""
    cuts = list(range(0, train_size, batch_size))
    if len(cuts) > 1 and train_size - cuts[-1] == 1:
        cuts.pop()
    cuts.append(train_size)
    return list(zip(cuts[:-1], cuts[1:]))


def _emit_curves(on_epoch, mse_t: np.ndarray, mse_v: np.ndarray) -> None:
    """Call ``on_epoch`` with the RND_i curves so far (NaN where an epoch has not run yet)."""
    if on_epoch is not None:
        with np.errstate(invalid="ignore", divide="ignore"):
            on_epoch((mse_v - mse_t) / (mse_v + mse_t))


def _run_mlp(
    X, splits, batch_orders, init_gens, *, lr, momentum, optimizer, batch_size, device, progress, on_epoch
):
    """Train every run's MLP predictor at once; return the (runs, epochs) train and validation MSEs."""
    torch = _torch()
    runs, n = len(splits), X.shape[0]
    epochs = len(batch_orders[0])
    train_size = splits[0][0].size
    dims = _mlp_dims(X.shape[1])
    target = _stacked_mlp(dims, init_gens, device)
    predictor = [p.requires_grad_() for p in _stacked_mlp(dims, init_gens, device)]
    Xd = torch.from_numpy(X).to(device)
    chunk = max(1, _EVAL_FLOATS // (runs * max(dims[1:])))
    with torch.inference_mode():
        Y = torch.cat(
            [_mlp_forward(target, Xd[a : a + chunk].expand(runs, -1, -1)) for a in range(0, n, chunk)], 1
        )
    is_train = torch.zeros(runs, n, dtype=torch.bool)
    for j, (tr, _) in enumerate(splits):
        is_train[j, torch.from_numpy(tr)] = True
    is_train = is_train.to(device)
    n_val = n - train_size
    train_idx = torch.from_numpy(np.stack([tr for tr, _ in splits])).to(device)  # (runs, k)
    X_train = Xd[train_idx]  # (runs, k, d), each run's own training items
    Y_train = Y[torch.arange(runs, device=device)[:, None], train_idx]  # (runs, k, out)
    opt = _make_optimizer(predictor, optimizer, lr, momentum)
    mse_t = torch.full((runs, epochs), math.nan, dtype=torch.float64, device=device)
    mse_v = torch.full((runs, epochs), math.nan, dtype=torch.float64, device=device)
    bounds = _batch_bounds(train_size, batch_size)
    total = runs * epochs
    for epoch in range(epochs):
        # Shuffle once per epoch (one gather), then the mini-batches are contiguous slices:
        # few, large operations keep the per-step overhead low.
        order = torch.from_numpy(np.stack([o[epoch] for o in batch_orders])).to(device)[..., None]
        xs = torch.gather(X_train, 1, order.expand(-1, -1, X_train.shape[2]))
        ys = torch.gather(Y_train, 1, order.expand(-1, -1, Y_train.shape[2]))
        for a, b in bounds:
            # Each run's loss is its own batch's MSELoss (mean over items and outputs). All runs
            # share the batch size, so the sum over runs is one summed squared error divided
            # by (batch x outputs); each parameter slice sees only its own run's loss.
            pred = _mlp_forward(predictor, xs[:, a:b])
            loss = torch.nn.functional.mse_loss(pred, ys[:, a:b], reduction="sum") / ((b - a) * ys.shape[2])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        with torch.inference_mode():
            sq_t = torch.zeros(runs, dtype=torch.float64, device=device)
            sq_v = torch.zeros(runs, dtype=torch.float64, device=device)
            for a in range(0, n, chunk):
                err = _mlp_forward(predictor, Xd[a : a + chunk].expand(runs, -1, -1)) - Y[:, a : a + chunk]
                err = err.square_().sum(-1, dtype=torch.float64)  # (runs, m)
                mask = is_train[:, a : a + chunk]
                sq_t += (err * mask).sum(1)
                sq_v += (err * ~mask).sum(1)
            mse_t[:, epoch] = sq_t / train_size
            mse_v[:, epoch] = sq_v / n_val
        report(progress, (epoch + 1) * runs, total, f"epoch {epoch + 1}/{epochs} of all {runs} runs")
        if on_epoch is not None:
            _emit_curves(on_epoch, mse_t.cpu().numpy(), mse_v.cpu().numpy())
    return mse_t.cpu().numpy(), mse_v.cpu().numpy()


def _make_optimizer(params, optimizer: str, lr: float, momentum: float):
    """SGD with momentum or Adam over ``params`` (foreach kernels: one launch per step, not per tensor)."""
    torch = _torch()
    if optimizer == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=momentum, foreach=True)
    return torch.optim.Adam(params, lr=lr, foreach=True)


def _forward_chunks(net, X, chunk: int):
    """``net(X)`` evaluated ``chunk`` items at a time, so activations stay bounded."""
    torch = _torch()
    return torch.cat([net(X[a : a + chunk]) for a in range(0, X.shape[0], chunk)])


def _calibrate_batchnorm(net, X, chunk: int) -> None:
    """Set every BatchNorm's running statistics to their averages over the whole data set."""
    torch = _torch()
    nn = torch.nn
    bns = [m for m in net.modules() if isinstance(m, nn.BatchNorm2d)]
    if not bns:
        return
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average over the chunks
    net.train()
    with torch.no_grad():
        for a in range(0, X.shape[0], chunk):
            if X.shape[0] - a > 1:
                net(X[a : a + chunk])
    for bn in bns:
        bn.momentum = 0.1


def _run_modules(
    X, splits, batch_orders, init_gens, *, architecture, lr, momentum, optimizer, batch_size, device, progress,
    on_epoch,
):
    """Train one convolutional predictor per run, run after run; return the train and validation MSEs."""
    torch = _torch()
    runs, n = len(splits), X.shape[0]
    epochs = len(batch_orders[0])
    Xd = torch.from_numpy(X).to(device)
    per_item = int(np.prod(X.shape[1:])) * 16  # rough activation floats alive per image
    chunk = int(np.clip(_EVAL_FLOATS // per_item, 2, 1024))
    mse_t = np.full((runs, epochs), np.nan)
    mse_v = np.full((runs, epochs), np.nan)
    bounds = _batch_bounds(splits[0][0].size, batch_size)
    total = runs * epochs
    for j in range(runs):
        target = _build_network(architecture, X.shape[1], init_gens[j], device)
        predictor = _build_network(architecture, X.shape[1], init_gens[j], device)
        # The target is a fixed function: its BatchNorm layers use statistics of the whole
        # data set, then it is frozen in eval mode.
        _calibrate_batchnorm(target, Xd, chunk)
        target.eval().requires_grad_(False)
        with torch.inference_mode():
            Y = _forward_chunks(target, Xd, chunk)
        Y = Y.clone()
        train = torch.from_numpy(splits[j][0]).to(device)
        is_train = torch.zeros(n, dtype=torch.bool, device=device)
        is_train[train] = True
        opt = _make_optimizer(list(predictor.parameters()), optimizer, lr, momentum)
        for epoch in range(epochs):
            predictor.train()
            order = torch.from_numpy(batch_orders[j][epoch]).to(device)
            for a, b in bounds:
                idx = train[order[a:b]]
                loss = (predictor(Xd[idx]) - Y[idx]).square().mean()  # torch.nn.MSELoss
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            predictor.eval()
            with torch.inference_mode():
                err = (_forward_chunks(predictor, Xd, chunk) - Y).square().sum(1, dtype=torch.float64)
                mse_t[j, epoch] = float(err[is_train].mean())
                mse_v[j, epoch] = float(err[~is_train].mean())
            report(progress, j * epochs + epoch + 1, total, f"run {j + 1}/{runs}, epoch {epoch + 1}/{epochs}")
            _emit_curves(on_epoch, mse_t, mse_v)
    return mse_t, mse_v
