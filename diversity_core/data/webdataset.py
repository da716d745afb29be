"""WebDataset tar shards, streamed shard by shard and never extracted.

A WebDataset is a set of ``.tar`` shards (``name-{000000..000009}.tar``) whose members are
grouped into samples by key, as the ``webdataset`` library does: the key of a member is its path
up to the first dot of its base name, the rest is its extension (``cat/0001.seg.png`` -> key
``cat/0001``, extension ``seg.png``), and consecutive members of one key form one sample. The
extensions read are:

- ``jpg``/``jpeg``/``png``/``webp``: the sample's image, decoded by the PNG/JPEG/WebP decoders of
  :func:`~diversity_core.data.images.decode_image` (decoded size checked against the memory budget
  first) and kept as a thumbnail by the rule of :mod:`.images`;
- ``txt``: the sample's text (UTF-8);
- ``cls``: an integer class, and ``json``: an object whose ``"label"`` or ``"class"`` field (a
  name or an integer) and ``"class_name"``/``"label_name"`` field (a name) give the sample's
  group. Integer classes are named by the names the JSON of any sample gives them, else shown
  as the integer.

Samples with an image make an image dataset (their text is not used); shards without images and
with ``txt`` members make a text dataset (``modality="text"`` reads the captions of image shards).
Samples without the member the modality needs, and members of other extensions, are skipped and
listed in ``Dataset.skipped``.

Safety, as for zip archives: shards are read with :mod:`tarfile` in streaming mode
(``mode="r|"``, ``.tar.gz``/``.tgz`` decompressed by a counting reader), one member at a time.
The shards' total size, every member's declared size (against ``max_bytes`` and
:data:`MAX_MEMBER_BYTES`), the bytes actually read (compressed shards included), the members per
shard (:data:`MAX_MEMBERS_PER_SHARD`) and the metadata headers (long names, pax records) are
limited, and a shard with a symbolic or hard link, a device, a FIFO, a sparse member, an
absolute name or a name with ``..`` is refused whole: each refusal is a
:class:`~diversity_core.exceptions.DiversityInputError` naming the shard and the member. A brace
pattern expands only inside its own folder (and that folder inside ``data_dir`` when one is
given); at most :data:`MAX_SHARDS` shards.
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import os
import posixpath
import re
import stat
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Optional

import numpy as np

from .._progress import ProgressCallback, report
from ..exceptions import DiversityInputError
from ._dataset import Dataset, SkippedItem
from ._files import check_size, decode_utf8, open_input, safe_member_name
from ._paths import file_kind, human_bytes, is_within, resolve_user_path, stat_input
from ._thumbnails import ThumbnailStack
from .images import IMAGE_EXTENSIONS, _small, decode_image

#: File names read as shards.
SHARD_SUFFIXES = (".tar", ".tar.gz", ".tgz")
#: Member extensions that hold a sample's image, text and class.
IMAGE_EXTS = ("jpg", "jpeg", "png", "webp")
TEXT_EXT = "txt"
LABEL_EXTS = ("cls", "json")
#: Most shards a pattern or a folder may name.
MAX_SHARDS = 100_000
#: Most members one shard may hold (WebDataset shards hold thousands; more is a shard bomb).
MAX_MEMBERS_PER_SHARD = 1_000_000
#: Largest member read (further capped by ``max_bytes``).
MAX_MEMBER_BYTES = 256 << 20
#: Largest metadata header (a GNU long name, a pax record block) tarfile may read into memory.
MAX_HEADER_BYTES = 1 << 20
#: Skipped members listed one by one; beyond, one entry counts the rest.
MAX_SKIPPED_LISTED = 1000
#: The group of a sample without a class when other samples have one.
NO_LABEL_GROUP = "(no label)"
#: The JSON fields read for a sample's class (a name or an integer) and its name.
JSON_LABEL_FIELDS = ("label", "class")
JSON_NAME_FIELDS = ("class_name", "label_name")

_KNOWN_EXTS = IMAGE_EXTS + (TEXT_EXT,) + LABEL_EXTS
_BRACE = re.compile(r"\{([^{}]*)\}")
_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)$")
_META_TYPES = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE,
               tarfile.SOLARIS_XHDTYPE)


# --------------------------------------------------------------------------------------------
# which paths are shards
# --------------------------------------------------------------------------------------------


def is_brace_pattern(path) -> bool:
    """Whether the last part of ``path`` holds a brace pattern (``{000..009}`` or ``{a,b}``)."""
    name = Path(os.fspath(path)).name
    return any(".." in m or "," in m for m in _BRACE.findall(name))


def _is_shard_name(name: str) -> bool:
    return name.lower().endswith(SHARD_SUFFIXES) and not name.startswith(".")


def is_shard_source(path) -> bool:
    """Whether :func:`~diversity_core.data.load_dataset` reads ``path`` as WebDataset shards.

    A brace pattern; a ``.tar``/``.tar.gz``/``.tgz`` file; or a folder whose top level holds at
    least one shard, no image file and no sub-folder (hidden entries aside; other files, such as
    an index or a README, are skipped).
    """
    if is_brace_pattern(path):
        return True
    p = Path(os.fspath(path))
    try:
        if p.is_file():
            return _is_shard_name(p.name)
        if not p.is_dir():
            return False
        entries = [e for e in os.scandir(p) if not e.name.startswith(".")]
    except OSError:
        return False
    if any(_entry_is_dir(e) for e in entries) or any(Path(e.name).suffix.lower() in IMAGE_EXTENSIONS for e in entries):
        return False
    return any(_is_shard_name(e.name) for e in entries)


def _entry_is_dir(entry: os.DirEntry) -> bool:
    """``entry.is_dir()``, False for an entry that cannot be followed (a link loop, a broken link)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def expand_braces(name: str, *, limit: int = MAX_SHARDS) -> list:
    """The names a brace pattern stands for, in order, as WebDataset expands them.

    ``{000..009}`` is a numeric range (zero-padded to the width of its ends), ``{a,b}`` a list;
    several braces give every combination. More than ``limit`` names is refused before any is
    made.

    >>> expand_braces("s-{00..02}.tar")
    ['s-00.tar', 's-01.tar', 's-02.tar']
    """
    pieces, axes, pos = [], [], 0
    count = 1
    for m in _BRACE.finditer(name):
        pieces.append(name[pos:m.start()])
        body, pos = m.group(1), m.end()
        r = _RANGE.match(body)
        if r:
            lo, hi = int(r.group(1)), int(r.group(2))
            if hi < lo:
                raise DiversityInputError(f"{name!r}: the range {{{body}}} runs backwards; write it low..high.")
            width = len(r.group(1)) if r.group(1).startswith("0") and len(r.group(1)) > 1 else 0
            count *= hi - lo + 1
            axis = (lo, hi, width)
        else:
            axis = body.split(",")
            count *= len(axis)
        if count > limit:
            raise DiversityInputError(
                f"{name!r}: the pattern names more than {limit} shards; give fewer (or a folder of shards)."
            )
        axes.append(axis)
    pieces.append(name[pos:])
    values = [[f"{i:0{a[2]}d}" for i in range(a[0], a[1] + 1)] if isinstance(a, tuple) else a for a in axes]
    out = []
    for combo in itertools.product(*values):
        out.append("".join(p + v for p, v in zip(pieces, list(combo) + [""])))
    return out


def resolve_shards(path, *, data_dir=None) -> list:
    """The shard files a pattern, a folder of shards or one shard names, resolved and checked.

    Parameters
    ----------
    path : str or path-like
        ``folder/name-{000000..000009}.tar`` (braces only in the last part), a folder of shards
        or a shard file.
    data_dir : str or path-like, optional
        Confine the pattern's folder (and every shard, links followed) to this folder, with the
        policy of :func:`~diversity_core.data.resolve_user_path`.

    Returns
    -------
    list of Path
        Regular files, in the pattern's order (a folder's: sorted by name).

    Raises
    ------
    DiversityInputError
        A brace in a folder part, a name of the expansion that is not a plain file name, a
        missing shard, a shard that is not a regular file or lies (through a link) outside the
        pattern's folder, more than :data:`MAX_SHARDS` shards, a folder without shards.
    """
    raw = os.fspath(path)
    if is_brace_pattern(raw):
        resolved = resolve_pattern(raw, data_dir=data_dir)
        folder, name = resolved.parent, resolved.name
        shards = []
        for shard in expand_braces(name):
            if shard in (".", "..") or "/" in shard or "\\" in shard or "\x00" in shard or shard.startswith("."):
                raise DiversityInputError(
                    f"{raw!r}: the pattern expands to {shard!r}, which is not a plain file name; the shards must "
                    "lie in the pattern's folder."
                )
            shards.append(_checked_shard(folder / shard, folder, raw))
        return shards
    p = Path(raw) if data_dir is None else resolve_user_path(raw, data_dir=data_dir)
    st = stat_input(p)
    if stat.S_ISDIR(st.st_mode):
        root = Path(os.path.realpath(p))
        names = sorted(e.name for e in os.scandir(p) if _is_shard_name(e.name))
        if not names:
            raise DiversityInputError(f"{p}: the folder holds no .tar shards.")
        if len(names) > MAX_SHARDS:
            raise DiversityInputError(f"{p}: more than {MAX_SHARDS} shards; load fewer at a time.")
        return [_checked_shard(p / n, root, str(p)) for n in names]
    return [_checked_shard(p, None, raw)]


def resolve_pattern(path, *, data_dir=None) -> Path:
    """A brace pattern with its folder resolved (inside ``data_dir`` when given); the name kept as given.

    The shards themselves are checked when read (:func:`resolve_shards`).
    """
    raw = os.fspath(path)
    folder_part, name = os.path.split(raw)
    if "{" in folder_part or "}" in folder_part:
        raise DiversityInputError(f"{raw!r}: braces may only stand in the shards' file name, not in a folder.")
    if data_dir is not None:
        folder = resolve_user_path(folder_part or ".", data_dir=data_dir)
    else:
        stat_input(folder_part or ".")
        folder = Path(os.path.realpath(folder_part or "."))
    if not folder.is_dir():
        raise DiversityInputError(f"{raw!r}: {folder_part!r} is not a folder.")
    return folder / name


def shard_pattern(names) -> Optional[str]:
    """The brace pattern of consecutively numbered shards, or None.

    >>> shard_pattern(["train-000000.tar", "train-000001.tar", "train-000002.tar"])
    'train-{000000..000002}.tar'
    """
    found = [re.match(r"^(.*?)(\d+)(\.tar|\.tar\.gz|\.tgz)$", str(n)) for n in names]
    if len(found) < 2 or not all(found):
        return None
    if len({(m.group(1), m.group(3), len(m.group(2))) for m in found}) != 1:
        return None
    numbers = sorted(int(m.group(2)) for m in found)
    if numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        return None
    head, width, tail = found[0].group(1), len(found[0].group(2)), found[0].group(3)
    return f"{head}{{{numbers[0]:0{width}d}..{numbers[-1]:0{width}d}}}{tail}"


def shards_stamp(path) -> tuple:
    """``((name, modification time, size), ...)`` of the shards ``path`` names; () when it names none.

    A cache key that changes when a shard is rewritten (an app's cached dataset is then re-read).
    """
    try:
        if not is_shard_source(path):
            return ()
        shards = resolve_shards(path)
        return tuple((s.name, s.stat().st_mtime_ns, s.stat().st_size) for s in shards)
    except (DiversityInputError, OSError):
        return ()


def _checked_shard(shard: Path, folder: Optional[Path], shown: str) -> Path:
    """A shard that is a regular file (links followed) inside ``folder`` when one is given."""
    try:
        st = os.stat(shard)
    except OSError:
        raise DiversityInputError(f"{shown!r}: shard {shard.name!r} does not exist (or cannot be examined).") from None
    if folder is not None and not is_within(os.path.realpath(shard), folder):
        raise DiversityInputError(f"{shown!r}: shard {shard.name!r} is a link that leads outside its folder; "
                                  "shards must lie in the pattern's folder.")
    if not stat.S_ISREG(st.st_mode):
        raise DiversityInputError(f"{shown!r}: shard {shard.name!r} is not a regular file (a {file_kind(st.st_mode)}).")
    return shard


# --------------------------------------------------------------------------------------------
# streaming a shard
# --------------------------------------------------------------------------------------------


class _HeaderTooLarge(Exception):
    """A metadata header larger than :data:`MAX_HEADER_BYTES` (raised inside tarfile, renamed outside)."""


class _SafeTarInfo(tarfile.TarInfo):
    """Refuses a long-name or pax header that would be read into memory whole before it is seen."""

    def _proc_member(self, tarfile_):
        if self.type in _META_TYPES and self.size > MAX_HEADER_BYTES:
            raise _HeaderTooLarge(self.size)
        return super()._proc_member(tarfile_)


class _Counted(io.RawIOBase):
    """A decompressed stream that refuses to yield more than ``limit`` bytes (a shard bomb)."""

    def __init__(self, fh, limit: int, where: str):
        self._fh, self._limit, self._where, self.read_bytes = fh, limit, where, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._fh.readinto(buffer) or 0
        self.read_bytes += n
        if self.read_bytes > self._limit:
            raise DiversityInputError(
                f"{self._where}: a shard bomb: it decompresses to more than {human_bytes(self._limit)} (the size "
                "limit left). Raise max_bytes= (CLI: --max-bytes) only if you trust the shards."
            )
        return n

    def close(self) -> None:
        self._fh.close()
        super().close()


@dataclass
class _Budget:
    """Bytes of the ``max_bytes`` limit still free, over all shards."""

    left: int
    total: int
    skipped: list = field(default_factory=list)
    more_skipped: int = 0

    def skip(self, where: str, reason: str) -> None:
        if len(self.skipped) < MAX_SKIPPED_LISTED:
            self.skipped.append(SkippedItem(where, reason))
        else:
            self.more_skipped += 1


def _member_problem(info: tarfile.TarInfo) -> Optional[str]:
    """Why a member makes its shard unsafe, or None."""
    if info.issym():
        return "is a symbolic link"
    if info.islnk():
        return "is a hard link"
    if info.ischr() or info.isblk():
        return "is a device"
    if info.isfifo():
        return "is a FIFO"
    if info.issparse():
        return "is a sparse file"
    if not (info.isreg() or info.isdir()):
        return "is not a regular file"
    return None


def _safe_name(name: str, shard: Path) -> str:
    if name and not (name.startswith("/") or "\\" in name or ".." in name or ":" in name[:2]):
        return posixpath.normpath(name)  # the common case, without the path objects (100,000s of members)
    cleaned = name.replace("\\", "/")
    if cleaned.startswith("/") or re.match(r"^[A-Za-z]:", cleaned) or ".." in PurePosixPath(cleaned).parts:
        raise DiversityInputError(
            f"{shard}: member {name!r} has an unsafe path (absolute or containing '..'); the shard is refused. "
            "Re-create it with relative member names (webdataset.TarWriter writes them)."
        )
    return safe_member_name(name, shard)


def _key_ext(name: str):
    """WebDataset's split: the path up to the first dot of the base name, and the rest (lowercased)."""
    m = re.match(r"^((?:.*/|)[^.]+)[.]([^/]*)$", name)
    if not m:
        return None, None
    return m.group(1), m.group(2).lower()


def _open_shard(shard: Path, budget: _Budget):
    fh = open_input(shard, budget.total)
    if shard.name.lower().endswith((".tar.gz", ".tgz")):
        raw = _Counted(gzip.GzipFile(fileobj=fh, mode="rb"), budget.left, str(shard))
        fh = io.BufferedReader(raw, buffer_size=1 << 20)
    return fh


def _iter_samples(shard: Path, budget: _Budget, wanted: tuple):
    """``(key, {ext: bytes})`` of each sample of one shard, members of the ``wanted`` extensions only."""
    member_limit = min(MAX_MEMBER_BYTES, budget.total)
    fh = _open_shard(shard, budget)
    try:
        try:
            tf = tarfile.open(fileobj=fh, mode="r|", tarinfo=_SafeTarInfo)
        except _HeaderTooLarge as exc:
            raise _header_error(shard, exc) from None
        except tarfile.TarError as exc:
            raise DiversityInputError(f"{shard}: not a valid tar shard ({exc}). Re-create it with webdataset's "
                                      "TarWriter or `tar cf`.") from None
        count, key, sample = 0, None, {}
        with tf:
            while True:
                try:
                    info = tf.next()
                except _HeaderTooLarge as exc:
                    raise _header_error(shard, exc) from None
                except tarfile.TarError as exc:
                    raise DiversityInputError(f"{shard}: the shard is truncated or damaged after {count} members "
                                              f"({exc}). Re-create it.") from None
                if info is None:
                    break
                tf.members = []  # streaming: tarfile would keep every member's header otherwise
                count += 1
                if count > MAX_MEMBERS_PER_SHARD:
                    raise DiversityInputError(
                        f"{shard}: a shard bomb: more than {MAX_MEMBERS_PER_SHARD} members in one shard (member "
                        f"{info.name!r}). Split it into shards of thousands of samples."
                    )
                problem = _member_problem(info)
                if problem is not None:
                    raise DiversityInputError(
                        f"{shard}: member {info.name!r} {problem}; a shard holds regular files only, so the shard "
                        "is refused. Re-create it from the files themselves."
                    )
                name = _safe_name(info.name, shard)
                if info.isdir():
                    continue
                if info.size > member_limit:
                    raise DiversityInputError(
                        f"{shard}: member {info.name!r} declares {human_bytes(info.size)}, over the limit of "
                        f"{human_bytes(member_limit)} for one member; the shard is refused (a shard bomb or a "
                        "damaged shard)."
                    )
                where = f"{shard.name}:{info.name}"
                parts = name.split("/")
                if parts[-1].startswith(".") or "__MACOSX" in parts:
                    budget.skip(where, "hidden or system file")
                    continue
                k, ext = _key_ext(name)
                if k is None:
                    budget.skip(where, "no extension, so no sample key")
                    continue
                if k != key:
                    if sample:
                        yield key, sample
                    key, sample = k, {}
                if ext in sample:
                    raise DiversityInputError(
                        f"{shard}: member {info.name!r}: sample {k!r} already has a .{ext} member; each sample holds "
                        "one member per extension, as WebDataset requires."
                    )
                if ext not in wanted:  # a known extension the modality does not use is left unread, unlisted
                    if ext not in _KNOWN_EXTS:
                        budget.skip(where, f"not an image, text or class member (.{ext})")
                    sample[ext] = None
                    continue
                if info.size > budget.left:
                    check_size(shard, budget.total - budget.left + info.size, budget.total,
                               what="shards' members (together)")
                data = tf.extractfile(info).read()
                budget.left -= len(data)
                sample[ext] = data
        if sample:
            yield key, sample
    finally:
        fh.close()


def _header_error(shard: Path, exc: _HeaderTooLarge) -> DiversityInputError:
    return DiversityInputError(
        f"{shard}: a member's metadata header (a long name or pax record) declares {human_bytes(exc.args[0])}, "
        f"over the limit of {human_bytes(MAX_HEADER_BYTES)}; the shard is refused (a shard bomb or a damaged shard)."
    )


# --------------------------------------------------------------------------------------------
# labels
# --------------------------------------------------------------------------------------------


def _label(sample: dict, where: str):
    """``(class id or None, class name or None)`` from a sample's ``cls`` and ``json`` members."""
    cls_id, name = None, None
    data = sample.get("cls")
    if data is not None:
        text = decode_utf8(data, where + ".cls").strip()
        try:
            cls_id = int(text)
        except ValueError:
            raise DiversityInputError(f"{where}.cls: a .cls member must hold one integer; it holds other text. "
                                      "Fix the shard or leave the member out.") from None
    data = sample.get("json")
    if data is not None:
        try:
            obj = json.loads(decode_utf8(data, where + ".json"))
        except (ValueError, RecursionError):
            raise DiversityInputError(f"{where}.json: not valid JSON. Fix the shard or leave the member out.") from None
        if isinstance(obj, dict):
            for f in JSON_LABEL_FIELDS:
                v = obj.get(f)
                if isinstance(v, str) and v.strip():
                    name = v
                    break
                if isinstance(v, int) and not isinstance(v, bool) and cls_id is None:
                    cls_id = v
                    break
            for f in JSON_NAME_FIELDS:
                v = obj.get(f)
                if name is None and isinstance(v, str) and v.strip():
                    name = v
    return cls_id, name


def _groups(labels: list) -> Optional[np.ndarray]:
    """Each sample's group: its class name, the name another sample gives its class id, or the id."""
    if all(i is None and n is None for i, n in labels):
        return None
    names: dict = {}
    for i, n in labels:
        if i is not None and n is not None:
            names.setdefault(i, n)
    out = [n if n is not None else (names.get(i, str(i)) if i is not None else NO_LABEL_GROUP) for i, n in labels]
    return np.asarray(out, dtype=str)


# --------------------------------------------------------------------------------------------
# public loader
# --------------------------------------------------------------------------------------------


def detect_shards(path, *, max_bytes: int, data_dir=None) -> tuple:
    """``(modality, why)`` for WebDataset shards.

    Images when the first sample with an image or a text member has an image, text otherwise
    (only the first shard's first samples are read).
    """
    shards = resolve_shards(path, data_dir=data_dir)
    check_size(Path(os.fspath(path)), sum(s.stat().st_size for s in shards), max_bytes, what="shards' total")
    budget = _Budget(left=max_bytes, total=max_bytes)
    what = f"WebDataset shards ({len(shards)} shard{'s' if len(shards) != 1 else ''})"
    for _key, sample in _iter_samples(shards[0], budget, IMAGE_EXTS + (TEXT_EXT,)):
        if any(sample.get(e) is not None for e in IMAGE_EXTS):
            return "images", f"{what} with images: images"
        if sample.get(TEXT_EXT) is not None:
            return "text", f"{what} with .txt members and no images: text"
    raise DiversityInputError(f"{shards[0]}: the first shard holds no sample with a .jpg/.jpeg/.png/.webp or .txt "
                              "member; nothing to measure.")


def load_webdataset(
    path,
    *,
    modality: str = "auto",
    max_bytes: int,
    progress: Optional[ProgressCallback] = None,
    data_dir=None,
    name: Optional[str] = None,
) -> Dataset:
    """Load WebDataset shards (see the module docstring) as an image or text :class:`Dataset`.

    Parameters
    ----------
    path : str or path-like
        A brace pattern (``shards/name-{000000..000009}.tar``), a folder of shards, or one shard.
    modality : {"auto", "images", "text"}
        ``"auto"``: images when the first sample has an image, else text.
    max_bytes : int
        Limit on the shards' total size and on the bytes their members hold (decompressed).
    progress : callable, optional
        ``progress(done, total, message)`` after each shard.
    data_dir : str or path-like, optional
        Confine the shards to this folder (see :func:`resolve_shards`).
    name : str, optional
        The dataset's name (default: the pattern's or folder's name).

    Returns
    -------
    Dataset
        ``ids`` are ``"<shard>:<key>"``; ``groups`` the classes (``.cls``/``.json``), or None when
        no sample has one; ``items`` uint8 thumbnails N x H x W x C (images) or the texts.

    Raises
    ------
    DiversityInputError
        Every refusal of the module docstring, a corrupt image or JSON, a ``.cls`` that is not an
        integer, text that is not UTF-8, fewer than 2 items.

    Examples
    --------
    >>> ds = load_webdataset("shards/train-{000000..000009}.tar", max_bytes=1 << 30)  # doctest: +SKIP
    >>> ds.modality, ds.group_names()[:2]  # doctest: +SKIP
    ('images', ['cat', 'dog'])
    """
    shards = resolve_shards(path, data_dir=data_dir)
    shown = Path(os.fspath(path))
    check_size(shown, sum(s.stat().st_size for s in shards), max_bytes, what="shards' total")
    if modality == "auto":
        modality = detect_shards(path, max_bytes=max_bytes, data_dir=data_dir)[0]
    if modality not in ("images", "text"):
        raise DiversityInputError(f"WebDataset shards hold images or text; modality={modality!r} does not apply. "
                                  "Use modality='images' or 'text'.")
    return _load_shards(shards, shown, modality, max_bytes, progress, name)


def _load_shards(shards: list, shown: Path, modality: str, max_bytes: int, progress, name) -> Dataset:
    budget = _Budget(left=max_bytes, total=max_bytes)
    images = ThumbnailStack() if modality == "images" else None
    texts: list = []
    ids: list = []
    labels: list = []
    wanted = (IMAGE_EXTS if modality == "images" else (TEXT_EXT,)) + LABEL_EXTS
    for s, shard in enumerate(shards):
        report(progress, s, len(shards), "reading shards")
        for key, sample in _iter_samples(shard, budget, wanted):
            where = f"{shard.name}:{key}"
            if modality == "images":
                ext = next((e for e in IMAGE_EXTS if sample.get(e) is not None), None)
                if ext is None:
                    budget.skip(where, "a sample without an image (.jpg/.jpeg/.png/.webp)")
                    continue
                images.append(_small(decode_image(sample[ext], f"{where}.{ext}")))
            else:
                data = sample.get(TEXT_EXT)
                text = None if data is None else decode_utf8(data, f"{where}.txt").strip()
                if not text:
                    budget.skip(where, "a sample without text (.txt)" if data is None else "blank text")
                    continue
                texts.append(text)
            labels.append(_label(sample, where))
            ids.append(where)
    report(progress, len(shards), len(shards), "reading shards")
    skipped = list(budget.skipped)
    if budget.more_skipped:
        skipped.append(SkippedItem(f"{shown.name}", f"{budget.more_skipped} more members skipped (not listed)"))
    kind = "images" if modality == "images" else "texts"
    if len(ids) < 2:
        found = f" ({len(skipped)} members or samples were skipped)" if skipped else ""
        raise DiversityInputError(f"{shown}: {len(ids)} {kind} found in {len(shards)} shard(s){found}; diversity "
                                  "needs at least 2 items.")
    items = images.array() if images is not None else texts
    return Dataset(
        name=name or shown.name or Path(os.path.realpath(shown)).name,
        modality=modality,
        items=items,
        features=None,
        groups=_groups(labels),
        weights=None,
        ids=ids,
        skipped=tuple(skipped),
        source=str(shown),
    )
