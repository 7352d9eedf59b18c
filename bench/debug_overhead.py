"""Debug mode's token overhead: the same scripted session with debug off and on, tokens counted per turn.

Run: .venv/bin/python bench/debug_overhead.py
Target (issue #9): debug mode costs at most 10% more tokens. The model is scripted (no network), so tokens are
estimated the way the engine estimates them for providers that report none (about four characters a token):
input = system prompt + context + history, output = the reply. With debug on, each reply carries a typical
<tool_feedback> block in seed 003's schema (a real model's may be longer or shorter: the figure shows the cost
of the request itself exactly, and of the report at this length).
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import Deps, Engine, ScriptedModel, Store, load_config  # noqa: E402
from engine.basics import AgentType  # noqa: E402

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
STEPS = [  # a player's line, and the scripted replies (one per generation; the last is the reply's end)
    ("I walk to the end of the quay and look at the cliffs.", ["You crouch at the edge. <roll>1d20+1</roll>",
     " Far out along the cliffs, a green light blinks once and is gone. The gulls go quiet."]),
    ("@Ysolde who keeps the lighthouse now?", ['"No one, since Aldous drowned," she says, and her jaw tightens. '
     '"Find out who took his lantern and I\'ll pay you forty gold."']),
    ("We accept. We'll find the lantern.", ['<start_quest quest="relight-the-lantern"/>',
     " Ysolde spits in her palm and shakes on it. The Drowned Lantern is yours to find."]),
    ("I buy a coil of rope from the chandler.", ['<modify_inventory item="rope" quantity="1"/>',
     '<modify_inventory currency="sp" quantity="-5"/>',
     " The chandler takes your silver and hands over a coil of tarred rope."]),
    ("I head into the Brine Cup for a drink.", ['<change_location location="brine-cup-tavern"/>',
     " The ale is thin and the fire is low. Odile Farrow watches you over the bar."]),
]
FEEDBACK = {"tools_used": [{"name": "roll", "purpose": "perception check on the cliffs", "success": True,
                            "result_quality": "good"}],
            "tools_considered": [{"name": "discover_secret", "reason_not_used": "the glow was seen, not explained"}],
            "limitations": [], "suggestions": [],
            "answer_quality": {"completeness": 90, "confidence": 80, "notes": "kept the secret for later"}}


async def session(debug: bool) -> tuple[int, int]:
    model = ScriptedModel(chunk_size=64)
    with tempfile.TemporaryDirectory() as tmp:
        async with Store.open(Path(tmp) / "b.db") as store:
            engine = Engine(Deps(store, {a: model for a in AgentType}, load_config(), CORPUS, rng=random.Random(1)))
            await engine.start_game("c")
            await engine.create_character("c", "u1", "Aria", "fighter")
            await engine.set_debug("c", debug)
            block = f" <tool_feedback>{json.dumps(FEEDBACK)}</tool_feedback>" if debug else ""
            tokens_in = tokens_out = 0
            for text, replies in STEPS:
                model.add(*replies[:-1], replies[-1] + block)
                result = await engine.take_turn("c", "u1", "sam", text)
                tokens_in += sum(c.input_tokens for c in result.model_calls)
                tokens_out += sum(c.output_tokens for c in result.model_calls)
    return tokens_in, tokens_out


def main() -> None:
    off_in, off_out = asyncio.run(session(False))
    on_in, on_out = asyncio.run(session(True))
    total_off, total_on = off_in + off_out, on_in + on_out
    print(f"{len(STEPS)} turns, scripted replies, tokens estimated at four characters each")
    print(f"  debug off: input {off_in:6d}  output {off_out:5d}  total {total_off:6d}")
    print(f"  debug on:  input {on_in:6d}  output {on_out:5d}  total {total_on:6d}")
    overhead = 100 * (total_on - total_off) / total_off
    print(f"  overhead: input +{100 * (on_in - off_in) / off_in:.1f}%, output +{100 * (on_out - off_out) / off_out:.1f}%, "
          f"total +{overhead:.1f}%; target <= 10%: {'met' if overhead <= 10 else 'MISSED'}")


if __name__ == "__main__":
    main()
