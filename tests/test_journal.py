"""The journal players read (what the party met, saw and learned, never GM-only data) and the canon notes admins
write (read by the GM when they bear on the scene; GM-only ones never reach players or NPCs)."""

from __future__ import annotations

import pytest
import yaml

from engine import BadInput
from engine.basics import AgentType
from engine.context import game_context
from engine.journal import entries, journal
from tests.conftest import CHANNEL


async def test_the_journal_grows_with_what_the_party_meets_and_finds(table):
    state = await table.state()
    assert [line.split(":")[0] for line in entries(state, "places")] == ["Saltmere Quay"]
    assert [line.split(" (")[0] for line in entries(state, "npcs")] == ["Ysolde Marrick"]  # she stands on the quay
    await table.turn("I head into the tavern.", '<change_location location="brine-cup-tavern"/>', " Warmth and noise.")
    state = await table.state()
    assert [line.split(":")[0] for line in entries(state, "places")] == ["Saltmere Quay", "The Brine Cup"]
    assert "Odile Farrow (last known at The Brine Cup)" in entries(state, "npcs")
    text = journal(state)
    for npc in state.npcs.values():  # personas may hold what people hide: never in the journal
        assert npc.persona[:60] not in text
    hidden = [s.text for loc in state.locations.values() for s in loc.secrets]
    assert not any(h[:50] in text for h in hidden) and entries(state, "secrets") == []
    assert "Aldous" not in text  # never met
    with pytest.raises(BadInput, match="no section 'gossip'"):
        journal(state, "gossip")


async def test_canon_notes_reach_the_gm_where_they_bear_and_players_only_when_public(table):
    said = await table.engine.note(CHANNEL, "gm", "add", "The harbor bell was cast in 1022.")
    assert said == "Note n1 added: The harbor bell was cast in 1022."
    await table.engine.note(CHANNEL, "gm", "add", "Odile waters the ale.", gm_only=True, about="Odile")
    await table.engine.note(CHANNEL, "gm", "add", "The quay's third post is rotten.", about="saltmere-quay")
    with pytest.raises(BadInput, match="neither a person nor a place"):
        await table.engine.note(CHANNEL, "gm", "add", "x", about="Atlantis")
    state = await table.state()
    gm = game_context(state, AgentType.NARRATIVE, "u1")
    assert "The harbor bell was cast in 1022." in gm and "third post is rotten" in gm
    assert "Odile waters the ale" not in gm  # she is not in the scene
    npc = game_context(state, AgentType.NPC, "u1", state.npcs["ysolde-marrick"])
    assert "cast in 1022" in npc and "waters the ale" not in npc
    notes = entries(state, "notes")
    assert notes == ["The harbor bell was cast in 1022. (n1, by gm)", "The quay's third post is rotten. (n3, by gm)"]
    await table.turn("I head into the tavern.", '<change_location location="brine-cup-tavern"/>', " Warmth.")
    gm = game_context(await table.state(), AgentType.NARRATIVE, "u1")
    assert "Odile waters the ale. (GM only" in gm and "third post" not in gm
    assert (await table.engine.note(CHANNEL, "gm", "edit", "Cast in 1023.", note_id="n1")).endswith("Cast in 1023.")
    await table.engine.note(CHANNEL, "gm", "remove", note_id="n3")
    assert [n.id for n in (await table.state()).notes] == ["n1", "n2"]
    assert (await table.engine.notes(CHANNEL))[1] == "n2: Odile waters the ale. [GM only] (about odile-farrow) — gm"
    with pytest.raises(BadInput, match="no note 'n9'"):
        await table.engine.note(CHANNEL, "gm", "remove", note_id="n9")


def test_the_journal_and_notes_at_the_keyboard(tmp_path, capsys):
    from bot.cli import main

    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"character": {"name": "Aria", "class": "fighter"}, "steps": [
        {"say": "/note add The bell was cast in 1022."}, {"say": "/note add gm Odile waters the ale."},
        {"say": "/note list"}, {"say": "/journal"}, {"say": "/journal places"}, {"say": "/journal gossip"}]}))
    assert main(["play", "--db", str(tmp_path / "t.db"), "--script", str(script)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Note n1 added: The bell was cast in 1022." in out and "Note n2 added (GM only)" in out
    assert "n2: Odile waters the ale. [GM only]" in out
    journal_out = out.split("> /journal")[1]
    assert "People met • Ysolde Marrick" in journal_out and "Canon notes • The bell was cast in 1022." in journal_out
    assert "waters the ale" not in journal_out and "**" not in journal_out
    assert "The journal has no section 'gossip'" in out


async def test_players_add_canon_notes_only_when_the_server_lets_them(table):
    from engine import BadInput

    with pytest.raises(BadInput, match="only admins add canon notes .*player_notes:on"):
        await table.engine.player_note(CHANNEL, "g1", "u1", "The ferryman owes us a favour")
    settings = await table.engine.configure_server("g1", CHANNEL, player_notes=True)
    assert "Canon notes are added by players and admins" in settings.describe()
    said = await table.engine.player_note(CHANNEL, "g1", "u1", "The ferryman owes us a favour")
    assert said == "Note n1 added to the journal by Aria: The ferryman owes us a favour"
    with pytest.raises(BadInput, match="Only a player with a character in this game"):
        await table.engine.player_note(CHANNEL, "g1", "stranger", "I own the lighthouse")
    state = await table.state()
    assert [(n.text, n.by, n.gm_only) for n in state.notes] == [("The ferryman owes us a favour", "Aria", False)]
    assert "The ferryman owes us a favour" in await table.engine.journal(CHANNEL, "notes")
