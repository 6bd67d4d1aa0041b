"""The Shakespeare language model's pieces: tokens, config, schedule, resume, GQA pooling."""

from __future__ import annotations

import copy
import hashlib
import io
import math
from dataclasses import replace
from importlib import resources

import pytest
import torch
import torch.nn.functional as F

from attn_course.__main__ import main
from attn_course.blocks import BlockConfig, count_parameters
from attn_course.corpus import load_corpus
from attn_course.generation import GPTConfig, GPTModel
from attn_course.lm import (
    LM_CONFIGS,
    MIN_REPEAT,
    LMTrainConfig,
    _eval_loss,
    _token_data,
    _windows,
    copy_counts,
    copy_rate,
    eval_windows,
    evaluate_text,
    held_out_passages,
    permute_heads,
    plain_lm,
    plain_recording,
    pool_kv_heads,
    repeat_summary,
    repeat_test,
    resolve_device,
    shipped_recording,
    tokenizer,
    train_lm,
    training_words,
    unigram_loss,
    window_losses,
    window_starts,
)
from attn_course.tokenizer import CharTokenizer

TINY = LMTrainConfig(
    d_model=16, num_heads=2, num_layers=1, context_length=16, steps=6, batch_size=4,
    warmup=2, eval_every=3, eval_windows=4, autocast=False,
)  # fmt: skip


def test_tokenizer_round_trip_on_the_corpus_charset():
    tok = tokenizer()
    assert tok.vocab_size == len(load_corpus().charset) == 75
    text = "ROMEO:\nBut, soft! what light through yonder window breaks?\n"
    assert tok.decode(tok.encode(text)) == text
    assert tok.decode(tok.encode_tensor(text)) == text


def test_unknown_characters_get_a_value_error_naming_them_and_the_set():
    tok = tokenizer()
    with pytest.raises(ValueError, match=r"character\(s\) '\{', '\}', 'é'; ") as err:
        tok.encode("Café {x}")
    assert not isinstance(err.value, KeyError)
    assert "it reads only these 75" in str(err.value) and "abcdefghijklmnopqrstuvwxyz" in str(
        err.value
    )
    with pytest.raises(ValueError, match="empty"):
        tok.encode("")
    with pytest.raises(ValueError, match="0..74"):
        tok.decode([75])


def test_a_long_prompt_is_cut_from_the_left_and_the_cut_is_said():
    tok = CharTokenizer("abc ")
    prompt = tok.encode_prompt("abc abc", context_length=4)
    assert tok.decode(prompt.ids) == " abc" and prompt.num_cut == 3
    assert prompt.note == (
        "The prompt is longer than the model's context of 4 characters: its first 3 "
        "characters ('abc') were cut."
    )
    assert tok.encode_prompt("abc", context_length=4).note == ""


def test_gpt_config_from_llms_from_scratch():
    gpt_config_124m = {
        "vocab_size": 50257,
        "context_length": 1024,
        "emb_dim": 768,
        "n_heads": 12,
        "n_layers": 12,
        "drop_rate": 0.1,
        "qkv_bias": False,
    }
    cfg = GPTConfig.from_llms_from_scratch(gpt_config_124m)
    assert (cfg.d_model, cfg.num_heads, cfg.num_layers, cfg.dropout) == (768, 12, 12, 0.1)
    with torch.device("meta"):
        model = GPTModel(cfg)
    # LLMs-from-scratch's chapter 4: 163,009,536 parameters with an untied output head
    assert count_parameters(model) == 163_009_536
    with pytest.raises(ValueError, match=r"unknown LLMs-from-scratch keys \['n_embd'\]"):
        GPTConfig.from_llms_from_scratch({**gpt_config_124m, "n_embd": 768})


def test_block_config_from_llms_from_scratch_leaves_the_vocabulary_to_gpt_config():
    book = {"vocab_size": 50257, "context_length": 256, "emb_dim": 64, "n_heads": 4}
    block = BlockConfig.from_llms_from_scratch({**book, "n_layers": 3, "drop_rate": 0.0})
    assert block == BlockConfig(
        d_model=64, context_length=256, num_heads=4, num_layers=3, dropout=0.0
    )
    assert type(GPTConfig.from_llms_from_scratch(book)) is GPTConfig


@pytest.mark.parametrize("config", [BlockConfig, GPTConfig])
def test_the_books_key_names_are_refused_with_the_conversion(config):
    with pytest.raises(TypeError) as refused:
        config(emb_dim=768, n_heads=12, drop_rate=0.1)
    message = str(refused.value)
    assert "emb_dim -> d_model" in message and "n_heads -> num_heads" in message
    assert "drop_rate -> dropout" in message
    assert f"{config.__name__}.from_llms_from_scratch(cfg)" in message


def test_a_gpt_config_from_a_block_config_and_a_vocabulary():
    block = BlockConfig(d_model=16, context_length=8, num_heads=2, num_layers=2)
    cfg = GPTConfig.from_block(block, 30, num_kv_groups=1)
    assert cfg == GPTConfig(
        d_model=16, context_length=8, num_heads=2, num_layers=2, vocab_size=30, num_kv_groups=1
    )
    with pytest.raises(
        TypeError, match=r"got BlockConfig; from a BlockConfig: GPTConfig\.from_block"
    ):
        GPTModel(block)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="num_kv_groups=3"):
        GPTConfig(num_heads=4, d_model=16, num_kv_groups=3)


def test_learning_rate_warms_up_then_decays_to_min_lr():
    cfg = LMTrainConfig(steps=1000, lr=4e-3, min_lr=4e-4, warmup=100)
    assert cfg.learning_rate(0) == pytest.approx(4e-5)
    assert cfg.learning_rate(99) == pytest.approx(4e-3)
    assert cfg.learning_rate(550) == pytest.approx((4e-3 + 4e-4) / 2)  # half-way down the cosine
    assert cfg.learning_rate(1000) == pytest.approx(4e-4)
    rates = [cfg.learning_rate(s) for s in range(100, 1001)]
    assert all(a >= b for a, b in zip(rates, rates[1:], strict=False))


class _StopAfter(io.StringIO):
    """A progress stream that raises KeyboardInterrupt after ``n`` lines: an interrupted run."""

    def __init__(self, n: int):
        super().__init__()
        self.n = n

    def write(self, s: str) -> int:
        if s.endswith("\n"):
            self.n -= 1
            if self.n < 0:
                raise KeyboardInterrupt
        return super().write(s)


def test_an_interrupted_run_resumes_to_the_same_model(tmp_path):
    straight = train_lm(TINY)
    checkpoint = tmp_path / "ckpt.pt"
    with pytest.raises(KeyboardInterrupt):
        # the lines of step 0 and step 3: it stops after step 3's checkpoint
        train_lm(TINY, progress=_StopAfter(1), checkpoint=checkpoint)
    assert torch.load(checkpoint, weights_only=True)["step"] == 3
    log = io.StringIO()
    resumed = train_lm(TINY, progress=log, checkpoint=checkpoint, resume=True)
    assert "resuming from" in log.getvalue() and "at step 3/6" in log.getvalue()
    for name, value in straight.model.state_dict().items():
        assert torch.equal(value, resumed.model.state_dict()[name]), name
    assert resumed.curve == straight.curve and [s for s, _, _ in resumed.curve] == [0, 3, 6]
    with pytest.raises(ValueError, match="existing checkpoint"):
        train_lm(TINY, checkpoint=tmp_path / "missing.pt", resume=True)


def test_window_losses_are_the_held_out_windows_the_curve_averages():
    # notebook 11's standard error of the held-out loss: the spread of these per-window losses
    result = train_lm(TINY)
    windows = eval_windows(TINY)
    assert windows.shape == (TINY.eval_windows, TINY.context_length + 1)
    losses = window_losses(result.model, windows)
    assert losses.shape == (TINY.eval_windows,) and losses.std() > 0
    assert math.isclose(losses.mean().item(), result.curve[-1][2], abs_tol=1e-5)


def test_window_losses_per_position_are_in_query_order():
    """Notebook 11 takes late minus early positions of these losses: column t is the loss on
    character t + 1 read after characters 0..t, and the columns average to the window's loss."""
    result = train_lm(TINY)
    windows = eval_windows(TINY)
    each = window_losses(result.model, windows, per_position=True)
    assert each.shape == (TINY.eval_windows, TINY.context_length)
    assert torch.allclose(each.mean(1), window_losses(result.model, windows), atol=1e-6)
    with torch.no_grad():  # column 0: character 1 after character 0 alone; last: the window's
        first = F.cross_entropy(result.model.eval()(windows[:, :1])[:, -1], windows[:, 1])
        last = F.cross_entropy(result.model(windows[:, :-1])[:, -1], windows[:, -1])
    assert math.isclose(each[:, 0].mean().item(), first.item(), abs_tol=1e-5)
    assert math.isclose(each[:, -1].mean().item(), last.item(), abs_tol=1e-5)
    assert not math.isclose(each[:, 0].mean().item(), last.item(), abs_tol=1e-3)  # reversed


def test_the_plain_run_was_scored_on_the_shipped_models_held_out_windows():
    """Notebook 11 compares the plain-window run's recorded held-out loss with the shipped
    model's "on the same 64 windows": the windows do not depend on ``repeat_share``, and hold
    no repeats (the repeat windows are training data only)."""
    shipped = LM_CONFIGS["default"]
    windows = eval_windows(shipped)
    assert len(windows) == 64 == shipped.eval_windows and shipped.repeat_share > 0
    assert torch.equal(windows, eval_windows(replace(shipped, repeat_share=0.0)))
    held_out = _token_data()[1]
    gen = torch.Generator().manual_seed(2024)  # lm.EVAL_SEED, drawn without repeats
    assert torch.equal(windows, _windows(held_out, 64, shipped.context_length, gen))
    assert "held_out_loss_64_windows" in plain_recording()


def test_a_finished_runs_checkpoint_holds_its_float32_weights(tmp_path):
    """Without ``--save`` a run still leaves its weights: the checkpoint holds them in float32
    (under ``model``, not ``save_lm``'s ``state_dict``), beside the optimiser's state."""
    checkpoint = tmp_path / "ckpt.pt"
    result = train_lm(TINY, checkpoint=checkpoint)
    saved = torch.load(checkpoint, weights_only=True)
    assert "optimizer" in saved and "state_dict" not in saved
    for name, value in result.model.state_dict().items():
        assert saved["model"][name].dtype == value.dtype
        assert torch.equal(saved["model"][name], value), name
    assert any(v.dtype == torch.float32 for v in saved["model"].values())


def test_resume_without_a_checkpoint_file_is_refused(capsys, tmp_path):
    with pytest.raises(SystemExit):
        main(["train", "shakespeare", "--resume", "--checkpoint", str(tmp_path / "none.pt")])
    assert "--resume continues from --checkpoint FILE" in capsys.readouterr().err


def test_absent_device_is_a_clear_error(capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ValueError, match="no cuda device"):
        resolve_device("cuda")
    with pytest.raises(SystemExit):
        main(["train", "shakespeare", "--device", "cuda"])
    assert "no cuda device that torch can use" in capsys.readouterr().err


def test_configs_have_the_corpus_vocabulary_and_fit_their_context():
    for cfg in LM_CONFIGS.values():
        assert cfg.model_config(tokenizer().vocab_size).vocab_size == 75
        assert cfg.d_model % cfg.num_heads == 0 and cfg.warmup < cfg.steps


def _model(seed: int = 0) -> GPTModel:
    torch.manual_seed(seed)
    cfg = GPTConfig(d_model=16, context_length=32, num_heads=4, num_layers=2, vocab_size=75)
    return GPTModel(cfg).eval()


def test_evaluate_text_is_the_mean_cross_entropy_per_character():
    model, tok = _model(), tokenizer()
    text = "KING:\nWhat say you?\n"  # shorter than the context: one window
    ids = tok.encode_tensor(text)
    expected = F.cross_entropy(model(ids[None, :-1])[0], ids[1:]).item()
    assert evaluate_text(model, text) == pytest.approx(expected, rel=1e-5)
    long_text = text * 5  # 100 characters: 3 windows of 32 predictions, and one of 3
    ids = tok.encode_tensor(long_text)
    one_by_one = [ids[start : start + 33] for start in range(0, 99, 32)]
    assert [len(w) - 1 for w in one_by_one] == [32, 32, 32, 3]
    losses = [F.cross_entropy(model(w[None, :-1])[0], w[1:], reduction="sum") for w in one_by_one]
    expected = sum(loss.item() for loss in losses) / 99
    for batch_size in (1, 2, 64):  # batches of windows, a partial batch, all in one
        assert evaluate_text(model, long_text, batch_size) == pytest.approx(expected, rel=1e-5)
    assert 0 < expected < 2 * math.log(75)
    with pytest.raises(ValueError, match="'é'"):
        evaluate_text(model, "Café")
    with pytest.raises(ValueError, match="at least 2 characters"):
        evaluate_text(model, "A")


def test_unigram_loss_predicts_each_character_by_its_reference_frequency():
    # reference "aab": p(a) = 2/3, p(b) = 1/3; "abab" scores its last three characters, b a b
    expected = -(2 * math.log(1 / 3) + math.log(2 / 3)) / 3
    assert unigram_loss("abab", "aab") == pytest.approx(expected)
    assert unigram_loss("baaa", "aab") == pytest.approx(-math.log(2 / 3))  # the first unscored
    # no context: the order of the scored characters does not matter
    assert unigram_loss("xbbaa", "aab") == pytest.approx(unigram_loss("yabab", "aab"))
    with pytest.raises(ValueError, match=r"\['c'\]"):
        unigram_loss("acb", "aab")
    with pytest.raises(ValueError, match="at least 2 characters"):
        unigram_loss("a", "aab")


def test_repeat_windows_repeat_a_passage_of_the_text_and_the_rest_are_plain():
    data = torch.arange(1000)  # every token distinct: a window's origin is readable
    gen = torch.Generator().manual_seed(0)
    windows = _windows(data, 400, 32, gen, repeat_share=0.25)  # (400, 33)
    plain = (windows.diff(dim=1) == 1).all(dim=1)  # consecutive tokens of the text
    assert 0.15 < 1 - plain.float().mean() < 0.35
    for window in windows[~plain]:
        period = int((window == window[0]).nonzero()[1])  # where the passage starts again
        assert 8 <= period <= 16
        assert (window.diff()[: period - 1] == 1).all()  # the passage is a piece of the text
        assert torch.equal(window[period:], window[: len(window) - period])  # then repeats
    gen = torch.Generator().manual_seed(0)
    assert (_windows(data, 50, 32, gen).diff(dim=1) == 1).all()  # repeat_share 0: all plain


def test_repeat_test_splits_the_two_copies_and_scores_every_head():
    model = _model()
    passage = "KING:\nWhat say"  # 14 characters, twice = 28 <= 32
    result = repeat_test(model, passage)
    ids = tokenizer().encode_tensor(passage * 2)
    losses = F.cross_entropy(model(ids[None, :-1])[0], ids[1:], reduction="none")
    torch.testing.assert_close(result.losses, losses)
    assert result.first == pytest.approx(losses[:13].mean().item())
    assert result.second == pytest.approx(losses[14:].mean().item())
    assert (
        result.induction.shape == (2, 4)
        and ((result.induction >= 0) & (result.induction <= 1)).all()
    )
    with pytest.raises(ValueError, match="twice it must fit the context of 32"):
        repeat_test(model, "x" * 17)


def test_repeat_share_option_is_checked(capsys):
    with pytest.raises(SystemExit):
        main(["train", "shakespeare", "--repeat-share", "1.5"])
    assert "--repeat-share is a share from 0 to 1, got 1.5" in capsys.readouterr().err


def test_pooling_heads_that_are_equal_within_a_group_changes_nothing():
    model = _model(1)
    with torch.no_grad():  # make heads 0, 1 (and 2, 3) read the same keys and values
        for block in model.trf_blocks:
            for linear in (block.att.W_key, block.att.W_value):
                heads = linear.weight.view(4, 4, 16)  # (num_heads, head_dim, d_in)
                heads[1], heads[3] = heads[0], heads[2]
    pooled = pool_kv_heads(model, 2)
    assert pooled.trf_blocks[0].att.W_key.weight.shape == (8, 16)  # 2 groups x head_dim 4
    ids = torch.randint(0, 75, (2, 20))
    torch.testing.assert_close(pooled(ids), model(ids))
    assert not torch.allclose(pool_kv_heads(_model(2), 1)(ids), _model(2)(ids), atol=1e-3)


def test_pooling_averages_the_groups_key_weights():
    model = _model(3)
    pooled = pool_kv_heads(model, 1)
    heads = model.trf_blocks[1].att.W_value.weight.view(4, 4, 16)
    torch.testing.assert_close(pooled.trf_blocks[1].att.W_value.weight, heads.mean(dim=0))
    with pytest.raises(ValueError, match="num_kv_groups=3"):
        pool_kv_heads(model, 3)


def _pair_means(model: GPTModel, pairs: list[tuple[int, int]]) -> GPTModel:
    """A multi-head copy of ``model`` whose heads read, each, their pair's mean key/value head."""
    means = copy.deepcopy(model)
    with torch.no_grad():
        for block in means.trf_blocks:
            for linear in (block.att.W_key, block.att.W_value):
                heads = linear.weight.view(4, 4, 16)  # (num_heads, head_dim, d_in)
                for pair in pairs:
                    heads[list(pair)] = heads[list(pair)].mean(dim=0)
    return means


@pytest.mark.parametrize(
    ("order", "pairs"),
    [([0, 1, 2, 3], [(0, 1), (2, 3)]), ([0, 3, 1, 2], [(0, 3), (1, 2)])],
)
def test_pooling_two_groups_shares_a_kv_head_between_adjacent_reordered_heads(order, pairs):
    """Query head h reads pooled key/value head h // group_size (heads 0, 1 and 2, 3), not
    h % num_kv_groups (0, 2 and 1, 3); after ``permute_heads(model, order)`` the pairs are
    order[0:2] and order[2:4] (the inverse reading of [0, 3, 1, 2] would pair 0, 2 and 3, 1)."""
    model, ids = _model(5), torch.randint(0, 75, (2, 20))
    reordered = permute_heads(model, order)
    torch.testing.assert_close(reordered(ids), model(ids))  # the same model, heads renamed
    pooled = pool_kv_heads(reordered, 2)
    torch.testing.assert_close(pooled(ids), _pair_means(model, pairs)(ids))
    other = [(0, 2), (1, 3)]  # the pairing of the reversed readings
    assert not torch.allclose(pooled(ids), _pair_means(model, other)(ids), atol=1e-3)


def test_permute_heads_refuses_a_grouped_model_and_a_wrong_order():
    with pytest.raises(ValueError, match="not a permutation of the 4 heads"):
        permute_heads(_model(), [0, 1, 1, 2])
    with pytest.raises(ValueError, match="num_kv_groups=2"):
        permute_heads(pool_kv_heads(_model(), 2), [0, 1, 2, 3])


def test_training_words_are_the_training_plays_words():
    known = training_words()
    assert {"king", "o'er", "thou"} <= known
    assert "malvolio" not in known  # a name of Twelfth Night, a held-out play only
    assert not any(w != w.lower() for w in known)


def test_training_can_start_from_given_weights_such_as_a_pooled_model():
    pooled = pool_kv_heads(_model(4), 2)
    frozen = replace(TINY, context_length=32, lr=0.0, min_lr=0.0)  # zero steps' worth of change
    result = train_lm(frozen, init=pooled)
    assert result.model.cfg.num_kv_groups == 2 and result.model.cfg.d_model == 16
    for name, value in pooled.state_dict().items():
        assert torch.equal(value, result.model.state_dict()[name]), name
    moved = train_lm(replace(TINY, context_length=32), init=pooled).model
    assert not torch.equal(moved.out_head.weight, pooled.out_head.weight)


def test_the_curve_starts_at_step_0_with_the_untrained_model():
    log = io.StringIO()
    result = train_lm(TINY, progress=log)
    assert [s for s, _, _ in result.curve] == [0, 3, 6]
    assert log.getvalue().splitlines()[0].startswith("[") and " 0/6 " in log.getvalue()
    # step 0's held-out loss is that of a fresh model with the same seed, measured untrained
    torch.manual_seed(TINY.seed)
    fresh = GPTModel(TINY.model_config(tokenizer().vocab_size)).eval()
    held_out = _token_data()[1]
    gen = torch.Generator().manual_seed(2024)  # lm.EVAL_SEED
    windows = _windows(held_out, TINY.eval_windows, TINY.context_length, gen)
    assert result.curve[0][2] == pytest.approx(_eval_loss(fresh, windows), abs=1e-5)


def test_copy_rate_counts_the_character_after_the_earlier_occurrence():
    # at t = 6 ('c') "abc" occurred at 0..2; the character AFTER it is 'X'; the next one is 'X'
    assert copy_rate(["abcXabcX"], 3) == (1 / 4, 1 / 4)  # t = 3, 4, 5, 6: only t = 6 copies
    # the next character is 'Y', not the 'X' after the earlier "abc": copyable, not right
    # (a count that took the earlier occurrence's own last character, 'c', would be 0 above)
    assert copy_rate(["abcXabcY"], 3) == (1 / 4, 0.0)
    # a longer match finds fewer copyable characters
    assert copy_rate(["abcXabcX"], 4)[0] == 0.0
    with pytest.raises(ValueError, match="match"):
        copy_rate(["abc"], 0)


def test_copy_counts_are_the_counts_behind_copy_rate():
    # "abcXabcX", match 3: t = 3, 4, 5, 6 looked at; t = 6 copyable and right
    assert copy_counts(["abcXabcX"], 3) == (1, 1, 4)
    assert copy_counts(["abcXabcY"], 3) == (1, 0, 4)  # copyable, not right
    # two windows add up: 4 + 4 positions, and the shares are the counts over the total
    assert copy_counts(["abcXabcX", "abcXabcY"], 3) == (2, 1, 8)
    assert copy_rate(["abcXabcX", "abcXabcY"], 3) == (2 / 8, 1 / 8)
    assert copy_counts(["ab"], 3) == (0, 0, 0)  # too short: nothing looked at
    with pytest.raises(ValueError, match="match"):
        copy_counts(["abc"], 0)


def test_repeat_summary_averages_repeat_test_over_held_out_passages():
    torch.manual_seed(0)
    model = GPTModel(TINY.model_config(tokenizer().vocab_size)).eval()
    summary = repeat_summary(model, num=3, length=8)
    tests = [repeat_test(model, p) for p in held_out_passages(3, 8)]
    assert summary.first == pytest.approx(sum(t.first for t in tests) / 3)
    assert summary.second == pytest.approx(sum(t.second for t in tests) / 3)
    induction = torch.stack([t.induction for t in tests]).mean(dim=0)
    layer, head, score = summary.best
    assert score == pytest.approx(induction.max().item()) == induction[layer, head].item()


def test_the_plain_recording_says_how_it_was_made():
    record = plain_recording()
    assert "--repeat-share 0" in record["command"] and record["seed"] == 0
    for key in ("torch", "date", "train_wall_s", "train_cpu_s"):
        assert record[key]
    line = record["repeat_test"]
    assert line["num"] == 12 and line["length"] == 64 and len(line["best_head"]) == 2
    assert 0 <= line["best_induction"] <= 1 and line["first"] > 0 and line["second"] > 0


@pytest.mark.slow  # the repeat test of a 4-layer model on 12 passages
def test_the_shipped_plain_weights_are_the_recorded_model():
    """``plain_lm`` loads the file whose sha256 the recording names, and that file gives the
    repeat test the recording stored when it was trained."""
    weights = plain_recording()["weights"]
    path = resources.files("attn_course") / "weights" / weights["file"]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == weights["sha256"]
    summary, recorded = repeat_summary(plain_lm()), plain_recording()["repeat_test"]
    assert (summary.lower, list(summary.best[:2])) == (recorded["lower"], recorded["best_head"])
    assert summary.first == pytest.approx(recorded["first"], abs=2e-4)
    assert summary.second == pytest.approx(recorded["second"], abs=2e-4)
    flat = summary.induction.flatten().tolist()
    assert flat == pytest.approx(sum(recorded["induction"], []), abs=2e-4)


def test_the_shipped_recording_loads_from_any_working_directory(tmp_path, monkeypatch):
    """Lecture 11 reads the shipped run's record through the package, not a relative path."""
    monkeypatch.chdir(tmp_path)
    record = shipped_recording()
    assert record["config"]["steps"] == LM_CONFIGS["default"].steps
    assert record["curve"][-1][0] == LM_CONFIGS["default"].steps and record["wall_s"] > 0


def test_a_stopped_run_is_the_first_steps_of_the_whole_run():
    """``stop`` trains a prefix of the run: the whole run's schedule, so its curve (and the
    model at that step) are the whole run's first points, not those of a shorter run."""
    run = replace(TINY, steps=9)
    whole, first = train_lm(run), train_lm(run, stop=6)
    assert first.curve == whole.curve[:3] and [s for s, _, _ in first.curve] == [0, 3, 6]
    shorter = train_lm(replace(run, steps=6))  # its schedule decays over 6 steps, not 9
    assert shorter.curve[1:] != first.curve[1:]
    log = io.StringIO()
    ends_between = train_lm(run, progress=log, stop=5)  # evaluated at its last step too
    assert [s for s, _, _ in ends_between.curve] == [0, 3, 5] and " 5/5 " in log.getvalue()
    for stop in (0, 10):
        with pytest.raises(ValueError, match="between 1 and the run's 9 steps"):
            train_lm(run, stop=stop)


def test_a_train_point_averages_the_batches_before_its_step():
    """11 cell 5 (review r11w): a curve point's train loss is the mean of the batch losses of
    the steps before it (steps 0..2 for the point at step 3, each before its update), so the
    plot of cell 8 draws it at the middle of those steps, not after them. A frozen model
    (learning rate 0) scores each batch the same whenever it sees it."""
    frozen = replace(TINY, lr=0.0, min_lr=0.0)
    result = train_lm(frozen)
    torch.manual_seed(TINY.seed)
    fresh = GPTModel(TINY.model_config(tokenizer().vocab_size)).eval()
    gen = torch.Generator().manual_seed(TINY.seed)  # the run's data generator
    train_data = _token_data()[0]
    losses = [
        _eval_loss(fresh, _windows(train_data, TINY.batch_size, TINY.context_length, gen,
                                   TINY.repeat_share))
        for _ in range(TINY.steps)
    ]  # fmt: skip
    before, after = sum(losses[:3]) / 3, sum(losses[3:]) / 3
    assert abs(before - after) > 0.01  # the two readings differ on these batches
    assert result.curve[1][1] == pytest.approx(before, abs=1e-5)
    assert result.curve[2][1] == pytest.approx(after, abs=1e-5)
    assert result.curve[0][1] == pytest.approx(losses[0], abs=1e-5)  # step 0: the first batch


def test_the_shipped_runs_expected_coverage_of_the_training_text_is_its_replay():
    """Notebook 11, cell 31: both runs read the training text 2.40 times; the share read at least
    once is expected 1 - exp(-passes) for plain windows (0.91) and 1 - exp(-passes x 0.82) for
    the shipped run (0.86), whose repeat windows read only their passage. A replay of the
    shipped run's draws, in ``_windows``'s order, agrees (reversed, 0.91 for the shipped run,
    it fails)."""
    cfg = LM_CONFIGS["default"]
    data, length = _token_data()[0], cfg.context_length
    first = _windows(
        data, cfg.batch_size, length, torch.Generator().manual_seed(cfg.seed), cfg.repeat_share
    )
    gen = torch.Generator().manual_seed(cfg.seed)
    read = torch.zeros(len(data), dtype=torch.bool)  # a text character some window predicted
    for step in range(cfg.steps):
        starts = window_starts(len(data), cfg.batch_size, length, gen)
        repeat = torch.rand(cfg.batch_size, generator=gen) < cfg.repeat_share
        periods = torch.randint(MIN_REPEAT, length // 2 + 1, (cfg.batch_size,), generator=gen)
        for i, (s, r, p) in enumerate(
            zip(starts.tolist(), repeat.tolist(), periods.tolist(), strict=True)
        ):
            if step == 0:  # the replay draws the windows train_lm's first batch holds
                end = s + p if r else s + length + 1
                assert torch.equal(first[i][: end - s], data[s:end])
            if r:
                read[s : s + p] = True
            else:
                read[s + 1 : s + length + 1] = True
    passes = cfg.steps * cfg.batch_size * length / len(data)
    periods = range(MIN_REPEAT, length // 2 + 1)
    fresh = 1 - cfg.repeat_share * (1 - sum(periods) / len(periods) / length)
    assert round(passes, 2) == 2.40 and round(fresh, 2) == 0.82
    assert read.float().mean().item() == pytest.approx(1 - math.exp(-passes * fresh), abs=0.005)
    assert round(1 - math.exp(-passes), 2) == 0.91
    assert round(1 - math.exp(-passes * fresh), 2) == 0.86
