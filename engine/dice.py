"""Dice rolls through the d20 library, drawn from an injected random.Random so turns can be replayed."""

from __future__ import annotations

import random
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import d20
import d20.expression

from .errors import BadInput

MAX_EXPRESSION = 120
MAX_DICE = 200


class _Stringifier(d20.SimpleStringifier):
    """d20's plain rendering, with dropped dice struck through ("2d20kh1 (8̶, 19)"): a combining stroke, which
    reads the same in a terminal and in Discord (Markdown's ~~ would show as tildes in the terminal)."""

    def __init__(self) -> None:
        super().__init__()
        self._dropping = False  # inside a dropped node: its parts are struck once, with it

    def _stringify(self, node):  # type: ignore[no-untyped-def]
        if node.kept or self._dropping:
            return super()._stringify(node)
        self._dropping = True
        try:
            text = super()._stringify(node)
        finally:
            self._dropping = False
        return "".join(ch if ch.isspace() else ch + "\u0336" for ch in text)


@dataclass(frozen=True)
class Roll:
    expression: str
    total: int
    detail: str  # d20's rendering, e.g. "1d20 (14) + 3 = `17`"
    natural: int | None  # the kept d20 of a single-d20 roll, for crits and fumbles

    def describe(self) -> str:
        text = f"{self.expression} → {self.total} ({self.detail})"
        if self.natural == 20:
            text += " — natural 20!"
        elif self.natural == 1:
            text += " — natural 1."
        return text


@contextmanager
def _drawing_from(rng: random.Random) -> Iterator[None]:
    # d20 draws from the random module; rolls are synchronous, so swapping it for the
    # duration of one roll cannot interleave with another coroutine's roll.
    saved = d20.expression.random
    d20.expression.random = rng  # type: ignore[assignment]
    try:
        yield
    finally:
        d20.expression.random = saved


def roll(expression: str, rng: random.Random) -> Roll:
    """Roll a dice expression such as 1d20+3, 2d6, 4d6kh3 or 1d20+5 adv."""
    text = " ".join(expression.split())
    if not text:
        raise BadInput("Give a dice expression, for example 1d20+3 or 2d6.")
    if len(text) > MAX_EXPRESSION:
        raise BadInput(f"That dice expression is too long (at most {MAX_EXPRESSION} characters).")
    advantage = d20.AdvType.NONE
    lowered = text.lower()
    for suffix, adv in ((" adv", d20.AdvType.ADV), (" advantage", d20.AdvType.ADV), (" dis", d20.AdvType.DIS), (" disadvantage", d20.AdvType.DIS)):
        if lowered.endswith(suffix):
            text, advantage = text[: -len(suffix)].strip(), adv
            break
    try:
        with _drawing_from(rng):
            result = d20.roll(text, stringifier=_Stringifier(), advantage=advantage)
        # d20 evaluates lazily: a division by zero surfaces only here.
        total, detail, natural, count = result.total, str(result), _natural_d20(result), _dice_count(result.expr)
    except d20.TooManyRolls:
        raise BadInput(f"That is too many dice to roll at once (at most {MAX_DICE}).") from None
    except d20.RollSyntaxError:
        raise BadInput(f"'{expression.strip()}' is not a dice expression I can roll. Try 1d20+3, 2d6 or 4d6kh3.") from None
    except d20.RollValueError as exc:
        raise BadInput(f"Cannot roll '{expression.strip()}': {exc}") from None
    except d20.RollError as exc:
        raise BadInput(f"Cannot roll '{expression.strip()}': {exc}") from None
    except (ZeroDivisionError, ArithmeticError, RecursionError):
        raise BadInput(f"Cannot roll '{expression.strip()}': the arithmetic does not work out (a division by zero?).") from None
    if count > MAX_DICE:
        raise BadInput(f"That is too many dice to roll at once (at most {MAX_DICE}).")
    return Roll(expression=text + {d20.AdvType.ADV: " adv", d20.AdvType.DIS: " dis"}.get(advantage, ""),
                total=total, detail=detail, natural=natural)


def _dice_count(node: d20.Expression) -> int:
    count = 0
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, d20.Dice):
            count += len(n.values)
        stack.extend(getattr(n, "children", []))
    return count


def _natural_d20(result: d20.RollResult) -> int | None:
    dice = []
    stack = [result.expr]
    while stack:
        n = stack.pop()
        if isinstance(n, d20.Dice):
            dice.append(n)
        stack.extend(getattr(n, "children", []))
    dice = [d for d in dice if d.size == 20]  # 1d20+5+1d4 (Bless) still has one d20 that can crit or fumble
    if len(dice) != 1:
        return None
    kept = [d for d in dice[0].keptset if isinstance(d, d20.Die)] if hasattr(dice[0], "keptset") else []
    values = [d.values[-1].number for d in kept if d.values]
    return values[0] if len(values) == 1 else None
