"""Shops and loot: where a shop trades, what it sells and for how much, and the engine's side of buying, selling and
handing out spoils. Prices come from the adventure, never from a model's words; Currency.pay makes the change."""

from __future__ import annotations

from .errors import ToolError
from .rules.equipment import armor_class, sync_armor_class
from .basics import COIN_VALUE, Item, Price, coins_worth, slug
from .entities import ItemInfo, Loot, Shop, ShopItem
from .state import Character, GameState

MAX_QUANTITY = 100  # bought or sold at once


def shop_place(state: GameState, shop: Shop) -> str | None:
    """Where the shop trades: its location, or wherever its keeper is (with the party, if they travel with it)."""
    if shop.location is not None:
        return shop.location
    keeper = state.npcs.get(shop.keeper or "")
    if keeper is None:
        return None
    return state.current_location if keeper.id in state.party.npc_ids else keeper.location


def closed_because(state: GameState, shop: Shop) -> str | None:
    """Why the party cannot trade with the shop now (None: it is open to them)."""
    if shop_place(state, shop) != state.current_location:
        return f"{shop.name} is not here"
    keeper = state.npcs.get(shop.keeper or "")
    if keeper is not None:
        there = keeper.location == state.current_location or keeper.id in state.party.npc_ids
        if not there:
            return f"{keeper.name}, who keeps {shop.name}, is not here"
        if keeper.hp == 0:
            return f"{keeper.name}, who keeps {shop.name}, is unconscious"
    if state.combat.active:
        return "no one trades in the middle of a fight"
    return None


def shops_here(state: GameState) -> list[Shop]:
    return [s for s in state.shops.values() if shop_place(state, s) == state.current_location]


def find_shop(state: GameState, ref: str | None, keeper: str | None = None) -> Shop:
    """The shop named (by id or name, "the" or not), else the one here; `keeper`: only that NPC's shops count.
    Refused if closed."""
    mine = [s for s in state.shops.values() if keeper is None or s.keeper == keeper]
    if ref:
        key = ref.strip().lower()
        found = next((s for s in mine if s.id == key or s.id == slug(key) or _plain(s.name) == _plain(key)), None)
        if found is None:
            raise ToolError(f"there is no shop called '{ref}' (shops: {', '.join(s.id for s in mine) or 'none'})")
    else:
        here = [s for s in mine if shop_place(state, s) == state.current_location]
        if not here:
            raise ToolError("there is no shop here" if keeper is None else "you keep no shop here")
        if len(here) > 1:
            raise ToolError(f"name the shop: {', '.join(s.id for s in here)}")
        found = here[0]
    why = closed_because(state, found)
    if why is not None:
        raise ToolError(why, public=shop_place(state, found) == state.current_location)  # not one elsewhere: unseen
    return found


def _plain(name: str) -> str:
    return " ".join(name.lower().split()).removeprefix("the ")


def shop_for(state: GameState, ref: str | None, item: str, *, selling: bool) -> Shop:
    """The shop a player's own deal goes to: the one named, else the one here, else (several here) the one that
    sells the item (buying) or buys at all (selling), when only one does."""
    here = shops_here(state)
    if ref or len(here) < 2:
        return find_shop(state, ref)
    fits = [s for s in here if s.buys] if selling else [s for s in here if _sells(state, s, item)]
    open_ = [s for s in fits if closed_because(state, s) is None]  # a shop whose keeper is away does not count
    if len(open_) == 1 or fits and not open_:
        return find_shop(state, (open_ or fits)[0].id)  # the one open that fits (or why it is closed: a fight)
    names = ", ".join(s.name for s in (fits or here))
    if not fits:
        wanted = "buys anything" if selling else f"sells '{item}'"
        raise ToolError(f"no shop here {wanted} (shops here: {names})")
    wanted = "buy" if selling else f"sell '{item}'"
    raise ToolError(f"several shops here {wanted}: name one ({names})")


def _sells(state: GameState, shop: Shop, item: str) -> bool:
    try:
        stocked(state, shop, item)
    except ToolError:
        return False
    return True


def price_of(state: GameState, shop: Shop, entry: ShopItem) -> Price:
    price = entry.price or state.items[entry.item].price
    assert price is not None  # the adventure check refuses a stocked item without a price
    return price


def stocked(state: GameState, shop: Shop, ref: str) -> tuple[ShopItem, ItemInfo]:
    """The shop's entry for an item named by id or name."""
    key = " ".join(ref.strip().lower().split())
    for entry in shop.stock:
        info = state.items.get(entry.item)
        if info is not None and (key in (info.id, info.name.lower()) or slug(key) in (info.id, slug(info.name))):
            return entry, info
    raise ToolError(f"{shop.name} does not sell '{ref}' (it sells: "
                    f"{', '.join(state.items[e.item].name for e in shop.stock if e.item in state.items) or 'nothing'})",
                    public=True)


def floor_cp(listed: Price, shop: Shop) -> int:
    """The least a seller may agree to for one: the list price less the shop's haggle allowance, rounded up."""
    return -(-listed.cp() * (100 - shop.haggle) // 100)


def stock_lines(state: GameState, shop: Shop, *, gm: bool = False) -> list[str]:
    """One line per item the shop sells: name, price and what is left (for the GM also ids and the haggle floor)."""
    lines = []
    for entry in shop.stock:
        info = state.items.get(entry.item)
        if info is None:
            continue
        price = price_of(state, shop, entry)
        left = "sold out" if entry.quantity == 0 else f"{entry.quantity} left" if entry.quantity is not None else "plenty"
        name = f"{info.name} ({info.id})" if gm else info.name
        floor = f", no less than {coins_worth(floor_cp(price, shop))} after haggling" if gm and shop.haggle else ""
        about = f": {info.description}" if info.description and not gm else ""
        lines.append(f"{name}: {price} each, {left}{floor}{about}")
    return lines


def shop_heading(state: GameState, shop: Shop) -> str:
    keeper = state.npcs.get(shop.keeper or "")
    terms = f"buys items back at {shop.buy_rate}% of their price" if shop.buys else "buys nothing"
    return f"{shop.name}" + (f", kept by {keeper.name}" if keeper else "") + f" ({terms})"


def awake(ch: Character) -> None:
    """A character at 0 hit points (or knocked out) makes no deals: by the tools, or by the player's own /buy."""
    if ch.hp == 0 or "unconscious" in ch.conditions:
        raise ToolError(f"{ch.name} is unconscious and cannot trade", public=True)


def buy(state: GameState, ch: Character, shop: Shop, ref: str, quantity: int, agreed: Price | None = None) -> str:
    """Move `quantity` of a stocked item to the character and its price out of their purse, at the list price or
    at an agreed one within the shop's haggle allowance; the stock goes down. Refusals change nothing."""
    awake(ch)
    entry, info = stocked(state, shop, ref)
    listed = price_of(state, shop, entry)
    unit = listed
    if agreed is not None:
        if agreed.cp() > listed.cp():
            raise ToolError(f"{info.name} is priced {listed}; an agreed price cannot be higher")
        if agreed.cp() < floor_cp(listed, shop):
            allowance = f"at most {shop.haggle}% off, so no less than {coins_worth(floor_cp(listed, shop))}" \
                if shop.haggle else "no haggling"
            raise ToolError(f"{shop.name} sells {info.name} for {listed} ({allowance}), not {agreed}")
        unit = agreed
    if entry.quantity is not None and entry.quantity < quantity:
        raise ToolError(f"{shop.name} has {'no' if entry.quantity == 0 else f'only {entry.quantity}'} {info.name} left",
                        public=True)
    cost = unit.cp() * quantity
    if ch.currency.total_cp() < cost:
        raise ToolError(f"{ch.name} cannot pay {coins_worth(cost)} for {quantity} × {info.name}: the purse holds only "
                        f"{ch.currency.describe()}", public=True)
    change = ch.currency.pay(unit.coin, unit.amount * quantity)
    _give(ch, info.name, quantity)
    if entry.quantity is not None:
        entry.quantity -= quantity
    how = f" ({'; '.join(change)})" if change else ""
    each = f", {unit} each" + (f", haggled down from {listed}" if unit != listed else "") if quantity > 1 or unit != listed else ""
    left = f" {shop.name} has {entry.quantity} left." if entry.quantity is not None else ""
    return (f"{ch.name} buys {quantity} × {info.name} from {shop.name} for {coins_worth(cost)}{each}{how}; "
            f"purse now {ch.currency.describe()}.{left}")


def sell(state: GameState, ch: Character, shop: Shop, ref: str, quantity: int) -> str:
    """Sell an item the character carries to a shop that buys, for its buy rate of the item's price."""
    awake(ch)
    if not shop.buys:
        raise ToolError(f"{shop.name} buys nothing", public=True)
    held = ch.item(ref)
    key = slug(ref)
    info = next((i for i in state.items.values() if i.id == key or (held and i.name.lower() == held.name.lower())), None)
    if held is None and info is not None:
        held = ch.item(info.name)
    if held is None:
        raise ToolError(f"{ch.name} has no '{ref}' (carrying: {', '.join(i.name for i in ch.inventory) or 'nothing'})",
                        public=True)
    entry = next((e for e in shop.stock if info is not None and e.item == info.id), None)
    listed = price_of(state, shop, entry) if entry is not None else info.price if info is not None else None
    if listed is None:
        raise ToolError(f"{shop.name} will not put a price on {held.name}: it buys only things with a price", public=True)
    if held.quantity < quantity:
        raise ToolError(f"{ch.name} has only {held.quantity} × {held.name}", public=True)
    paid = listed.cp() * quantity * shop.buy_rate // 100
    if paid == 0:
        raise ToolError(f"{held.name} is worth nothing to {shop.name}", public=True)
    worn = armor_class(ch)
    if held.quantity == quantity:
        ch.inventory.remove(held)
    else:
        held.quantity -= quantity
    sync_armor_class(ch, worn)  # armour sold: the AC follows it
    _add_coins(ch, paid)
    if entry is not None and entry.quantity is not None:
        entry.quantity += quantity
    return (f"{ch.name} sells {quantity} × {held.name} to {shop.name} for {coins_worth(paid)} ({shop.buy_rate}% of "
            f"{listed} each); purse now {ch.currency.describe()}.")


def _give(ch: Character, name: str, quantity: int) -> None:
    """Into the pack (bought or looted); armour or a shield that comes in moves the AC, as the sheet reckons it."""
    worn = armor_class(ch)
    held = ch.item(name)
    if held is None:
        ch.inventory.append(Item(name=name, quantity=quantity))
    else:
        held.quantity += quantity
    sync_armor_class(ch, worn)


def _add_coins(ch: Character, cp: int) -> None:
    """A sum in copper into the purse, in the largest coins short of platinum (as a shop would count it out)."""
    for coin in ("gp", "sp", "cp"):
        n, cp = divmod(cp, COIN_VALUE[coin])
        setattr(ch.currency, coin, getattr(ch.currency, coin) + n)


def hand_out(state: GameState, loot: Loot, actor_id: str | None) -> str | None:
    """Give loot to the party: each coin shared evenly among its player characters (what does not divide goes to
    the one who acted), every item to the one who acted (else the first in the party). None: no one to take it."""
    members = [state.characters[i] for i in state.party.player_ids if i in state.characters]
    if not members:
        return None
    taker = state.characters[actor_id] if actor_id in state.party.player_ids and actor_id in state.characters else members[0]
    shares: dict[str, list[str]] = {m.name: [] for m in members}
    for coin in reversed(COIN_VALUE):
        total = getattr(loot.coins, coin)
        if not total:
            continue
        each, rest = divmod(total, len(members))
        for m in members:
            n = each + (rest if m is taker else 0)
            if n:
                setattr(m.currency, coin, getattr(m.currency, coin) + n)
                shares[m.name].append(f"{n} {coin}")
    things = []
    for entry in loot.items:
        info = state.items.get(entry.item)
        name = info.name if info is not None else entry.item
        _give(taker, name, entry.quantity)
        things.append(f"{entry.quantity} × {name}")
    parts = []
    if loot.coins.total_cp():
        if len(members) == 1:
            parts.append(f"{taker.name} takes {loot.coins.describe()}")
        else:
            split = "; ".join(f"{name} {', '.join(got)}" for name, got in shares.items() if got)
            parts.append(f"the party shares {loot.coins.describe()} ({split})")
    if things:
        parts.append(f"{taker.name} takes {', '.join(things)}")
    return "Loot: " + "; ".join(parts) + "." if parts else "Loot: nothing of value."
