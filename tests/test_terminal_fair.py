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


async def test_an_attack_on_someone_who_is_no_enemy_asks_yes_or_no_and_waits_for_its_turn(tmp_path):
    import random

    from bot.terminal import Terminal
    from engine import Deps, Engine, ScriptedModel, Store, load_config
    from engine.basics import AgentType
    from engine.state import Combat, Participant
    from tests.conftest import CORPUS

    answers: list[str] = ["", "y"]
    shown: list[str] = []

    async def ask(prompt: str) -> str:
        shown.append(prompt)
        return answers.pop(0)

    async with Store.open(tmp_path / "t.db") as store:
        engine = Engine(Deps(store, {a: ScriptedModel() for a in AgentType}, load_config(), CORPUS, rng=random.Random(1)))
        terminal = Terminal(engine, "terminal:t", "local", "me", out=shown.append, ask=ask)
        await terminal.open(None)
        await terminal.ensure_character("Aria", "fighter")
        before = (await engine.state("terminal:t")).model_dump()
        del shown[:]
        await terminal.handle("/attack longsword at Ysolde")  # no: nothing happens
        text = " ".join(" ".join(shown).split())
        assert ("Ysolde Marrick is no enemy of yours (neutral), and no fight is going on. Attack Ysolde Marrick anyway?"
                in text and "(y/N) " in shown and text.endswith("Nothing happened."))
        assert (await engine.state("terminal:t")).model_dump() == before
        await terminal.handle("/attack longsword at Ysolde")  # yes
        assert shown[-1].startswith("⚔️ Aria attacks Ysolde Marrick with longsword")
        assert (await engine.state("terminal:t")).npcs["ysolde-marrick"].attitude == "hostile"
        session = await engine.session("terminal:t")
        session.state.combat = Combat(active=True, round=1, turn_index=1, order=[
            Participant(id="local", name="Aria", faction="player", initiative=15, ac=18),
            Participant(id="wolf", name="Wolf", faction="enemy", initiative=12, ac=13, hp=11, max_hp=11)])
        await store.save_state(session.id, session.state, [], version=session.version)
        await terminal.handle("/attack longsword at Wolf")
        assert shown[-1].startswith("It is Wolf's turn, not Aria's: wait for yours") and answers == []
