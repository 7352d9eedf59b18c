"""Who may see or do what: the history each agent witnessed, what an NPC knows, and what its tools may touch.

The Game Master agents see the whole table and every secret. An NPC agent sees its own conversations and what
it witnessed while travelling with the party; it knows the places around it, the secrets it was given, the quests
it gave and the faces of the people in town. With its tools it acts only here (where it stands), on itself, on
the player character talking to it, and on its own quests. Every lookup an agent makes goes through here.
"""

from __future__ import annotations

from dataclasses import dataclass
from .errors import ToolError
from .rules import origins
from .basics import AgentType
from .entities import NPC, Exit, Location, Quest, Secret
from .state import Character, GameState, Message

MAX_NOTES = 24  # permanent notes kept per game; the oldest go first
MAX_NOTE_CHARS = 1500  # one note's length, so a long persona cannot crowd out the rest


@dataclass(frozen=True)
class Viewer:
    """Who is looking: an agent, the NPC it plays (for the NPC agent), and the player character acting."""

    agent: AgentType
    npc_id: str | None = None
    actor_id: str | None = None

    @property
    def npc(self) -> bool:
        return self.agent is AgentType.NPC

    @property
    def key(self) -> str:
        return f"npc:{self.npc_id}" if self.npc else "gm"


GM = Viewer(AgentType.NARRATIVE)


# -- history ---------------------------------------------------------------------------------------------------------

def visible_history(messages: list[Message], agent: AgentType, npc_id: str | None = None) -> list[Message]:
    """Party-aware filtering: the GM agents see the table; an NPC sees its own talks and what it witnessed."""
    from .agents import AGENTS, table_voices

    policy = AGENTS[agent].history if agent in AGENTS else "table"
    if policy == "table":
        voices = table_voices()
        return [m for m in messages if m.agent in voices]
    if policy == "witnessed":
        seen = []
        for m in messages:
            own = m.npc_id == npc_id and m.agent in (AgentType.PLAYER, AgentType.NPC)
            witnessed = npc_id in m.witnesses and m.agent is not AgentType.SUMMARIZER
            if own or witnessed:
                seen.append(m)
        return seen
    return []


# -- what an NPC knows -----------------------------------------------------------------------------------------------

def known_secret_ids(state: GameState, viewer: Viewer) -> set[str] | None:
    """Secret ids the viewer may know of (None: every one, for the GM)."""
    if not viewer.npc:
        return None
    npc = state.npcs.get(viewer.npc_id or "")
    return set(npc.knows_secrets) if npc else set()


def lore_secrets(state: GameState, viewer: Viewer) -> frozenset[str]:
    """The secrets whose GM-only lore the viewer may be given: those the party has discovered, and for an NPC
    those it knows. Lore marked plainly GM-only reaches no agent."""
    found = {s.id for loc in state.locations.values() for s in loc.secrets if s.discovered}
    if viewer.npc:
        npc = state.npcs.get(viewer.npc_id or "")
        found |= set(npc.knows_secrets) if npc else set()
    return frozenset(found)


def known_locations(state: GameState, viewer: Viewer) -> list[Location]:
    """Places the viewer knows: all of them for the GM; for an NPC, where it and the party are, and the ways on."""
    if not viewer.npc:
        return list(state.locations.values())
    npc = state.npcs.get(viewer.npc_id or "")
    secrets = known_secret_ids(state, viewer) or set()
    ids: list[str] = []
    for origin in filter(None, [npc.location if npc else None, state.current_location]):
        loc = state.locations.get(origin)
        if loc is None:
            continue
        ids.append(loc.id)
        ids += [e.to for e in loc.exits if loc.exit_open(e) or e.requires in secrets]
    return [state.locations[i] for i in dict.fromkeys(ids) if i in state.locations]


def here(state: GameState, viewer: Viewer) -> Location:
    """Where the viewer stands: an NPC where it is (with the party if it travels with them), the GM with the party."""
    if viewer.npc:
        npc = state.npcs.get(viewer.npc_id or "")
        if npc is not None and npc.location in state.locations and npc.id not in state.party.npc_ids:
            return state.locations[npc.location]
    return state.location()


def exits_line(state: GameState, loc: Location) -> str:
    shown = [f"{state.locations[e.to].name} ({e.to})" for e in loc.exits if loc.exit_open(e)]
    return ", ".join(shown) or "none open"


# -- what players know of the ways -----------------------------------------------------------------------------------

def hidden_way(loc: Location, exit_: Exit) -> bool:
    """A way behind a secret of its place that the party has not found: players know nothing of it, not even that
    it is there. A way closed by the place's state (a flag: the tide, a locked grate) is seen, closed."""
    secret = loc.secret(exit_.requires) if exit_.requires is not None else None
    return secret is not None and not secret.discovered


def ways_out(state: GameState, loc: Location | None = None) -> list[tuple[Location, bool]]:
    """The ways out of a place (the party's by default) as players know them: where each leads, and whether it is
    open now; never one behind an undiscovered secret."""
    loc = loc or state.location()
    found: dict[str, bool] = {}
    for e in loc.exits:
        if e.to in state.locations and not hidden_way(loc, e):
            found[e.to] = found.get(e.to, False) or loc.exit_open(e)
    return [(state.locations[to], is_open) for to, is_open in found.items()]


def places_players_know(state: GameState) -> set[str]:
    """The places players may be told of by name: where the party is, and every place the ways they know of lead
    to, from there on; a place reached only through a way behind an undiscovered secret is not among them."""
    known, todo = {state.current_location}, [state.current_location]
    while todo:
        loc = state.locations.get(todo.pop())
        for there, _ in ways_out(state, loc) if loc is not None else []:
            if there.id not in known:
                known.add(there.id)
                todo.append(there.id)
    return known


def describe_location(state: GameState, loc: Location, viewer: Viewer = GM) -> str:
    """A place as the viewer may know it: the GM also sees its undiscovered secrets, an NPC only those it knows."""
    npcs = [n.name for n in state.npcs.values() if n.location == loc.id and n.id not in state.party.npc_ids]
    found = [s.text for s in loc.secrets if s.discovered]
    flags = ", ".join(f"{k}={v}" for k, v in loc.flags.items())
    parts = [loc.description, f"Exits: {exits_line(state, loc)}."]
    if npcs:
        parts.append(f"Here: {', '.join(npcs)}.")
    lying = [state.items[i].name for i in loc.items if i in state.items]
    if lying:
        parts.append(f"Lying here: {', '.join(lying)}.")
    if flags:
        parts.append(f"State: {flags}.")
    if found:
        parts.append("Discovered: " + " ".join(found))
    known = known_secret_ids(state, viewer)
    hidden = [s for s in loc.secrets if not s.discovered and (known is None or s.id in known)]
    if known is not None:
        if hidden:
            parts.append(f"Secrets here that you know (tell them only if you choose): {', '.join(s.id for s in hidden)}.")
        return " ".join(parts)
    if hidden:
        parts.append("Undiscovered secrets (GM only, reveal with discover_secret when found): "
                     + ", ".join(s.id + _obstacle_note(s, s.id) for s in hidden) + ".")
    closed = [e for e in loc.exits if not loc.exit_open(e)]
    if closed:
        parts.append("Closed ways (GM only): " + ", ".join(f"to {e.to} until {e.requires}{_obstacle_note(e, e.to)}"
                                                          for e in closed) + ".")
    return " ".join(parts)


def _obstacle_note(thing: Secret | Exit, ref: str) -> str:
    """The adventure's check for finding or opening something, as the GM is told to roll it."""
    if thing.dc is None:
        return ""
    how = f"{thing.skill} DC {thing.dc}" if thing.skill else f"DC {thing.dc}"
    return f" ({how}: ability_check with obstacle=\"{ref}\")"


def npc_card(state: GameState, npc: NPC, viewer: Viewer) -> str:
    """An NPC as the viewer knows them: the GM and the NPC itself see the persona; other NPCs only the face."""
    if viewer.npc and viewer.npc_id != npc.id:
        # Another NPC's persona holds their private thoughts and the plot: an NPC knows only the face.
        return f"{npc.name} ({npc.id}): you know them by sight and name; their private thoughts are their own."
    text = f"{npc.name} ({npc.id}), {npc.attitude}. Persona: {npc.persona}"
    if npc.knows_secrets:
        text += f" Knows secrets: {', '.join(npc.knows_secrets)}."
    return text


def character_card(ch: Character, viewer: Viewer, sheet: str) -> str:
    """A player character's sheet for the GM; for an NPC, what it could see across a table."""
    if not viewer.npc:
        return sheet
    looks = "unconscious" if ch.hp == 0 else "badly hurt" if ch.hp * 3 < ch.max_hp else "hale"
    who = origins.origin(ch)
    return (f"{ch.name}, {'an' if who[0] in 'aeiou' else 'a'} {who}, looks {looks}. What they carry and their purse "
            f"are their own business.")


def quests_known(state: GameState, viewer: Viewer) -> list[Quest]:
    """Every quest for the GM; an NPC knows the quests it gave."""
    if not viewer.npc:
        return list(state.quests.values())
    return [q for q in state.quests.values() if q.giver == viewer.npc_id]


# -- what an NPC agent's tools may touch ------------------------------------------------------------------------------

def require_here(state: GameState, viewer: Viewer, loc: Location, verb: str) -> None:
    """An NPC changes or inspects only the place where it stands."""
    if viewer.npc and loc.id != here(state, viewer).id:
        raise ToolError(f"you can only {verb} where you are ({here(state, viewer).name}), not at {loc.name}")


def require_self(state: GameState, viewer: Viewer, npc: NPC, verb: str) -> None:
    if viewer.npc and npc.id != viewer.npc_id:
        me = state.npcs[viewer.npc_id].name if viewer.npc_id in state.npcs else "this NPC"
        raise ToolError(f"as {me} you can only {verb} yourself, not {npc.name}")


def require_counterpart(state: GameState, viewer: Viewer, ch: Character) -> None:
    """An NPC trades only with the player character talking to it."""
    if viewer.npc and ch.owner_id != viewer.actor_id:
        talking = state.characters.get(viewer.actor_id or "")
        who = talking.name if talking else "the player talking to you"
        raise ToolError(f"you can only give to or take from {who}, who is talking to you, not {ch.name}")


def require_own_quest(state: GameState, viewer: Viewer, quest: Quest) -> None:
    if viewer.npc and quest.giver != viewer.npc_id:
        raise ToolError(f"the quest '{quest.title}' is not yours to change; only its giver or the Game Master can")


def require_known_secret(state: GameState, viewer: Viewer, secret_id: str, at: Location) -> None:
    """An NPC tells only the secrets it knows (from anywhere); the GM reveals what the party finds where it is."""
    if viewer.npc:
        if secret_id not in (known_secret_ids(state, viewer) or set()):
            raise ToolError(f"{state.npcs[viewer.npc_id].name} does not know that secret")
    elif at.id != state.current_location:
        raise ToolError(f"that secret is at {at.name}, and the party is not there")


# -- lookups, filtered by who asks ------------------------------------------------------------------------------------

def find_location(state: GameState, viewer: Viewer, ref: str | None) -> Location:
    if not ref:
        return here(state, viewer)
    known = known_locations(state, viewer)
    found = state.find_location(ref)
    if found is None or all(found.id != loc.id for loc in known):
        raise ToolError(f"there is no location called '{ref}' (locations: {', '.join(loc.id for loc in known)})")
    return found


def find_npc(state: GameState, viewer: Viewer, ref: str) -> NPC:
    found = state.find_npc(ref)
    if found is None:
        listed = state.npcs if not viewer.npc else [n.id for n in state.present_npcs()]
        raise ToolError(f"there is no NPC called '{ref}' (NPCs: {', '.join(listed) or 'none'})")
    return found


def find_quest(state: GameState, viewer: Viewer, ref: str) -> Quest:
    known = quests_known(state, viewer)
    found = state.find_quest(ref)
    if found is None or found not in known:
        raise ToolError(f"there is no quest called '{ref}' (quests: {', '.join(q.id for q in known) or 'none'})")
    return found


# -- permanent notes --------------------------------------------------------------------------------------------------

def remember(state: GameState, viewer: Viewer, tool: str, subject: str, note: str) -> None:
    """Keep a permanent result for the rest of the game, once per thing it is about and per viewer, bounded."""
    key = f"{tool}:{subject}|{viewer.key}"
    state.knowledge.pop(key, None)  # re-learnt: it moves to the newest
    state.knowledge[key] = note if len(note) <= MAX_NOTE_CHARS else note[:MAX_NOTE_CHARS - 1] + "…"
    while len(state.knowledge) > MAX_NOTES:
        del state.knowledge[next(iter(state.knowledge))]


def recall(state: GameState, viewer: Viewer) -> list[str]:
    """The permanent notes this viewer may read: the GM's for the GM agents, an NPC's own for that NPC."""
    return [note for key, note in state.knowledge.items() if _note_owner(key) == viewer.key]


def _note_owner(key: str) -> str:
    if "|" in key:
        return key.rsplit("|", 1)[1]
    # Games saved before notes were keyed by viewer: "tool {json args}" (GM) or "... as <npc-id>".
    head, sep, npc_id = key.rpartition(" as ")
    return f"npc:{npc_id}" if sep and head.endswith("}") else "gm"
