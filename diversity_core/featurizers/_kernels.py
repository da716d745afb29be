"""Kernel support: which kernels are defined on a featurizer's features, and features made dense for those that need it."""

from __future__ import annotations

from typing import Optional

import numpy as np

from .._validation import check_option
from ..exceptions import DiversityInputError
from ._registry import FEATURIZERS, _parameterised, _unknown

#: Kernels defined on part of the feature space only: the value range they need (see
#: :attr:`Featurizer.values`) and how a message says it.
KERNEL_NEEDS = {
    "tanimoto": ("nonnegative", "non-negative features (fingerprint bits or counts)"),
    "probability_product": ("probability", "rows that are probability vectors (non-negative, summing to 1), "
                                           "such as a classifier's softmax outputs loaded as embeddings"),
}
#: The value ranges, each inside the next.
_RANGES = ("probability", "nonnegative", "real")


def kernel_support(featurizer: str, kernel: str) -> Optional[str]:
    """Why ``kernel`` cannot measure the features of ``featurizer``, or None when it can.

    The app offers a kernel only for the representations this returns None for, and says why
    it left the others out. The rule reads the featurizer's value range
    (:attr:`Featurizer.values`) against :data:`KERNEL_NEEDS`: MiniLM embeddings have negative
    entries, so the Tanimoto kernel is undefined on them; no registered featurizer gives
    probability vectors, so the probability-product kernel is left to embeddings files. Sparse
    features (n-grams) suit every kernel: one that needs dense rows densifies them within the
    memory budget. The dataset's own embeddings (``values="any"``) are checked when the kernel
    reads them.

    Parameters
    ----------
    featurizer : str
        A name from :data:`FEATURIZERS`.
    kernel : str
        A kernel name (see :data:`diversity_core.kernels.KERNELS`).

    Returns
    -------
    str or None
        A one-sentence reason, or None.

    Examples
    --------
    >>> kernel_support("ngram", "rbf") is None
    True
    >>> kernel_support("minilm", "tanimoto")
    "the tanimoto kernel needs non-negative features (fingerprint bits or counts); 'minilm' gives real values"
    """
    from ..kernels import KERNELS

    if featurizer not in FEATURIZERS and not _parameterised(featurizer):
        raise _unknown(featurizer)
    check_option(kernel, KERNELS, "kernel")
    needs = KERNEL_NEEDS.get(kernel)
    # read without loading a model: hf: encoders give real values, Inception's pool features are post-ReLU
    values = {"hf": "real", "inception": "nonnegative"}.get(featurizer.split(":")[0]) \
        if _parameterised(featurizer) else FEATURIZERS[featurizer].values
    if needs is None or values == "any" or _RANGES.index(values) <= _RANGES.index(needs[0]):
        return None
    said = {"real": "real values", "nonnegative": "non-negative values that are not probability vectors"}[values]
    return f"the {kernel} kernel needs {needs[1]}; {featurizer!r} gives {said}"


def dense_features(X, *, max_entries: int, purpose: str) -> np.ndarray:
    """Features as a dense array: sparse ones (n-gram counts) are densified up to ``max_entries`` values.

    Raises a :class:`DiversityInputError` naming ``purpose`` when the dense matrix would be larger.
    """
    if hasattr(X, "toarray"):
        if X.shape[0] * X.shape[1] > max_entries:
            raise DiversityInputError(
                f"the {X.shape[0]} x {X.shape[1]} sparse features are too large to densify for {purpose}; "
                "use dense embeddings (e.g. the 'minilm' featurizer) instead."
            )
        X = X.toarray()
    return np.asarray(X)
