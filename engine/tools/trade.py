"""Trade tools: buying from and selling to a shop of the adventure, at its prices."""

from __future__ import annotations

from pydantic import Field

from .. import shops
from ..basics import Price
from ..visibility import require_counterpart
from .registry import NARRATIVE, NPC_AGENT, Args, Told, ToolContext, tool


class TradeArgs(Args):
    item: str = Field(min_length=1, max_length=80)
    quantity: int = Field(1, ge=1, le=shops.MAX_QUANTITY)
    character: str | None = Field(None, max_length=60)  # default: the acting player's character
    shop: str | None = Field(None, max_length=80)  # default: the one here


class BuyArgs(TradeArgs):
    price: Price | None = None  # an agreed price for one, after haggling: within the shop's allowance


def _shop(ctx: ToolContext, ref: str | None) -> shops.Shop:
    # An NPC sells only from a shop it keeps; the GM from any shop open where the party is.
    return shops.find_shop(ctx.state, ref, ctx.npc_id if ctx.viewer.npc else None)


@tool(example='<buy item="healing potion" quantity="2"/>; after haggling <buy item="lantern" price="4 gp"/>',
      agents={NARRATIVE, NPC_AGENT}, changes_state=True, body="item")
def buy(ctx: ToolContext, args: BuyArgs) -> str:
    """A player character buys from a shop here: the engine takes the price from the shop's list (or an agreed
    one within its haggle allowance), makes change, and hands over the goods; use it, not modify_inventory, for
    anything a listed shop sells."""
    ch = ctx.character(args.character)
    require_counterpart(ctx.state, ctx.viewer, ch)
    told = shops.buy(ctx.state, ch, _shop(ctx, args.shop), args.item, args.quantity, args.price)
    return Told(told, told)


@tool(example='<sell item="silver locket"/>', agents={NARRATIVE, NPC_AGENT}, changes_state=True, body="item")
def sell(ctx: ToolContext, args: TradeArgs) -> str:
    """A player character sells something they carry to a shop here that buys: the engine pays the shop's buy rate
    of the item's price."""
    ch = ctx.character(args.character)
    require_counterpart(ctx.state, ctx.viewer, ch)
    told = shops.sell(ctx.state, ch, _shop(ctx, args.shop), args.item, args.quantity)
    return Told(told, told)
