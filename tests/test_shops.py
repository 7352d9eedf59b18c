"""Shops: buying and selling at the adventure's prices, haggling within the allowance, refusals that change
nothing, what the GM and the shopkeeper see, and the engine's own purchase that enters the history."""

from __future__ import annotations

import pytest

from engine.context import game_context
from engine.errors import BadInput
from engine.basics import AgentType, Currency, Item
from engine.entities import Shop, ShopItem
from engine.state import GameState
from tests.conftest import CHANNEL, call, ctx_for
from tests.test_tools import failing

NPC = AgentType.NPC


def at_chandlery(state: GameState, gp: int = 60) -> GameState:
    state.current_location = "harrow-chandlery"
    state.characters["u1"].currency = Currency(gp=gp)
    return state


def test_buying_takes_the_listed_price_moves_the_goods_and_lowers_the_stock(state):
    at_chandlery(state)
    ctx = ctx_for(state)
    aria = state.characters["u1"]
    carried = aria.item("healing potion").quantity  # a fighter starts with one
    result = call(ctx, '<buy item="healing potion"/>')
    assert result.ok, result.observation
    assert aria.item("healing potion").quantity == carried + 1 and aria.currency.total_cp() == 1000  # 60 gp - 50 gp
    assert next(e for e in state.shops["harrow-chandlery"].stock if e.item == "potion-of-healing").quantity == 2
    assert "for 50 gp" in result.observation and "2 left" in result.observation
    assert result.meta["public"] == result.observation  # every number of it is the engine's, for the table


def test_buying_by_id_makes_change_from_gold(state):
    at_chandlery(state, gp=1)
    result = call(ctx_for(state), '<buy item="lamp-oil" quantity="3"/>')
    aria = state.characters["u1"]
    assert result.ok and aria.item("flask of lamp oil").quantity == 3
    assert (aria.currency.gp, aria.currency.sp) == (0, 7) and "change" in result.observation


def test_haggling_is_bounded_by_the_shops_allowance(state):
    at_chandlery(state)
    ctx = ctx_for(state)
    failing(ctx, '<buy item="potion-of-healing" price="40 gp"/>', "at most 10% off", "no less than 45 gp")
    failing(ctx, '<buy item="potion-of-healing" price="60 gp"/>', "cannot be higher")
    ok = call(ctx, '<buy item="potion-of-healing" price="45 gp"/>')
    assert ok.ok and state.characters["u1"].currency.gp == 15 and "haggled down from 50 gp" in ok.observation


def test_a_shop_that_does_not_haggle_refuses_any_other_price(state):
    at_chandlery(state)
    state.shops["harrow-chandlery"].haggle = 0
    failing(ctx_for(state), '<buy item="torch" price="0 cp"/>', "no haggling")


def test_refusals_change_nothing(state):
    ctx = ctx_for(state)
    failing(ctx, '<buy item="healing potion"/>', "no shop here")  # on the quay
    at_chandlery(state, gp=10)
    failing(ctx, '<buy item="healing potion"/>', "cannot pay 50 gp", "10 gp")
    state.characters["u1"].currency = Currency(gp=500)
    failing(ctx, '<buy item="healing potion" quantity="4"/>', "only 3")
    failing(ctx, '<buy item="spyglass"/>', "does not sell 'spyglass'", "healing potion")
    failing(ctx, '<buy item="rope" quantity="0"/>', "quantity")
    state.npcs["pell-harrow"].hp = 0
    failing(ctx, '<buy item="torch"/>', "Pell Harrow", "unconscious")
    state.npcs["pell-harrow"].hp = 9
    state.npcs["pell-harrow"].location = "saltmere-quay"
    failing(ctx, '<buy item="torch"/>', "Pell Harrow", "not here")


def test_sold_out_stays_sold_out(state):
    at_chandlery(state, gp=500)
    ctx = ctx_for(state)
    assert call(ctx, '<buy item="healing potion" quantity="3"/>').ok
    failing(ctx, '<buy item="healing potion"/>', "no healing potion left")


def test_selling_pays_the_buy_rate_and_restocks(state):
    at_chandlery(state, gp=0)
    aria = state.characters["u1"]
    ctx = ctx_for(state)
    call(ctx, '<modify_inventory item="silver locket" quantity="1"/>')
    sold = call(ctx, '<sell item="silver locket"/>')
    assert sold.ok and aria.item("silver locket") is None and aria.currency.gp == 12 and aria.currency.sp == 5
    call(ctx, '<modify_inventory item="healing potion" quantity="1"/>')
    assert call(ctx, '<sell item="healing potion"/>').ok
    assert next(e for e in state.shops["harrow-chandlery"].stock if e.item == "potion-of-healing").quantity == 4
    call(ctx, '<modify_inventory item="lucky pebble" quantity="1"/>')
    failing(ctx, '<sell item="lucky pebble"/>', "only things with a price")
    failing(ctx, '<sell item="silver locket"/>', "has no 'silver locket'")
    state.shops["harrow-chandlery"].buys = False
    failing(ctx, '<sell item="lucky pebble"/>', "buys nothing")


def test_the_shopkeeper_sells_only_from_their_shop_to_whoever_talks_to_them(state):
    at_chandlery(state)
    pell = ctx_for(state, agent=NPC, npc="pell-harrow")
    assert call(pell, '<buy item="hooded lantern"/>').ok
    failing(pell, '<buy item="hooded lantern" character="Bram"/>', "only give to or take from Aria")
    ysolde = ctx_for(state, agent=NPC, npc="ysolde-marrick")
    failing(ysolde, '<buy item="torch"/>', "you keep no shop")


def test_no_trading_during_a_fight(state):
    at_chandlery(state)
    call(ctx_for(state), '<start_combat>{"enemy": [{"name": "Crab", "hp": 4, "ac": 11}]}</start_combat>')
    failing(ctx_for(state), '<buy item="torch"/>', "middle of a fight")


def test_the_gm_and_the_keeper_see_the_stock_and_prices_only_where_the_shop_is(state):
    quay = game_context(state, AgentType.NARRATIVE, "u1")
    assert "Shop here" not in quay
    at_chandlery(state)
    gm = game_context(state, AgentType.NARRATIVE, "u1")
    assert "## Shop here: Harrow's Chandlery, kept by Pell Harrow" in gm
    assert "healing potion (potion-of-healing): 50 gp each, 3 left, no less than 45 gp after haggling" in gm
    assert "Sell with buy" in gm and "buy back with sell" in gm
    keeper = game_context(state, NPC, "u1", state.npcs["pell-harrow"])
    assert "## Your shop: Harrow's Chandlery" in keeper and "hooded lantern (hooded-lantern): 5 gp each, 4 left" in keeper
    other = game_context(state, NPC, "u1", state.npcs["ysolde-marrick"])
    assert "Harrow's Chandlery" not in other


async def move_table_to_chandlery(table, purse: Currency | None = None) -> None:
    session = await table.engine.session(CHANNEL)
    state = session.state
    state.current_location = "harrow-chandlery"
    if purse is not None:
        state.characters["u1"].currency = purse
    await table.store.save_state(session.id, state, [], version=session.version)


async def test_a_players_own_purchase_enters_the_history(table):
    await move_table_to_chandlery(table)
    before = (await table.state()).characters["u1"].currency.total_cp()
    told = await table.engine.trade(CHANNEL, "u1", "bob", "torch", 2)
    after = await table.state()
    assert "Aria buys 2 × torch from Harrow's Chandlery for 2 cp" in told
    assert after.characters["u1"].item("torch").quantity == 2 and after.characters["u1"].currency.total_cp() == before - 2
    session = await table.engine.session(CHANNEL)
    log = await table.store.messages(session.id, limit=5)
    assert log[-1].text == told and log[-1].agent is AgentType.PLAYER and log[-1].author_id == "u1"


async def test_a_refused_purchase_writes_nothing(table):
    with pytest.raises(BadInput, match="There is no shop here"):
        await table.engine.trade(CHANNEL, "u1", "bob", "torch")
    await move_table_to_chandlery(table, Currency(cp=3))
    session = await table.engine.session(CHANNEL)
    said = len(await table.store.messages(session.id, limit=50))
    with pytest.raises(BadInput, match="Aria cannot pay 50 gp"):
        await table.engine.trade(CHANNEL, "u1", "bob", "healing potion")
    with pytest.raises(BadInput, match="Buy or sell 1 to 100"):
        await table.engine.trade(CHANNEL, "u1", "bob", "torch", 0)
    assert (await table.state()).model_dump() == session.state.model_dump()
    assert len(await table.store.messages(session.id, limit=50)) == said


async def test_a_player_sells_back_for_half(table):
    await move_table_to_chandlery(table, Currency())
    session = await table.engine.session(CHANNEL)
    session.state.characters["u1"].inventory.append(Item(name="brass ship's compass"))
    await table.store.save_state(session.id, session.state, [], version=session.version)
    told = await table.engine.trade(CHANNEL, "u1", "bob", "brass ship's compass", selling=True)
    aria = (await table.state()).characters["u1"]
    assert "for 12 gp 5 sp (50% of 25 gp each)" in told and aria.currency.gp == 12 and aria.currency.sp == 5
    assert aria.item("brass ship's compass") is None


def test_armour_bought_or_looted_moves_the_armour_class():
    from engine.characters import make_character
    from engine.rules.equipment import armor_class
    from engine.shops import _give

    aria = make_character("u1", "Aria", "fighter")
    aria.inventory = [i for i in aria.inventory if i.name != "shield"]
    aria.ac = armor_class(aria).value  # 16: chain mail alone
    _give(aria, "shield", 1)
    assert aria.ac == armor_class(aria).value == 19
    aria.ac = 21  # a hand-set AC (an imported sheet's) is left as given
    _give(aria, "plate armor", 1)
    assert aria.ac == 21


def test_a_character_at_0_hp_neither_buys_nor_sells(state):
    at_chandlery(state)
    aria = state.characters["u1"]
    aria.inventory.append(Item(name="brass ship's compass"))
    aria.hp = 0
    ctx = ctx_for(state)
    failing(ctx, '<buy item="torch"/>', "Aria is unconscious and cannot trade")
    failing(ctx, '<sell item="brass ship\'s compass"/>', "Aria is unconscious and cannot trade")
    aria = ctx.state.characters["u1"]  # a refused tool puts the state back: the character may be another object
    aria.hp, aria.conditions = 5, ["unconscious"]  # knocked out at a few hit points (a sap, a spell)
    failing(ctx, '<sell item="brass ship\'s compass"/>', "unconscious")  # each refusal changed nothing
    ctx.state.characters["u1"].conditions = []
    assert call(ctx, '<sell item="brass ship\'s compass"/>').ok  # awake again, the same deal goes through


async def test_a_players_own_deal_waits_until_they_are_awake(table):
    await move_table_to_chandlery(table)
    session = await table.engine.session(CHANNEL)
    session.state.characters["u1"].hp = 0
    await table.store.save_state(session.id, session.state, [], version=session.version)
    session = await table.engine.session(CHANNEL)
    said = len(await table.store.messages(session.id, limit=50))
    for selling in (False, True):
        with pytest.raises(BadInput, match="Aria is unconscious and cannot trade"):
            await table.engine.trade(CHANNEL, "u1", "bob", "healing potion", selling=selling)
    assert (await table.state()).model_dump() == session.state.model_dump()
    assert len(await table.store.messages(session.id, limit=50)) == said


async def test_where_two_shops_trade_a_players_deal_goes_to_the_one_that_fits_or_asks_which(table):
    await move_table_to_chandlery(table, Currency(gp=60))
    session = await table.engine.session(CHANNEL)
    session.state.shops["tarry-fence"] = Shop(id="tarry-fence", name="The Tarry Fence", location="harrow-chandlery",
                                              buys=True, buy_rate=40, stock=[ShopItem(item="torch")])
    session.state.characters["u1"].inventory.append(Item(name="brass ship's compass"))
    await table.store.save_state(session.id, session.state, [], version=session.version)
    trade = table.engine.trade

    assert "from Harrow's Chandlery" in await trade(CHANNEL, "u1", "bob", "healing potion")  # only it sells those
    with pytest.raises(BadInput, match=r"Several shops here sell 'torch': name one \(Harrow's Chandlery, The Tarry Fence\)"):
        await trade(CHANNEL, "u1", "bob", "torch")
    with pytest.raises(BadInput, match=r"No shop here sells 'spyglass' \(shops here: Harrow's Chandlery, The Tarry Fence\)"):
        await trade(CHANNEL, "u1", "bob", "spyglass")
    assert "from The Tarry Fence" in await trade(CHANNEL, "u1", "bob", "torch", shop="tarry fence")  # "the" or not
    with pytest.raises(BadInput, match="Several shops here buy: name one"):
        await trade(CHANNEL, "u1", "bob", "brass ship's compass", selling=True)
    told = await trade(CHANNEL, "u1", "bob", "brass ship's compass", selling=True, shop="tarry-fence")
    assert "to The Tarry Fence for 10 gp (40% of 25 gp each)" in told

    state = await table.state()
    state.npcs["pell-harrow"].location = "saltmere-quay"  # the chandlery's keeper is out: the fence is the one open
    session = await table.engine.session(CHANNEL)
    await table.store.save_state(session.id, state, [], version=session.version)
    assert "from The Tarry Fence" in await trade(CHANNEL, "u1", "bob", "torch")
    state.npcs["pell-harrow"].location = "harrow-chandlery"
    state.combat.active = True  # in a fight nobody trades: it says so, rather than asking which shop
    session = await table.engine.session(CHANNEL)
    await table.store.save_state(session.id, state, [], version=session.version)
    with pytest.raises(BadInput, match="No one trades in the middle of a fight"):
        await trade(CHANNEL, "u1", "bob", "torch")
    state.combat.active = False

    state.shops["tarry-fence"].buys = False  # now only the chandlery buys: no need to name it
    state.characters["u1"].inventory.append(Item(name="brass ship's compass"))
    session = await table.engine.session(CHANNEL)
    await table.store.save_state(session.id, state, [], version=session.version)
    assert "to Harrow's Chandlery" in await trade(CHANNEL, "u1", "bob", "brass ship's compass", selling=True)
