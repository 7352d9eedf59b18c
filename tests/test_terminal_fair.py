"""The terminal's side of a fair game: /status names the ways out players know of, an attack on someone who is no
enemy asks first, and in a fight a player acts only on their character's turn."""

from __future__ import annotations

from tests.test_cli import play


def test_status_lists_the_ways_out_but_none_behind_an_undiscovered_secret(tmp_path, capsys):
    script = tmp_path / "ways.yaml"
    script.write_text("""
character: {name: Aria, class: fighter}
steps:
  - say: /status
  - say: I walk into the Brine Cup.
    replies: ['<change_location location="brine-cup-tavern"/>', " Smoke and ale."]
  - say: /status
""", encoding="utf-8")
    code, out, err = play(tmp_path, capsys, "--script", str(script), "--seed", "1")
    assert code == 0, err
    quay, tavern = out.split("> /status")[1:]
    flat = " ".join(quay.split())
    assert ("Ways out: The Brine Cup, Harrow's Chandlery, The Keeper's Cottage, Gannet Rock Lighthouse (closed)"
            in flat)  # the lighthouse waits for the tide: seen, closed
    flat = " ".join(tavern.split())
    assert "Ways out: Saltmere Quay" in flat and "Tide Tunnel" not in tavern  # the cask door is still a secret
