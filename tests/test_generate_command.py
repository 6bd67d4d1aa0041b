"""``python -m attn_course generate``: the shipped model continues a prompt; bad input explained."""

from __future__ import annotations

import pytest

from attn_course.__main__ import main


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["generate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_prints_the_prompt_and_its_continuation_the_same_with_and_without_cache(capsys):
    args = ("ROMEO:", "--max-new-tokens", "150", "--temperature", "0.8", "--top-k", "20",
            "--top-p", "0.95", "--seed", "3")  # fmt: skip
    code, cached, err = run(capsys, *args)
    assert code == 0 and "with the KV cache" in err
    assert cached.startswith("ROMEO:") and len(cached.rstrip("\n")) == len("ROMEO:") + 150
    code, plain, err = run(capsys, *args, "--no-cache")
    assert code == 0 and "without the KV cache" in err
    assert plain == cached
    assert run(capsys, *args[:-1], "4")[1] != cached  # another seed, another text


def test_greedy_is_deterministic_without_a_seed(capsys):
    first = run(capsys, "JULIET:", "--max-new-tokens", "40", "--temperature", "0")[1]
    assert first == run(capsys, "JULIET:", "--max-new-tokens", "40", "--temperature", "0",
                        "--seed", "9")[1]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("ROMEO:", "--temperature", "-1"), "temperature=-1.0 must be 0 or more"),
        (("ROMEO:", "--top-p", "1.5"), r"top_p=1.5 must be in (0, 1]"),
        (("ROMEO:", "--top-k", "0"), "top_k=0 must be at least 1"),
        (("ROMEO:", "--max-new-tokens", "0"), "--max-new-tokens 0 must be at least 1"),
        (("ROMEO: ☃",), "☃"),
        (("",), "empty"),
    ],
)
def test_bad_input_gets_a_sentence_and_exit_code_2(capsys, args, message):
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and message in err
    assert "Traceback" not in err


def test_a_prompt_longer_than_the_context_is_cut_and_the_cut_is_said(capsys):
    long_prompt = "ROMEO:\n" + "But soft, what light through yonder window breaks? " * 5
    code, out, err = run(capsys, long_prompt, "--max-new-tokens", "20")
    assert code == 0 and out.startswith(long_prompt)
    assert "note: The prompt is longer than the model's context" in err
