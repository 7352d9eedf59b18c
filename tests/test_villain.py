"""The villain is an NPC like any other: players talk to him with @Name where he is, his agent plays his persona
and knows his secrets, and he fights on his own sheet."""

from __future__ import annotations

import pytest

from engine.errors import BadInput
from engine.basics import AgentType
from tests.conftest import CHANNEL


async def test_players_talk_to_corran_vey_where_he_is(table):
    with pytest.raises(BadInput, match="Corran Vey is not here"):
        await table.turn("@Corran who are you?", "never used")
    session = await table.engine.session(CHANNEL)
    session.state.current_location = "wreckers-grotto"
    await table.store.save_state(session.id, session.state, [], version=session.version)
    result = await table.turn("@Corran Did you kill Aldous Wendle?", '"The sea takes who it likes, friend."')
    assert result.agent is AgentType.NPC and result.npc.id == "corran-vey"
    request = table.model.requests[-1]
    prompt = request.system + request.context
    assert "You are Corran Vey" in prompt and "bribe of 100 gold" in prompt  # what he wants and offers
    assert "drowned-call" in prompt and "cask-door" not in prompt  # his secrets, and no one else's
    assert "Boarding axe" not in prompt  # his stat block is the combat agent's, not his voice's
