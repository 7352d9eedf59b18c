"""The party's map: the places it knows and the ways between them, with where it stands marked; as text for the
terminal and as a PNG for Discord (drawn with Pillow).

Known: every place the party has been, and the places the ways out of those lead to (heard of, not yet seen).
A way behind a secret the party has not found is not on it, nor is a place reached only that way; a way closed
now by the place itself (the tide, a locked gate) is drawn dashed. Nothing here is GM-only."""

from __future__ import annotations

import io
import math
import textwrap
from dataclasses import dataclass

from .state import GameState
from .visibility import ways_out


@dataclass
class Place:
    id: str
    name: str
    visited: bool
    here: bool


@dataclass
class KnownMap:
    places: list[Place]
    ways: list[tuple[str, str, bool]]  # (from, to, open now), each pair once


def known_map(state: GameState) -> KnownMap:
    seen = [lid for lid in dict.fromkeys([*state.visited, state.current_location]) if lid in state.locations]
    order = list(seen)
    ways: dict[frozenset[str], tuple[str, str, bool]] = {}
    for lid in seen:
        for there, is_open in ways_out(state, state.locations[lid]):
            if there.id not in order:
                order.append(there.id)
            key = frozenset((lid, there.id))
            before = ways.get(key)
            ways[key] = (lid, there.id, is_open or (before is not None and before[2]))
    places = [Place(lid, state.locations[lid].name, lid in seen, lid == state.current_location) for lid in order]
    return KnownMap(places, list(ways.values()))


def text_map(state: GameState) -> str:
    """The map as lines: each place the party knows with the ways from it (★ where the party is, ? heard of)."""
    found = known_map(state)
    names = {p.id: p.name for p in found.places}
    lines = []
    for p in found.places:
        mark = "★ " if p.here else "  " if p.visited else "? "
        links = [(b if a == p.id else a, is_open) for a, b, is_open in found.ways if p.id in (a, b)]
        ways = ", ".join(names[o] + ("" if is_open else " (closed now)") for o, is_open in links)
        lines.append(f"{mark}{p.name}" + (f" — {ways}" if ways else ""))
    return "\n".join(lines) + "\n(★ you are here; ? heard of, not yet seen)"


def layout(found: KnownMap, iterations: int = 300) -> dict[str, tuple[float, float]]:
    """Positions in [0, 1]² by a force-directed layout (Fruchterman-Reingold), the same every time for a map."""
    import numpy as np

    n = len(found.places)
    if n == 1:
        return {found.places[0].id: (0.5, 0.5)}
    index = {p.id: i for i, p in enumerate(found.places)}
    angles = np.arange(n) * 2 * math.pi / n
    pos = np.stack([np.cos(angles), np.sin(angles)], axis=1) * 0.5
    edges = np.array([(index[a], index[b]) for a, b, _ in found.ways], dtype=int).reshape(-1, 2)
    k = math.sqrt(1.0 / n)
    heat = 0.1
    for _ in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.maximum(np.linalg.norm(delta, axis=2), 1e-3)
        push = (delta / dist[:, :, None]) * (k * k / dist)[:, :, None]
        move = push.sum(axis=1)
        if len(edges):
            d = pos[edges[:, 0]] - pos[edges[:, 1]]
            length = np.maximum(np.linalg.norm(d, axis=1), 1e-3)
            pull = d / length[:, None] * (length * length / k)[:, None]
            np.add.at(move, edges[:, 0], -pull)
            np.add.at(move, edges[:, 1], pull)
        size = np.maximum(np.linalg.norm(move, axis=1), 1e-9)
        pos += move / size[:, None] * np.minimum(size, heat)[:, None]
        heat *= 0.985
    low, high = pos.min(axis=0), pos.max(axis=0)
    span = np.where(high - low > 1e-9, high - low, 1.0)
    pos = (pos - low) / span
    return {p.id: (float(pos[index[p.id], 0]), float(pos[index[p.id], 1])) for p in found.places}


def png_map(state: GameState, width: int = 960, height: int = 640) -> bytes:
    """The map as a PNG: places as labelled boxes, ways as lines (dashed while closed), where the party is marked."""
    from PIL import Image, ImageDraw, ImageFont

    found = known_map(state)
    where = layout(found)
    image = Image.new("RGB", (width, height), (244, 238, 224))
    draw = ImageDraw.Draw(image)
    try:
        font, title_font = ImageFont.load_default(size=15), ImageFont.load_default(size=20)
    except TypeError:  # an older Pillow without sizes: its bitmap font
        font = title_font = ImageFont.load_default()
    margin_x, margin_top, margin_bottom = 110, 80, 90

    def at(pid: str) -> tuple[float, float]:
        x, y = where[pid]
        return margin_x + x * (width - 2 * margin_x), margin_top + y * (height - margin_top - margin_bottom)

    for a, b, is_open in found.ways:
        (x1, y1), (x2, y2) = at(a), at(b)
        if is_open:
            draw.line([(x1, y1), (x2, y2)], fill=(110, 90, 60), width=3)
        else:
            steps = max(1, int(math.hypot(x2 - x1, y2 - y1) // 12))
            for s in range(0, steps, 2):
                t0, t1 = s / steps, min(1.0, (s + 1) / steps)
                draw.line([(x1 + (x2 - x1) * t0, y1 + (y2 - y1) * t0), (x1 + (x2 - x1) * t1, y1 + (y2 - y1) * t1)],
                          fill=(150, 140, 120), width=2)
    for p in found.places:
        x, y = at(p.id)
        label = "\n".join(textwrap.wrap(p.name, 18)[:3]) or p.id
        box = draw.multiline_textbbox((x, y), label, font=font, anchor="mm", align="center")
        pad = 8
        fill = (255, 250, 235) if p.visited else (232, 226, 212)
        outline = (170, 40, 30) if p.here else (110, 90, 60) if p.visited else (160, 150, 130)
        draw.rounded_rectangle((box[0] - pad, box[1] - pad, box[2] + pad, box[3] + pad), radius=8, fill=fill,
                               outline=outline, width=4 if p.here else 2)
        draw.multiline_text((x, y), label, font=font, anchor="mm", align="center",
                            fill=(40, 30, 20) if p.visited else (120, 110, 95))
        if p.here:  # a drawn star: the default font has no glyph for one
            top = box[1] - pad - 6
            draw.text((x + 9, top), "you are here", font=font, anchor="mb", fill=(170, 40, 30))
            cx, cy, r = x - draw.textlength("you are here", font=font) / 2 - 4, top - 8, 7
            star = [(cx + (r if i % 2 == 0 else r / 2.5) * math.sin(i * math.pi / 5),
                     cy - (r if i % 2 == 0 else r / 2.5) * math.cos(i * math.pi / 5)) for i in range(10)]
            draw.polygon(star, fill=(170, 40, 30))
    draw.text((20, 18), state.title, font=title_font, fill=(40, 30, 20))
    draw.text((20, height - 30), "boxes: places you have seen · grey: heard of · dashed: closed now", font=font,
              fill=(110, 100, 85))
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()
