"""The world grows in play: create_npc, create_location and create_item make what the GM improvises real state,
checked like an adventure file, bounded, undone with their turn, and exportable as an adventure."""

from __future__ import annotations


import pytest

from engine.basics import AgentType
from engine.tools.making import PER_TURN
from tests.conftest import CHANNEL, call, ctx_for


def refused(ctx, tag: str, *said: str) -> None:
    before = ctx.state.model_dump()
    result = call(ctx, tag)
    assert not result.ok, result.observation
    for fragment in said:
        assert fragment in result.observation, result.observation
    assert ctx.state.model_dump() == before


def test_a_made_npc_is_state_that_every_tool_finds(state):
    ctx = ctx_for(state)
    made = call(ctx, '<create_npc name="Gil Marsh" role="fishmonger" attitude="friendly" description="A stooped man '
                     'who smells of brine."><knows>The Gray Oar crew buys no fish</knows></create_npc>')
    assert made.ok, made.observation
    gil = state.npcs["gil-marsh"]
    assert (gil.role, gil.attitude, gil.location, gil.made) == ("fishmonger", "friendly", state.current_location, state.turn)
    assert "Knows: The Gray Oar crew buys no fish." in gil.persona
    card = call(ctx, '<get_npc npc="Gil"/>')
    assert card.ok and "Gil Marsh" in card.observation
    assert call(ctx, '<move_npc_to_location npc="gil-marsh" location="brine-cup-tavern"/>').ok
    refused(ctx, '<create_npc name="gil marsh" description="Another."/>', "already a npc called Gil Marsh")
    refused(ctx, '<create_npc name="Aria Stone" description="A twin."/>', "Aria is a player character")
    refused(ctx, '<create_npc name="Nell" description="A girl." location="the moon"/>', "moon")
    refused(ctx, '<create_npc name="!!!" description="Nobody."/>', "needs some letters")
    npc_ctx = ctx_for(state, agent=AgentType.NPC, npc="ysolde-marrick")
    refused(npc_ctx, '<create_npc name="Tam" description="A boy."/>', "not available to the npc agent")


def test_a_made_place_joins_the_map_both_ways_and_keeps_its_secret(state):
    ctx = ctx_for(state)
    made = call(ctx, '<create_location name="Smugglers\' Cove" exits="saltmere-quay, The Brine Cup" '
                     'secret="A tunnel behind the nets" dc="14" skill="investigation" '
                     'description="A shingle cove under the cliff."/>')
    assert made.ok, made.observation
    cove = state.locations["smugglers-cove"]
    assert [e.to for e in cove.exits] == ["saltmere-quay", "brine-cup-tavern"] and cove.made == state.turn
    assert any(e.to == "smugglers-cove" for e in state.locations["saltmere-quay"].exits)
    assert any(e.to == "smugglers-cove" for e in state.locations["brine-cup-tavern"].exits)
    assert call(ctx, '<change_location location="smugglers-cove"/>').ok and state.current_location == "smugglers-cove"
    guarded = call(ctx, '<discover_secret secret="smugglers-cove-secret"/>')  # found by its check, as written ones
    assert not guarded.ok and "a DC 14 investigation check" in guarded.observation
    refused(ctx, '<create_location name="Nowhere" exits="atlantis" description="Lost."/>', "no place 'atlantis'")
    refused(ctx, '<create_location name="Cave" exits="saltmere-quay" secret="x" skill="perception" description="d"/>',
            "a skill needs a dc")
    refused(ctx, '<create_location name="Cave" description="No way in."/>', "exits")


def test_a_made_item_is_carried_sold_or_lying_somewhere(state):
    ctx = ctx_for(state)
    assert call(ctx, '<create_item name="Cursed Ring" value="25 gp" weight="0" carried_by="Aria" '
                     'description="Cold near the drowned."/>').ok
    assert state.items["cursed-ring"].price.amount == 25 and state.characters["u1"].item("cursed ring").quantity == 1
    assert call(ctx, '<create_item name="Sea Chart" value="8 gp" shop="Harrow\'s Chandlery"/>').ok
    assert any(s.item == "sea-chart" for s in state.shops["harrow-chandlery"].stock)
    assert call(ctx, '<create_item name="Gull Feather" location="here"/>').ok
    here = state.locations[state.current_location]
    assert here.items == ["gull-feather"]
    from engine.visibility import describe_location
    assert "Lying here: Gull Feather." in describe_location(state, here)
    assert call(ctx, '<modify_inventory item="Gull Feather" quantity="1" character="Bram"/>').ok
    assert here.items == [] and state.characters["u2"].item("gull feather").quantity == 1  # picked up
    ctx = ctx_for(state)  # a new turn
    refused(ctx, '<create_item name="Lamp" carried_by="Aria" shop="harrow-chandlery"/>', "in one place")
    refused(ctx, '<create_item name="Map" shop="harrow-chandlery"/>', "give the item a value")
    refused(ctx, '<create_item name="Map" shop="nowhere" value="1 gp"/>', "no shop 'nowhere'")


def test_a_turn_makes_a_few_things_at_most(state):
    ctx = ctx_for(state)
    for n in range(PER_TURN):
        assert call(ctx, f'<create_item name="Shell {n}"/>').ok
    refused(ctx, '<create_item name="Shell 9"/>', f"{PER_TURN} additions to the world are the most one turn may make")
    assert call(ctx_for(state), '<create_item name="Shell 9"/>').ok  # the next turn may


def test_the_played_world_exports_as_an_adventure_the_checker_accepts(state, tmp_path):
    import yaml

    from engine.content import check_adventure, load_adventure
    from engine.world import export_adventure

    ctx = ctx_for(state)
    assert call(ctx, '<create_location name="Smugglers Cove" exits="saltmere-quay" description="A cove."/>').ok
    assert call(ctx, '<create_npc name="Gil Marsh" location="smugglers-cove" description="A fishmonger."/>').ok
    assert call(ctx, '<create_item name="Cursed Ring" location="smugglers-cove" value="25 gp"/>').ok
    next(s for loc in state.locations.values() for s in loc.secrets).discovered = True  # found in play
    text = export_adventure(state, "saltmere-campaign", "Saltmere, as played", "The fog lifts on a town you know.")
    path = tmp_path / "adventure.yaml"
    path.write_text(text)
    assert check_adventure(path) == []
    again = load_adventure(path)
    assert again.id == "saltmere-campaign" and {"smugglers-cove", "saltmere-quay"} <= {loc.id for loc in again.locations}
    assert "gil-marsh" in {n.id for n in again.npcs} and not any(s.discovered for loc in again.locations for s in loc.secrets)
    raw = yaml.safe_load(text)
    assert all("made" not in n for n in raw["npcs"])  # a written adventure's entities are written, not made


async def test_what_a_turn_made_goes_with_its_undo(table):
    await table.turn("Who sells fish here?", '<create_npc name="Gil Marsh" role="fishmonger" description="A stooped '
                     'man."/>', " A stooped man waves.")
    assert "gil-marsh" in (await table.state()).npcs
    await table.engine.undo(CHANNEL, 1)
    assert "gil-marsh" not in (await table.state()).npcs


async def test_admins_list_edit_and_remove_what_play_made(table):
    from engine import BadInput

    await table.turn("Who sells fish?", '<create_npc name="Gil Marsh" role="fishmonger" description="A stooped man."/>',
                     '<create_location name="Smugglers Cove" exits="saltmere-quay" description="A cove."/>',
                     " A man waves.")
    listed = await table.engine.world_additions(CHANNEL)
    assert listed == ["npc gil-marsh: Gil Marsh (fishmonger, at saltmere-quay; made on turn 0)",
                      "location smugglers-cove: Smugglers Cove (ways to saltmere-quay; made on turn 0)"]
    said = await table.engine.world_change(CHANNEL, "gm", "edit", "npc", "gil-marsh", "role", "net mender")
    assert said == "The npc Gil Marsh (gil-marsh) now has role: net mender."
    for args, refusal in ((("edit", "npc", "gil-marsh", "hp", "99"), "is not edited here"),
                          (("edit", "npc", "ysolde-marrick", "role", "x"), "written in the adventure"),
                          (("remove", "location", "nowhere"), "There is no location 'nowhere'"),
                          (("edit", "npc", "gil-marsh", "location", "the moon"), "There is no location 'the moon'")):
        with pytest.raises(BadInput, match=refusal):
            await table.engine.world_change(CHANNEL, "gm", *args)
    await table.engine.world_change(CHANNEL, "gm", "edit", "npc", "Gil Marsh", "location", "smugglers-cove")
    with pytest.raises(BadInput, match="Gil Marsh is at Smugglers Cove: move or remove them first"):
        await table.engine.world_change(CHANNEL, "gm", "remove", "location", "smugglers-cove")
    await table.engine.world_change(CHANNEL, "gm", "remove", "npc", "gil-marsh")
    await table.engine.world_change(CHANNEL, "gm", "remove", "location", "Smugglers Cove")
    state = await table.state()
    assert "gil-marsh" not in state.npcs and "smugglers-cove" not in state.locations
    assert not any(e.to == "smugglers-cove" for e in state.locations["saltmere-quay"].exits)
    assert await table.engine.world_additions(CHANNEL) == []
    exported = await table.engine.world_export(CHANNEL)
    assert exported.startswith("id: saltmere-lantern-as-played\ntitle: The Drowned Lantern of Saltmere (as played)")


def test_lorekeeper_world_lists_corrects_and_exports_a_played_game(tmp_path, capsys):
    import yaml

    from bot.cli import main

    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"character": {"name": "Aria", "class": "fighter"}, "steps": [
        {"say": "Who sells fish here?", "replies": [
            '<create_npc name="Gil Marsh" role="fishmonger" description="A stooped man."/>',
            '<create_location name="Smugglers Cove" exits="saltmere-quay" description="A shingle cove."/>',
            "A stooped man points down the shore."]}]}))
    db = str(tmp_path / "t.db")
    assert main(["play", "--db", db, "--script", str(script), "--game", "g"]) == 0
    capsys.readouterr()
    assert main(["world", "--db", db, "--game", "g", "list"]) == 0
    out = capsys.readouterr().out
    assert "npc gil-marsh: Gil Marsh (fishmonger, at saltmere-quay" in out and "location smugglers-cove" in out
    assert main(["world", "--db", db, "--game", "g", "edit", "npc", "Gil Marsh", "role", "net mender"]) == 0
    assert "now has role: net mender" in capsys.readouterr().out
    assert main(["world", "--db", db, "--game", "g", "remove", "npc", "ysolde-marrick"]) == 2
    assert "written in the adventure" in capsys.readouterr().err
    out_file = tmp_path / "campaign" / "adventure.yaml"
    assert main(["world", "--db", db, "--game", "g", "export", "--id", "saltmere-campaign", "-o", str(out_file)]) == 0
    assert main(["adventure", "check", str(out_file)]) == 0
    assert "net mender" in out_file.read_text() and "smugglers-cove" in out_file.read_text()
    assert main(["world", "--db", db, "--game", "nope", "list"]) == 2
