"""Which lore is for the Game Master alone, read so that it fails closed.

Understood for certain: a heading that ends in "(GM only)" or "(GM only: secret-id)" naming one of the adventure's
secrets; front matter at the top of a Markdown or text file (`visibility: gm`, optionally `secret: secret-id`); a
file beside a lore file named after it plus ".yaml" (`handout.pdf.yaml`), holding the same keys, which is how a PDF
is marked; a `folder.yaml` holding them, for every file in its folder and below; a folder named `gm-only` (or
`gm`). Anything else that looks like a marking (a mark with words after it, an unknown secret, a mark inside a code
block or an indented line or the text, front matter that is never closed or not on the first line, a key or value
these rules do not know) is taken as GM-only, the widest reading, and reported with its file, line and what to
write instead. Nothing public is ever read out of a marking the parser was not sure of.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

GM_FOLDERS = {"gm", "gm-only", "gm_only", "dm-only", "dm_only"}
FOLDER_FILE = "folder.yaml"

# A heading's mark, as Lorekeeper reads it: at the very end, optionally naming one secret.
STRICT = re.compile(r"\s*[\(\[]\s*gm[ -]?only(?:\s*:\s*([a-z0-9][a-z0-9_-]*))?\s*[\)\]]\s*$", re.I)
# What looks like a mark to a reader, wherever it stands: GM/DM/game master only, spelled any common way.
LOOSE = re.compile(r"\b(?:gm|dm|game[\s_-]*master|dungeon[\s_-]*master)s?['’]?[\s_-]*only\b|\bgm[\s_-]*secret", re.I)
# A line that reads as a front matter key about visibility, out of place.
KEY_LINE = re.compile(r"^\s*(?:(?:visibility|audience)\s*:\s*[\"']?(?:gm|dm|game|secret|private|hidden)|gm[\s_-]*only\s*:)",
                      re.I)

GM_VALUES = {"gm", "gm-only", "gm only", "gm_only", "dm", "dm-only", "dm only", "game master", "game-master",
             "gamemaster", "secret", "private", "hidden"}
PUBLIC_VALUES = {"public", "players", "everyone", "all"}
OWN_KEYS = {"visibility", "audience", "secret"}
SUSPECT_KEY = re.compile(r"gm|dm|secret|hidden|private|visib|audien|spoiler", re.I)


@dataclass
class Marking:
    """What the rules give a whole file: GM-only or not, the secret it is tied to, and the mistakes found."""

    gm: bool = False
    secret: str | None = None
    problems: list[tuple[int, str]] | None = None  # (line, message); line 0: the file as a whole

    def note(self, line: int, message: str) -> None:
        if self.problems is None:
            self.problems = []
        self.problems.append((line, message))

    def key(self) -> str:
        """For the file's digest: a marking changed beside a file re-indexes it."""
        return f"gm={self.gm};secret={self.secret or ''}"


def check_secret(secret: str, known: set[str] | None, where: str) -> str | None:
    """None when `secret` is one the lore may be tied to; else what to say about it (the section then stays
    GM-only for every agent, tied to nothing). `known` None: the adventure's secrets could not be read."""
    if known is None or secret in known:
        return None
    close = difflib.get_close_matches(secret, sorted(known), n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    listed = f" Its secrets: {', '.join(sorted(known))}." if known else f" {where} has no secrets."
    return (f"'{secret}' is not a secret of {where}, so the section is GM-only for every agent (no discovery "
            f"will open it).{hint}{listed}")


def read_keys(block: dict, marking: Marking, line: int, known: set[str] | None, where: str, what: str) -> None:
    """Apply front matter (or a .yaml beside the file, or a folder's) to `marking`; what is not understood for
    certain makes it GM-only and is reported."""
    for key, value in block.items():
        name = str(key).strip().lower()
        text = str(value).strip().strip("\"'").lower() if value is not None else ""
        if name in ("visibility", "audience"):
            if text in GM_VALUES:
                marking.gm = True
            elif text not in PUBLIC_VALUES:
                marking.gm = True
                marking.note(line, f"{what} says '{key}: {value}', which Lorekeeper does not read; the file is "
                                   f"treated as GM-only. Write 'visibility: gm' (or 'visibility: public').")
        elif name == "secret":
            marking.gm = True
            said = check_secret(text, known, where) if re.fullmatch(r"[a-z0-9][a-z0-9_-]*", text) else \
                f"'{value}' is not a secret id (lowercase letters, digits and dashes); the file is GM-only for every agent."
            if said is None:
                marking.secret = text
            else:
                marking.note(line, f"{what}: {said}")
        elif SUSPECT_KEY.search(name):
            marking.gm = True
            marking.note(line, f"{what} says '{key}: {value}', a key Lorekeeper does not read; the file is treated "
                               f"as GM-only. Write 'visibility: gm' (and 'secret: <id>' to tie it to a secret).")


def front_matter(lines: list[str], marking: Marking, known: set[str] | None, where: str) -> int:
    """Read a `---` block at the top of the file into `marking`; the index of the first line after it (0: none).
    One after blank lines is read too, and reported; one never closed makes the whole file GM-only."""
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or lines[first].strip() != "---":
        return 0
    end = next((i for i in range(first + 1, min(len(lines), first + 80)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        marking.gm = True
        marking.note(first + 1, "front matter opened with '---' is never closed, so the whole file is treated as "
                                "GM-only. Close it with a '---' line (or take out the first '---').")
        return 0
    if first > 0:
        marking.note(first + 1, "front matter starts after blank lines; it was read, but must start on the first "
                                "line to be front matter to other tools. Take out the blank lines above it.")
    try:
        block = yaml.safe_load("\n".join(lines[first + 1:end])) or {}
    except yaml.YAMLError:
        block = None
    if not isinstance(block, dict):
        if any(LOOSE.search(line) or KEY_LINE.search(line) or "secret" in line.lower() for line in lines[first + 1:end]):
            marking.gm = True
            marking.note(first + 2, "the front matter is not readable YAML (key: value lines); the file is treated "
                                    "as GM-only. Write 'visibility: gm'.")
        return end + 1
    read_keys(block, marking, first + 2, known, where, "the front matter")
    return end + 1


def beside(path: Path, root: Path, known: set[str] | None, where: str) -> Marking:
    """What the folders from `root` down to `path`, and the .yaml named after `path`, say about it."""
    marking = Marking()
    folder = root
    for part in path.relative_to(root).parent.parts:
        folder = folder / part
        if part.lower() in GM_FOLDERS:
            marking.gm = True
        elif LOOSE.search(part.replace("-", " ").replace("_", " ")):
            marking.gm = True
            marking.note(0, f"the folder '{part}' looks marked for the GM; everything in it is treated as GM-only. "
                            f"Name it 'gm-only', or put a {FOLDER_FILE} with 'visibility: gm' in it.")
    folder = root
    for part in ("", *path.relative_to(root).parent.parts):
        folder = folder / part if part else folder
        _yaml_file(folder / FOLDER_FILE, marking, known, where)
    for name in (path.name + ".yaml", path.name + ".yml"):
        _yaml_file(path.with_name(name), marking, known, where)
    return marking


def _yaml_file(path: Path, marking: Marking, known: set[str] | None, where: str) -> None:
    if not path.is_file():
        return
    what = f"{path.name} (beside it)" if path.name != FOLDER_FILE else f"{path.parent.name}/{FOLDER_FILE}"
    try:
        block = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError, RecursionError) as exc:
        marking.gm = True
        marking.note(0, f"{what} cannot be read ({type(exc).__name__}); the file is treated as GM-only. Make it "
                        f"'visibility: gm' or 'visibility: public' in plain YAML.")
        return
    if not isinstance(block, dict):
        marking.gm = True
        marking.note(0, f"{what} does not hold 'key: value' lines; the file is treated as GM-only. Write "
                        f"'visibility: gm' or 'visibility: public'.")
        return
    read_keys(block, marking, 0, known, where, what)


def loose_line(line: str) -> bool:
    """Whether a line that is no heading Lorekeeper reads still looks like a GM marking."""
    low = line.lower()
    if "only" not in low and "secret" not in low and ":" not in low:  # most lines: no regex at all
        return False
    return bool(LOOSE.search(line) or KEY_LINE.search(line))


def adventure_secrets(corpus_dir: Path) -> dict[tuple[str, str], set[str] | None]:
    """The secret ids lore may be tied to, by (scope, ref): an adventure's own, and for a world those of every
    adventure set in it. None: the adventure's file could not be read (its own check reports why)."""
    found: dict[tuple[str, str], set[str] | None] = {}
    adventures = corpus_dir / "adventures"
    for folder in sorted(adventures.iterdir()) if adventures.is_dir() else []:
        file = folder / "adventure.yaml"
        if not file.is_file():
            continue
        try:
            data = yaml.safe_load(file.read_text(encoding="utf-8"))
            secrets = {str(s["id"]) for loc in data.get("locations") or [] for s in (loc.get("secrets") or [])}
            world = data.get("world")
        except Exception:  # any shape at all: the adventure check says what is wrong with it
            found[("adventure", folder.name)] = None
            continue
        found[("adventure", folder.name)] = secrets
        if isinstance(world, str):
            mine = found.setdefault(("world", world), set())
            if mine is not None:
                mine |= secrets
    return found
