"""Splitting long replies for Discord."""

from __future__ import annotations

from bot.text import split_message


def test_short_text_is_one_piece():
    assert split_message("  Hello there.  ") == ["Hello there."]
    assert split_message("") == []


def test_splits_at_paragraphs_first():
    a, b = "A" * 1200, "B" * 1200
    assert split_message(f"{a}\n\n{b}") == [a, b]


def test_splits_at_sentences_when_a_paragraph_is_too_long():
    sentence = "The fog rolls in over the quay. "
    text = sentence * 100
    pieces = split_message(text)
    assert all(len(p) <= 2000 for p in pieces) and all(p.endswith(".") for p in pieces)
    assert " ".join(pieces) == text.strip()


def test_a_closing_quote_stays_with_its_sentence():
    text = ('"Stay back!" she cries. ' * 120).strip()
    pieces = split_message(text, limit=500)
    assert all(p.endswith(("cries.", 'back!"')) for p in pieces[:-1])
    assert not any(p.startswith('" ') for p in pieces)


def test_unbroken_text_is_cut_at_the_limit():
    pieces = split_message("x" * 4500)
    assert [len(p) for p in pieces] == [2000, 2000, 500]


def test_nothing_is_lost():
    text = "\n\n".join(f"Paragraph {i}. " + "word " * (i * 37 % 400) for i in range(30))
    pieces = split_message(text)
    assert all(0 < len(p) <= 2000 for p in pieces)
    assert "".join(pieces).replace(" ", "").replace("\n", "") == text.replace(" ", "").replace("\n", "")
