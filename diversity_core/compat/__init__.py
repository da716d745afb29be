"""Drop-in replacements for other diversity packages, with their names, arguments and defaults.

Switching from a package needs one import line; where that package computes a wrong number,
these compute the right one and their docstrings say how the numbers differ
(``docs/compat.md`` lists every difference).

Where things live
-----------------
vendi              ``vendi_score.vendi``: score, score_K, score_X, score_dual, intdiv_K, intdiv_X,
                   intdiv, normalize_K, weight_K, entropy_q; and, as attributes, the modules below
vendi_text         ``vendi_score.text_utils`` (``vendi.text_utils``): n-gram Vendi score for any
                   orders and tokenizer, n-gram diversity, BLEU, self-BLEU, pairwise BLEU,
                   embedding Vendi score (offline MiniLM, or the caller's own model)
vendi_molecules    ``vendi_score.molecule_utils`` (``vendi.molecule_utils``): get_mol,
                   load_molecules, get_tanimoto_K (Morgan 1024 bits, RDKit topological)
vendi_data         ``vendi_score.data_utils`` (``vendi.data_utils``): Example, Group, to_batches,
                   mode_dropping_groups
vendi_images       ``vendi_score.image_utils`` (``vendi.image_utils``): pixel and embedding Vendi
                   scores (offline EfficientNet-Lite0, or the caller's own model)

Usage
-----
>>> from diversity_core.compat import vendi          # was: from vendi_score import vendi
>>> import numpy as np
>>> round(vendi.score_K(np.eye(3), q=1), 12)
3.0
>>> from diversity_core.compat.vendi import text_utils   # was: from vendi_score import text_utils
"""

from . import vendi

__all__ = ["vendi"]
