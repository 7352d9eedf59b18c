"""The terminal's commands that ask the engine and show its answer (/roll, /sheet, /cast, /buy …): one function each,
taking the seat (bot/terminal/seat.py) and the rest of the line. /undo, /retry and /new drive the game itself and
stay in session.py."""

from __future__ import annotations

from typing import Awaitable, Callable

from engine.hostility import ConfirmAttack
from engine.rules import features, spells
from engine.rules.levels import progress
from engine.rules.data import weapon as weapon_by_name
from engine.tools.quests import player_quest_line

from . import render
from .render import wrap
from .seat import Seat

HELP = """Type what your character does, or @Name to speak to someone here. Commands:
  /roll 2d6 [for X]  roll dice           /sheet        your character sheet
  /check stealth [adv|dis], /save dex     a check or saving throw from your sheet
  /cast fire bolt at Goblin 1 [level 2] [adv|dis]   cast a spell of yours (commas between several targets)
  /attack longsword [at] Goblin 1 [adv|dis] [sneak] [smite 2] [offhand] [reaction]  attack with a weapon you carry
  /feature rage, /feature lay on hands on Aria [amount 5], /feature ki flurry of blows  a class feature of yours
  /levelup [roll] [improve str, dex]  gain a level (hit points: the average, or roll the hit die)
  /deathsave         your dying character's death saving throw
  /award 300 [to Name, Name] [for why], /award milestone [to Name]  what the GM grants (you run this game)
  /inventory         what you carry      /quests       the quest log
  /journal [npcs|places|items|quests|secrets|notes|story]  what the party has met, seen and learned
  /map               the places you know and the ways between them
  /lookup spell|item|condition|monster NAME   the rules' entry (or a creature of this game)
  /note add [gm] TEXT, /note edit N TEXT, /note remove N, /note list  canon notes (you run this game)
  /shop              what is sold here   /buy ITEM [N] [from SHOP], /sell ITEM [N] [to SHOP]  deal at its prices
  /rest short|long   rest                /status       where you are, the party, any combat
  /sources on|off    name the lore used  /debug [on|off] the GM's report on its tools
  /undo [n]          take back turns     /retry        ask the GM again (same dice)
  /new               end this game and start a new one
  /help              this help
  /quit              save and leave (the game is kept)"""


async def roll(t: Seat, expression: str) -> None:
    """`/roll 1d20+3 for perception`: in a game, the GM sees it in the story."""
    expression, _, reason = expression.partition(" for ")
    rolled = t.engine.roll(expression.strip())
    name = await t.engine.record_roll(t.channel, t.user_id, t.user_name, rolled, reason or None)
    t.out(f"🎲 {name + ' rolls ' if name else ''}{rolled.describe()}{' for ' + reason.strip() if reason.strip() else ''}")

async def check(t: Seat, text: str) -> None:
    """`/check stealth [adv|dis]`: a check from your sheet; the GM sees it in the story."""
    await _rolled(t, text, save=False)

async def save(t: Seat, text: str) -> None:
    """`/save dex [adv|dis]`: a saving throw from your sheet."""
    await _rolled(t, text, save=True)

async def _rolled(t: Seat, text: str, *, save: bool) -> None:
    words = text.split()
    mode = {"adv": "advantage", "advantage": "advantage", "dis": "disadvantage",
            "disadvantage": "disadvantage"}.get(words[-1].lower()) if words else None
    what = " ".join(words[:-1] if mode else words)
    if not what:
        t.out("Say what to roll: /check stealth, /check strength adv, /save dex.")
        return
    name, result = await t.engine.player_check(t.channel, t.user_id, t.user_name, what, mode, save=save)
    t.out(f"🎲 {name}: {result.label}{' (proficient)' if result.proficient else ''} {result.roll.describe()}")

async def cast(t: Seat, text: str) -> None:
    """`/cast magic missile at Goblin 1, Goblin 2 level 2 adv`: the engine spends the slot and rolls; the GM sees
    it in the story."""
    parsed = parse_cast(text)
    if parsed is None:
        t.out("Say what to cast: /cast fire bolt at Goblin 1, /cast cure wounds on Aria level 2, /cast bless "
                 "at Aria, Bram.")
        return
    said = await _strike(t, lambda confirmed: t.engine.cast(t.channel, t.user_id, t.user_name, *parsed,
                                                           confirmed=confirmed))
    if said is not None:
        t.out(wrap(f"✨ {said}"))

async def attack(t: Seat, text: str) -> None:
    """`/attack light crossbow at Goblin 1 adv`: a weapon you carry (its longest name first), then whom; `sneak` (a
    rogue's Sneak Attack), `smite 2` (a paladin's Divine Smite with a level-2 slot), `offhand` (the off hand's
    bonus-action attack) and `reaction` (an opportunity attack) anywhere after it."""
    words = text.split()
    flags = {w.lower() for w in words} & {"sneak", "offhand", "reaction"}
    words = [w for w in words if w.lower() not in flags]
    smite = None
    at = next((i for i, w in enumerate(words[:-1]) if w.lower() == "smite" and words[i + 1].isdigit()), None)
    if at is not None:
        smite = int(words[at + 1])
        words = words[:at] + words[at + 2:]
    mode = {"adv": "advantage", "advantage": "advantage", "dis": "disadvantage",
            "disadvantage": "disadvantage"}.get(words[-1].lower()) if words else None
    words = words[:-1] if mode else words
    if not words:
        t.out("Say which weapon: /attack longsword Goblin 1 (/sheet lists your weapons).")
        return
    cut = next((n for n in range(len(words), 0, -1) if weapon_by_name(" ".join(words[:n])) is not None), 1)
    target = words[cut:]
    if target and target[0].lower() in ("at", "on"):
        target = target[1:]
    said = await _strike(t, lambda confirmed: t.engine.player_attack(
        t.channel, t.user_id, t.user_name, " ".join(words[:cut]), " ".join(target) or None, mode,  # type: ignore[arg-type]
        confirmed=confirmed, sneak="sneak" in flags, smite=smite, offhand="offhand" in flags,
        reaction="reaction" in flags))
    if said is not None:
        t.out(wrap(f"⚔️ {said}"))


def parse_feature(text: str) -> tuple[str, str | None, str | None, int | None, int | None] | None:
    """`/feature NAME [OPTION] [at|on TARGET] [amount N] [slot N]` → (name, option, target, amount, slot); the name is
    the longest feature name the words begin with ("lay on hands on Aria amount 5")."""
    words = text.split()
    names = sorted({r.name for r in features.RESOURCES}, key=len, reverse=True)
    name = next((n for n in names if " ".join(words[:len(n.split())]).lower() == n.lower()), None)
    if name is None:
        return None
    rest = words[len(name.split()):]
    numbers: dict[str, int] = {}
    for key in ("amount", "slot"):
        at = next((i for i, w in enumerate(rest[:-1]) if w.lower() == key and rest[i + 1].isdigit()), None)
        if at is not None:
            numbers[key] = int(rest[at + 1])
            rest = rest[:at] + rest[at + 2:]
    cut = next((i for i, w in enumerate(rest) if w.lower() in ("at", "on")), len(rest))
    option, target = " ".join(rest[:cut]) or None, " ".join(rest[cut + 1:]) or None
    return name, option, target, numbers.get("amount"), numbers.get("slot")


async def feature(t: Seat, text: str) -> None:
    """`/feature rage`, `/feature lay on hands on Aria amount 5`, `/feature ki stunning strike at Goblin 1`."""
    parsed = parse_feature(text)
    if parsed is None:
        t.out("Say which feature: /feature rage, /feature second wind, /feature lay on hands on Aria amount 5, "
              "/feature ki flurry of blows, /feature channel divinity turn undead at Zombie 1 (/sheet lists yours).")
        return
    name, option, target, amount, slot = parsed
    t.out(wrap(f"🌀 {await t.engine.use_feature(t.channel, t.user_id, t.user_name, name, target, amount, option, slot)}"))

async def _strike(t: Seat, act: Callable[[bool], Awaitable[str]]) -> str | None:
    """An attack or spell; one at someone who is no enemy in a fight asks the engine's question first, and happens
    only on a yes (None: it did not). A script's lines are written on purpose, as its /new is: it says yes."""
    try:
        return await act(False)
    except ConfirmAttack as exc:
        t.out(wrap(exc.message))
        if t.ask is None:
            t.out("(The script goes on: yes.)")
        elif (await t.ask("(y/N) ")).strip().lower() not in ("y", "yes"):
            t.out("Nothing happened.")
            return None
    return await act(True)

async def levelup(t: Seat, how: str) -> None:
    """`/levelup [roll] [improve strength, dex]`: one level more; hit points by the average, or the hit die rolled;
    at an Ability Score Improvement, the abilities it raises."""
    how, _, improve = how.partition("improve")
    if how.strip().lower() not in ("", "roll", "average"):
        t.out("Usage: /levelup (average hit points) or /levelup roll; at an Ability Score Improvement add "
              "improve strength (+2) or improve strength, dexterity (+1 each).")
        return
    _, gained = await t.engine.level_up(t.channel, t.user_id, t.user_name,
                                           roll=how.strip().lower() == "roll", improve=improve.strip() or None)
    t.out(wrap(f"⬆️ {gained.describe()}"))

async def award(t: Seat, text: str) -> None:
    """`/award 300 to Tor for the bridge`, `/award milestone`: at the keyboard the player runs the game, so they may
    grant what an admin grants on Discord; it enters the story and the GM sees it."""
    text, _, reason = text.partition(" for ")
    what, _, names = text.partition(" to ")
    what = what.strip().lower().removesuffix(" xp").strip()
    to = [n.strip() for n in names.split(",") if n.strip()]
    if what == "milestone":
        t.out(wrap(await t.engine.award(t.channel, t.user_name, milestone=True, to=to, reason=reason.strip())))
    elif what.isdigit():
        t.out(wrap(await t.engine.award(t.channel, t.user_name, xp=int(what), to=to, reason=reason.strip())))
    else:
        t.out("Usage: /award 300 [to Name, Name] [for why], or /award milestone [to Name].")

async def journal(t: Seat, section: str) -> None:
    t.out(render.markdown_text(await t.engine.journal(t.channel, section.strip().lower() or None), t.color))

async def lookup(t: Seat, text: str) -> None:
    kind, _, name = text.strip().partition(" ")
    if kind.lower() not in ("spell", "item", "condition", "monster") or not name.strip():
        t.out("Usage: /lookup spell fire bolt, /lookup item chain mail, /lookup condition prone, /lookup monster NAME.")
        return
    t.out(render.markdown_text(await t.engine.lookup(t.channel, kind.lower(), name), t.color))

async def deathsave(t: Seat, _: str) -> None:
    t.out(wrap("💀 " + await t.engine.death_save(t.channel, t.user_id, t.user_name)))

async def show_map(t: Seat, _: str) -> None:
    text, _ = await t.engine.world_map(t.channel, picture=False)
    t.out(text)

async def note(t: Seat, text: str) -> None:
    """`/note add [gm] The bell was cast in 1022`, `/note edit n1 …`, `/note remove n1`, `/note list`."""
    action, _, rest = text.strip().partition(" ")
    if action == "list":
        t.out("\n".join(wrap(line) for line in await t.engine.notes(t.channel)) or "No notes yet: /note add TEXT.")
    elif action == "add" and rest.strip():
        gm = rest.split(" ", 1)[0].lower() == "gm"
        said = await t.engine.note(t.channel, t.user_name, "add", rest.split(" ", 1)[1] if gm and " " in rest else rest,
                                   gm_only=gm)
        t.out(wrap(said))
    elif action in ("edit", "remove") and rest.strip():
        note_id, _, new = rest.strip().partition(" ")
        t.out(wrap(await t.engine.note(t.channel, t.user_name, action, new, note_id=note_id)))
    else:
        t.out("Usage: /note add [gm] TEXT, /note edit N TEXT, /note remove N, /note list.")

async def sheet(t: Seat, _: str) -> None:
    ch, state = await t.engine.character(t.channel, t.user_id), await t.state()
    t.out(render.sheet(ch, t.color, progress(ch, state.leveling)))

async def inventory(t: Seat, _: str) -> None:
    t.out(render.inventory(await t.engine.character(t.channel, t.user_id), t.color))

async def quests(t: Seat, _: str) -> None:
    quests = [q for q in (await t.state()).quests.values() if q.status != "offered"]
    t.out("\n".join(wrap(player_quest_line(q)) for q in quests) or "No quests yet.")

async def rest(t: Seat, kind: str) -> None:
    t.out(wrap(await t.engine.rest(t.channel, t.user_id, t.user_name, kind.lower() or "short")))

async def shop(t: Seat, _: str) -> None:
    t.out(render.shop(await t.state(), t.color))

async def buy(t: Seat, text: str) -> None:
    """`/buy healing potion 2`: from the shop here, at its price; the GM sees it in the story. Where several
    shops trade here: `/buy rope from Harrow's Chandlery`."""
    await _trade(t, text, selling=False)

async def sell(t: Seat, text: str) -> None:
    """`/sell silver locket`; where several shops trade here: `/sell silver locket to the fence`."""
    await _trade(t, text, selling=True)

async def _trade(t: Seat, text: str, *, selling: bool) -> None:
    text, _, shop = text.partition(" to " if selling else " from ")
    words = text.split()
    quantity = int(words.pop()) if len(words) > 1 and words[-1].isdigit() else 1
    if not words:
        t.out(f"Say what to {'sell' if selling else 'buy'}: /{'sell' if selling else 'buy'} torch, "
                 f"/{'sell' if selling else 'buy'} healing potion 2. /shop shows what is sold here.")
        return
    told = await t.engine.trade(t.channel, t.user_id, t.user_name, " ".join(words), quantity,
                                   selling=selling, shop=shop.strip() or None)
    t.out(wrap(f"🪙 {told}"))

async def status(t: Seat, _: str) -> None:
    t.out(render.status(await t.state(), t.color))

async def sources(t: Seat, mode: str) -> None:
    if mode.lower() not in ("on", "off"):
        shown = await t.engine.show_sources(t.channel)
        t.out(f"The Sources line is {'on' if shown else 'off'}: /sources on or /sources off.")
        return
    await t.engine.set_sources(t.channel, mode.lower() == "on")
    t.out(f"The Sources line is {mode.lower()}.")

async def debug(t: Seat, mode: str) -> None:
    """`/debug on|off`: the agent reports on its tools after each reply; `/debug` shows the last report."""
    if mode.lower() in ("on", "off"):
        await t.engine.set_debug(t.channel, mode.lower() == "on")
        t.out(f"Debug mode is {mode.lower()}: the GM {'reports' if mode.lower() == 'on' else 'no longer reports'} on its tools.")
        return
    t.out(await t.engine.last_feedback(t.channel) or "No tool feedback yet: /debug on, then play a turn.")

async def show_help(t: Seat, _: str) -> None:
    t.out(HELP)


def parse_cast(text: str) -> tuple[str, str | None, int | None, str | None] | None:
    """`fire bolt at Goblin 1 level 2 adv` → ("fire bolt", "Goblin 1", 2, "advantage"): the longest spell name the
    line starts with, then the targets ("at"/"on" optional), the slot level and advantage at the end (None: nothing
    to cast)."""
    words = text.split()
    mode = {"adv": "advantage", "advantage": "advantage", "dis": "disadvantage",
            "disadvantage": "disadvantage"}.get(words[-1].lower()) if words else None
    if mode:
        words = words[:-1]
    level = None
    if len(words) >= 2 and words[-2].lower() == "level" and words[-1].isdigit():
        level, words = int(words[-1]), words[:-2]
        if words and words[-1].lower() == "at":
            words = words[:-1]
    if not words:
        return None
    known = spells.spell_index()
    size = next((n for n in range(len(words), 0, -1) if spells.key(" ".join(words[:n])) in known), 0)
    if not size:  # not a spell: everything before "at"/"on" is what the engine will say it does not know
        size = next((n for n, w in enumerate(words) if n and w.lower() in ("at", "on")), len(words))
    rest = words[size:]
    if rest and rest[0].lower() in ("at", "on"):
        rest = rest[1:]
    return " ".join(words[:size]), " ".join(rest) or None, level, mode


COMMANDS: dict[str, Callable[[Seat, str], Awaitable[None]]] = {
    "/roll": roll,
    "/check": check,
    "/save": save,
    "/cast": cast,
    "/attack": attack,
    "/feature": feature,
    "/levelup": levelup,
    "/award": award,
    "/journal": journal,
    "/map": show_map,
    "/deathsave": deathsave,
    "/lookup": lookup,
    "/note": note,
    "/sheet": sheet,
    "/inventory": inventory,
    "/quests": quests,
    "/rest": rest,
    "/shop": shop,
    "/buy": buy,
    "/sell": sell,
    "/status": status,
    "/sources": sources,
    "/debug": debug,
    "/help": show_help,
}
