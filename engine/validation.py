"""pydantic's validation errors as sentences an author can act on: where (list items named by their id), what is
wrong in plain words, and the closest real field for a misspelt one."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError


def describe_validation(exc: ValidationError, raw: Any = None, model: type[BaseModel] | None = None) -> str:
    """One line per problem: `- where: what`. With the data that was validated (`raw`) list items are named by
    their id; with the `model`, an unknown field gets its likely meaning."""
    return "\n".join(f"- {line}" for line in problems(exc, raw, model))


def problems(exc: ValidationError, raw: Any = None, model: type[BaseModel] | None = None) -> list[str]:
    found = []
    for err in exc.errors():
        where = place(err["loc"], raw) or "(top level)"
        found.append(f"{where}: {_what(err, raw, model)}")
    return found


def place(loc: tuple[Any, ...], raw: Any) -> str:
    """`npcs[tomas-reed].max_hp` for ('npcs', 1, 'max_hp'): an item with an id is named by it, others by their
    position counted from 1 (`exits[#2]`)."""
    out, node = "", raw
    for step in loc:
        if isinstance(step, int):
            item = node[step] if isinstance(node, list) and 0 <= step < len(node) else None
            ident = item.get("id") if isinstance(item, dict) else None
            out += f"[{ident}]" if isinstance(ident, str) and ident else f"[#{step + 1}]"
            node = item
        else:
            out += f".{step}" if out else str(step)
            node = node.get(step) if isinstance(node, dict) else None
    return out


_PLAIN = {
    "missing": "is required but missing",
    "string_type": "must be text",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number, not a fraction",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "list_type": "must be a list (lines starting with '- ')",
    "dict_type": "must be a mapping (name: value lines)",
    "model_type": "must be a mapping of fields",
    "model_attributes_type": "must be a mapping of fields",
}


_PATTERNED = {  # fields whose pattern is not an id's
    "damage": "must be dice, like 1d6 or 2d8+3",
    "cr": "must be a challenge rating: 0, 1/8, 1/4, 1/2 or a whole number up to 30",
}


def _what(err: dict[str, Any], raw: Any, model: type[BaseModel] | None) -> str:
    kind, ctx, given = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "extra_forbidden":
        name = str(err["loc"][-1]) if err["loc"] else "?"
        known = _fields_at(model, err["loc"][:-1])
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6) if known else []
        return (f"'{name}' is not a field here" + (f": did you mean '{close[0]}'?" if close else "")
                + (f" (fields: {', '.join(known)})" if known and not close else ""))
    if kind in _PLAIN:
        shown = "" if kind == "missing" or isinstance(given, (dict, list)) else f" (got {given!r})"
        return _PLAIN[kind] + shown
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        words = {"greater_than_equal": "at least", "greater_than": "more than", "less_than_equal": "at most",
                 "less_than": "less than"}[kind]
        bound = next(iter(ctx.values()), "?")
        return f"must be {words} {bound} (got {given!r})"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '?')} (got {given!r})"
    if kind == "string_pattern_mismatch":
        field = err["loc"][-1] if err["loc"] else None
        if field in _PATTERNED:
            return f"{_PATTERNED[field]} (got {given!r})"
        return f"{given!r} has characters not allowed here: use lowercase letters, digits and hyphens (like 'old-mill')"
    if kind in ("too_short", "too_long"):
        limit = ctx.get("min_length" if kind == "too_short" else "max_length")
        return f"must have {'at least' if kind == 'too_short' else 'at most'} {limit} " \
               f"{'item' if isinstance(given, (list, dict)) else 'character'}{'s' if limit != 1 else ''}"
    return err["msg"].removeprefix("Value error, ")


def _fields_at(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> list[str]:
    """The field names of the model found by following `loc` down from `model` (none when it cannot be told)."""
    current: Any = model
    for step in loc:
        if isinstance(step, int):
            current = _item_type(current)
        elif isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(step)
            current = _unwrap(field.annotation) if field else None
        else:
            current = _item_type(current) if isinstance(step, str) else None
        if current is None:
            return []
    current = _unwrap(current)
    return list(current.model_fields) if isinstance(current, type) and issubclass(current, BaseModel) else []


def _unwrap(annotation: Any) -> Any:
    """X from Optional[X] / X | None."""
    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        rest = [a for a in args if a is not type(None)]
        return rest[0] if len(rest) == 1 else annotation
    return annotation


def _item_type(annotation: Any) -> Any:
    """X from list[X] or dict[str, X]."""
    annotation = _unwrap(annotation)
    args = typing.get_args(annotation)
    return _unwrap(args[-1]) if args else None
