"""The pictures of the map's hover cards: image thumbnails as data URIs and molecules as compact SVG drawings.

Plain functions of the items (no Streamlit): :mod:`ui.map_cards` measures, budgets and sends
them, on a background task when there are many. A thumbnail is at most :data:`CARD_THUMB_PX` px
(PNG for small images, WebP for photographs, ~0.5 KB); a molecule's drawing is RDKit's SVG with
its paths merged (~2 KB instead of ~11 KB, the same picture).
"""

from __future__ import annotations

import base64
import io
import re

import numpy as np

#: Longest side of a hover card's thumbnail, px: larger images are shrunk to it (the card shows it at 112 px).
CARD_THUMB_PX = 48
#: Images up to this side are PNG in the cards (lossless, ~100-300 bytes); larger ones WebP.
CARD_PNG_PX = 32
#: WebP quality of the cards' thumbnails (~0.4 KB for a 48 px photograph).
CARD_WEBP_QUALITY = 70
#: Side of a molecule's drawing in the cards, px (an SVG, shown at 160 px).
CARD_DRAWING_PX = 120


def thumbnail_uri(img) -> str:
    """A hover card's thumbnail as a data URI: PNG up to :data:`CARD_PNG_PX` px, else a WebP of at
    most :data:`CARD_THUMB_PX` px a side (the aspect ratio kept)."""
    from PIL import Image

    a = np.asarray(img)
    if a.ndim == 3 and a.shape[-1] == 1:
        a = a[..., 0]
    im = Image.fromarray(np.ascontiguousarray(a.astype(np.uint8)))
    buf = io.BytesIO()
    if max(im.size) <= CARD_PNG_PX:
        im.save(buf, format="PNG")
        mime = "png"
    else:
        if max(im.size) > CARD_THUMB_PX:
            im.thumbnail((CARD_THUMB_PX, CARD_THUMB_PX), Image.BILINEAR)
        im.save(buf, format="WEBP", quality=CARD_WEBP_QUALITY)
        mime = "webp"
    return f"data:image/{mime};base64," + base64.b64encode(buf.getvalue()).decode("ascii")


_SVG_ELEMENT = re.compile(r"<(path|text|ellipse|polygon|polyline|circle|rect)\b([^>]*?)(/>|>(.*?)</\1>)", re.S)
_SVG_ATTR = re.compile(r"([\w:-]+)='([^']*)'")
_SVG_LINE = re.compile(r"M(-?[\d.]+,-?[\d.]+)((?:L-?[\d.]+,-?[\d.]+)+)")


def compact_svg(svg: str, side: int) -> str:
    """RDKit's SVG of a molecule, compact: the paths of each colour merged into one, the atom labels
    as plain ``<text>``, no header or background (~2 KB instead of ~11 KB; the same picture)."""
    strokes: dict = {}
    fills: dict = {}
    parts = []
    for m in _SVG_ELEMENT.finditer(svg):
        tag, attrs, body = m.group(1), dict(_SVG_ATTR.findall(m.group(2))), m.group(4) or ""
        style = dict(kv.split(":", 1) for kv in attrs.get("style", "").split(";") if ":" in kv)
        if tag == "path" and "d" in attrs:
            d = re.sub(r"\.0(?=\D|$)", "", re.sub(r"\s*([A-Za-z])\s*", r"\1", attrs["d"]).strip())
            fill = style.get("fill", attrs.get("fill", "none"))
            if fill != "none":
                fills.setdefault(fill, []).append(d)
            else:
                width = style.get("stroke-width", "1px").replace("px", "")
                group = strokes.setdefault((style.get("stroke", "#000000"), width), [])
                line = _SVG_LINE.fullmatch(d)
                if line and group and group[-1].endswith("L" + line.group(1)):
                    d = line.group(2)  # continues the previous line: no new "M"
                group.append(d)
        elif tag == "text":
            anchor = style.get("text-anchor", "start")
            parts.append(
                f"<text x='{attrs.get('x', 0)}' y='{attrs.get('y', 0)}' font-size='"
                f"{style.get('font-size', '10px').replace('px', '')}' fill='{style.get('fill', '#000000')}'"
                + ("" if anchor == "start" else f" text-anchor='{anchor}'")
                + f">{body}</text>"
            )
        elif tag != "rect":  # the background rectangle is dropped; radicals, highlights kept
            parts.append(re.sub(r"\s+class='[^']*'", "", m.group(0)))
    paths = [f"<path d='{''.join(ds)}' stroke='{c}' stroke-width='{w}' fill='none'/>"
             for (c, w), ds in strokes.items()]
    paths += [f"<path d='{''.join(ds)}' fill='{c}'/>" for c, ds in fills.items()]
    return (f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {side} {side}' font-family='sans-serif'>"
            + "".join(paths) + "".join(parts) + "</svg>")


def molecule_svg(smiles: str) -> str:
    """A compact SVG drawing of ``smiles`` for a hover card ("" when it cannot be drawn: the card shows the SMILES)."""
    try:
        from rdkit import Chem
        from rdkit.Chem.Draw import rdMolDraw2D

        from diversity_core.data.molecules import quiet_rdkit
        from diversity_core.featurizers.molecules import drawing_problem

        if drawing_problem(smiles) is not None:
            return ""
        with quiet_rdkit():
            mol = Chem.MolFromSmiles(smiles)
        if mol is None:
            return ""
        # text labels, not glyph outlines (noFreetype): a tenth of the bytes
        drawer = rdMolDraw2D.MolDraw2DSVG(CARD_DRAWING_PX, CARD_DRAWING_PX, -1, -1, True)
        drawer.drawOptions().clearBackground = False
        drawer.drawOptions().minFontSize = 9
        rdMolDraw2D.PrepareAndDrawMolecule(drawer, mol)
        drawer.FinishDrawing()
        return compact_svg(drawer.GetDrawingText(), CARD_DRAWING_PX)
    except Exception:  # noqa: BLE001 - a molecule that cannot be drawn is shown by its SMILES
        return ""


def pictures(kind: str, items: list, progress=None) -> list:
    """The cards' pictures of ``items``: thumbnails (data URIs) or molecule drawings (SVG text)."""
    out = []
    for j, item in enumerate(items):
        out.append(thumbnail_uri(item) if kind == "images" else molecule_svg(str(item)))
        if progress is not None and (j + 1) % 100 == 0:
            progress(j + 1, len(items), f"{j + 1:,} of {len(items):,} {'thumbnails' if kind == 'images' else 'drawings'}")
    return out

