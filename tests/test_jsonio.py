"""The hot path's JSON (pydantic-core's codec, the standard library's for what it refuses) means what `json` means."""

from __future__ import annotations

import json

import pytest

from engine import jsonio

VALUES = [
    {"model": "m", "messages": [{"role": "user", "content": "Ça va? 🐉 \"quoted\" \\ back\nslash"}], "temperature": 0.7,
     "stream": True, "max_tokens": 1024, "stop": ["\n\nPlayer:"], "nothing": None},
    [1, -2, 1.5, 1e20, 123456789012345678901234567890, "", "\x00\x1f\u2028"],
    "plain",
]


@pytest.mark.parametrize("value", VALUES)
def test_what_is_written_reads_back_the_same_with_either_codec(value):
    assert json.loads(jsonio.dumps(value)) == value
    assert json.loads(jsonio.dumpb(value)) == value
    assert jsonio.loads(json.dumps(value)) == value
    assert jsonio.loads(jsonio.dumpb(value)) == value


def test_control_characters_are_escaped_so_postgres_text_can_hold_the_json():
    assert "\x00" not in jsonio.dumps(["a\x00b"]) and "\\u0000" in jsonio.dumps(["a\x00b"])


def test_a_lone_surrogate_falls_back_to_the_standard_library_both_ways():
    text = "bad \ud800 half"
    written = jsonio.dumps({"t": text})
    assert written == json.dumps({"t": text}) and jsonio.loads(written) == {"t": text}
    assert jsonio.loads('"\\udcff"') == "\udcff"  # pydantic-core refuses this escape; json reads it


def test_text_that_is_not_json_raises_json_s_own_error_with_its_position():
    with pytest.raises(json.JSONDecodeError) as caught:
        jsonio.loads('{"a": ')
    assert caught.value.pos == 6


def test_well_formed_replaces_only_lone_surrogates():
    assert jsonio.well_formed("plain ascii") == "plain ascii"
    assert jsonio.well_formed("dragon 🐉 é") == "dragon 🐉 é"
    assert jsonio.well_formed("a\ud800b\udcffc") == "a\ufffdb\ufffdc"
    jsonio.well_formed("a\udcffc").encode("utf-8")  # now any UTF-8 codec takes it
    assert jsonio.well_formed("nul\x00 here") == "nul here" and jsonio.well_formed("é\x00\ud800") == "é\ufffd"
