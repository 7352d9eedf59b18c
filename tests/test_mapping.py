"""The party's map: the places it knows and the ways it knows, never a way behind a secret it has not found; as
text at the keyboard and a PNG on Discord."""

from __future__ import annotations

import io

import yaml

from engine.mapping import known_map, layout, png_map, text_map


def test_the_map_holds_what_the_party_knows_and_no_secret_way(state):
    first = text_map(state)
    assert first.startswith("★ Saltmere Quay — ") and "? The Brine Cup — Saltmere Quay" in first
    assert "Tide Tunnel" not in first  # behind the cellar's cask door, and far from here
    state.visited.append("brine-cup-tavern")
    state.current_location = "brine-cup-tavern"
    seen = text_map(state)
    assert "★ The Brine Cup — Saltmere Quay" in seen and "Tide Tunnel" not in seen  # the cask door is not found
    state.locations["brine-cup-tavern"].secret("cask-door").discovered = True
    found = text_map(state)
    assert "★ The Brine Cup — Saltmere Quay, The Tide Tunnel" in found and "? The Tide Tunnel" in found
    ways = known_map(state).ways
    assert len({frozenset(w[:2]) for w in ways}) == len(ways)  # each way once, whichever end it was seen from


def test_a_way_closed_by_the_place_shows_closed(state):
    quay = state.locations["saltmere-quay"]
    tide = next(e for e in quay.exits if e.requires == "tide_out")
    quay.flags["tide_out"] = False
    name = state.locations[tide.to].name
    assert f"{name} (closed now)" in text_map(state)
    quay.flags["tide_out"] = True
    assert f"{name} (closed now)" not in text_map(state)


def test_the_picture_is_a_png_laid_out_the_same_every_time(state):
    from PIL import Image

    state.visited += ["brine-cup-tavern", "harrow-chandlery"]
    data = png_map(state)
    picture = Image.open(io.BytesIO(data))
    assert picture.format == "PNG" and picture.size == (960, 640)
    found = known_map(state)
    assert layout(found) == layout(found)
    assert all(0.0 <= x <= 1.0 and 0.0 <= y <= 1.0 for x, y in layout(found).values())
    state.current_location = "harrow-chandlery"
    assert png_map(state) != data  # the mark moved


def test_the_map_at_the_keyboard(tmp_path, capsys):
    from bot.cli import main

    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"character": {"name": "Aria", "class": "fighter"}, "steps": [{"say": "/map"}]}))
    assert main(["play", "--db", str(tmp_path / "t.db"), "--script", str(script)]) == 0
    out = capsys.readouterr().out
    assert "★ Saltmere Quay — " in out and "(★ you are here; ? heard of, not yet seen)" in out
