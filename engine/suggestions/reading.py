"""A message read once (`Reading`: sentences, clauses, every lexicon phrase in it), the situation a rule judges it
in, and the rule registry."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import islice
from typing import Callable, Iterable, NamedTuple

from ..basics import AgentType
from ..entities import NPC
from ..state import GameState
from .lexicon import (_CLAUSE_MARKS, _GAPPED, _PAIRS, _PIECE, _QUOTE, _SENTENCE_MARKS, _SINGLE, _SPACES, _match,
                      _words)

N, C, P = AgentType.NARRATIVE, AgentType.COMBAT, AgentType.NPC


@dataclass(frozen=True)
class Suggestion:
    tool: str
    reason: str
    confidence: float
    args: dict[str, str] = field(default_factory=dict)

    def line(self) -> str:
        label = "highly recommended" if self.confidence >= 0.8 else "recommended" if self.confidence >= 0.5 else "optional"
        args = " ".join(f'{k}="{v}"' for k, v in self.args.items())
        example = f" e.g. <{self.tool} {args}/>" if args else ""
        return f"- {self.tool} ({label}): {self.reason}.{example}"



class Hit(NamedTuple):
    start: int  # first word
    end: int  # one past the last word
    sentence: int


_MOST = 32  # hits kept per category: every rule's work stays bounded, however long or repetitive the message


class Reading:
    """A message read once: its words, where sentences and clauses end, and every lexicon phrase in it
    (the first `_MOST` of each category)."""

    __slots__ = ("raw", "_raw_tokens", "text", "tokens", "sentence_of", "stops", "questions", "requests", "hits", "clause_ends",
                 "token_set", "stems", "later")

    def __init__(self, message: str) -> None:
        self.raw = message if message.isascii() else message.translate(_QUOTE)
        self._raw_tokens: list[str] | None = None
        self.text = self.raw.lower()
        tokens: list[str] = []
        of: list[int] = []
        stops: list[int] = []  # one past the last word of each sentence
        ends: set[int] = set()  # the last word of each clause
        self.questions: set[int] = set()
        self.requests: set[int] = set()  # "can we …?", "could you …?": asked, but meant as a move
        start = 0
        for part in self.text.translate(_SPACES).split():
            if part.isalnum():  # most words
                tokens.append(part)
                of.append(len(stops))
                continue
            pieces = (part[:-1], part[-1]) if part[-1] in _CLAUSE_MARKS and part[:-1].isalnum() else _PIECE.findall(part)
            for piece in pieces:
                if piece[0] not in _CLAUSE_MARKS:
                    tokens.append(piece)
                    of.append(len(stops))
                    continue
                if tokens:
                    ends.add(len(tokens) - 1)
                if piece[0] in _SENTENCE_MARKS and len(tokens) > start:
                    self._close(tokens, start, stops, ends, "?" in piece)
                    start = len(tokens)
                elif "?" in piece and stops and len(tokens) == start:  # "…!?" after a closed sentence
                    self.questions.add(len(stops) - 1)
        if len(tokens) > start:
            self._close(tokens, start, stops, ends, False)
        self.tokens, self.sentence_of, self.stops, self.clause_ends = tokens, of, stops, ends
        # Three passes at C speed pick the few positions worth a look: a word that is a phrase on its own, two
        # words that open a phrase, a word that opens a phrase with a gap. Then only those are matched.
        found: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
        for i in [i for i, t in enumerate(tokens) if t in _SINGLE]:
            for category in _SINGLE[tokens[i]]:
                found[category].append((i, i + 1, of[i]))
        pairs = zip(tokens, islice(tokens, 1, None))
        for i in [i for i, pair in enumerate(pairs) if pair in _PAIRS]:
            sentence = of[i]
            if of[i + 1] != sentence:
                continue
            stop = stops[sentence]
            for category, rest in _PAIRS[tokens[i], tokens[i + 1]]:
                end = _match(rest, i + 2, tokens, stop, ends) if rest else i + 2
                if end >= 0:
                    found[category].append((i, end, sentence))
        for i in [i for i, t in enumerate(tokens) if t in _GAPPED]:
            sentence = of[i]
            stop = stops[sentence]
            for category, rest, anchor, reach in _GAPPED[tokens[i]]:
                if anchor is not None and anchor.isdisjoint(tokens[i + 1:min(stop, i + 1 + reach)]):
                    continue
                end = _match(rest, i + 1, tokens, stop, ends)
                if end >= 0:
                    found[category].append((i, end, sentence))
        self.hits: dict[str, list[Hit]] = {
            category: [Hit(*h) for h in sorted(spans)[:_MOST]] for category, spans in found.items()}
        unique = set(tokens)
        self.token_set = unique | {t[:-2] for t in unique if t.endswith("'s")}
        self.stems = {_stem(t) for t in self.token_set if len(t) > 2 and t not in _STOP_WORDS}
        self.later = {of[i] for i, t in enumerate(tokens) if t in _LATER} if not _LATER.isdisjoint(self.token_set) else set()

    def _close(self, tokens: list[str], start: int, stops: list[int], ends: set[int], question: bool) -> None:
        number = len(stops)
        stop = len(tokens)
        stops.append(stop)
        ends.add(stop - 1)
        if question or tokens[start] in _QUESTION_WORDS:  # "what's their AC again" asks without a mark
            self.questions.add(number)
            if stop - start >= 2 and tokens[start] in _ASKING and tokens[start + 1] in _ASKERS:
                self.requests.add(number)
            for tag in _TAGS:  # "go fetch her, would you?": an order with a question tagged on
                if stop - start > len(tag) and tuple(tokens[stop - len(tag):stop]) == tag and stop - len(tag) - 1 in ends:
                    self.requests.add(number)

    def raw_tokens(self) -> list[str]:
        """The words as written (capitals kept), aligned with `tokens`."""
        if self._raw_tokens is None:
            words = _words(self.raw)
            self._raw_tokens = words if len(words) == len(self.tokens) else self.tokens
        return self._raw_tokens

    def get(self, category: str) -> list[Hit]:
        return self.hits.get(category) or []

    def has(self, category: str) -> bool:
        return bool(self.hits.get(category))

    def words(self, hit: Hit) -> str:
        return " ".join(self.tokens[hit.start:hit.end])

    def question(self, sentence: int) -> bool:
        return sentence in self.questions and sentence not in self.requests

    def done(self, hit: Hit) -> bool:
        """Whether the player does this now: not asked about, promised, supposed or denied."""
        if self.question(hit.sentence):
            return False
        first = self.stops[hit.sentence - 1] if hit.sentence else 0
        if hit.sentence in self.requests:
            first += 2
        before = self.tokens[max(first, hit.start - 3):hit.start]
        if any(w in _NOT_NOW for w in before):
            return False
        return hit.sentence not in self.later

    def acts(self, category: str, *unless: str) -> list[Hit]:
        """The hits of `category` done now, leaving out any that overlaps a hit of one of `unless`."""
        hits = self.get(category)
        if not hits:
            return []
        covered: set[int] = set()
        for other in unless:
            for h in self.get(other):
                covered.update(range(h.start, h.end))
        return [h for h in hits if self.done(h) and covered.isdisjoint(range(h.start, h.end))]

    def near(self, first: Iterable[Hit], category: str, gap: int = 8) -> Hit | None:
        """A hit of `category` that starts within `gap` words after one of `first`, in the same sentence.

        Both lists are in word order, so one merged walk finds it: linear, however many hits there are."""
        then = self.get(category)
        firsts = list(first)
        j, reach, sentence = 0, -1, -1  # the furthest end of a `first` hit that starts before the current one
        for h in then:
            while j < len(firsts) and firsts[j].start < h.start:
                if firsts[j].sentence != sentence:
                    sentence, reach = firsts[j].sentence, -1
                reach = max(reach, firsts[j].end)
                j += 1
            if sentence == h.sentence and reach >= 0 and h.start - reach <= gap:
                return h
        return None

    def within(self, hit: Hit, words: set[str], gap: int = 8) -> bool:
        """Whether one of `words` follows `hit` within `gap` words, in the same sentence."""
        stop = min(self.stops[hit.sentence], hit.end + gap)
        return any(self.tokens[i] in words for i in range(hit.end, stop))


_ASKING = frozenset({"can", "could", "may", "might", "shall", "mind", "let's", "lets"})
_QUESTION_WORDS = frozenset({"what's", "whats", "how", "why", "where", "when", "who", "who's", "whos", "what"})
_TAGS = (("would", "you"), ("will", "you"), ("won't", "you"), ("could", "you"), ("please",), ("pls",), ("plz",))
_WONDERING = frozenset({"do", "does", "did", "is", "are", "should", "what", "what's", "whats", "how", "why", "which",
                        "when", "would", "will", "if"})
_THEY = frozenset({"she", "he", "they", "she's", "he's", "they're", "it", "it's", "who", "someone", "somebody",
                   "everyone", "nobody"})
_ASKERS = frozenset({"we", "i", "you", "us", "if"})
_NOT_NOW = frozenset({"who", "whoever", "someone", "somebody", "what", "how", "if", "would", "could", "should", "might", "maybe", "perhaps", "swear", "promise", "before",
                      "don't", "dont", "not", "never", "nobody", "no", "won't", "wont", "can't", "cannot",
                      "whether", "unless", "shouldn't", "wouldn't", "didn't", "doesn't", "without", "instead",
                      "rather", "wish", "planning", "plan", "thinking", "considering"})
_LATER = frozenset({"later", "tomorrow", "eventually", "someday", "sometime", "afterwards"})
_STOP_WORDS = frozenset(
    "the a an of to in on at by for from with and or but not no is are was were be been it its this that these "
    "those there their they them he him his she her we us our you your i me my what who where when why how which "
    "about into onto over under after before all any some very just only also then than so as up down out off "
    "again still would could should will shall can may might do does did have has had".split())


@dataclass(frozen=True)
class Situation:
    state: GameState
    reading: Reading
    agent: AgentType
    npc: NPC | None
    actor_id: str | None = None  # the player who speaks (whose inventory "my potion" is)

    @classmethod
    def of(cls, state: GameState, message: str, agent: AgentType, npc: NPC | None = None,
           actor_id: str | None = None) -> "Situation":
        return cls(state, Reading(message), agent, npc, actor_id)


Rule = Callable[[Situation], list[Suggestion]]
RULES: list[tuple[str, frozenset[AgentType], Rule]] = []


def rule(*agents: AgentType) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        RULES.append((fn.__name__, frozenset(agents), fn))
        return fn
    return register


def _stem(word: str) -> str:
    """A cheap stem: without a plural or verb ending, cut to six letters ("casks" and "cask" meet)."""
    word = word.removesuffix("'s")
    for ending in ("ing", "ed", "es", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            word = word[:-len(ending)]
            break
    return word[:6]


@lru_cache(maxsize=1024)
def _content(text: str, leave_out: frozenset[str] = frozenset()) -> frozenset[str]:
    """The stems of a text's content words (cached: the same secrets, names and objectives come back each turn)."""
    return frozenset({_stem(w) for w in _words(text.lower()) if len(w) > 2 and w not in _STOP_WORDS} - leave_out)


def _overlap(r: Reading, text: str, leave_out: frozenset[str] = frozenset()) -> int:
    """How many content words of `text` the message uses, by stem."""
    return len(r.stems & _content(text, leave_out))


def _names(state: GameState) -> frozenset[str]:
    """The stems of every place and person's name: shared by half the game's texts, so no evidence of a topic."""
    return _content(" ".join([*(loc.name for loc in state.locations.values()), *(n.name for n in state.npcs.values())]))
