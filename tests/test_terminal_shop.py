"""The terminal's /shop, /buy and /sell: the stock and prices where the party is, and deals at those prices."""

from __future__ import annotations

import re

from tests.test_cli import play


def test_the_terminal_shows_the_shop_and_buys_and_sells_at_its_prices(tmp_path, capsys):
    script = tmp_path / "shop.yaml"
    script.write_text("""
character: {name: Aria, class: fighter}
steps:
  - say: /shop
  - say: I walk into the chandlery.
    replies: ['<change_location location="harrow-chandlery"/>', " Rope and tar."]
  - say: /shop
  - say: /buy healing potion
  - say: /buy hooded lantern
  - say: /buy torch 3 from Harrow's Chandlery
  - say: /buy rope from the fence
  - say: /buy
  - say: /sell hooded lantern to harrow-chandlery
  - say: /inventory
""", encoding="utf-8")
    code, out, err = play(tmp_path, capsys, "--script", str(script), "--seed", "1")
    assert code == 0, err
    assert "Nobody sells anything at Saltmere Quay." in out
    assert "Harrow's Chandlery, kept by Pell Harrow" in out and "/sell ITEM [N] (it pays 50% of the price)" in out
    assert re.search(r"healing potion +50 gp +3\n", out) and re.search(r"torch +1 cp +plenty\n", out)
    assert "Aria cannot pay 50 gp for 1 × healing potion: the purse holds only 10 gp." in out
    assert "🪙 Aria buys 1 × hooded lantern from Harrow's Chandlery for 5 gp" in out
    assert "🪙 Aria buys 3 × torch from Harrow's Chandlery for 3 cp" in out
    assert "There is no shop called 'the fence' (shops: harrow-chandlery)." in out
    assert "Say what to buy: /buy torch" in out
    assert "🪙 Aria sells 1 × hooded lantern to Harrow's Chandlery for 2 gp 5 sp" in out
    assert "Coin: 6 gp, 14 sp, 7 cp" in out and re.search(r"torch +3\n", out)  # 10 gp - 5 gp - 3 cp (change: 9 sp 7 cp) + 2 gp 5 sp
