"""The rules for things used up or changing hands: a potion drunk, coin paid, goods bought, sold, given or taken."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable

from ..shops import closed_because, shops_here
from .lexicon import LEXICON
from .reading import C, N, P, Situation, Suggestion, rule

_THROWN_ITEM = frozenset({"flask", "vial", "oil", "bottle", "caltrops", "marbles", "net", "bomb", "acid", "holy",
                          "alchemist's", "torch", "ball", "bearings", "potion", "jar", "pot", "rock", "stone"})


@rule(N, C)
def consume_item(s: Situation) -> list[Suggestion]:
    r = s.reading
    used = r.near(r.acts("consume", "not_trade"), "consumable", gap=6)
    if used is None:
        return []
    found = [Suggestion("modify_inventory", "the item is used up", 0.85, {"quantity": "-1"})]
    sentence_heals = any(h.sentence == used.sentence for h in r.get("healing"))
    if sentence_heals or (r.tokens[used.start] in {"potion", "potions", "potoin", "pot"} and not r.within(used, {"of"}, 1)):
        found = [Suggestion("update_hp", "the player uses a healing item: roll it, then heal", 0.85, {"kind": "healing"}),
                 *found, Suggestion("roll", "roll the healing", 0.8)]
    return found


_NUMBER_WORDS = {w: n for n, w in enumerate("a one two three four five six seven eight nine ten eleven twelve".split())}
_NUMBER_WORDS.update({"a": 1, "an": 1, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100})
_COIN_WORDS = {"gold": "gp", "gp": "gp", "silver": "sp", "sp": "sp", "copper": "cp", "coppers": "cp", "cp": "cp",
               "platinum": "pp", "pp": "pp"}
_COINS = re.compile(r"\b(\d{1,4}|" + "|".join(_NUMBER_WORDS) + r")\s+(" + "|".join(_COIN_WORDS) + r")\b")
_GIVING = r"give|gives|gave|hand|hands|handed|slide|slides|toss|tosses|offer|offers|here are|here's|here is"
_TAKING = (r"loot|loots|pocket|pockets|take|takes|took|collect|collects|pick up|picks up|picked up|grab|grabs|scoop|"
           r"scoops|keep|keeps|receive|receives|stash|stashes")
# Which way coin goes, and which way a thing goes, by the verb before it: buying sends coin and brings the thing.
_COIN_OUT = re.compile(rf"\b(pay|pays|paid|paying|buy|buys|bought|purchase|purchases|tip|tips|tipped|spend|spends|"
                       rf"spent|bribe|bribes|rent|rents|hire|hires|costs?|{_GIVING})\b")
_COIN_IN = re.compile(rf"\b(sell|sells|sold|earn|earns|{_TAKING})\b")
_ITEM_OUT = re.compile(rf"\b(sell|sells|sold|drop|drops|leave|leaves|{_GIVING})\b")
_ITEM_IN = re.compile(rf"\b(buy|buys|bought|purchase|purchases|{_TAKING})\b")


_GOODS = frozenset(LEXICON["item"].split("|")) - set(_COIN_WORDS) - {
    "coin", "coins", "purse", "pouch", "money", "cash", "piece", "pieces", "loot", "reward", "goods", "gear", "advance",
    "payment", "fee", "wage", "wages", "bounty", "deposit", "crown", "crowns"}


def _direction(before: str, out: re.Pattern[str], into: re.Pattern[str]) -> int:
    """Which way what follows goes, by the verb nearest before it: -1 it leaves the player, 1 it comes, 0 unclear
    ("I take a room; here are two gold" pays)."""
    verbs = [(m.start(), -1) for m in out.finditer(before)] + [(m.start(), 1) for m in into.finditer(before)]
    return max(verbs)[1] if verbs else 0


@lru_cache(maxsize=2048)
def _carried(name: str) -> tuple[re.Pattern[str], re.Pattern[str] | None]:
    """How a message names a carried item: whole ("the healing potion"), or by its last word after "my" (for a
    name whose last word is longer than three letters). Made once per item name."""
    head = (name.lower().split() or [""])[-1]  # an imported sheet may name an item with blanks only
    return (re.compile(r"\b" + re.escape(name.lower()) + r"s?\b"),
            re.compile(r"\bmy " + re.escape(head) + r"s?\b") if len(head) > 3 else None)


def changes_hands(text: str, carried: Iterable[str] = ()) -> dict[str, str]:
    """What a message says changes hands, as modify_inventory's arguments, when it says so plainly: coin ("pay her
    two gold" → gp -2, "I pocket the 5 silver" → sp +5), or one thing (a carried item by its name, else a thing
    the lexicon knows: "I pick up the coil of rope" → coil of rope +1). Nothing when it is unclear."""
    coins = list(_COINS.finditer(text))
    if len(coins) == 1:
        amount, coin = coins[0].groups()
        n = int(amount) if amount.isdigit() else _NUMBER_WORDS[amount]
        way = _direction(text[: coins[0].start()], _COIN_OUT, _COIN_IN)
        return {"currency": _COIN_WORDS[coin], "quantity": str(way * n)} if n and way else {}
    if coins:
        return {}
    for name in sorted(carried, key=len, reverse=True):  # "healing potion" before "potion"
        whole, mine = _carried(name)
        at = whole.search(text)
        if at is None and mine is not None:
            at = mine.search(text)  # "my potion", "my rations"
        if at is not None:
            way = _direction(text[: at.start()], _ITEM_OUT, _ITEM_IN)
            return {"item": name, "quantity": str(way)} if way else {}
    for m in re.finditer(r"\b([a-z']+)(?: of ([a-z']+))?\b", text):
        if m.group(1) in _GOODS:
            way = _direction(text[: m.start()], _ITEM_OUT, _ITEM_IN)
            return {"item": m.group(0), "quantity": str(way)} if way > 0 else {}
    return {}


@rule(N, C, P)
def trade(s: Situation) -> list[Suggestion]:
    r = s.reading
    strong = r.acts("trade", "not_trade", "accept", "check" if s.agent is C else "not_trade")
    throwing = ("throw", "threw", "hurl", "chuck", "lob", "fling", "flung", "toss")
    weak = r.near([h for h in r.acts("give", "not_trade", "accept")
                   if not (s.agent is C and r.tokens[h.start].startswith(throwing))], "item", gap=6)
    thrown = [h for h in r.acts("strike") if r.tokens[h.start].startswith(throwing)
              and r.within(h, _THROWN_ITEM, 5)] if s.agent is C else []
    if not (strong or weak or thrown):
        return []
    dealt = {r.tokens[h.start][:4] for h in strong}
    shop = _open_shop(s) if dealt & {"buy", "boug", "purc", "sell", "sold"} else None
    if shop is not None:  # a listed shop's goods go through the engine's price list
        tool = "sell" if dealt & {"sell", "sold"} and not dealt & {"buy", "boug", "purc"} else "buy"
        found = [Suggestion(tool, f"a deal with {shop}: the engine charges its listed prices", 0.75)]
    else:
        actor = s.state.characters.get(s.actor_id or "")
        carried = [i.name for i in actor.inventory] if actor else []
        found = [Suggestion("modify_inventory", "something changes hands: items or coin must move in the inventory",
                            0.75, changes_hands(r.text, carried))]
    if s.agent is not C and r.acts("social") or any(r.tokens[h.start].startswith(("steal", "stole", "pilfer", "filch", "swipe", "nick",
                                                             "pinch", "pickpocket", "shoplift", "lift"))
                               for h in strong):
        found.append(Suggestion("roll", "a sleight-of-hand or persuasion check decides it", 0.7))
    return found


def _open_shop(s: Situation) -> str | None:
    """The name of the shop open here that this agent sells from (the GM: any; an NPC: its own)."""
    for shop in shops_here(s.state):
        if (s.npc is None or shop.keeper == s.npc.id) and closed_because(s.state, shop) is None:
            return shop.name
    return None


