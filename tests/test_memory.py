"""The game's own past: a fact from early in a long game is recalled, the prompt stays flat, NPCs recall what they witnessed."""

from __future__ import annotations

from engine.basics import AgentType
from tests.conftest import CHANNEL
from tests.test_lore_turn import embedder, lore_table  # noqa: F401  (fixtures)

KEY = "I bury the silver key under the third oak behind the chapel."


async def play_long_game(t, turns: int) -> list[int]:
    cfg = t.engine.deps.config
    t.engine.deps.config = cfg.model_copy(update={"turn": cfg.turn.model_copy(update={"history_messages": 6})})
    sizes = []
    await t.turn(KEY, "You bury it and mark the spot with a pebble.")
    for i in range(turns):
        await t.turn(f"I walk along the quay, counting boats, stretch {i}.", f"The gulls cry over boat {i}.")
        await t.engine.drain()  # the exchange is indexed in the background
        sizes.append(len(t.model.requests[-1].context) + sum(len(m.content) for m in t.model.requests[-1].messages))
    return sizes


async def test_an_early_fact_is_recalled_late_while_the_prompt_stays_flat(lore_table):
    sizes = await play_long_game(lore_table, 24)
    # Once the history window is full, the prompt stops growing: later turns are no longer than earlier ones (what
    # is recalled varies a little in length, never in number).
    assert max(sizes[16:]) <= max(sizes[8:16]) + 50
    await lore_table.turn("Where did I bury the silver key?", "Under the third oak.")
    context = lore_table.model.requests[-1].context
    assert "## Earlier in this game" in context and "third oak behind the chapel" in context
    history = "".join(m.content for m in lore_table.model.requests[-1].messages)
    assert "third oak" not in history  # it came from memory, not from the history window
    await lore_table.engine.drain()  # the last exchange is indexed in the background too
    stats = await lore_table.engine.remember((await lore_table.engine.session(CHANNEL)).id, await lore_table.state())
    assert stats == 0  # everything committed was already indexed in the background


async def test_the_recall_tool_finds_it_and_an_npc_recalls_only_what_it_witnessed(lore_table):
    await play_long_game(lore_table, 8)
    result = await lore_table.turn("What did I do with the key?", "<recall>silver key buried</recall>", " Ah, the oak.")
    [call] = result.calls
    assert call.ok and "third oak" in call.observation and call.meta["found"] >= 1
    said_to_ysolde = "@Ysolde I hid the copper ring inside my left boot."
    await lore_table.turn(said_to_ysolde, "\"Clever,\" she says.")
    await lore_table.engine.drain()
    npc = await lore_table.turn("@Ysolde do you remember where my key is, or the ring?",
                                "<recall>silver key oak</recall>", " <recall>copper ring boot</recall>", " \"Hm.\"")
    assert npc.agent is AgentType.NPC
    key, ring = npc.calls
    assert key.ok and "third oak" not in key.observation  # she was not there when the key was buried
    assert ring.ok and "left boot" in ring.observation


async def test_memory_is_rebuilt_from_the_log_after_a_restart_and_old_turns_are_embedded(lore_table):
    """The database is memory's source of truth: a process that never saw the game (a restart) loads it, and turns
    stored without a vector (a game from before memory kept them) are embedded in the background."""
    from engine.recall import recall

    await play_long_game(lore_table, 3)
    session = await lore_table.engine.session(CHANNEL)
    memory = lore_table.engine.deps.lore.memory
    game = lore_table.store.game_key(session.id)
    await lore_table.store.execute("DELETE FROM memory_vectors WHERE session_id = ?", session.id)
    memory.drop(game)  # as after a restart
    deps, state = lore_table.engine.deps, await lore_table.state()
    vector = await deps.lore.queries.embed("where is the silver key?")
    found = await recall(deps, session.id, state, "where is the silver key?", vector, 1)
    assert found and "third oak" in found[0].text and found[0].similarity is None  # by its words, for now
    assert await lore_table.engine.remember(session.id, state) == 4  # every exchange embedded, once
    assert await lore_table.engine.remember(session.id, state) == 0
    found = await recall(deps, session.id, state, "where is the silver key?", vector, 1)
    assert found[0].similarity is not None and found[0].similarity > 0.5
    memory.drop(game)
    again = await recall(deps, session.id, state, "where is the silver key?", vector, 1)
    assert again[0].similarity == found[0].similarity  # the vectors were kept in the database


async def test_two_databases_sharing_a_lore_folder_keep_their_games_memories_apart(lore_table, tmp_path):
    from tests.conftest import make_table

    await play_long_game(lore_table, 2)
    other, ctx = await make_table(tmp_path / "other.db")
    try:
        other.engine.deps.lore = lore_table.engine.deps.lore  # the same lore folder and Chroma
        first = await lore_table.engine.session(CHANNEL)
        second = await other.engine.session(CHANNEL)
        assert first.id == second.id  # both databases number their games from 1
        assert lore_table.store.game_key(first.id) != other.store.game_key(second.id)
        from engine.recall import recall

        deps = other.engine.deps
        assert await recall(deps, second.id, await other.state(), "silver key oak", None, 3) == []
        assert await recall(lore_table.engine.deps, first.id, await lore_table.state(), "silver key oak", None, 1)
    finally:
        await ctx.__aexit__(None, None, None)


async def test_an_undone_turn_is_forgotten(lore_table):
    from engine.recall import recall

    await play_long_game(lore_table, 2)
    session = await lore_table.engine.session(CHANNEL)
    deps = lore_table.engine.deps

    async def find(query: str, k: int):
        return await recall(deps, session.id, await lore_table.state(), query, await deps.lore.queries.embed(query), k)

    await lore_table.turn("I hide the brass compass in the lobster pot.", "Nobody saw.")
    await lore_table.engine.drain()
    assert "lobster pot" in (await find("brass compass lobster pot", 1))[0].text
    await lore_table.engine.undo(CHANNEL)
    await lore_table.engine.drain()
    assert all("lobster pot" not in m.text for m in await find("brass compass lobster pot", 3))
    assert any("third oak" in m.text for m in await find("silver key", 2))  # the rest is kept
    deps.lore.memory.drop(lore_table.store.game_key(session.id))  # another process, or after a restart
    assert all("lobster pot" not in m.text for m in await find("brass compass lobster pot", 3))
