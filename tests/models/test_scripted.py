"""The scripted provider's turns, played without a server."""

from __future__ import annotations

from prime_kernel.models import scripted


def test_an_extract_turn_answers_each_prompt_from_its_own_text() -> None:
    name = scripted.register_script("extract-test", [{"extract": r"== (\w+ \d{4}) =="}])
    assert name == "scripted/extract-test"

    def reply(prompt: str) -> str:
        messages = [{"role": "system", "content": "== Never 1000 =="}]
        return str(
            scripted.play("extract-test", [*messages, {"role": "user", "content": prompt}])["text"]
        )

    assert reply("Which month?\n\n== March 1893 ==\nMarch 1, 1893.") == "March 1893"
    assert reply("Which month?\n\n== July 1899 ==") == "July 1899"
    assert reply("nothing here") == "(no match for '== (\\\\w+ \\\\d{4}) ==')"
    # Without a group, the whole match.
    scripted.register_script("extract-whole", [{"extract": r"\d+"}])
    turn = scripted.play("extract-whole", [{"role": "user", "content": "take 42 and 7"}])
    assert turn == {"text": "42"}
