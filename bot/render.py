"""Game state as Discord embeds, and the one mention policy for anything the model wrote."""

from __future__ import annotations

import discord

from engine.rules import effects, features, origins, proficiencies, spells
from engine.rules.attacks import profile
from engine.rules.equipment import carried_weapons
from engine.rules.life import hp_line
from engine.shops import closed_because, shop_heading, shops_here, stock_lines

from engine.state import Character, GameState
from engine.tools.character import ac_line, sheet_features
from engine.tools.combat import tracker_rows, turn_left
from engine.visibility import ways_out

COLOUR = discord.Colour.dark_teal()
NO_PINGS = discord.AllowedMentions.none()
EMBED_BUDGET = 5500  # Discord refuses more than 6,000 characters across one message's embeds


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def sheet_embed(ch: Character, advancement: str = "") -> discord.Embed:
    """The sheet in one embed, well inside Discord's limits: each field clipped to 1,024 characters, features
    and traits by name only (the agents and /help have the rest). `advancement`: the progress to the next level."""
    bg = origins.background_of(ch)
    heading = f"Level {ch.level} {origins.origin(ch)}" + (f" · {bg.name}" if bg else "")
    embed = discord.Embed(title=clip(ch.name, 256), description=heading, colour=COLOUR)
    embed.add_field(name="Hit points", value=hp_line(ch))
    embed.add_field(name="Armour class", value=clip(ac_line(ch), 1024))
    embed.add_field(name="Speed", value=f"{effects.speed(ch, origins.speed(ch))} ft")
    embed.add_field(name="Hit dice", value=f"{ch.hit_dice}d{ch.hit_die}")
    if advancement:
        embed.add_field(name="Advancement", value=clip(advancement, 1024), inline=False)
    abilities = "  ".join(f"**{a[:3].upper()}** {getattr(ch.abilities, a)} ({ch.abilities.mod(a):+d})"
                          for a in type(ch.abilities).model_fields)
    embed.add_field(name="Abilities", value=abilities, inline=False)
    embed.add_field(name="Proficiencies", value=clip(proficiencies(ch), 1024), inline=False)
    casting = spells.sheet_lines(ch)
    if casting:
        embed.add_field(name="Spellcasting", value=clip("\n".join(casting), 1024), inline=False)
    weapons = [profile(ch, w).describe() for w in carried_weapons(ch)]
    if weapons:
        embed.add_field(name="Weapons (to hit, damage)", value=clip("\n".join(weapons), 1024), inline=False)
    names = ", ".join(f.name for f in sheet_features(ch))
    if names:
        embed.add_field(name="Features and traits", value=clip(names, 1024), inline=False)
    left = features.lines(ch)
    if left:
        embed.add_field(name="Features left", value=clip(left[0], 1024), inline=False)
    languages = origins.languages(ch)
    if languages:
        embed.add_field(name="Languages", value=clip(", ".join(languages), 1024), inline=False)
    embed.add_field(name="Conditions", value=clip(", ".join(ch.conditions) or "none", 1024), inline=False)
    if ch.effects:
        embed.add_field(name="Spells on them", value=clip("\n".join(effects.describe(e) for e in ch.effects), 1024),
                        inline=False)
    return embed


def inventory_embed(ch: Character) -> discord.Embed:
    items = "\n".join(f"{i.quantity} × {i.name}" for i in ch.inventory) or "Nothing at all."
    embed = discord.Embed(title=clip(f"{ch.name}'s pack", 256), description=clip(items, 4096), colour=COLOUR)
    embed.add_field(name="Coin", value=ch.currency.describe())
    return embed


def quests_embed(state: GameState) -> discord.Embed:
    embed = discord.Embed(title="Quest log", colour=COLOUR)
    known = sorted((q for q in state.quests.values() if q.status != "offered"), key=lambda q: q.status != "active")
    for n, q in enumerate(known[:24]):
        marks = "\n".join(f"{'☑' if o.done else '☐'} {o.text}" for o in q.objectives) or "—"
        reward = f"\n*Reward: {q.reward}*" if q.reward else ""
        name, value = clip(f"{q.title} ({q.status})", 256), clip(marks + reward, 1024)
        if len(embed) + len(name) + len(value) > EMBED_BUDGET - 100:
            embed.add_field(name="…", value=f"and {len(known) - n} more (finished quests last)", inline=False)
            break
        embed.add_field(name=name, value=value, inline=False)
    if not known:
        embed.description = "No quests yet. Talk to people; someone in this town needs help."
    return embed


def combat_embed(state: GameState, budget: int = 2500) -> discord.Embed:
    combat = state.combat
    embed = discord.Embed(title=f"Combat, round {combat.round}", colour=discord.Colour.dark_red())
    rows = [f"{'▶' if r.now else '　'} **{r.who.name}** ({r.who.faction}) · init {r.who.initiative} · AC {r.ac} · "
            f"{'down' if r.hp == 0 else f'{r.hp}/{r.max_hp} HP'}" + (f" · {', '.join(r.spells)}" if r.spells else "")
            for r in tracker_rows(state)]
    now = combat.current()
    if now is not None and now.faction == "player":
        rows.append(f"-# {now.name} has: {turn_left(state, now)}")
    embed.description = clip("\n".join(rows), max(100, budget))
    return embed


def status_embed(state: GameState) -> discord.Embed:
    loc = state.location()
    # Sent beside the combat tracker: the two share Discord's 6,000-character budget.
    embed = discord.Embed(title=clip(state.title, 256), description=clip(f"**{loc.name}**\n{loc.description}", 1500), colour=COLOUR)
    party = [f"{c.name} ({c.char_class}) {c.hp}/{c.max_hp} HP" for pid, c in state.characters.items() if pid in state.party.player_ids]
    party += [f"{state.npcs[n].name} (companion)" for n in state.party.npc_ids]
    embed.add_field(name="Party", value=clip("\n".join(party) or "Nobody yet: /char create", 1024), inline=False)
    here = [n.name for n in state.present_npcs() if n.id not in state.party.npc_ids]
    if here:
        embed.add_field(name="Here", value=clip(", ".join(here), 1024), inline=False)
    ways = [loc.name + ("" if open_ else " (closed)") for loc, open_ in ways_out(state)]
    embed.add_field(name="Ways out", value=clip(", ".join(ways) or "none that you know of", 1024), inline=False)
    active = [q.title for q in state.quests.values() if q.status == "active"]
    if active:
        embed.add_field(name="Quests", value=clip("\n".join(active), 1024), inline=False)
    embed.set_footer(text=f"Turn {state.turn}" + (" · in combat" if state.combat.active else ""))
    return embed


def shop_embed(state: GameState) -> discord.Embed:
    """The shops where the party is: their stock, prices and what is left, as players may see them."""
    here = shops_here(state)
    if not here:
        return discord.Embed(title="No shop here", colour=COLOUR,
                             description=f"Nobody sells anything at {clip(state.location().name, 200)}.")
    embed = discord.Embed(title=clip(state.location().name, 256), colour=COLOUR)
    for shop in here[:10]:
        closed = closed_because(state, shop)
        lines = "\n".join(f"• {line}" for line in stock_lines(state, shop)) or "Nothing on the shelves."
        how = f"*Closed: {closed}.*" if closed else "`/buy item [quantity]`" + (" · `/sell item`" if shop.buys else "")
        embed.add_field(name=clip(shop_heading(state, shop), 256), value=clip(lines, 1000 - len(how)) + "\n" + how,
                        inline=False)
    return embed
