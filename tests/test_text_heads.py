"""Text head scores on hand-built attention patterns whose scores are known."""

from __future__ import annotations

import math

import pytest
import torch

from attn_course import text_heads as th

TEXT = "ROMEO:\nBut soft, what light\nJULIET:\nAy me!"


def pattern(columns: list[int]) -> torch.Tensor:
    """(1, 1, n, n): query t puts all its weight on key columns[t]."""
    n = len(columns)
    w = torch.zeros(1, 1, n, n)
    w[0, 0, torch.arange(n), torch.tensor(columns)] = 1.0
    return w


def word_start(text: str, t: int) -> int:
    """The position of the first letter of the word that query t is in (or ends)."""
    return max((j + 1 for j in range(t) if text[j] in " \n"), default=0)


def test_word_start_targets_by_hand():
    targets = th.word_start_targets("abc de\nfgh")
    # 'c' and the space after it see 'a'; the line break sees 'd'; 'h' sees 'f'. 'b', 'e', 'g'
    # are right after their first letter (that is the previous character)
    assert targets.nonzero().tolist() == [[2, 0], [3, 0], [6, 4], [9, 7]]


def test_line_start_targets_by_hand():
    targets = th.line_start_targets("x\nab cd\ne")
    # 'b' .. the second line break see the line break at 1; 'a' is right after it, and the
    # first line and 'e' (right after its line break) have none
    assert targets.nonzero().tolist() == [[3, 1], [4, 1], [5, 1], [6, 1], [7, 1]]


def test_speaker_targets_are_the_current_name():
    text = "AB:\nhi\nCD:\nyo"
    targets = th.speaker_targets(text)
    rows = {t: targets[t].nonzero().flatten().tolist() for t in range(len(text))}
    assert rows[3] == [0, 1]  # the line break after "AB:"
    assert rows[4] == rows[6] == [0, 1]  # "hi\n"
    assert rows[7] == rows[9] == []  # reading the new name
    assert rows[10] == rows[11] == [7, 8]  # after "CD:"


def test_a_head_that_looks_at_the_word_start_scores_one():
    columns = [word_start(TEXT, t) for t in range(len(TEXT))]
    w = pattern(columns)
    scores = th.text_head_scores(w[None], TEXT)
    assert scores["word start"].item() == 1.0
    assert scores["previous character"].item() < 0.6


def test_a_two_back_head():
    w = pattern([0, 0] + list(range(len(TEXT) - 2)))
    scores = th.text_head_scores(w[None], TEXT)
    assert scores["two back"].item() == 1.0 and scores["previous character"].item() < 0.1
    with pytest.raises(ValueError, match="at least 3 tokens"):
        th.two_back_score(torch.ones(1, 1, 2, 2))


def test_previous_character_head_scores_zero_on_word_start():
    w = pattern([0] + list(range(len(TEXT) - 1)))
    scores = th.text_head_scores(w[None], TEXT)
    assert scores["previous character"].item() == 1.0
    assert scores["word start"].item() == 0.0
    assert scores["line start"].item() == 0.0


def test_uniform_head_scores_the_share_of_its_targets():
    n = len(TEXT)
    w = torch.tril(torch.ones(n, n))
    w = (w / w.sum(dim=1, keepdim=True))[None, None]
    targets = th.speaker_targets(TEXT)
    rows = targets.any(dim=1).nonzero().flatten()
    expected = sum(targets[t].sum().item() / (t.item() + 1) for t in rows) / len(rows)
    assert th.target_score(w, targets).item() == pytest.approx(expected)
    # the total over a query's targets, not the mean per target (1 / (t + 1) for this head)
    per_target = sum(1 / (t.item() + 1) for t in rows) / len(rows)
    assert th.target_score(w, targets).item() > 3 * per_target


def test_a_sink_head_and_nan_without_targets():
    text = "no speaker here"
    w = pattern([0] * len(text))
    scores = th.text_head_scores(w[None], text)
    assert scores["first token"].item() == 1.0
    assert math.isnan(scores["speaker name"].item())


def test_best_heads_names_layer_and_head():
    n = len(TEXT)
    prev = pattern([0] + list(range(n - 1)))
    sink = pattern([0] * n)
    layer0 = torch.cat([sink, sink], dim=1)  # (1, 2, n, n)
    layer1 = torch.cat([sink, prev], dim=1)
    best = th.best_heads(th.text_head_scores(torch.stack([layer0, layer1]), TEXT))
    assert best["previous character"] == (1, 1, 1.0)
    assert best["first token"][:2] == (0, 0)


def test_bad_shapes_get_a_sentence():
    with pytest.raises(ValueError, match="text of 3 characters"):
        th.text_head_scores(torch.zeros(1, 1, 1, 4, 4), "abc")
    with pytest.raises(ValueError, match="no character of the text has a target"):
        th.target_score(torch.zeros(1, 1, 3, 3), torch.zeros(3, 3, dtype=torch.bool))


def test_an_induction_head_on_a_repeated_text_scores_one():
    half = "to be or not"
    text = half + half
    period = len(half)
    columns = [t - period + 1 if t >= period else 0 for t in range(len(text))]
    targets = th.repeat_targets(len(text), period)
    assert th.target_score(pattern(columns), targets).item() == 1.0
    prev = pattern([0] + list(range(len(text) - 1)))
    assert th.target_score(prev, targets).item() == 0.0
    assert targets.sum().item() == period  # one target per query of the second copy
    with pytest.raises(ValueError, match="at least 3"):
        th.repeat_targets(6, 2)


def test_offset_profile_reports_weight_three_back_not_three_forward():
    n = 10
    back = torch.zeros(1, 1, n, n)
    for t in range(n):
        back[0, 0, t, max(t - 3, 0)] = 1.0  # query t looks at key t - 3 (3 back)
    profile = th.offset_profile(back, max_offset=5)
    assert profile.shape == (1, 1, 6)
    assert profile[0, 0].tolist() == [0, 0, 0, 1, 0, 0]
    # the same offset forwards (key t + 3, a pattern a causal head cannot have) is not 3 back
    forward = back.transpose(-2, -1).contiguous()
    assert th.offset_profile(forward, max_offset=5)[0, 0, 3] == 0


def test_offset_profile_averages_over_the_queries_that_see_every_offset():
    w = torch.zeros(1, 1, 4, 4)
    w[0, 0, 2, 1] = 1.0  # query 2: one back
    w[0, 0, 3, 3] = 1.0  # query 3: itself
    w[0, 0, 1, 0] = 1.0  # query 1 cannot see 2 back: left out with max_offset = 2
    assert th.offset_profile(w, max_offset=2)[0, 0].tolist() == [0.5, 0.5, 0.0]
    with pytest.raises(ValueError, match="max_offset"):
        th.offset_profile(w, max_offset=4)


def test_a_head_is_named_only_when_its_best_score_reaches_the_threshold():
    assert th.head_name({"previous character": 0.98, "two back": 0.01}) == "previous character 0.98"
    low = {"word start": 0.21, "speaker name": 0.05, "line start": math.nan}
    assert th.head_name(low) == "unnamed (best word start 0.21)"
    assert th.head_name(low, threshold=0.2) == "word start 0.21"
    with pytest.raises(ValueError, match="NaN"):
        th.head_name({"speaker name": math.nan})


def test_an_unnamed_heads_best_pattern_is_the_one_furthest_above_the_baseline():
    # L3 H0 of lecture 11: its highest raw score is the speaker name, which an even spread
    # reaches just as well; measured against the baseline, the first token stands out
    scores = {"previous character": 0.04, "speaker name": 0.17, "first token": 0.10}
    uniform = {"previous character": 0.03, "speaker name": 0.17, "first token": 0.03}
    assert th.head_name(scores) == "unnamed (best speaker name 0.17)"
    assert th.head_name(scores, baseline=uniform) == "unnamed (best first token 0.10)"
    flat = {**scores, "first token": 0.06}  # nothing 0.05 above the baseline
    assert th.head_name(flat, baseline=uniform) == "unnamed (no score 0.05 above uniform)"
    assert th.head_name(flat, baseline=uniform, margin=0.02) == "unnamed (best first token 0.06)"
    # a named head keeps its name: the threshold applies to the score itself
    named = {"previous character": 0.98, "speaker name": 0.17}
    assert th.head_name(named, baseline=uniform) == "previous character 0.98"
