r"""Equivalent of ``vendi_score.text_utils``: n-gram and embedding Vendi scores, n-gram diversity, BLEU.

Reached as ``vendi.text_utils`` (``from diversity_core.compat.vendi import text_utils``).

n-gram Vendi score
------------------
For orders :math:`n_1, \dots, n_N` (any list, ``ns=[1, 2, 3, 4]`` by default) the kernel is the
mean of the cosine similarities of the n-gram count vectors :math:`\phi^{n}`,

.. math:: K_{ij} = \frac{1}{N}\sum_{m=1}^{N}
          \frac{\langle\phi^{n_m}(x_i), \phi^{n_m}(x_j)\rangle}{\|\phi^{n_m}(x_i)\|\,\|\phi^{n_m}(x_j)\|}

(Sec. 4.5 and App. B of the VS paper), computed through its explicit feature map (the
normalised count blocks scaled by :math:`1/\sqrt N`), so the spectrum takes the dual path when
the vocabulary is smaller than the number of texts. Case is kept by default (``lowercase=False``,
as in the package); the tokenizer is any function ``str -> list of str``.

Differences from the package
----------------------------
- Tokenizer: the package's default is NLTK's ``word_tokenize`` (NLTK is not a dependency here);
  the default here is :func:`default_tokenizer`, which splits words and punctuation the same way
  but keeps contractions whole (``don't``, where NLTK gives ``do``, ``n't``) and splits numbers
  and hyphenated words at the punctuation. Pass ``tokenizer=nltk.word_tokenize`` to get the
  package's tokens exactly.
- Short texts: a text with fewer tokens than an order n has no n-gram of that order; in the
  package its count vector is zero, so the kernel's diagonal is below 1 for it (its eigenvalues
  no longer sum to 1, and two identical short texts are not identical). Here such a text
  contributes its whole token sequence as its one order-n feature, the convention of
  :func:`diversity_core.featurizers.text.ngram_features`: every text has unit self-similarity.
  The two agree whenever every text has at least ``max(ns)`` tokens.
- ``ngram_vendi_score`` takes ``q`` and ``lowercase`` (the package accepts and ignores any keyword);
  it runs on SciPy >= 1.14, where the package's fails (``csr_matrix.A`` was removed).
- BLEU is computed here (NLTK's ``sentence_bleu`` definition with its smoothing method 1: zero
  n-gram matches count as 0.1), word-level; the package's ``bleu`` passes untokenised strings to
  NLTK, which then scores characters.
- ``embedding_vendi_score`` and ``get_embeddings`` default to the offline all-MiniLM-L6-v2
  sentence embeddings of :mod:`diversity_core.featurizers.text` (the package downloads
  ``princeton-nlp/unsup-simcse-roberta-base`` from the Hugging Face hub, which is not reachable
  offline): the numbers differ from the package's default. A caller's own Hugging Face model and
  tokenizer (``model=``, ``tokenizer=``) or a local model directory (``model_path=``) are run as
  in the package (pooler output, else the first token's hidden state).
- Left out: ``get_tokenizer`` (downloads RoBERTa's tokenizer from the hub) and ``get_mnli``
  (downloads MultiNLI with the ``datasets`` package).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import scipy.sparse as sp

from .._config import chunk_rows
from .._optional import require
from .._orders import check_q
from .._validation import check_scalar
from ..exceptions import DiversityInputError
from ..featurizers.text import minilm_embeddings, tokenize
from ..spectrum import compute_spectrum
from .vendi_data import to_batches

__all__ = [
    "default_tokenizer",
    "sklearn_tokenizer",
    "get_ngrams",
    "add_ngrams_to_examples",
    "single_ngram_diversity",
    "ngram_diversity",
    "ngram_vendi_score",
    "bleu",
    "self_bleu",
    "pairwise_bleu",
    "get_embeddings",
    "add_embeddings_to_examples",
    "embedding_vendi_score",
]

#: BLEU: orders 1..4 with equal weights; a zero match count becomes this (Chen & Cherry's method 1).
BLEU_MAX_ORDER = 4
BLEU_EPSILON = 0.1


# ---------------------------------------------------------------------------------------
# tokenizers and input checks
# ---------------------------------------------------------------------------------------
def default_tokenizer(text: str) -> list:
    """Word and punctuation tokens of ``text``, case kept (:func:`diversity_core.featurizers.text.tokenize`).

    Examples
    --------
    >>> default_tokenizer("Run, Spot, run.")
    ['Run', ',', 'Spot', ',', 'run', '.']
    """
    return tokenize(text, lowercase=False)


def sklearn_tokenizer() -> Callable:
    """scikit-learn's default word tokenizer (tokens of two or more word characters, punctuation dropped)."""
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer().build_tokenizer()


def _check_tokenizer(tokenizer) -> Callable:
    """The tokenizer to use: :func:`default_tokenizer` for None, else a callable."""
    if tokenizer is None:
        return default_tokenizer
    if not callable(tokenizer):
        raise DiversityInputError(
            f"tokenizer must be a function str -> list of str (or None); got {type(tokenizer).__name__}."
        )
    return tokenizer


def _check_sents(sents, name: str = "sents") -> list:
    """A non-empty list of strings."""
    if isinstance(sents, str):
        raise DiversityInputError(f"{name} must be a sequence of strings, not a single string.")
    sents = list(sents)
    if not sents:
        raise DiversityInputError(f"{name} is empty; there is nothing to score.")
    bad = [i for i, s in enumerate(sents) if not isinstance(s, str)]
    if bad:
        raise DiversityInputError(f"{name} must hold strings; items {bad[:5]} are not.")
    return sents


def _tokens(sents, tokenizer, *, lowercase: bool = False, name: str = "sents") -> list:
    """Token lists of strings (tokenised), or of already tokenised sentences (kept as lists)."""
    if isinstance(sents, str):
        raise DiversityInputError(f"{name} must be a sequence of sentences, not a single string.")
    sents = list(sents)
    if not sents:
        raise DiversityInputError(f"{name} is empty; there is nothing to score.")
    if all(isinstance(s, str) for s in sents):
        tok = _check_tokenizer(tokenizer)
        out = []
        for i, s in enumerate(sents):
            toks = tok(s.lower() if lowercase else s)
            if isinstance(toks, str):
                raise DiversityInputError(
                    f"the tokenizer returned a string for sentence {i}; it must return a list of tokens."
                )
            out.append(list(toks))
        return out
    if any(isinstance(s, str) for s in sents):
        raise DiversityInputError(f"{name} mixes strings and token lists; give one kind.")
    return [list(s) for s in sents]


def _check_orders(ns) -> list:
    """A non-empty list of positive integer n-gram orders (repeats allowed: they weigh more)."""
    if isinstance(ns, (int, np.integer)) and not isinstance(ns, bool):
        raise DiversityInputError(f"ns is a list of n-gram orders such as [1, 2, 3, 4]; got the number {ns}.")
    orders = [check_scalar(n, "each n-gram order", int, min_val=1, max_val=64) for n in ns]
    if not orders:
        raise DiversityInputError("ns is empty; give at least one n-gram order.")
    return orders


def _check_one_q(q) -> float:
    """One order q of the Vendi score."""
    qs = check_q(q)
    if qs.size != 1:
        raise DiversityInputError(f"q must be one order; got {qs.size}.")
    return float(qs.ravel()[0])


# ---------------------------------------------------------------------------------------
# n-gram counts, n-gram diversity
# ---------------------------------------------------------------------------------------
def get_ngrams(sents, n=1, tokenizer=None, return_vectorizer=False, lowercase=False, **kwargs):
    """Bag-of-n-grams count matrix of the sentences (scikit-learn's ``CountVectorizer``).

    Parameters
    ----------
    sents : sequence of str
    n : int or (int, int), default 1
        One order, or an inclusive range of orders ``(lo, hi)``.
    tokenizer : callable, optional
        ``str -> list of str``; default :func:`default_tokenizer`.
    return_vectorizer : bool, default False
        Also return the fitted ``CountVectorizer`` (its vocabulary names the columns).
    lowercase : bool, default False
        Lower-case before tokenising.
    **kwargs
        Further ``CountVectorizer`` arguments (``min_df``, ``stop_words``, ...).

    Returns
    -------
    scipy.sparse.csr_matrix of shape (len(sents), n_features), or (matrix, vectorizer)

    Raises
    ------
    DiversityInputError
        No sentence has an n-gram of the requested order.
    """
    from sklearn.feature_extraction.text import CountVectorizer

    sents = _check_sents(sents)
    lo, hi = n if isinstance(n, tuple) else (n, n)
    lo = check_scalar(lo, "n", int, min_val=1)
    hi = check_scalar(hi, "n", int, min_val=lo)
    kwargs.setdefault("token_pattern", None)  # unused with a tokenizer; None keeps sklearn quiet
    vectorizer = CountVectorizer(
        tokenizer=_check_tokenizer(tokenizer), ngram_range=(lo, hi), lowercase=lowercase, **kwargs
    )
    try:
        X = vectorizer.fit_transform(sents)
    except ValueError as exc:
        if "empty vocabulary" in str(exc):
            raise DiversityInputError(
                f"no sentence has an n-gram of order {lo if lo == hi else (lo, hi)}; the sentences are "
                "too short (or every token was filtered out). Use smaller orders."
            ) from None
        raise DiversityInputError(f"n-gram counting failed: {exc}") from None
    if return_vectorizer:
        return X, vectorizer
    return X


def add_ngrams_to_examples(examples, n=1, tokenizer=None, return_vectorizer=False, **kwargs):
    """Store each example's n-gram count row in ``example.features[f"{n}-grams"]``.

    Returns the examples, or ``(examples, vectorizer)`` with ``return_vectorizer=True`` (the
    package ignores that flag). Other keywords go to :func:`get_ngrams`.
    """
    examples = list(examples)
    X, vectorizer = get_ngrams([e.x for e in examples], n=n, tokenizer=tokenizer, return_vectorizer=True, **kwargs)
    for e, x in zip(examples, X):
        e.features[f"{n}-grams"] = x
    return (examples, vectorizer) if return_vectorizer else examples


def single_ngram_diversity(sents, n, tokenizer=None, **kwargs) -> float:
    """Distinct n-grams divided by total n-grams over all sentences (Li et al., 2016).

    Keywords go to :func:`get_ngrams` (e.g. ``lowercase=True``).

    Examples
    --------
    >>> single_ngram_diversity(["a b", "a b"], 1)
    0.5
    """
    X = get_ngrams(sents, n=n, tokenizer=tokenizer, **kwargs)
    return float(X.shape[1] / X.sum())


def ngram_diversity(sents, ns=(1, 2, 3, 4), tokenizer=None, **kwargs) -> float:
    """Mean of :func:`single_ngram_diversity` over the orders ``ns``.

    Raises :class:`~diversity_core.exceptions.DiversityInputError` when no sentence has an
    n-gram of some order (as the package does, with a clearer message).
    """
    orders = _check_orders(ns)
    return float(np.mean([single_ngram_diversity(sents, n, tokenizer=tokenizer, **kwargs) for n in orders]))


def _order_block(token_lists: list, m: int) -> sp.csr_matrix:
    """Unit-norm rows of order-m n-gram counts; a text shorter than m counts its whole token sequence once."""
    vocab: dict = {}
    indptr = [0]
    indices: list = []
    data: list = []
    for toks in token_lists:
        # a sequence shorter than m is a tuple of length < m, so it never equals an m-gram
        grams = zip(*(toks[i:] for i in range(m))) if len(toks) >= m else [tuple(toks)]
        counts: dict = {}
        for g in grams:
            j = vocab.setdefault(g, len(vocab))
            counts[j] = counts.get(j, 0) + 1
        cols = sorted(counts)
        vals = np.asarray([counts[c] for c in cols], dtype=np.float64)
        vals /= math.sqrt(float(np.dot(vals, vals)))
        indices.extend(cols)
        data.extend(vals.tolist())
        indptr.append(len(indices))
    return sp.csr_matrix(
        (np.asarray(data), np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
        shape=(len(token_lists), len(vocab)),
    )


def _ngram_feature_map(token_lists: list, orders: list) -> sp.csr_matrix:
    """Explicit feature map of the mean-over-orders n-gram cosine kernel: Phi Phi^T = K."""
    blocks = {m: _order_block(token_lists, m) for m in set(orders)}
    return sp.hstack([blocks[m] for m in orders], format="csr") * (1.0 / math.sqrt(len(orders)))


def ngram_vendi_score(sents, ns=(1, 2, 3, 4), tokenizer=None, *, q=1, lowercase=False) -> float:
    r"""Vendi score of order q of texts under the n-gram overlap kernel (mean over the orders ``ns``).

    Parameters
    ----------
    sents : sequence of str
        The texts; each needs at least one token.
    ns : sequence of int, default (1, 2, 3, 4)
        The n-gram orders whose cosine kernels are averaged (any list; a repeated order weighs
        more, as in the package).
    tokenizer : callable, optional
        ``str -> list of str``; default :func:`default_tokenizer` (see the module docstring for
        how it differs from NLTK's ``word_tokenize``, the package's default).
    q : float or "inf", default 1
        Order of the Vendi score (keyword-only; the package has VS_1 only).
    lowercase : bool, default False
        Lower-case before tokenising (the package always keeps case).

    Returns
    -------
    float
        1 for a single text.

    Raises
    ------
    DiversityInputError
        A text without tokens, bad orders.

    Notes
    -----
    Equal to the package's number when every text has at least ``max(ns)`` tokens and the
    same tokenizer is used; otherwise see the module docstring. Cost: O(total tokens x len(ns))
    for the counts, then dual O(n V^2) or dense O(n^3) for the spectrum (V distinct n-grams).

    Examples
    --------
    >>> sents = ["Look, Jane.", "See Spot.", "See Spot run.", "Run, Spot, run.", "Jane sees Spot run."]
    >>> round(ngram_vendi_score(sents, ns=[1, 2]), 2)   # the package's README: 3.91
    3.91
    """
    texts = _check_sents(sents)
    orders = _check_orders(ns)
    q = _check_one_q(q)
    token_lists = _tokens(texts, tokenizer, lowercase=lowercase)
    empty = [i for i, toks in enumerate(token_lists) if not toks]
    if empty:
        raise DiversityInputError(
            f"texts {empty[:5]} have no tokens, so no similarity to anything; remove empty texts first."
        )
    if len(token_lists) == 1:
        return 1.0
    return compute_spectrum(_ngram_feature_map(token_lists, orders), kernel="linear").vendi(q)


# ---------------------------------------------------------------------------------------
# BLEU
# ---------------------------------------------------------------------------------------
def _bleu_counts(token_lists: list) -> list:
    """Per order 1..4, the (len(token_lists) x V) integer count matrix of its n-grams (shared vocabulary)."""
    out = []
    for m in range(1, BLEU_MAX_ORDER + 1):
        vocab: dict = {}
        rows: list = []
        cols: list = []
        for i, toks in enumerate(token_lists):
            for g in zip(*(toks[k:] for k in range(m))):
                rows.append(i)
                cols.append(vocab.setdefault(g, len(vocab)))
        C = sp.csr_matrix(
            (np.ones(len(rows), dtype=np.int64), (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
            shape=(len(token_lists), max(len(vocab), 1)),
        )
        C.sum_duplicates()
        out.append(C)
    return out


def _bleu_from_matches(num: np.ndarray, den: np.ndarray, hyp_len: np.ndarray, ref_len: np.ndarray) -> np.ndarray:
    """Sentence BLEU from clipped matches ``num`` and hypothesis n-gram counts ``den`` (orders on axis 0).

    BLEU = BP exp(mean_n log p_n) with p_n = num_n / max(1, den_n), a zero num_n replaced by
    epsilon, BLEU = 0 without a unigram match, and BP = exp(1 - r / c) when c <= r.
    """
    den = np.maximum(den, 1)
    p = np.where(num > 0, num, BLEU_EPSILON) / den
    log_mean = np.log(p).mean(axis=0)
    c = np.asarray(hyp_len, dtype=np.float64)
    r = np.asarray(ref_len, dtype=np.float64)
    ratio = np.divide(r, c, out=np.zeros(np.broadcast(c, r).shape), where=c > 0)
    bp = np.where(c > r, 1.0, np.exp(np.minimum(1.0 - ratio, 0.0)))
    return np.where(num[0] > 0, bp * np.exp(log_mean), 0.0)


def _closest_lengths(hyp_len: np.ndarray, ref_lens: np.ndarray, exclude_self: bool) -> np.ndarray:
    """Reference length closest to each hypothesis length (ties to the shorter), optionally not its own."""
    values, counts = np.unique(ref_lens, return_counts=True)
    out = np.empty(hyp_len.shape[0], dtype=np.float64)
    step = chunk_rows(values.size)
    for start in range(0, hyp_len.shape[0], step):
        h = hyp_len[start : start + step, None]
        avail = np.broadcast_to(counts, (h.shape[0], values.size)) - (exclude_self & (values == h))
        dist = np.where(avail > 0, np.abs(values - h), np.inf)
        # values are sorted, so argmin's first minimum is the shorter of two equally close lengths
        out[start : start + step] = values[np.argmin(dist, axis=1)]
    return out


def _column_max_excluding_row(C: sp.csr_matrix):
    """For each stored entry (i, g) of C: the largest count of column g over the rows other than i."""
    coo = C.tocoo()
    rows, cols, vals = coo.row, coo.col, coo.data
    order = np.lexsort((-vals, cols))
    c_sorted, r_sorted, v_sorted = cols[order], rows[order], vals[order]
    first = np.ones(c_sorted.size, dtype=bool)
    first[1:] = c_sorted[1:] != c_sorted[:-1]
    second = np.zeros_like(first)
    second[1:] = first[:-1] & ~first[1:]
    n_cols = C.shape[1]
    max1 = np.zeros(n_cols, dtype=vals.dtype)
    arg1 = np.full(n_cols, -1, dtype=np.int64)
    max2 = np.zeros(n_cols, dtype=vals.dtype)
    max1[c_sorted[first]] = v_sorted[first]
    arg1[c_sorted[first]] = r_sorted[first]
    max2[c_sorted[second]] = v_sorted[second]
    # the row holding the column's maximum sees the second largest; every other row sees the maximum
    return rows, vals, np.where(rows == arg1[cols], max2[cols], max1[cols])


def _check_token_lists(token_lists: list, name: str, min_items: int) -> None:
    """At least ``min_items`` token lists."""
    if len(token_lists) < min_items:
        raise DiversityInputError(f"{name} needs at least {min_items} sentences; got {len(token_lists)}.")


def bleu(hyps, refs, tokenizer=None) -> float:
    r"""Mean sentence BLEU of each hypothesis against all the references (multi-reference BLEU-4).

    For a hypothesis h with references R: modified n-gram precisions :math:`p_n` (h's n-gram
    counts clipped by their largest count in any reference), n = 1..4, and the brevity penalty
    with the reference length closest to :math:`|h|` (ties to the shorter):

    .. math:: \mathrm{BLEU}(h, R) = \mathrm{BP}\, \exp\Big(\frac14 \sum_{n=1}^4 \log p_n\Big),\quad
              \mathrm{BP} = \min(1, e^{1 - r/|h|})

    (Papineni et al. 2002), with NLTK's smoothing method 1 as in the package: a zero match count
    counts as 0.1; no unigram match gives 0.

    Parameters
    ----------
    hyps, refs : sequence of str, or sequence of token lists
        Strings are tokenised with ``tokenizer``; token lists are used as they are.
    tokenizer : callable, optional
        Default :func:`default_tokenizer`.

    Returns
    -------
    float in [0, 1]

    Notes
    -----
    The package's ``bleu`` hands the untokenised strings to NLTK, which then compares
    characters; this is word-level BLEU (the package's result when given token lists).
    """
    h_toks = _tokens(hyps, tokenizer, name="hyps")
    r_toks = _tokens(refs, tokenizer, name="refs")
    counts = _bleu_counts(h_toks + r_toks)
    nh = len(h_toks)
    num, den = [], []
    for C in counts:
        H, R = C[:nh], C[nh:]
        ref_max = np.asarray(R.max(axis=0).toarray()).ravel()
        Hc = H.tocoo()
        clipped = np.minimum(Hc.data, ref_max[Hc.col])
        num.append(np.bincount(Hc.row, weights=clipped, minlength=nh))
        den.append(np.asarray(H.sum(axis=1)).ravel())
    hyp_len = np.array([len(t) for t in h_toks])
    ref_len = _closest_lengths(hyp_len, np.array([len(t) for t in r_toks]), exclude_self=False)
    return float(np.mean(_bleu_from_matches(np.array(num), np.array(den), hyp_len, ref_len)))


def self_bleu(sents, tokenizer=None) -> float:
    r"""Self-BLEU: mean BLEU of each sentence against all the others as references (Zhu et al. 2018).

    Higher means less diverse. Same BLEU as :func:`bleu`.

    Parameters
    ----------
    sents : sequence of str, or sequence of token lists
        At least two sentences.
    tokenizer : callable, optional
        Default :func:`default_tokenizer` (the package requires one).

    Returns
    -------
    float in [0, 1]

    Notes
    -----
    O(total n-grams log) with no loop over pairs: the clipping count of an n-gram against "all
    sentences but i" is the largest count of that n-gram over the sentences, or the second
    largest when sentence i holds the largest. The package's loop through NLTK is O(n^2).
    """
    toks = _tokens(sents, tokenizer)
    _check_token_lists(toks, "self_bleu", 2)
    n = len(toks)
    num, den = [], []
    for C in _bleu_counts(toks):
        rows, vals, ref = _column_max_excluding_row(C)
        num.append(np.bincount(rows, weights=np.minimum(vals, ref), minlength=n))
        den.append(np.asarray(C.sum(axis=1)).ravel())
    lengths = np.array([len(t) for t in toks])
    ref_len = _closest_lengths(lengths, lengths, exclude_self=True)
    return float(np.mean(_bleu_from_matches(np.array(num), np.array(den), lengths, ref_len)))


def pairwise_bleu(sents, tokenizer=None) -> float:
    r"""Pairwise BLEU: mean over ordered pairs i != j of BLEU(sentence i, reference sentence j).

    Parameters
    ----------
    sents : sequence of str, or sequence of token lists
        At least two sentences.
    tokenizer : callable, optional
        Default :func:`default_tokenizer` (the package requires one).

    Returns
    -------
    float in [0, 1]
        The mean over i of the mean over j != i, as in the package.

    Notes
    -----
    The clipped matches of every pair come from sparse products:
    :math:`\sum_g \min(C_{ig}, C_{jg}) = \sum_{t \ge 1} (B_t B_t^T)_{ij}` with
    :math:`B_t = [C \ge t]`, O(n^2) memory in row chunks; the package calls NLTK n(n-1) times.
    """
    toks = _tokens(sents, tokenizer)
    _check_token_lists(toks, "pairwise_bleu", 2)
    n = len(toks)
    counts = _bleu_counts(toks)
    levels = []
    for C in counts:
        top = int(C.max()) if C.nnz else 0
        levels.append([(C >= t).astype(np.float64).tocsr() for t in range(1, top + 1)])
    den = np.array([np.asarray(C.sum(axis=1)).ravel() for C in counts], dtype=np.float64)
    lengths = np.array([len(t) for t in toks], dtype=np.float64)
    total = 0.0
    step = chunk_rows(n * (BLEU_MAX_ORDER + 2))
    for start in range(0, n, step):
        stop = min(start + step, n)
        num = np.zeros((BLEU_MAX_ORDER, stop - start, n))
        for m, bs in enumerate(levels):
            for B in bs:
                num[m] += (B[start:stop] @ B.T).toarray()
        S = _bleu_from_matches(num, den[:, start:stop, None], lengths[start:stop, None], lengths[None, :])
        S[np.arange(stop - start), np.arange(start, stop)] = 0.0
        total += float(S.sum())
    return total / (n * (n - 1))


# ---------------------------------------------------------------------------------------
# embeddings
# ---------------------------------------------------------------------------------------
def _run_model(sents: list, model, tokenizer, batch_size: int, device) -> np.ndarray:
    """Embeddings from a Hugging Face-style model: pooler output, else the first token's hidden state."""
    torch = require("torch", purpose="text embeddings from a transformer model")
    if tokenizer is None or not callable(tokenizer):
        raise DiversityInputError("a model needs its tokenizer: pass tokenizer= (a Hugging Face tokenizer).")
    device = torch.device(device) if isinstance(device, str) else device
    out = []
    for batch in to_batches(sents, batch_size):
        inputs = tokenizer(batch, return_tensors="pt", padding=True, truncation=True, max_length=512)
        inputs = {k: v.to(device) for k, v in inputs.items()}
        with torch.no_grad():
            output = model(**inputs)
        pooled = getattr(output, "pooler_output", None)
        emb = pooled if pooled is not None else output.last_hidden_state[:, 0]
        out.append(emb.detach().to("cpu", dtype=torch.float64).numpy().reshape(len(batch), -1))
    return np.concatenate(out, axis=0)


def get_embeddings(sents, model=None, tokenizer=None, batch_size=16, device="cpu", model_path=None) -> np.ndarray:
    """Sentence embeddings, shape (n, d).

    Parameters
    ----------
    sents : sequence of str
    model, tokenizer : optional
        A Hugging Face model and its tokenizer, run as in the package. Default: the offline
        all-MiniLM-L6-v2 (:func:`diversity_core.featurizers.text.minilm_embeddings`, unit rows,
        d = 384), since the package's default SimCSE model needs the network.
    batch_size : int, default 16
    device : str or torch.device, default "cpu"
        Where a caller's model runs (MiniLM picks CUDA when torch sees it).
    model_path : str or path, optional
        A local model directory, loaded with ``transformers.AutoModel`` and ``AutoTokenizer``
        (``local_files_only=True``). Default None (MiniLM).

    Returns
    -------
    ndarray of shape (n, d)
    """
    sents = _check_sents(sents)
    batch_size = check_scalar(batch_size, "batch_size", int, min_val=1)
    if model is None and model_path is not None:
        transformers = require("transformers", purpose="text embeddings from a local model directory")
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(str(model_path), local_files_only=True)
            model = transformers.AutoModel.from_pretrained(str(model_path), local_files_only=True)
        except OSError as exc:
            raise DiversityInputError(
                f"cannot load a model from {model_path!s} without the network ({exc}); give a local model "
                "directory, or leave model_path=None for the offline MiniLM."
            ) from None
        model = model.eval().to(device)
    if model is None:
        return np.asarray(minilm_embeddings(sents, batch_size=batch_size), dtype=np.float64)
    return _run_model(sents, model, tokenizer, batch_size, device)


def add_embeddings_to_examples(
    examples,
    model=None,
    tokenizer=None,
    batch_size=16,
    device="cpu",
    model_name=None,
    feature_name="unsup_simcse",
):
    """Store each example's embedding in ``example.features[feature_name]`` and return the examples.

    ``model_name`` is a local model directory (:func:`get_embeddings`' ``model_path``; the
    package's version raises ``TypeError`` on it). The default feature name is the package's,
    whichever model made the embeddings.
    """
    examples = list(examples)
    X = get_embeddings(
        [e.x for e in examples], model=model, tokenizer=tokenizer, batch_size=batch_size, device=device,
        model_path=model_name,
    )
    for e, x in zip(examples, X):
        e.features[feature_name] = x
    return examples


def embedding_vendi_score(
    sents, model=None, tokenizer=None, batch_size=16, device="cpu", model_path=None, *, q=1
) -> float:
    """Vendi score of order q of sentence embeddings under the cosine kernel.

    Arguments as :func:`get_embeddings`; ``q`` is keyword-only (the package has VS_1 only).
    The default model is the offline MiniLM, not the package's SimCSE, so the default numbers
    differ from the package's. O(n d^2) when d < n, else O(n^3).
    """
    q = _check_one_q(q)
    X = get_embeddings(sents, model=model, tokenizer=tokenizer, batch_size=batch_size, device=device,
                       model_path=model_path)
    if X.shape[0] == 1:
        return 1.0
    return compute_spectrum(X, kernel="cosine").vendi(q)

