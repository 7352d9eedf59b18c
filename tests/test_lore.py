"""The lore corpus and index: slices, chunks, bad files, incremental ingest, filters and hybrid search (real Chroma)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.lore.corpus import CorpusFile, Section, chunk_section, markdown_sections
from engine.lore.embed import MiniLM
from engine.lore.index import LoreIndex

TOWN = """# Saltmere
A fishing town on the Sundered Coast.

## The Brine Cup
Odile Farrow keeps the tavern and brews a dark ale called Wrack Stout.

## Cellar Door (GM only)
Behind the third cask a door opens on the tide tunnel.

### Smugglers' Marks
Chalk crosses mark the casks that hide contraband.

## The Harbour Bell
A bronze bell on the quay, rung three times in fog.
"""

RULES = """# Combat
## Critical Hits
When an attack roll shows a natural 20, the attack hits and its damage dice are rolled twice.

## Cover
Half cover adds 2 to armour class; three-quarters cover adds 5.
"""

SECRETS = """---
visibility: gm
---
# The Wreckers
The harbourmaster leads the wreckers and lights the false lantern.
"""


def test_a_pdf_that_pypdf_cannot_decode_is_named_not_fatal(tmp_path):
    from engine.lore.corpus import CorpusFile, read_file

    odd = tiny_pdf(["Tides."]).replace(b"<< /Length", b"<< /Filter /Bogus /Length", 1)  # pypdf: NotImplementedError
    path = tmp_path / "world" / "coast" / "odd.pdf"
    path.parent.mkdir(parents=True)
    path.write_bytes(odd)
    problems: list = []
    read_file(CorpusFile(path, "world/coast/odd.pdf", "world", "coast"), problems)
    assert [p.source for p in problems] == ["world/coast/odd.pdf"] and "not a readable PDF" in problems[0].message


def tiny_pdf(pages: list[str]) -> bytes:
    """A minimal PDF with one line of text per page."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            f"<< /Type /Pages /Kids [{' '.join(f'{4 + 2 * i} 0 R' for i in range(len(pages)))}] /Count {len(pages)} >>".encode(),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    for i, text in enumerate(pages):
        stream = f"BT /F1 12 Tf 72 712 Td ({text}) Tj ET".encode()
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {5 + 2 * i} 0 R "
                    "/Resources << /Font << /F1 3 0 R >> >> >>".encode())
        objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, o in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + o + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode() + b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def write_corpus(root: Path) -> Path:
    lore = root / "adventures" / "saltmere" / "lore"
    lore.mkdir(parents=True)
    (lore / "town.md").write_text(TOWN)
    (lore / "secrets.md").write_text(SECRETS)
    world = root / "world" / "coast"
    world.mkdir(parents=True)
    (world / "combat.md").write_text(RULES)
    (world / "tides.pdf").write_bytes(tiny_pdf(["The spring tide at Kestrel Point runs nine feet.", "Herring run in autumn."]))
    (world / "notes.txt").write_text("Gulls nest on Gannet Rock every spring.\n")
    return root


@pytest.fixture(scope="module")
def embedder():
    return MiniLM()


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "corpus")


@pytest.fixture
def index(tmp_path, embedder, corpus):
    idx = LoreIndex(tmp_path / "lore", embedder=embedder)
    report = idx.ingest(corpus)
    assert not report.problems, report.summary()
    return idx


def sections(text: str) -> list[Section]:
    return markdown_sections(CorpusFile(Path("t.md"), "adventures/a/lore/t.md", "adventure", "a"), text, [])


def test_each_heading_is_a_slice_addressed_by_its_heading_path():
    found = {s.address: s for s in sections(TOWN)}
    assert list(found) == ["adventure:a:saltmere", "adventure:a:saltmere.the-brine-cup", "adventure:a:saltmere.cellar-door",
                           "adventure:a:saltmere.cellar-door.smugglers-marks", "adventure:a:saltmere.the-harbour-bell"]
    assert found["adventure:a:saltmere.cellar-door"].gm_only and found["adventure:a:saltmere.cellar-door.smugglers-marks"].gm_only
    assert not found["adventure:a:saltmere.the-harbour-bell"].gm_only
    assert found["adventure:a:saltmere.the-brine-cup"].title == "Saltmere › The Brine Cup"
    assert found["adventure:a:saltmere.the-brine-cup"].text.startswith("Odile Farrow")
    [whole] = sections(SECRETS)
    assert whole.gm_only and whole.slice == "the-wreckers"  # the front matter marks the whole file
    fenced = sections("# A\ntext\n```\n# not a heading\n```\n## B\nmore")
    assert [s.slice for s in fenced] == ["a", "a.b"] and "# not a heading" in fenced[0].text


def test_long_sections_are_chunked_at_paragraphs_and_sentences():
    text = "# Lens\n" + "\n\n".join(" ".join(f"Sentence {p}.{i} about the great lens and its brass frame." for i in range(20))
                                    for p in range(4))
    [section] = sections(text)
    chunks = chunk_section(section, target=120, limit=180)
    assert len(chunks) > 4 and [c.id for c in chunks] == [f"adventure:a:lens#{n}" for n in range(len(chunks))]
    assert all(len(c.text) // 4 <= 180 for c in chunks)
    assert all(c.text.rstrip().endswith(".") for c in chunks)  # cut between sentences, not inside one
    assert " ".join(" ".join(c.text.split()) for c in chunks) == " ".join(section.text.split())  # nothing lost
    endless = sections("# Table\n" + "cell " * 3000)[0]
    assert all(len(c.text) // 4 <= 300 for c in chunk_section(endless))


def test_bad_files_are_named_with_the_reason_and_the_rest_still_ingests(tmp_path, embedder, corpus):
    lore = corpus / "adventures" / "saltmere" / "lore"
    (lore / "empty.md").write_text("  \n")
    (lore / "plain.md").write_text("Just a note without any heading.\n")
    (lore / "zz-copy.md").write_text("# Saltmere\n## The Brine Cup\nA second tavern text.\n")
    (lore / "latin.md").write_bytes("# Café\nCrème brûlée.".encode("latin-1"))
    (lore / "huge.md").write_bytes(b"# Big\n" + b"x" * (50 * 1024 * 1024))
    (lore / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf")
    idx = LoreIndex(tmp_path / "lore", embedder=embedder)
    report = idx.ingest(corpus)
    said = {p.source.rsplit("/", 1)[1]: p.message for p in report.problems}
    assert "empty" in said["empty.md"]
    assert "no headings" in said["plain.md"]
    assert "already used in adventures/saltmere/lore/town.md" in said["zz-copy.md"] and "'saltmere.the-brine-cup'" in said["zz-copy.md"]
    assert "not UTF-8" in said["latin.md"]
    assert "50 MB" in said["huge.md"]
    assert "not a readable PDF" in said["broken.pdf"]
    slices = idx.slices(gm=True)
    assert "adventure:saltmere:plain" in slices  # reported, and still ingested as one slice
    assert "adventure:saltmere:saltmere.the-brine-cup" in slices and "world:coast:combat.critical-hits" in slices
    assert idx.slice_text("adventure:saltmere:saltmere.the-brine-cup")[1].startswith("Odile Farrow")  # the first file's


def test_reingesting_embeds_only_changed_files_and_drops_deleted_ones(tmp_path, embedder, corpus, index):
    again = index.ingest(corpus)
    assert again.changed == [] and again.chunks_embedded == 0 and again.unchanged == 5
    town = corpus / "adventures" / "saltmere" / "lore" / "town.md"
    town.write_text(TOWN.replace("Wrack Stout", "Kelp Porter"))
    (corpus / "world" / "coast" / "notes.txt").unlink()
    changed = index.ingest(corpus)
    assert changed.changed == ["adventures/saltmere/lore/town.md"] and changed.removed == ["world/coast/notes.txt"]
    assert changed.chunks_embedded == 5 and changed.chunks_removed == 1  # town.md's sections with text, the notes
    stored = index._stored_counts({("adventure", "saltmere"), ("world", "coast")})
    assert sum(stored.values()) == changed.chunks_total == len(index)
    assert index.search("Kelp Porter ale")[0].chunk.slice == "saltmere.the-brine-cup"
    assert all(h.chunk.source != "world/coast/notes.txt" for h in index.search("gulls nest on Gannet Rock", k=20, gm=True))
    reopened = LoreIndex(tmp_path / "lore", embedder=embedder)  # the manifest and Chroma survive a restart
    assert len(reopened) == len(index) and reopened.ingest(corpus).chunks_embedded == 0


def test_an_index_whose_vectors_were_lost_is_rebuilt_whole(tmp_path, embedder, corpus, index):
    collection = index._collection("adventure", "saltmere")
    collection.delete(ids=collection.get(include=[])["ids"][:3])  # as if a Chroma server was reset in part
    report = index.ingest(corpus)
    stored = index._stored_counts({("adventure", "saltmere"), ("world", "coast")})
    assert report.chunks_embedded == report.chunks_total == sum(stored.values())


def test_gm_only_lore_is_found_only_by_a_search_that_asks_for_it(index):
    for query in ("door behind the third cask tide tunnel", "who leads the wreckers false lantern", "chalk crosses contraband"):
        public = index.search(query, k=10)
        assert all(not h.chunk.gm_only for h in public), query
        assert all("cask a door" not in h.chunk.text and "wreckers" not in h.chunk.text for h in public)
    assert index.search("door behind the third cask", gm=True)[0].chunk.slice == "saltmere.cellar-door"
    assert "adventure:saltmere:saltmere.cellar-door" not in index.slices()
    assert "adventure:saltmere:saltmere.cellar-door" in index.slices(gm=True)


def test_search_filters_by_scope_and_ref(index):
    rules = index.search("natural 20 damage dice", scope="world")
    assert rules and all(h.chunk.scope == "world" for h in rules)
    assert rules[0].chunk.address == "world:coast:combat.critical-hits"
    other = index.search("natural 20 damage dice", refs=[("adventure", "saltmere")])
    assert all(h.chunk.ref == "saltmere" for h in other)
    assert index.search("natural 20", refs=[("world", "elsewhere")]) == []


def test_hybrid_search_finds_exact_names_and_paraphrases(index):
    exact = index.search("Wrack Stout", k=3)
    assert exact[0].chunk.slice == "saltmere.the-brine-cup" and exact[0].bm25_rank == 1
    paraphrase = index.search("who makes the beer at the inn", k=3, method="vector")
    assert paraphrase[0].chunk.slice == "saltmere.the-brine-cup"
    fused = index.search("what happens when I roll a twenty on an attack", k=3)
    assert fused[0].chunk.address == "world:coast:combat.critical-hits"
    pdf = index.search("how high is the spring tide at Kestrel Point", k=3, scope="world")
    assert pdf[0].chunk.address == "world:coast:tides.page-1" and pdf[0].chunk.source == "world/coast/tides.pdf"
    assert index.search("") == [] and index.search("   ") == []


def test_lore_search_on_the_command_line(tmp_path, corpus, capsys, monkeypatch):
    from bot.cli import main

    monkeypatch.setenv("LOREKEEPER_LORE_DIR", str(tmp_path / "cli-lore"))
    monkeypatch.setenv("LOREKEEPER_CORPUS", str(corpus))
    assert main(["lore", "search", "anything"]) == 2
    assert "run `lorekeeper lore ingest` first" in capsys.readouterr().err
    assert main(["lore", "ingest"]) == 0
    assert "5 file(s): 5 new or changed" in capsys.readouterr().out
    assert main(["lore", "search", "Wrack", "Stout", "--k", "2", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert len(found) == 2 and {"source", "heading", "slice", "text", "score", "id"} <= set(found[0])
    assert found[0]["slice"] == "adventure:saltmere:saltmere.the-brine-cup" and found[0]["source"].endswith("town.md")
    assert main(["lore", "search", "cellar", "door", "cask"]) == 0
    assert "GM only" not in capsys.readouterr().out
    assert main(["lore", "search", "cellar", "door", "cask", "--gm"]) == 0
    assert "Cellar Door (GM only)" in capsys.readouterr().out
    monkeypatch.setenv("CHROMA_HOST", "not a host:port:x")
    assert main(["lore", "ingest"]) == 2
    assert "CHROMA_HOST" in capsys.readouterr().err


def test_a_gm_only_section_may_be_tied_to_a_secret():
    [_, secret, child] = sections("# A\nx\n## Door (GM only: cask-door)\nBehind the cask.\n### Hinges\nGreased.")
    assert secret.gm_only and secret.secret == "cask-door" and child.secret == "cask-door" and child.gm_only
    [chunk] = chunk_section(secret)
    assert chunk.visible(False, {"cask-door"}) and not chunk.visible(False, {"sea-stair"}) and chunk.visible(True, set())
    [plain] = chunk_section(sections("# B\n## Plot (GM only)\nThe twist.")[1])
    assert plain.secret is None and not plain.visible(False, {"cask-door"})


def test_a_chroma_server_named_by_chroma_host_holds_the_vectors(tmp_path, embedder, corpus):
    """Several processes share one Chroma server (CHROMA_HOST): a real `chroma run` on loopback."""
    import socket
    import subprocess
    import sys
    import time

    chroma = Path(sys.executable).parent / "chroma"
    if not chroma.exists():
        pytest.skip("chromadb's `chroma` command is not installed beside this Python")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([str(chroma), "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1",
                               "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise AssertionError("the Chroma server did not start")
                time.sleep(0.2)
        first = LoreIndex(tmp_path / "one", embedder=embedder, chroma_host=f"127.0.0.1:{port}")
        assert first.ingest(corpus).chunks_embedded == 11
        assert first.search("Wrack Stout", k=1)[0].chunk.slice == "saltmere.the-brine-cup"
        assert not (tmp_path / "one" / "chroma").exists()  # the vectors are on the server, not here
        second = LoreIndex(tmp_path / "two", embedder=embedder, chroma_host=f"127.0.0.1:{port}")
        second.ingest(corpus)  # another process: its own word index, the same server's vectors
        assert second.search("natural 20 damage dice", k=1, scope="world")[0].chunk.slice == "combat.critical-hits"
        assert sum(second._stored_counts({("adventure", "saltmere"), ("world", "coast")}).values()) == 11
    finally:
        server.terminate()
        server.wait(10)
    with pytest.raises(Exception, match="Chroma server"):
        LoreIndex(tmp_path / "three", embedder=embedder, chroma_host=f"127.0.0.1:{port}").ingest(corpus)


def test_when_gm_only_lore_crowds_the_nearest_vectors_the_public_passages_are_still_found(tmp_path, embedder):
    from engine.lore.search import Weights

    lore = tmp_path / "corpus" / "world" / "coast"
    lore.mkdir(parents=True)
    secret = "".join(f"## Lantern Secret {n} (GM only{': drowned-call' if n == 0 else ''})\nThe lantern. The lantern.\n\n"
                     for n in range(10))
    (lore / "lantern.md").write_text("# Lantern\nThe old keepers kept the lantern lit with whale oil.\n\n" + secret)
    index = LoreIndex(tmp_path / "lore", embedder=embedder, weights=Weights(depth=2))
    index.ingest(tmp_path / "corpus")
    public = index.search("the lantern", k=3, method="vector")  # every vector is scored, then filtered in code
    assert [h.chunk.slice for h in public] == ["lantern"]
    tied = index.search("the lantern", k=3, method="vector", secrets={"drowned-call"})
    assert {h.chunk.slice for h in tied} == {"lantern", "lantern.lantern-secret-0"}
