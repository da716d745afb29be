r"""Lexical diversity of a set of texts: compression ratio, n-gram diversity and homogenisation by self-BLEU.

Three surface measures of how much a set of texts repeats itself (Shaib et al. 2024 survey them
and ship them in the ``diversity`` package; none needs a model):

Compression ratio
    :math:`\mathrm{CR} = |T| / |\mathrm{gzip}(T)|` with T the UTF-8 bytes of the texts joined by
    single spaces (gzip level 9). Repetition compresses well: higher is less diverse. (The
    ``diversity`` package 0.3.1 writes ``gzip.compress(T)`` into a ``GzipFile``, so its divisor
    is the size of T compressed twice, a few per cent larger than once, and rounds to 3 digits;
    the formula here is the one its docstring and the paper state.)

n-gram diversity
    :math:`\mathrm{NGD} = \sum_{n=1}^{N} \frac{\#\text{distinct } n\text{-grams}}{\#n\text{-grams}}`
    over the words of the joined texts split at single spaces (N = 4: the package's
    ``ngram_diversity_score``, which also counts n-grams across the join of two texts), in (0, N];
    higher is more diverse.

Self-BLEU (Zhu et al. 2018, Texygen)
    :math:`\mathrm{SB} = \frac1n\sum_i \mathrm{BLEU\text{-}4}(t_i;\ \{t_j\}_{j \ne i})`: each text
    scored as a hypothesis against all the others as references, with BLEU of Papineni et al.
    (2002): clipped n-gram precisions :math:`p_1..p_4` (each hypothesis n-gram counted at most as
    often as in the reference that holds it most), their geometric mean, times the brevity penalty
    :math:`\min(1, e^{1 - r/c})` (c the hypothesis length, r the closest reference length, the
    shorter on ties); a precision with no match is :math:`0.1/\text{count}` (NLTK's smoothing
    method 1, Texygen's choice) and a text sharing no word with any other scores 0. Tokens are
    the texts split at whitespace. Higher is more homogeneous. Each text's maximal reference
    counts come from the two largest counts of every n-gram over all texts, so the cost is linear
    in the total length instead of quadratic in n.
"""

from __future__ import annotations

import bisect
import gzip
import math
from collections import Counter
from typing import List, Sequence

import numpy as np

from .._validation import check_random_state, check_scalar
from ..exceptions import DiversityInputError
from ._common import check_interval_options
from ._one_set import one_set_interval
from ._pack_results import LexicalDiversityResult
from ._results import Estimate

__all__ = ["lexical_diversity", "compression_ratio", "ngram_diversity", "self_bleu"]

#: BLEU-4: uniform weights over orders 1..4.
BLEU_ORDER = 4
#: NLTK's smoothing method 1: a precision with no match counts epsilon matches.
SMOOTHING_EPSILON = 0.1


def check_texts(texts, *, min_texts: int = 2) -> List[str]:
    """A list of at least ``min_texts`` strings (a bare string is refused: it is one text, not a set)."""
    if isinstance(texts, (str, bytes)):
        raise DiversityInputError("texts must be a sequence of strings (one per item), not a single string.")
    try:
        out = list(texts)
    except TypeError:
        raise DiversityInputError(f"texts must be a sequence of strings; got {type(texts).__name__}.") from None
    bad = [i for i, t in enumerate(out) if not isinstance(t, str)]
    if bad:
        raise DiversityInputError(
            f"texts must all be strings; got {len(bad)} other values (items {', '.join(map(str, bad[:5]))}, "
            f"e.g. {type(out[bad[0]]).__name__}). Convert them with str() or drop them."
        )
    if len(out) < min_texts:
        raise DiversityInputError(f"lexical diversity needs at least {min_texts} texts; got {len(out)}.")
    return out


def compression_ratio(texts: Sequence[str]) -> float:
    """UTF-8 bytes of the texts joined by spaces over the bytes of their gzip stream (level 9); validated input."""
    raw = " ".join(texts).encode("utf-8")
    return len(raw) / len(gzip.compress(raw, compresslevel=9, mtime=0))


def ngram_diversity(texts: Sequence[str], max_n: int = 4) -> float:
    """:math:`\\sum_{n \\le N}` distinct over all n-grams of the joined texts' words (split at single spaces)."""
    words = " ".join(texts).split(" ")
    if len(words) < max_n:
        raise DiversityInputError(
            f"n-gram diversity up to n = {max_n} needs at least {max_n} words; the texts hold {len(words)}. "
            "Lower max_n or give longer texts."
        )
    total = 0.0
    for n in range(1, max_n + 1):
        grams = list(zip(*(words[i:] for i in range(n))))
        total += len(set(grams)) / len(grams)
    return total


def _closest_length(sorted_lengths: List[int], own: int) -> int:
    """The closest length to ``own`` among the others (``own`` removed once), the shorter on ties."""
    i = bisect.bisect_left(sorted_lengths, own)
    if i + 1 < len(sorted_lengths) and sorted_lengths[i + 1] == own:
        return own
    below = sorted_lengths[i - 1] if i > 0 else None
    above = sorted_lengths[i + 1] if i + 1 < len(sorted_lengths) else None
    if below is None:
        return above
    if above is None or own - below <= above - own:
        return below
    return above


def self_bleu_items(texts: Sequence[str]) -> np.ndarray:
    """BLEU-4 of each text against all the others (module docstring); validated input, at least 2 texts."""
    tokens = [t.split() for t in texts]
    n_texts = len(tokens)
    counts = [[Counter(zip(*(tok[i:] for i in range(n)))) for n in range(1, BLEU_ORDER + 1)] for tok in tokens]
    # per order and n-gram: [largest count, its text, second largest count] over all texts
    top: List[dict] = [{} for _ in range(BLEU_ORDER)]
    for doc, per_order in enumerate(counts):
        for o, cnt in enumerate(per_order):
            best = top[o]
            for g, c in cnt.items():
                entry = best.get(g)
                if entry is None:
                    best[g] = [c, doc, 0]
                elif c > entry[0]:
                    entry[2], entry[0], entry[1] = entry[0], c, doc
                elif c > entry[2]:
                    entry[2] = c
    lengths = sorted(len(tok) for tok in tokens)
    out = np.empty(n_texts)
    for doc, per_order in enumerate(counts):
        hyp_len = len(tokens[doc])
        logs = []
        matched_unigrams = 0
        for o, cnt in enumerate(per_order):
            best = top[o]
            num = 0
            for g, c in cnt.items():
                c1, d1, c2 = best[g]
                num += min(c, c2 if d1 == doc else c1)
            den = max(1, sum(cnt.values()))
            if o == 0:
                matched_unigrams = num
            logs.append(math.log((num if num else SMOOTHING_EPSILON) / den))
        if matched_unigrams == 0:
            out[doc] = 0.0
            continue
        ref_len = _closest_length(lengths, hyp_len)
        bp = 1.0 if hyp_len > ref_len else math.exp(1.0 - ref_len / hyp_len)
        out[doc] = bp * math.exp(math.fsum(lg / BLEU_ORDER for lg in logs))
    return out


def self_bleu(texts: Sequence[str]) -> float:
    """Mean BLEU-4 of each text against all the others; validated input."""
    return float(np.mean(self_bleu_items(texts)))


def _scores(texts: Sequence[str], max_n: int, with_bleu: bool) -> list:
    """``[CR, NGD(, SB)]`` of validated texts."""
    out = [compression_ratio(texts), ngram_diversity(texts, max_n)]
    if with_bleu:
        out.append(self_bleu(texts))
    return out


def lexical_diversity(
    texts,
    *,
    max_n: int = 4,
    homogenization: bool = True,
    confidence_level: float = 0.95,
    n_resamples: int = 16,
    interval_size: int = 2048,
    rng=None,
) -> LexicalDiversityResult:
    r"""Lexical diversity of a set of texts: compression ratio, n-gram diversity and self-BLEU homogenisation.

    .. math::

        \mathrm{CR} = \frac{|T|}{|\mathrm{gzip}(T)|},\qquad
        \mathrm{NGD} = \sum_{n=1}^{N}\frac{\#\text{distinct } n\text{-grams}}{\#n\text{-grams}},\qquad
        \mathrm{SB} = \frac1n\sum_{i}\mathrm{BLEU\text{-}4}\big(t_i; \{t_j\}_{j \ne i}\big)

    (T the UTF-8 bytes of the texts joined by spaces; the measures of Shaib et al. [1]_, self-BLEU
    of Zhu et al. [2]_ with BLEU of Papineni et al.: module docstring for every detail).

    Parameters
    ----------
    texts : sequence of str
        At least 2 texts.
    max_n : int, default 4
        N, the largest n-gram order of the n-gram diversity.
    homogenization : bool, default True
        Compute self-BLEU (linear in the total length; False skips it).
    confidence_level, n_resamples, interval_size, rng
        As :func:`rke_mode_count` (subsets of texts).

    Returns
    -------
    LexicalDiversityResult

    Raises
    ------
    DiversityInputError
        Not a sequence of strings, fewer than 2 texts, fewer words than ``max_n``.

    Notes
    -----
    Sensitive to: repeated words and phrases (all three) and templates shared between texts
    (self-BLEU, n-gram diversity). Blind to meaning: paraphrases of one idea score as diverse,
    and one text repeated with a changed name as nearly so by CR; all three depend on the texts'
    length and number (CR and NGD on the joined text, so a set of more texts repeats more):
    compare sets of equal size and similar lengths. Use an embedding kernel (Vendi, RKE) for
    semantic diversity.
    Cost: O(L) for CR and NGD and O(L) for self-BLEU (L the total tokens), with O(L) memory for
    the n-gram counts.

    References
    ----------
    .. [1] C. Shaib, J. Barrow, J. Sun, A. F. Siu, B. C. Wallace, A. Nenkova, "Standardizing the
       Measurement of Text Diversity: A Tool and a Comparative Analysis of Scores", 2024.
    .. [2] Y. Zhu et al., "Texygen: A Benchmarking Platform for Text Generation Models", SIGIR 2018.

    Examples
    --------
    >>> r = lexical_diversity(["a b c d", "a b c d"], n_resamples=0)
    >>> round(r.self_bleu.value, 12), round(r.ngram_diversity.value, 4)     # two copies: SB = 1
    (1.0, 2.5381)
    """
    items = check_texts(texts)
    max_n = check_scalar(max_n, "max_n", int, min_val=1)
    level, n_resamples, interval_size = check_interval_options(confidence_level, n_resamples, interval_size)
    gen = check_random_state(rng)
    with_bleu = bool(homogenization)
    full = _scores(items, max_n, with_bleu)
    if n_resamples:
        arr = np.empty(len(items), dtype=object)
        arr[:] = items
        ranges = ((0.0, 0.0, 0.0), (np.inf, float(max_n), 1.0))
        est = one_set_interval(len(items), full, lambda idx: _scores(list(arr[idx]), max_n, with_bleu),
                               bounds=tuple(b[:len(full)] for b in ranges), level=level, n_resamples=n_resamples,
                               interval_size=interval_size, min_items=8, rng=gen)
    else:
        est = [Estimate(v) for v in full]
    return LexicalDiversityResult(compression_ratio=est[0], ngram_diversity=est[1],
                                  self_bleu=est[2] if with_bleu else None, n=len(items), max_n=int(max_n))
