"""Corpus files → slices → chunks.

Layout: `corpus/adventures/<id>/lore/**` is scope `adventure` (ref: the adventure id) and `corpus/world/<ref>/**`
is scope `world`. Each heading section of a Markdown file is a slice, addressed `scope:ref:slice`, the slice being
the slugs of its heading path joined by dots (`gannet-rock-lighthouse.the-great-lens`). A heading ending in
"(GM only)", or a file whose front matter says `visibility: gm`, is for the Game Master alone, with everything
under it; "(GM only: cask-door)" ties the section to the adventure's secret `cask-door`: NPCs who know that
secret may read it, and so may everyone once the party has discovered it. A marking the parser is not sure of is
read as GM-only and reported (marking.py). Text files are one slice; a PDF is a slice per page. A file that cannot
be read is reported, by name, and skipped; the rest still ingests.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import marking as marks
from .marking import Marking

Scope = str  # "adventure" or "world"
SUFFIXES = (".md", ".markdown", ".txt", ".pdf")
MAX_FILE_BYTES = 8 * 1024 * 1024  # a lore file larger than this is a mistake (a dump, a binary), not lore
CHUNK_TOKENS = 200  # target size of a chunk, in estimated tokens (about four characters each)
MAX_CHUNK_TOKENS = 300

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")  # CommonMark: up to 3 spaces before
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SLUG = re.compile(r"[^a-z0-9]+")
_SENTENCE = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+(?=[A-Z0-9\"'“‘(\[])")


def slug(text: str) -> str:
    return _SLUG.sub("-", text.lower()).strip("-")


@dataclass
class Section:
    """One slice: a heading's own text (not its subsections')."""

    scope: Scope
    ref: str
    slice: str
    heading: list[str]  # the heading path, as written (without GM markers)
    text: str
    gm_only: bool
    source: str  # the file, relative to the corpus directory
    line: int = 1
    secret: str | None = None  # the adventure secret a GM-only section belongs to

    @property
    def address(self) -> str:
        return f"{self.scope}:{self.ref}:{self.slice}"

    @property
    def title(self) -> str:
        return " › ".join(self.heading)


@dataclass
class Chunk:
    """A piece of a section small enough to embed and to quote."""

    id: str  # scope:ref:slice#n
    scope: Scope
    ref: str
    slice: str
    heading: str
    text: str
    gm_only: bool
    source: str
    secret: str | None = None

    @property
    def address(self) -> str:
        return f"{self.scope}:{self.ref}:{self.slice}"

    def visible(self, gm: bool, secrets: frozenset[str] | set[str]) -> bool:
        """Whether a reader may see it: the GM always; others public lore and the secrets they know."""
        return gm or not self.gm_only or (self.secret is not None and self.secret in secrets)

    def metadata(self) -> dict[str, str | bool]:
        return {"scope": self.scope, "ref": self.ref, "slice": self.slice, "heading": self.heading,
                "gm_only": self.gm_only, "source": self.source, "secret": self.secret or ""}


@dataclass
class CorpusFile:
    path: Path
    source: str  # relative to the corpus directory, with forward slashes
    scope: Scope
    ref: str
    digest: str = ""
    sections: list[Section] = field(default_factory=list)
    root: Path | None = None  # the folder its scope and ref start at (where folder rules are looked for)
    secrets: set[str] | None = None  # the secret ids its sections may be tied to (None: not known, not checked)

    @property
    def where(self) -> str:
        return f"adventure '{self.ref}'" if self.scope == "adventure" else f"the adventures set in world '{self.ref}'"


@dataclass
class Problem:
    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


def find_files(corpus_dir: Path) -> list[CorpusFile]:
    """Every lore file under the corpus, with its scope and ref, in a stable order."""
    found: list[CorpusFile] = []
    roots: list[tuple[Path, Scope, str]] = []
    adventures = corpus_dir / "adventures"
    if adventures.is_dir():
        roots += [(d / "lore", "adventure", d.name) for d in sorted(adventures.iterdir()) if (d / "lore").is_dir()]
    world = corpus_dir / "world"
    if world.is_dir():
        roots += [(d, "world", d.name) for d in sorted(world.iterdir()) if d.is_dir()]
    for root, scope, ref in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.suffix.lower() in SUFFIXES and not path.name.startswith("."):
                found.append(CorpusFile(path, path.relative_to(corpus_dir).as_posix(), scope, slug(ref) or ref, root=root))
    return found


def read_file(file: CorpusFile, problems: list[Problem]) -> bool:
    """Fill in the file's digest and sections; False (with the reason in problems) when it cannot be used."""
    try:
        size = file.path.stat().st_size
        if size > MAX_FILE_BYTES:
            problems.append(Problem(file.source, f"is {size / 2**20:.0f} MB; lore files are read up to "
                                                 f"{MAX_FILE_BYTES // (1024 * 1024)} MB. Split it, or leave it out."))
            return False
        data = file.path.read_bytes()
    except OSError as exc:
        problems.append(Problem(file.source, f"cannot be read: {exc.strerror or exc}."))
        return False
    marking = marks.beside(file.path, file.root, file.secrets, file.where) if file.root is not None else Marking()
    if file.path.suffix.lower() == ".pdf":
        pages = _pdf_sections(file, data, problems)
        if pages is None:
            return False
        if not pages:
            problems.append(Problem(file.source, "has no text to read (a scanned PDF has only pictures of text)."))
            return False
        file.sections = pages
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            problems.append(Problem(file.source, f"is not UTF-8 text (byte {exc.start}); save it as UTF-8."))
            return False
        if file.path.suffix.lower() == ".txt":
            file.sections = _text_sections(file, text, marking)
        else:
            file.sections = markdown_sections(file, text, problems, marking)
    for section in file.sections:  # the rules beside the file hold for all of it
        if marking.gm:
            section.gm_only = True
            section.secret = section.secret or marking.secret
    for line, message in marking.problems or []:
        problems.append(Problem(file.source, f"line {line}: {message}" if line else message))
    file.digest = hashlib.sha256(data + marking.key().encode()).hexdigest()
    if not any(s.text.strip() for s in file.sections):
        problems.append(Problem(file.source, "is empty: there is no text to learn from."))
        return False
    return True


def markdown_sections(file: CorpusFile, text: str, problems: list[Problem], marking: Marking | None = None) -> list[Section]:
    """Split Markdown at its headings (ATX `## Title`, and Setext: a line underlined with === or ---); each
    heading's own text is a section. GM markings are read strictly; whatever only looks like one makes the rest
    of the file GM-only and is noted in `marking` (a fresh one when not given, its notes added to problems)."""
    own = marking is None
    marking = marking or Marking()
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    start = marks.front_matter(lines, marking, file.secrets, file.where)
    sections: list[Section] = []
    path: list[tuple[int, str, bool, str | None]] = []  # (level, heading, gm_only, secret) from the top down
    body: list[str] = []
    body_line = start + 1
    fence: str | None = None  # the open code fence's characters
    fence_line = 0
    locked = False  # a marking not understood was seen: all from there on is GM-only
    headings = 0

    def close() -> None:
        content = "\n".join(body).strip()
        gm = marking.gm or locked
        if path:
            heading = [h for _, h, _, _ in path]
            secret = next((sec for _, _, _, sec in reversed(path) if sec), None)
            sections.append(Section(file.scope, file.ref, ".".join(slug(h) or "section" for h in heading), heading,
                                    content, gm or any(g for _, _, g, _ in path), file.source, body_line, secret))
        elif content:
            sections.append(_untitled(file, content, gm, body_line))

    def lock(number: int, line: str, why: str) -> None:
        nonlocal locked
        locked = True
        if marking.gm:  # the whole file is GM-only already: nothing to hide, nothing to report
            return
        shown = " ".join(line.split())
        marking.note(number, f"'{shown[:60]}' looks like a GM-only marking {why}, so from here to the end of the "
                             f"file all is treated as GM-only. Mark a section with a heading ending in '(GM only)' "
                             f"(or '(GM only: secret-id)'), at the start of the line.")

    def heading(level: int, title: str, number: int) -> None:
        nonlocal body, body_line, headings
        close()
        headings += 1
        mark = marks.STRICT.search(title)
        secret = mark.group(1).lower() if mark and mark.group(1) else None
        gm = mark is not None
        clean = marks.STRICT.sub("", title).strip()
        if mark is None and marks.LOOSE.search(title):
            gm = True
            # brackets the mark leaves empty go (no leading \s* in the pattern: linear on a line of spaces)
            bare = re.sub(r"[\(\[][^\)\]]*[\)\]]", "", marks.LOOSE.sub("", title))
            clean = " ".join(bare.split()).strip(" -—:") or "Untitled"
            marking.note(number, f"the heading '{title[:60]}' looks marked for the GM, but not as Lorekeeper reads "
                                 f"it (the mark must end the heading); it is treated as GM-only. Write "
                                 f"'{'#' * level} {clean} (GM only)'.")
        if secret is not None:
            said = marks.check_secret(secret, file.secrets, file.where)
            if said is not None:
                marking.note(number, said)
                secret = None
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, clean or "Untitled", gm, secret))
        body, body_line = [], number

    for number, line in enumerate(lines[start:], start + 1):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) \
                    and not line.strip()[len(opened.group(1)):].strip():
                fence = None
            elif marks.loose_line(line) and not locked:
                lock(number, line, "inside a code block")
            body.append(line)
            continue
        if opened:
            fence, fence_line = opened.group(1), number
            body.append(line)
            continue
        m = _HEADING.match(line)
        if m is not None:
            heading(len(m.group(1)), (m.group(2) or "").strip(), number)
            continue
        underline = _SETEXT.match(line)
        if underline and body and body[-1].strip() and not _FENCE.match(body[-1]):
            title = body.pop().strip()
            heading(1 if underline.group(1)[0] == "=" else 2, title, number - 1)
            body_line = number
            continue
        titled = bool(line.strip()) and number < len(lines) and _SETEXT.match(lines[number]) is not None
        if marks.loose_line(line) and not locked and not titled:  # a Setext heading's title is read as one, below
            where = "in an indented line (a code block to Markdown)" if line.startswith(("    ", "\t")) else \
                "in the text"
            lock(number, line, where)
        body.append(line)
    if fence is not None:
        locked = True
        marking.note(fence_line, f"a code block opened with {fence} is never closed, so everything after it is read "
                                 f"as its text and treated as GM-only. Close it with a {fence} line.")
    close()
    if not headings and sections:
        problems.append(Problem(file.source, "has no headings: it is one slice named after the file. "
                                             "Give it '# Title' and '## Section' headings to address its parts."))
    if own:
        for line, message in marking.problems or []:
            problems.append(Problem(file.source, f"line {line}: {message}" if line else message))
    return sections  # a heading with no text of its own is kept: its address still names its subsections


def _untitled(file: CorpusFile, text: str, gm: bool, line: int = 1) -> Section:
    stem = Path(file.source).stem
    return Section(file.scope, file.ref, slug(stem) or "untitled", [stem], text, gm, file.source, line)


def _text_sections(file: CorpusFile, text: str, marking: Marking) -> list[Section]:
    """A text file is one slice; front matter at its top marks it as in Markdown, and any line that looks like
    a marking makes all of it GM-only (reported)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    start = marks.front_matter(lines, marking, file.secrets, file.where)
    loose = next((n for n, line in enumerate(lines[start:], start + 1) if marks.loose_line(line)), None)
    if loose is not None and not marking.gm:
        marking.gm = True
        marking.note(loose, "looks like a GM-only marking in the text, so the whole file is treated as GM-only. "
                            "Mark a text file with front matter on its first lines: '---', 'visibility: gm', '---'.")
    return [_untitled(file, "\n".join(lines[start:]).strip(), marking.gm, start + 1)]


def _pdf_sections(file: CorpusFile, data: bytes, problems: list[Problem]) -> list[Section] | None:
    import io
    import logging

    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings about odd files are not the admin's business
    stem = Path(file.source).stem
    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    except Exception as exc:  # a hostile or odd file makes pypdf raise almost anything (NotImplementedError for an
        # unknown filter, RecursionError, AttributeError): whatever it is, it is this file's problem, reported as such
        problems.append(Problem(file.source, f"is not a readable PDF ({type(exc).__name__}: {exc})."))
        return None
    return [Section(file.scope, file.ref, f"{slug(stem) or 'pdf'}.page-{n}", [stem, f"page {n}"],
                    " ".join(text.split()), False, file.source, n)
            for n, text in enumerate(pages, 1) if text.strip()]


def chunk_section(section: Section, target: int = CHUNK_TOKENS, limit: int = MAX_CHUNK_TOKENS) -> list[Chunk]:
    """Heading-aware chunks: paragraphs packed to about `target` tokens, long paragraphs split at sentences."""
    if not section.text.strip():
        return []
    pieces: list[str] = []
    for paragraph in re.split(r"\n\s*\n", section.text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if _tokens(paragraph) <= limit:
            pieces.append(paragraph)
            continue
        pieces += _split_long(paragraph, target)
    return [Chunk(f"{section.address}#{n}", section.scope, section.ref, section.slice, section.title, text,
                  section.gm_only, section.source, section.secret)
            for n, text in enumerate(_pack(pieces, target, "\n\n"))]


def _split_long(paragraph: str, target: int) -> list[str]:
    sentences: list[str] = []
    for sentence in _SENTENCE.split(paragraph):
        while _tokens(sentence) > target:  # one endless sentence (a table, a list without stops): cut by size
            cut = sentence.rfind(" ", 0, target * 4)
            cut = cut if cut > target else target * 4
            sentences.append(sentence[:cut])
            sentence = sentence[cut:].lstrip()
        sentences.append(sentence)
    return _pack(sentences, target, " ")


def _pack(pieces: list[str], target: int, joiner: str) -> list[str]:
    """Consecutive pieces joined while they fit in about `target` tokens."""
    out: list[str] = []
    current = ""
    for piece in pieces:
        if current and _tokens(current) + _tokens(piece) > target:
            out.append(current)
            current = piece
        else:
            current = f"{current}{joiner}{piece}" if current else piece
    if current:
        out.append(current)
    return out


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def read_corpus(corpus_dir: Path) -> tuple[list[CorpusFile], list[Problem]]:
    """Every readable lore file with its sections; duplicate slice names within a scope and ref are reported
    (the later file's section is left out) so that every address means one thing."""
    problems: list[Problem] = []
    secrets = marks.adventure_secrets(corpus_dir)
    found = find_files(corpus_dir)
    for f in found:
        f.secrets = secrets.get((f.scope, f.ref))  # None: no adventure here to check its ties against
    files = [f for f in found if read_file(f, problems)]
    seen: dict[str, str] = {}
    for f in files:
        kept = []
        for s in f.sections:
            other = seen.get(s.address)
            if other is not None:
                where = "earlier in the same file" if other == f.source else f"in {other}"
                problems.append(Problem(f.source, f"the section '{s.title}' (line {s.line}) has the slice name "
                                                  f"'{s.slice}', already used {where}; rename one heading."))
                continue
            seen[s.address] = f.source
            kept.append(s)
        f.sections = kept
    return files, problems
