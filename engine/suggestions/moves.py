"""The rules for everything else a player does: quests, travel, rest, checks, secrets, company, spells, fights and
questions about the world."""

from __future__ import annotations

import re
from functools import lru_cache

from ..rules import spells
from ..entities import NPC
from ..state import GameState
from ..tools.combat import participant_hp
from .lexicon import _words
from .reading import (_STOP_WORDS, _THEY, _WONDERING, C, Hit, N, P, Reading, Situation, Suggestion, _names, _overlap,
                      rule)

@rule(N, P)
def accept_quest(s: Situation) -> list[Suggestion]:
    offered = [q for q in s.state.quests.values() if q.status == "offered" and (s.npc is None or q.giver == s.npc.id)]
    r = s.reading
    if not offered or not r.acts("accept", "not_accept") or r.has("not_accept"):
        return []
    quest = offered[0]
    if len(offered) > 1:  # the one whose giver or words the message names
        quest = max(offered, key=lambda q: _overlap(r, " ".join([q.title, q.giver or "", q.description or ""])))
    return [Suggestion("start_quest", f"the party seems to accept '{quest.title}'", 0.8, {"quest": quest.id})]


@rule(N, P)
def report_progress(s: Situation) -> list[Suggestion]:
    r = s.reading
    if not r.has("progress") or r.question(r.get("progress")[0].sentence):
        return []
    best, score = None, 1
    for quest in s.state.quests.values():
        if quest.status not in ("active", "offered"):
            continue
        for objective in quest.objectives:
            if objective.done:
                continue
            overlap = _overlap(r, objective.text) + (quest.status == "active")
            if overlap > score:
                best, score = (quest, objective), overlap
    if best is None:
        return []
    quest, objective = best
    if quest.status == "offered":  # the party did the work before taking the job: start it, then mark it
        return [Suggestion("complete_objective", f"the party seems to have done '{objective.text}' (start "
                           f"'{quest.title}' first)", 0.5, {"quest": quest.id, "objective": objective.id})]
    return [Suggestion("complete_objective", f"the party may have finished a step of '{quest.title}'", 0.6,
                       {"quest": quest.id, "objective": objective.id})]


_ALIASES = {"tavern": ("tavern", "pub", "inn", "bar", "alehouse", "taproom"), "cottage": ("cottage", "house", "home"),
            "lighthouse": ("lighthouse", "tower", "rock")}
_PERSONA = re.compile(r"^You are ([^,.]+), ([^,.]+)")


def _roles(npc: NPC) -> frozenset[str]:
    """What people call an NPC besides its name, from its persona ("You are Ysolde Marrick, Saltmere's
    harbormaster, …" gives "harbormaster")."""
    return _persona_roles(npc.persona)


@lru_cache(maxsize=256)
def _persona_roles(persona: str) -> frozenset[str]:
    m = _PERSONA.match(persona)
    if m is None:
        return frozenset()
    return frozenset(w.removesuffix("'s") for w in _words(m.group(2).lower()) if len(w) > 3 and w not in _STOP_WORDS)


def _deletions(word: str) -> set[str]:
    return {word[:i] + word[i + 1:] for i in range(len(word))}


@lru_cache(maxsize=256)
def _place_names(location_id: str, name: str, description: str) -> frozenset[str]:
    """What a place is called: its name's words, its id's, and a kind's usual words ("pub" for a tavern)."""
    words = {w for w in _words(name.lower()) if w not in _STOP_WORDS}
    words |= {w.rstrip("s") for w in words} | set(location_id.split("-")) - {"the", "of"}
    about = " ".join([name, *description.split()[:8]]).lower()  # what it is, not what it faces
    return frozenset(words | {a for key, names in _ALIASES.items() if key in about for a in names})


def _place_words(state: GameState, location_id: str) -> set[str]:
    there = state.locations[location_id]
    words = set(_place_names(location_id, there.name, there.description))
    for npc in state.npcs.values():  # "see Brisa", "the keeper's daughter": where someone lives
        if npc.location == location_id and not npc.name.startswith("The "):
            words.add(npc.name.split()[0].lower())
            words |= {w for w in _roles(npc) if w not in ("keeper",)} - {w for w in words if len(w) < 4}
    return words


class _Ahead:
    """The words soon after some hits (a dozen after each of the first four, in their sentence), read once so that
    every place can be tested against them cheaply, allowing one slip of the keyboard ("tavrn")."""

    def __init__(self, r: Reading, hits: list[Hit], reach: int = 12, before: bool = False) -> None:
        """`before`: the words just before each hit count too ("open the door to the Brine Cup and step inside")."""
        self.words = {r.tokens[i].removesuffix("'s") for hit in hits[:4]
                      for i in range(max(r.stops[hit.sentence - 1] if hit.sentence else 0, hit.start - reach) if before
                                     else hit.end, min(r.stops[hit.sentence], hit.end + reach))}
        self.long = {w for w in self.words if len(w) >= 5}
        self.slips = {d for w in self.long for d in _deletions(w)}

    def names(self, place: set[str]) -> bool:
        if not self.words.isdisjoint(place):
            return True
        if not self.long:
            return False
        long_place = [w for w in place if len(w) >= 5]
        return not self.slips.isdisjoint(long_place) or any(not self.long.isdisjoint(_deletions(w)) for w in long_place)


def _spoken_to(s: Situation) -> dict[int, NPC]:
    """The sentences that open by naming someone here ("Ysolde, go tell Brisa …"): orders to them."""
    r = s.reading
    firsts = {n.name.split()[0].lower(): n for n in s.state.npcs.values()}
    out = {}
    for number, stop in enumerate(r.stops):
        first = r.stops[number - 1] if number else 0
        if first in r.clause_ends and r.tokens[first] in firsts:
            out[number] = firsts[r.tokens[first]]
    return out


@rule(N)
def travel(s: Situation) -> list[Suggestion]:
    r = s.reading
    going = r.acts("go")
    if going and (orders := _spoken_to(s)):
        going = [h for h in going if h.sentence not in orders]
    short = 0 < len(r.tokens) <= 5 and not r.questions and not r.has("go") and not r.later  # "the keeper's cottage pls"
    if not going and not short:
        return []
    here = s.state.location()
    opening = bool(r.acts("open_light"))
    ahead = _Ahead(r, going or [Hit(0, 0, 0)], before=True)
    for exit_ in here.exits:
        if ahead.names(_place_words(s.state, exit_.to)):
            there = s.state.locations[exit_.to]
            if here.exit_open(exit_):
                return [Suggestion("change_location", f"the player heads for {there.name}", 0.8, {"location": there.id})]
            if opening:  # waiting for the tide, unbarring the gate: then the way opens
                return [Suggestion("change_location", f"the player heads for {there.name} once the way opens", 0.6,
                                   {"location": there.id})]
    return []


@rule(N)
def rest(s: Situation) -> list[Suggestion]:
    r = s.reading
    if r.has("not_rest") and not r.has("hit_dice"):
        blocked = {h.sentence for h in r.get("not_rest")}
    else:
        blocked = set()
    short = [h for h in r.acts("short_rest", "not_rest") if h.sentence not in blocked]
    long = [h for h in r.acts("long_rest", "not_rest") if h.sentence not in blocked]
    if long and not (short and any(r.words(h) in ("hit die", "hit dice") for h in short)):
        return [Suggestion("long_rest", "the party settles down for the night", 0.85)]
    if short:
        return [Suggestion("short_rest", "a short rest spends hit dice to heal", 0.85)]
    return []


@rule(N, C, P)
def ability_check(s: Situation) -> list[Suggestion]:
    r = s.reading
    found = [h for h in r.acts("social" if s.agent is P else "check", "not_check", "fight", "go")
             if not h.start or r.tokens[h.start - 1] not in _THEY]  # "she's hiding something" is no check of ours
    if s.agent is C:
        found = [h for h in found if r.tokens[h.start] not in ("try", "tries", "tried", "attempt", "attempts")]
    named = [h for h in r.get("skill") if not r.has("not_check")  # "perception?" asks for the roll, "do I need…?" not
             and r.tokens[r.stops[h.sentence - 1] if h.sentence else 0] not in _WONDERING]
    if found or named and s.agent is not P:
        return [Suggestion("roll", "the outcome is uncertain: roll the check", 0.7)]
    return []


def _secrets_named(s: Situation) -> list:
    """Undiscovered secrets where the party is, and in places the message names ("inside the tavern …")."""
    here = s.state.current_location
    places = [here] + [loc.id for loc in s.state.locations.values() if loc.id != here and loc.secrets and any(
        len(w) >= 5 for w in s.reading.token_set & _place_words(s.state, loc.id))]
    return [x for loc in places for x in s.state.locations[loc].secrets if not x.discovered]


@rule(N)
def secrets_here(s: Situation) -> list[Suggestion]:
    """Searching is a check; searching or watching where a secret lies, for what it is about, may find it."""
    r = s.reading
    searching = r.acts("search")
    if not searching and not r.acts("observe"):
        return []
    names = _names(s.state)
    for secret in _secrets_named(s):
        if _overlap(r, secret.text, names) >= 2:
            return [Suggestion("discover_secret", "what they look at could reveal a secret if the check succeeds", 0.6,
                               {"secret": secret.id}),
                    Suggestion("roll", "searching is a check", 0.6)]
    return [Suggestion("roll", "searching is a check", 0.6)] if searching else []


@rule(P)
def npc_secret(s: Situation) -> list[Suggestion]:
    if s.npc is None:
        return []
    r = s.reading
    untold = [x for loc in s.state.locations.values() for x in loc.secrets if x.id in s.npc.knows_secrets and not x.discovered]
    for secret in untold:  # when asked plainly, or about what the secret is about (not at every "who" or "where")
        if [h for h in r.get("secretly") if not r.has("not_secret")] or _overlap(r, secret.text, _names(s.state)) >= 2:
            return [Suggestion("discover_secret", "you know a secret they ask about; reveal it only if you choose to tell",
                               0.5, {"secret": secret.id})]
    return []


def _npcs_named(s: Situation) -> list[NPC]:
    tokens = s.reading.token_set
    return [n for n in s.state.npcs.values() if not tokens.isdisjoint(_name_words(n.name))]


@lru_cache(maxsize=256)
def _name_words(name: str) -> frozenset[str]:
    return frozenset(w for w in _words(name.lower()) if w not in _STOP_WORDS and w != "ghost")


@rule(N, P)
def company(s: Situation) -> list[Suggestion]:
    r = s.reading
    party = s.state.party.npc_ids
    if s.agent is P:
        who = [s.npc] if s.npc else []
    else:
        who = [n for n in _npcs_named(s) if n.location == s.state.current_location or n.id in party]
    for npc in who:
        if npc.id not in party and [h for h in r.get("join") if not r.question(h.sentence) or h.sentence in r.requests
                                    or s.agent is P]:
            return [Suggestion("add_to_party", f"{npc.name} is asked to travel with the party"
                               + ("; call it only if you agree" if s.agent is P else ""), 0.6, {"npc": npc.id})]
        if npc.id in party and r.acts("leave"):
            return [Suggestion("remove_from_party", f"{npc.name} stays behind", 0.6, {"npc": npc.id})]
    return []


@rule(N, P)
def npc_moves(s: Situation) -> list[Suggestion]:
    r = s.reading
    sent = r.acts("send")
    orders = _spoken_to(s) if s.agent is N else {}
    if s.agent is P or orders:  # told to the NPC's face: "head up to the Brine Cup", "Ysolde, go tell Brisa …"
        sent += [h for h in r.acts("go") if s.agent is P or h.sentence in orders]
    if not sent:
        return []
    who = [s.npc] if s.agent is P and s.npc else [n for n in _npcs_named(s) if n.id not in s.state.party.npc_ids]
    who = sorted(who, key=lambda n: n not in orders.values())
    ahead = _Ahead(r, sent)
    for npc in who:
        for loc in s.state.locations:
            if loc != npc.location and ahead.names(_place_words(s.state, loc) - {npc.name.split()[0].lower()}):
                return [Suggestion("move_npc_to_location", f"{npc.name} goes to {s.state.locations[loc].name}", 0.55,
                                   {"npc": npc.id, "location": loc})]
    return []


_CAST = re.compile(r"\bcast(?:s|ing)?\b", re.I)


def _party_spell(s: Situation) -> str | None:
    """A cantrip or spell of a party member's that the message names, if any."""
    text = " ".join(s.reading.text.casefold().replace("’", "'").split())
    for pid in s.state.party.player_ids:
        ch = s.state.characters.get(pid)
        for name in (spells.cantrips_of(ch) + spells.spells_of(ch)) if ch is not None else []:
            if re.search(rf"(?<!\w){re.escape(spells.key(name))}(?!\w)", text):
                return name
    return None


def _casting(s: Situation) -> str | None:
    """A party member's own spell, cast by name ("I cast light") or named as a damaging or healing spell."""
    r = s.reading
    if not (_CAST.search(r.text) or r.acts("spell_damage") or r.acts("heal_spell")):
        return None
    return _party_spell(s)


@rule(N, C)
def cast(s: Situation) -> list[Suggestion]:
    named = _casting(s)
    if named is None:
        return []
    return [Suggestion("cast_spell", "a player character's spell: the engine spends the slot and rolls", 0.85,
                       {"spell": named})]


@rule(N, C)
def damage(s: Situation) -> list[Suggestion]:
    r = s.reading
    if _casting(s) is not None:
        return []  # cast_spell applies the damage or healing itself
    if r.acts("heal_spell") and not r.has("hit_dice"):
        fixed = any(r.words(h).startswith(("lay on", "lays on", "laid on")) for h in r.get("heal_spell")) and not re.search(r"\dd\d", r.text)
        found = [Suggestion("update_hp", "healing: apply it", 0.8, {"kind": "healing"})]
        return found if fixed else found + [Suggestion("roll", "roll the healing dice", 0.75)]
    if r.acts("spell_damage") and s.agent is C:
        return [Suggestion("update_hp", "a spell's damage: apply it after the save or roll", 0.75, {"kind": "damage"}),
                Suggestion("roll", "roll the save and the damage", 0.75)]
    hurt = r.acts("hurt", "not_hurt")
    if hurt and not r.has("not_hurt") and not (s.agent is C and r.has("strike")):  # the attack tool applies its damage
        found = [Suggestion("update_hp", "hit points change: apply the damage", 0.7, {"kind": "damage"})]
        if not re.search(r"\b\d+\s*(?:damage|dmg|hp)\b", r.text):
            found.append(Suggestion("roll", "roll the damage", 0.6))
        return found
    leaps = [h for h in r.acts("check") if r.tokens[h.start].startswith(("jump", "leap", "leapt", "vault", "hop"))]
    if s.agent is N and r.near(leaps, "fall_height", gap=12):
        return [Suggestion("update_hp", "a fall from a height may hurt: apply it if the check fails", 0.55,
                           {"kind": "damage"})]
    return []


@rule(N)
def start_fight(s: Situation) -> list[Suggestion]:
    r = s.reading
    if not r.acts("fight", "not_fight"):
        return []
    here = [e for e in s.state.encounters.values() if e.location == s.state.current_location]
    args = {"encounter": here[0].id} if here else {}
    return [Suggestion("start_combat", "a fight is starting: roll initiative", 0.8 if here else 0.5, args)]


@rule(C)
def strike(s: Situation) -> list[Suggestion]:
    r = s.reading
    if r.has("not_strike"):
        return []
    readied = {r.sentence_of[i] for i, t in enumerate(r.tokens) if t.startswith("read") and t in _READY} \
        if not _READY.isdisjoint(r.token_set) else set()
    for hit in r.acts("strike", "not_strike"):
        if hit.sentence in readied or r.near([hit], "spell_damage", gap=1):
            continue  # a readied attack waits for its trigger; "fires magic missile" is a spell, not a weapon
        return [Suggestion("attack", "an attack: the engine rolls it against the target's AC", 0.85)]
    return []


_READY = frozenset({"ready", "readies", "readied", "readying"})


@rule(N)
def light_and_open(s: Situation) -> list[Suggestion]:
    if s.reading.acts("open_light"):
        return [Suggestion("update_location_state", "something here changes state (lit, opened, the tide)", 0.6)]
    return []


@rule(N, P)
def ask_lore(s: Situation) -> list[Suggestion]:
    r = s.reading
    if r.has("not_lore") or r.has("ask_npc") and (_npcs_named(s) or any(not _roles(n).isdisjoint(r.token_set)
                                                                       for n in s.state.npcs.values())):
        return []
    telling = {r.sentence_of[i] for i, t in enumerate(r.tokens) if t in _TELL} if not _TELL.isdisjoint(r.token_set) else set()
    for hit in r.get("lore"):
        asked = r.question(hit.sentence) or hit.sentence in telling
        if asked or s.agent is N and r.tokens[hit.start] in ("history", "legend", "legends", "lore", "myths", "folklore"):
            return [Suggestion("search_lore", "a question about the world's history or lore: look it up", 0.6)]
    for sentence in sorted(r.questions)[:4]:  # "what's Lantern Night?": a name asked about that is no one here
        first = r.stops[sentence - 1] if sentence else 0
        words = r.tokens[first:r.stops[sentence]]
        if words and words[0] in ("what's", "whats", "what", "who", "who's", "where's") and len(words) <= 12 \
                and not _npcs_named(s) and _proper_noun(s, sentence):
            return [Suggestion("search_lore", "a question about something in the world: look it up", 0.5)]
    return []


_TELL = frozenset({"tell", "explain", "know", "remind", "recall", "version", "heard", "hear", "learn"})
_NAME = re.compile(r"(?<=\w\W)\s*\b([A-Z][a-z]+)")  # a capital that does not open the sentence


def _proper_noun(s: Situation, sentence: int) -> bool:
    """Whether the question names something (a capitalised word past the first) that is no NPC here."""
    r = s.reading
    first = r.stops[sentence - 1] if sentence else 0
    known = {w.lower() for n in s.state.npcs.values() for w in n.name.split()}
    return any(w[0].isupper() and w != "I" and w.lower() not in known for w in r.raw_tokens()[first + 1:r.stops[sentence]])


@rule(N, P)
def ask_about_npc(s: Situation) -> list[Suggestion]:
    r = s.reading
    if not r.has("ask_npc"):
        return []
    others = [n for n in s.state.npcs.values() if s.npc is None or n.id != s.npc.id]
    named = [n for n in _npcs_named(s) if n in others]
    if not named:  # "what's the harbormaster like?": by what people call them
        named = [n for n in others if not _roles(n).isdisjoint(r.token_set)]
    if named:
        return [Suggestion("get_npc", f"what the party knows of {named[0].name}", 0.6, {"npc": named[0].id})]
    return []


@rule(C)
def combat_flow(s: Situation) -> list[Suggestion]:
    combat = s.state.combat
    if not combat.active:
        return []
    standing = [p for p in combat.order if p.faction == "enemy" and participant_hp(s.state, p)[0] > 0]
    if not standing:
        won = [Suggestion("end_combat", "no enemy is left standing", 0.95)]
        if s.state.leveling == "xp" and any(p.cr is None for p in combat.order if p.faction == "enemy"):
            # foes with a challenge rating are worth their XP when the fight ends; the others are the GM's to judge
            won.append(Suggestion("award_xp", "the foes are overcome: award the party XP for those without a "
                                              "challenge rating", 0.6))
        return won
    r = s.reading
    if r.acts("end_fight"):
        return [Suggestion("end_combat", "the enemies are beaten or gone: end the fight", 0.75)]
    if not r.tokens or all(r.question(n) for n in range(len(r.stops))):
        return []  # a question about the fight is not a combatant's action: the turn does not pass
    return [Suggestion("next_turn", "after this combatant acts, pass the turn on", 0.9)]


