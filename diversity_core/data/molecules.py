"""Molecules: ``.smi``/``.smiles``, a table (``.csv``/``.tsv``/``.jsonl``/``.parquet``) with a SMILES column, ``.sdf``.

Every structure is parsed and sanitised by RDKit and stored as its canonical SMILES. Invalid
SMILES and unparsable SDF records are skipped and reported with their line or record number
(``Dataset.skipped``); RDKit's own log lines are silenced while parsing. When more than half
(:data:`MAX_INVALID_SHARE`) of the non-empty entries are not SMILES, the column or file does not
hold molecules and the load is refused with the counts and what it looks like instead.

- ``.smi``: whitespace-separated, SMILES first, optional name after it; a first line starting
  with ``smiles`` is a header, and then ``group_column``/``weight_column`` may name its columns.
- Tables: the SMILES column is ``smiles_column`` or the first column named ``smiles``,
  ``canonical_smiles``, ``smi`` or ``mol`` (case-insensitive).
- ``.sdf``: ``group_column``/``weight_column`` name SD properties; ids are the record titles.

Size limits: RDKit crashes the process on very large molecules (a 20,000-atom chain segfaults
the SMILES writer) and does not answer Ctrl-C while it works on one. A SMILES longer than
:data:`MAX_SMILES_LENGTH` characters, or with more than :data:`MAX_ATOMS` atoms by a cheap count
of its atom tokens, is skipped with the reason *before* it reaches RDKit; so is an SD record whose
counts line announces more than :data:`MAX_ATOMS` atoms. Skip reasons name the line and the
size, never the text of the entry.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import numpy as np

from .._optional import require
from .._progress import ProgressCallback, report
from ..exceptions import DiversityInputError
from ._dataset import Dataset, SkippedItem
from ._files import decode_utf8, read_input_bytes, read_text_file
from ._tables import (
    Table,
    check_weight_values,
    column_phrase,
    columns_text,
    groups_from_column,
    read_table,
    weights_from_column,
)
from .embeddings import companion_features

SMILES_COLUMN_NAMES = ("smiles", "canonical_smiles", "smi", "mol", "structure")
SMI_EXTENSIONS = (".smi", ".smiles", ".ism", ".can")

#: Longest SMILES handed to RDKit, in characters (about ten times the text of the largest drug-like
#: molecules; peptides of a few hundred residues fit).
MAX_SMILES_LENGTH = 10_000

#: Most atoms (heavy atoms and bracket atoms) of a molecule handed to RDKit. Canonicalising a
#: 1,000-atom chain takes about 0.2 s; RDKit crashed on a 20,000-atom chain.
MAX_ATOMS = 1_000

#: Largest share of the non-empty entries that may fail to parse as SMILES: beyond it the column
#: (or file) does not hold molecules, and the load is refused rather than keeping the few entries
#: that happen to parse (a sentence starting with "I " is iodine; issue 26, item 12).
MAX_INVALID_SHARE = 0.5

#: One atom of a SMILES: a bracket atom, a two-letter organic-subset atom, a one-letter
#: (aromatic) one, or the wildcard. Counting these needs no parsing and is exact for valid SMILES.
_ATOM_TOKEN = re.compile(r"\[[^\]]*\]|Br|Cl|[BCNOPSFI]|[bcnops]|\*")


def count_smiles_atoms(smiles: str) -> int:
    """Atoms of a SMILES by a count of its atom tokens (no RDKit): ``"CC(=O)[O-]"`` -> 4."""
    return sum(1 for _ in _ATOM_TOKEN.finditer(smiles))


def smiles_size_problem(smiles: str) -> Optional[str]:
    """Why a SMILES is too large to hand to RDKit (a reason naming only sizes), or ``None``."""
    if len(smiles) > MAX_SMILES_LENGTH:
        return f"SMILES too long ({len(smiles)} characters; the limit is {MAX_SMILES_LENGTH})"
    atoms = count_smiles_atoms(smiles)
    if atoms > MAX_ATOMS:
        return f"molecule too large ({atoms} atoms; the limit is {MAX_ATOMS})"
    return None


@contextmanager
def quiet_rdkit():
    """Silence RDKit's error log (parse failures are reported through ``Dataset.skipped``)."""
    RDLogger = require("rdkit.RDLogger", purpose="loading molecules")

    RDLogger.DisableLog("rdApp.*")
    try:
        yield
    finally:
        RDLogger.EnableLog("rdApp.*")


def canonical_smiles(smiles: str) -> Optional[str]:
    """RDKit's canonical SMILES of ``smiles`` (stereo kept), or ``None``.

    ``None`` when it does not parse or exceeds :data:`MAX_SMILES_LENGTH` / :data:`MAX_ATOMS`.
    """
    Chem = require("rdkit.Chem", purpose="loading molecules")

    s = str(smiles).strip()
    if not s or smiles_size_problem(s) is not None:
        return None
    with quiet_rdkit():
        mol = Chem.MolFromSmiles(s)
    if mol is None or mol.GetNumAtoms() == 0:
        return None
    return Chem.MolToSmiles(mol)


def _canonicalise_all(smiles: list, wheres: list, progress, skipped: list):
    """Canonical SMILES of the valid entries and the indices kept."""
    Chem = require("rdkit.Chem", purpose="loading molecules")

    out, keep = [], []
    total = len(smiles)
    with quiet_rdkit():
        for i, s in enumerate(smiles):
            if i % 500 == 0:
                report(progress, i, total, "parsing molecules")
            s = str(s).strip()
            if not s:
                skipped.append(SkippedItem(wheres[i], "empty SMILES"))
                continue
            problem = smiles_size_problem(s)
            if problem is not None:
                skipped.append(SkippedItem(wheres[i], problem))
                continue
            mol = Chem.MolFromSmiles(s)
            if mol is None or mol.GetNumAtoms() == 0:
                # the reason gives the length, not the text: the entry may be any line of any file
                skipped.append(SkippedItem(wheres[i], f"invalid SMILES ({len(s)} characters)"))
                continue
            out.append(Chem.MolToSmiles(mol))
            keep.append(i)
    report(progress, total, total, "parsing molecules")
    return out, np.asarray(keep, dtype=np.intp)


def _check_mostly_valid(path: Path, raw: list, n_valid: int, what: str, column=None) -> None:
    """Refuse entries that are mostly not SMILES, with the counts and what they look like instead.

    ``what`` names the entries' place (``"column 'sentence'"``, ``"the file"``); ``column`` is the
    table column's name, for the suggestion (None for a ``.smi`` file).
    """
    values = [str(v).strip() for v in raw]
    filled = [v for v in values if v]
    bad = len(filled) - n_valid
    if not filled or bad <= MAX_INVALID_SHARE * len(filled):
        return
    numbers = sum(_is_number(v) for v in filled)
    if numbers > len(filled) / 2:
        looks = ("it holds numbers: a table of numeric columns is read as embeddings (modality='embeddings', "
                 "CLI: --modality embeddings)")
    elif column is not None:
        looks = ("it holds text: read it as text by naming it the text column (text_column=, CLI: "
                 "--text-column), or name the column that holds SMILES (smiles_column=)")
    else:
        looks = "it holds text: read it as text, one item per line (modality='text', CLI: --modality text)"
    raise DiversityInputError(
        f"{path}: {bad:,} of the {len(filled):,} entries of {what} are not valid SMILES (only {n_valid:,} "
        f"parsed), so it does not hold molecules; {looks}."
    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _read_smi(path: Path, max_bytes: int, group_column, weight_column):
    """Rows of a .smi file: (smiles, ids, wheres, table-or-None)."""
    import pandas as pd

    text = read_text_file(path, max_bytes)
    lines = text.splitlines()
    first = next((ln for ln in lines if ln.strip()), "")
    has_header = first.split()[0].lower() in SMILES_COLUMN_NAMES if first.split() else False
    if has_header:
        header = first.split()
        records, line_numbers = [], []
        start = lines.index(first) + 1
        for lineno, line in enumerate(lines[start:], start=start + 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split(None, len(header) - 1)
            if len(parts) != len(header):
                raise DiversityInputError(
                    f"{path}: ragged rows: line {lineno} has {len(parts)} fields but the header has {len(header)}. "
                    "Fix or remove that line."
                )
            records.append(parts)
            line_numbers.append(lineno)
        df = pd.DataFrame(records, columns=header)
        table = Table(df=df, path=path, kind="jsonl", line_numbers=line_numbers)  # rows named by line
        smiles_col = header[0]
        smiles = df[smiles_col].tolist()
        wheres = [f"{path.name} line {ln}" for ln in line_numbers]
        name_col = header[1] if len(header) > 1 and header[1] not in (group_column, weight_column) else None
        ids = df[name_col].astype(str).tolist() if name_col else [f"line {ln}" for ln in line_numbers]
        return smiles, ids, wheres, table
    if group_column or weight_column:
        raise DiversityInputError(
            f"{path}: this .smi file has no header line, so it has no "
            f"{'group' if group_column else 'weight'} column. Add a header (e.g. 'smiles name model') or use .csv."
        )
    smiles, ids, wheres = [], [], []
    for lineno, line in enumerate(lines, start=1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        parts = s.split(None, 1)
        smiles.append(parts[0])
        ids.append(parts[1].strip() if len(parts) > 1 else f"line {lineno}")
        wheres.append(f"{path.name} line {lineno}")
    return smiles, ids, wheres, None


_V3000_COUNTS = re.compile(r"^M  V30 COUNTS\s+(\d+)", re.MULTILINE)


def _sd_record_size_problem(block: str) -> Optional[str]:
    """Why an SD record is too large to hand to RDKit (from its counts line), or ``None``."""
    if len(block) > MAX_ATOMS * 200:  # an atom line is 69 characters, a bond line 21; properties are short
        return f"record too long ({len(block)} characters)"
    lines = block.splitlines()  # the first three lines are the header block, the fourth the counts line
    if len(lines) >= 4:
        counts = lines[3]
        m = _V3000_COUNTS.search(block) if "V3000" in counts else None
        text = m.group(1) if m else counts[:3].strip()
        if text.isdigit() and int(text) > MAX_ATOMS:
            return f"molecule too large ({int(text)} atoms; the limit is {MAX_ATOMS})"
    return None


def _read_sdf(path: Path, max_bytes: int, group_column, weight_column, progress, skipped):
    Chem = require("rdkit.Chem", purpose="loading molecules")

    text = decode_utf8(read_input_bytes(path, max_bytes), str(path))
    if "$$$$" not in text and "M  END" not in text:
        raise DiversityInputError(f"{path}: not an SD file (no 'M  END' or '$$$$' record markers).")
    blocks = text.split("$$$$")
    if blocks and not blocks[-1].strip():
        blocks = blocks[:-1]
    out, ids, groups, weights = [], [], [], []
    newlines_before = 0
    total = len(blocks)
    with quiet_rdkit():
        for rec, block in enumerate(blocks, start=1):
            if rec % 200 == 1:
                report(progress, rec - 1, total, "parsing molecules")
            # blocks after the first begin with the newline that ends the previous '$$$$' line
            start_line = newlines_before + (2 if rec > 1 else 1)
            newlines_before += block.count("\n")
            where = f"{path.name} record {rec} (line {start_line})"
            if rec > 1:
                block = (
                    block[1:] if block.startswith("\n") else block[2:] if block.startswith("\r\n") else block
                )
            problem = _sd_record_size_problem(block)
            if problem is not None:
                skipped.append(SkippedItem(where, problem))
                continue
            supplier = Chem.SDMolSupplier()
            supplier.SetData(block + "$$$$\n", sanitize=True)
            mol = supplier[0] if len(supplier) else None
            if mol is None or mol.GetNumAtoms() == 0:
                skipped.append(SkippedItem(where, "unparsable or invalid molecule record"))
                continue
            props = mol.GetPropsAsDict()
            if group_column is not None:
                if group_column not in props or not str(props[group_column]).strip():
                    raise DiversityInputError(
                        f"{path} record {rec}: no SD property {group_column!r} (the group column); "
                        f"its properties are: {columns_text(props) or 'none'}."
                    )
                groups.append(str(props[group_column]).strip())
            if weight_column is not None:
                if weight_column not in props:
                    raise DiversityInputError(
                        f"{path} record {rec}: no SD property {weight_column!r} (the weight column); "
                        f"its properties are: {columns_text(props) or 'none'}."
                    )
                try:
                    weights.append(float(props[weight_column]))
                except (TypeError, ValueError):
                    raise DiversityInputError(
                        f"{path} record {rec}: the weight (SD property {weight_column!r}) is not a number."
                    ) from None
            out.append(Chem.MolToSmiles(mol))
            title = mol.GetProp("_Name").strip() if mol.HasProp("_Name") else ""
            ids.append(title or f"record {rec}")
    report(progress, total, total, "parsing molecules")
    g = np.asarray(groups, dtype=str) if group_column is not None else None
    w = None
    if weight_column is not None:
        w = check_weight_values(
            np.asarray(weights, dtype=np.float64),
            lambda rows: "items " + ", ".join(str(int(r) + 1) for r in rows[:5]),
            str(path),
            weight_column,
        )
    return out, ids, g, w


def load_molecules(
    path: Path,
    *,
    smiles_column: Optional[str] = None,
    group_column: Optional[str] = None,
    weight_column: Optional[str] = None,
    embeddings=None,
    max_bytes: int,
    progress: Optional[ProgressCallback] = None,
    name: Optional[str] = None,
    table: Optional[Table] = None,
) -> Dataset:
    """Load molecules and canonicalise them (see the module docstring); ``table``: the file already parsed."""
    skipped: list = []
    groups = weights = None
    suffix = path.suffix.lower()
    if suffix == ".sdf":
        smiles, ids, groups, weights = _read_sdf(
            path, max_bytes, group_column, weight_column, progress, skipped
        )
    else:
        if suffix in SMI_EXTENSIONS:
            raw, raw_ids, wheres, table = _read_smi(path, max_bytes, group_column, weight_column)
        else:
            table = table if table is not None else read_table(path, max_bytes)
            col = smiles_column
            if col is None:
                col = table.find_column(SMILES_COLUMN_NAMES)
                if col is None:
                    raise DiversityInputError(
                        f"{path}: no SMILES column found (columns: {columns_text(table.df.columns)}). Name it "
                        "with smiles_column= (CLI: --smiles-column)."
                    )
            series = table.column(col, "SMILES")
            raw = [
                "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v)
                for v in series.to_numpy()
            ]
            wheres = [table.where(i) for i in range(len(raw))]
            raw_ids = [table.row_label(i) for i in range(len(raw))]
        if not raw:
            raise DiversityInputError(f"{path}: no molecules found; there is nothing to measure.")
        smiles, keep = _canonicalise_all(raw, wheres, progress, skipped)
        if table is not None and suffix not in SMI_EXTENSIONS:
            columns = list(table.df.columns)
            _check_mostly_valid(path, raw, len(smiles), column_phrase(col, columns.index(col)), col)
        else:
            _check_mostly_valid(path, raw, len(smiles), "the file")
        ids = [raw_ids[i] for i in keep]
        if table is not None and group_column:
            groups = groups_from_column(table, group_column, keep)
        if table is not None and weight_column:
            weights = weights_from_column(table, weight_column, keep)
    if len(smiles) < 2:
        detail = ""
        if skipped:
            examples = "; ".join(f"{s.where}: {s.reason}" for s in skipped[:3])
            detail = f" ({len(skipped)} entries were skipped, e.g. {examples})"
        what = "no valid molecules" if not smiles else "a single valid molecule"
        raise DiversityInputError(f"{path}: {what}; diversity needs at least 2 items{detail}.")
    features = None if embeddings is None else companion_features(embeddings, ids, max_bytes, str(path))
    return Dataset(
        name=name or path.name,
        modality="molecules",
        items=smiles,
        features=features,
        groups=groups,
        weights=weights,
        ids=ids,
        skipped=tuple(skipped),
        source=str(path),
    )
