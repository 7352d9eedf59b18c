"""GM-only lore fails closed: every way of marking a section that the parser is not sure of hides it (and what
follows) from players and is reported with the file, the line and what to write instead; what it is sure of
(a heading's mark, front matter, a .yaml beside a PDF, a folder rule) is read as written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from engine.lore.corpus import read_corpus

ADVENTURE = {"id": "cove", "world": "coast",
             "locations": [{"id": "quay", "secrets": [{"id": "cask-door"}, {"id": "sea-stair"}]}]}


def corpus(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    root = tmp_path / "corpus"
    (root / "adventures" / "cove" / "lore").mkdir(parents=True, exist_ok=True)
    (root / "adventures" / "cove" / "adventure.yaml").write_text(yaml.safe_dump(ADVENTURE))
    for name, text in files.items():
        path = root / "adventures" / "cove" / "lore" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return root


def read(tmp_path: Path, files: dict[str, str | bytes]):
    found, problems = read_corpus(corpus(tmp_path, files))
    sections = {s.title: s for f in found for s in f.sections}
    return sections, [str(p) for p in problems]


def public(sections) -> str:
    return "\n".join(s.text for s in sections.values() if not s.gm_only)


TRUTH = "Odile wrecks ships for Vey."


@pytest.mark.parametrize("text, line, said", [
    # an unclosed code fence above the mark: the heading is read as the block's text
    (f"# Town\nThe quay.\n```\nsome code\n## The Plot (GM only)\n{TRUTH}\n", 3, "is never closed"),
    # a mark inside a closed code block
    (f"# Town\nThe quay.\n```\n## The Plot (GM only)\n{TRUTH}\n```\n", 4, "inside a code block"),
    # an indented heading (four spaces: a code block to Markdown)
    (f"# Town\nThe quay.\n\n    ## The Plot (GM only)\n{TRUTH}\n", 4, "in an indented line"),
    # words after the marker
    (f"# Town\nThe quay.\n## The Plot (GM only) — read first\n{TRUTH}\n", 3, "must end the heading"),
    # another spelling of the mark
    (f"# Town\nThe quay.\n## The Plot [DM-only!]\n{TRUTH}\n", 3, "looks marked for the GM"),
    # a mark in the text
    (f"# Town\nThe quay.\n## The Plot\nFor the GM only:\n{TRUTH}\n", 4, "in the text"),
    # a front matter key in the middle of the file
    (f"# Town\nThe quay.\n## The Plot\nvisibility: gm\n{TRUTH}\n", 4, "in the text"),
    # front matter never closed
    (f"---\nvisibility: gm\n# Town\n{TRUTH}\n", 1, "never closed"),
    # front matter with a value Lorekeeper does not read
    (f"---\nvisibility: secret-ish\n---\n# Town\n{TRUTH}\n", 2, "does not read"),
    # a key it does not read
    (f"---\ngm_only: true\n---\n# Town\n{TRUTH}\n", 2, "a key Lorekeeper does not read"),
])
def test_a_marking_not_understood_hides_the_section_and_is_reported(tmp_path, text, line, said):
    sections, problems = read(tmp_path, {"town.md": text})
    assert TRUTH not in public(sections)
    [problem] = [p for p in problems if said in p]
    assert problem.startswith(f"adventures/cove/lore/town.md: line {line}: ") and "GM" in problem
    assert "(GM only)" in problem or "visibility: gm" in problem or "Close it" in problem or "Take out" in problem


def test_everything_after_a_mark_not_understood_is_hidden_not_only_its_section(tmp_path):
    text = f"# Town\nThe quay.\n\nSecrets (GM only)\n=================\nIntro.\n## The Plot\n{TRUTH}\n"  # Setext
    sections, problems = read(tmp_path, {"town.md": text})
    assert sections["Secrets › The Plot"].gm_only and not sections["Town"].gm_only  # a Setext heading is read
    assert problems == []
    text = f"# Town\nThe quay.\n\n    # Secrets (GM only)\n## The Plot\n{TRUTH}\n## Later\nMore.\n"
    sections, problems = read(tmp_path, {"town.md": text})
    assert sections["Town"].gm_only and sections["Town › The Plot"].gm_only and sections["Town › Later"].gm_only
    assert len(problems) == 1


def test_an_unknown_secret_is_plain_gm_only_and_reported_with_a_suggestion(tmp_path):
    sections, problems = read(tmp_path, {"town.md": f"# Town\nThe quay.\n## The Door (GM only: cask-dor)\n{TRUTH}\n"})
    door = sections["Town › The Door"]
    assert door.gm_only and door.secret is None  # no discovery opens it: it names nothing the game has
    [problem] = problems
    assert "line 3: 'cask-dor' is not a secret of adventure 'cove'" in problem and "Did you mean 'cask-door'?" in problem
    sections, problems = read(tmp_path, {"town.md": f"# Town\nThe quay.\n## The Door (GM only: cask-door)\n{TRUTH}\n"})
    assert sections["Town › The Door"].secret == "cask-door" and problems == []


@pytest.mark.parametrize("text, problem", [
    ("---\nvisibility: gm\n---\n" + TRUTH, None),  # front matter in a .txt is read
    ("\n\n---\nvisibility: gm\n---\n" + TRUTH, "line 3: front matter starts after blank lines"),
    ("---\nvisibility: gm\n" + TRUTH, "line 1: front matter opened with '---' is never closed"),
    ("Notes.\n(GM only)\n" + TRUTH, "line 2: looks like a GM-only marking in the text"),
])
def test_a_text_file_is_marked_by_its_front_matter_and_fails_closed(tmp_path, text, problem):
    sections, problems = read(tmp_path, {"notes.txt": text})
    [notes] = sections.values()
    assert notes.gm_only and TRUTH in notes.text
    if problem is None:
        assert problems == [] and notes.text == TRUTH  # the front matter is not lore
    else:
        [found] = problems
        assert found.startswith(f"adventures/cove/lore/notes.txt: {problem}")


def test_front_matter_after_blank_lines_still_marks_a_markdown_file(tmp_path):
    sections, problems = read(tmp_path, {"town.md": f"\n---\nvisibility: gm\nsecret: sea-stair\n---\n# Town\n{TRUTH}\n"})
    assert sections["Town"].gm_only and sections["Town"].secret == "sea-stair"
    assert len(problems) == 1 and "line 2: front matter starts after blank lines" in problems[0]


def pdf(text: str) -> bytes:
    """A one-page PDF whose page holds `text`."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject
    import io

    writer = PdfWriter()
    page = writer.add_blank_page(300, 300)
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})})
    stream = DecodedStreamObject()
    stream.set_data(f"BT /F1 12 Tf 20 150 Td ({text}) Tj ET".encode())
    page[NameObject("/Contents")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_a_pdf_is_marked_by_a_yaml_beside_it_or_its_folder(tmp_path):
    sections, problems = read(tmp_path, {"handout.pdf": pdf("The public map."), "plot.pdf": pdf(TRUTH),
                                         "plot.pdf.yaml": "visibility: gm\nsecret: cask-door\n",
                                         "gm-only/villain.pdf": pdf("Vey is the villain."),
                                         "notes/folder.yaml": "visibility: gm\n", "notes/n.pdf": pdf("A note."),
                                         "odd.pdf": pdf("Odd."), "odd.pdf.yaml": "visibility: [gm\n"})
    by_file = {s.source.split("/lore/")[1]: s for s in sections.values()}
    assert not by_file["handout.pdf"].gm_only
    assert by_file["plot.pdf"].gm_only and by_file["plot.pdf"].secret == "cask-door"
    assert by_file["gm-only/villain.pdf"].gm_only and by_file["notes/n.pdf"].gm_only
    assert by_file["odd.pdf"].gm_only  # a .yaml beside it that cannot be read: closed
    [problem] = problems
    assert problem.startswith("adventures/cove/lore/odd.pdf: odd.pdf.yaml (beside it) cannot be read")


def test_a_marking_changed_beside_a_file_re_indexes_it(tmp_path):
    from engine.lore.corpus import find_files, read_file

    root = corpus(tmp_path, {"plot.pdf": pdf(TRUTH)})
    [before] = find_files(root)
    read_file(before, [])
    (root / "adventures" / "cove" / "lore" / "plot.pdf.yaml").write_text("visibility: gm\n")
    [after] = find_files(root)
    read_file(after, [])
    assert before.digest != after.digest and after.sections[0].gm_only and not before.sections[0].gm_only


def test_the_shipped_corpus_has_no_marking_problems():
    _, problems = read_corpus(Path(__file__).parent.parent / "corpus")
    assert problems == []


def test_lore_ingest_reports_each_marking_mistake_with_its_line(tmp_path, capsys, monkeypatch):
    from bot.cli import main

    root = corpus(tmp_path, {"town.md": f"# Town\nThe quay.\n## The Plot (GM only) — read first\n{TRUTH}\n",
                             "people.md": "# People\n## Odile (GM only: cask-dor)\nShe knows.\n"})
    monkeypatch.setenv("LOREKEEPER_LORE_DIR", str(tmp_path / "lore"))
    monkeypatch.setenv("LOREKEEPER_CORPUS", str(root))
    assert main(["lore", "ingest"]) == 0
    out = capsys.readouterr().out
    assert "2 problem(s):" in out
    assert "- adventures/cove/lore/town.md: line 3: the heading 'The Plot (GM only) — read first' looks marked" in out
    assert "Write '## The Plot — read first (GM only)'" in out
    assert "- adventures/cove/lore/people.md: line 2: 'cask-dor' is not a secret of adventure 'cove'" in out
    assert main(["lore", "search", "Odile", "wrecks", "ships"]) == 0
    assert TRUTH not in capsys.readouterr().out
