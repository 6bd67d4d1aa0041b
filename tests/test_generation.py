"""Generation with and without the KV cache, grouped-query attention, the sliding-window mask."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest
import torch

from attn_course.attention import MultiHeadAttention, causal_mask, sliding_window_mask
from attn_course.blocks import BlockConfig, count_parameters
from attn_course.generation import (
    GPTConfig,
    GPTModel,
    KVCache,
    attend_cached,
    beam_search,
    generate,
    positions_processed,
)
from attn_course.gqa import (
    PUBLISHED_CONFIGS,
    GroupedQueryAttention,
    attention_parameters,
    kv_cache_bytes,
    repeat_kv,
)

CFG = BlockConfig(d_model=32, context_length=64, num_heads=4, dropout=0.1, num_layers=3)
VOCAB = 50


def model(num_kv_groups: int | None = None, seed: int = 0) -> GPTModel:
    torch.manual_seed(seed)
    return GPTModel(GPTConfig.from_block(CFG, VOCAB, num_kv_groups)).eval()


@pytest.mark.parametrize("num_kv_groups", [None, 4, 2, 1])
def test_cached_generation_equals_uncached(num_kv_groups):
    gpt = model(num_kv_groups)
    prompt = torch.randint(0, VOCAB, (2, 5), generator=torch.Generator().manual_seed(1))
    tokens, logits = generate(gpt, prompt, max_new_tokens=30, use_cache=True)
    tokens_ref, logits_ref = generate(gpt, prompt, max_new_tokens=30, use_cache=False)
    assert tokens.shape == (2, 35) and logits.shape == (2, 30, VOCAB)
    assert torch.equal(tokens[:, :5], prompt)
    assert torch.equal(tokens, tokens_ref)
    torch.testing.assert_close(logits, logits_ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("context_length", [16, 15])
@pytest.mark.parametrize(("num_prompt", "new"), [(3, 1), (5, 13), (5, 40), (20, 9), (16, 2)])
@pytest.mark.parametrize("use_cache", [True, False])
def test_positions_processed_counts_what_generate_feeds_the_model(
    context_length, num_prompt, new, use_cache
):
    # the real loop, restarts and a prompt longer than the context included: a hook counts the
    # positions of every forward call
    torch.manual_seed(0)
    gpt = GPTModel(GPTConfig.from_block(replace(CFG, context_length=context_length), VOCAB))
    fed = []
    gpt.register_forward_pre_hook(lambda module, args: fed.append(args[0].shape[1]))
    prompt = torch.randint(0, VOCAB, (1, num_prompt), generator=torch.Generator().manual_seed(5))
    generate(gpt.eval(), prompt, new, use_cache)
    assert len(fed) == new
    assert positions_processed(num_prompt, new, context_length, use_cache) == sum(fed)


def test_positions_processed_with_unlimited_context_and_past_it():
    # no restart: the uncached loop feeds P + (P + 1) + ... + (P + N - 1), the cached P + N - 1
    for num_prompt, new in [(8, 16), (8, 512), (1, 1)]:
        unlimited = num_prompt + new
        uncached = positions_processed(num_prompt, new, unlimited, use_cache=False)
        assert uncached == sum(num_prompt + step for step in range(new))
        assert positions_processed(num_prompt, new, unlimited) == num_prompt + new - 1
    # context 8, prompt 2, 10 new tokens: windows of 2..8 positions, a restart on the last 4
    # after the 7th token (9 tokens), then 4..8 again; the cache refills 4 at the restart
    assert positions_processed(2, 10, 8, use_cache=False) == sum(range(2, 9)) + 4 + 5 + 6
    assert positions_processed(2, 10, 8) == 2 + 6 + 4 + 2
    with pytest.raises(ValueError, match="max_new_tokens=0"):
        positions_processed(8, 0, 128)


def test_chunked_prefill_gives_the_logits_of_one_pass():
    gpt = model()
    idx = torch.randint(0, VOCAB, (1, 20), generator=torch.Generator().manual_seed(2))
    cache = KVCache(3)
    chunks = [gpt(idx[:, :7], cache), gpt(idx[:, 7:8], cache), gpt(idx[:, 8:], cache)]
    torch.testing.assert_close(torch.cat(chunks, dim=1), gpt(idx), rtol=1e-4, atol=1e-5)
    assert [cache.num_cached(layer) for layer in range(3)] == [20, 20, 20]


def test_earlier_keys_never_change_when_tokens_are_appended():
    gpt = model()
    idx = torch.randint(0, VOCAB, (1, 12), generator=torch.Generator().manual_seed(3))
    short, full = KVCache(3), KVCache(3)
    gpt(idx[:, :8], short)
    gpt(idx, full)
    for layer in range(3):
        torch.testing.assert_close(full.keys[layer][:, :, :8], short.keys[layer])
        torch.testing.assert_close(full.values[layer][:, :, :8], short.values[layer])


def test_cache_holds_kv_heads_and_its_bytes_match_the_formula():
    for num_kv_groups in (4, 2, 1):
        gpt = model(num_kv_groups)
        cache = KVCache(3)
        gpt(torch.zeros(2, 10, dtype=torch.long), cache)
        assert cache.keys[0].shape == (2, num_kv_groups, 10, CFG.d_model // CFG.num_heads)
        head_dim = CFG.d_model // CFG.num_heads
        # 3 layers x (key + value) x kv heads x head_dim x 10 tokens x 2 sequences x 4 bytes
        assert cache.nbytes() == 3 * 2 * num_kv_groups * head_dim * 10 * 2 * 4
        assert cache.nbytes() == kv_cache_bytes(3, num_kv_groups, head_dim, 10, 2, 4)


def test_position_and_context_errors():
    gpt = model()
    with pytest.raises(ValueError, match="context_length=64"):
        gpt(torch.zeros(1, 65, dtype=torch.long))
    cache = KVCache(3)
    gpt(torch.zeros(1, 60, dtype=torch.long), cache)
    with pytest.raises(ValueError, match="exceed context_length"):
        gpt(torch.zeros(1, 5, dtype=torch.long), cache)
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate(gpt, torch.zeros(1, 3, dtype=torch.long), 0)


def test_attend_cached_one_token_at_a_time_equals_the_module():
    torch.manual_seed(4)
    att = MultiHeadAttention(16, 16, 10, 0.0, 2).eval()
    x = torch.randn(2, 10, 16)
    cache = KVCache(1)
    steps = [attend_cached(att, x[:, i : i + 1], cache, 0) for i in range(10)]
    torch.testing.assert_close(torch.cat(steps, dim=1), att(x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_gqa_with_one_group_per_head_equals_mha(qkv_bias):
    torch.manual_seed(5)
    mha = MultiHeadAttention(12, 24, 9, 0.0, 4, qkv_bias).eval()
    gqa = GroupedQueryAttention(12, 24, 9, 0.0, 4, 4, qkv_bias).eval()
    gqa.load_state_dict(mha.state_dict())
    x = torch.randn(3, 9, 12)
    torch.testing.assert_close(gqa(x), mha(x))
    torch.testing.assert_close(gqa.attn_weights, mha.attn_weights)


def test_gqa_shares_kv_heads_within_a_group():
    """With 2 groups of 2 heads, MHA whose heads 0,1 (and 2,3) share key/value weights."""
    torch.manual_seed(6)
    gqa = GroupedQueryAttention(8, 8, 5, 0.0, 4, 2).eval()
    mha = MultiHeadAttention(8, 8, 5, 0.0, 4).eval()
    head_dim = 2
    with torch.no_grad():
        mha.W_query.weight.copy_(gqa.W_query.weight)
        mha.out_proj.load_state_dict(gqa.out_proj.state_dict())
        for name in ("W_key", "W_value"):
            groups = getattr(gqa, name).weight.view(2, head_dim, 8)  # (groups, head_dim, d_in)
            # heads 0, 1 read group 0; heads 2, 3 read group 1
            getattr(mha, name).weight.copy_(groups[[0, 0, 1, 1]].reshape(8, 8))
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(gqa(x), mha(x))


def test_repeat_kv_puts_each_groups_copies_next_to_each_other():
    x = torch.arange(2.0).view(1, 2, 1, 1)  # two kv heads holding 0 and 1
    assert repeat_kv(x, 3).flatten().tolist() == [0, 0, 0, 1, 1, 1]


def test_gqa_validates_its_sizes():
    with pytest.raises(ValueError, match="num_heads=4 is not divisible by num_kv_groups=3"):
        GroupedQueryAttention(8, 8, 5, 0.0, 4, 3)
    with pytest.raises(ValueError, match="num_kv_groups=0"):
        GroupedQueryAttention(8, 8, 5, 0.0, 4, 0)
    with pytest.raises(ValueError, match="not divisible by num_heads"):
        GroupedQueryAttention(8, 6, 5, 0.0, 4, 2)
    with pytest.raises(ValueError, match="num_tokens=6"):
        GroupedQueryAttention(8, 8, 5, 0.0, 4, 2)(torch.randn(1, 6, 8))


@pytest.mark.parametrize("config", PUBLISHED_CONFIGS, ids=lambda c: c.name)
def test_attention_parameter_formula_counts_the_module(config):
    with torch.device("meta"):
        module = GroupedQueryAttention(
            config.d_model,
            config.num_heads * config.head_dim,
            1,
            0.0,
            config.num_heads,
            config.num_kv_groups,
            config.qkv_bias,
        )
    assert config.num_heads * config.head_dim == config.d_model
    assert count_parameters(module) == attention_parameters(
        config.d_model, config.num_heads, config.num_kv_groups, config.qkv_bias
    )


def test_published_cache_sizes():
    by_name = {c.name: c for c in PUBLISHED_CONFIGS}
    # Known figures: Llama-2-7B keeps 0.5 MiB per token in fp16, Llama-3-8B 128 KiB.
    llama2, llama3 = by_name["Llama-2-7B"], by_name["Llama-3-8B"]
    assert kv_cache_bytes(llama2.num_layers, llama2.num_kv_groups, llama2.head_dim) == 2**19
    assert kv_cache_bytes(llama3.num_layers, llama3.num_kv_groups, llama3.head_dim) == 2**17
    gpt2 = by_name["GPT-2 small"]
    assert kv_cache_bytes(gpt2.num_layers, gpt2.num_kv_groups, gpt2.head_dim) == 36 * 2**10


def test_gpt2_small_parameter_count_on_meta():
    cfg = BlockConfig(d_model=768, context_length=1024, num_heads=12, qkv_bias=True)
    with torch.device("meta"):
        gpt2 = GPTModel(GPTConfig.from_block(cfg, vocab_size=50257))
    # 124,439,808: the published GPT-2 small size, output head tied to the token embedding.
    assert count_parameters(gpt2) - gpt2.out_head.weight.numel() == 124_439_808


def test_sliding_window_mask():
    mask = sliding_window_mask(5, 2)
    expected = torch.tensor(
        [
            [0, 1, 1, 1, 1],
            [0, 0, 1, 1, 1],
            [1, 0, 0, 1, 1],
            [1, 1, 0, 0, 1],
            [1, 1, 1, 0, 0],
        ],
        dtype=torch.bool,
    )
    assert torch.equal(mask, expected)
    assert torch.equal(sliding_window_mask(6, 6), causal_mask(6))
    assert torch.equal(sliding_window_mask(6, 100), causal_mask(6))
    assert (~sliding_window_mask(40, 7)).sum(dim=-1).max() == 7
    with pytest.raises(ValueError, match="window=0"):
        sliding_window_mask(4, 0)


class TableModel(torch.nn.Module):
    """A hand-made language model: the next token's probabilities depend on the last two tokens.

    ``table[a, b]`` is the distribution after the tokens ``a, b``; its logits are the log of it.
    """

    def __init__(self, table: torch.Tensor, context_length: int = 16):
        super().__init__()
        self.table = table  # (vocab_size, vocab_size, vocab_size)
        self.cfg = GPTConfig(d_model=4, context_length=context_length, num_heads=1, vocab_size=3)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        previous = torch.cat([idx[:, :1], idx[:, :-1]], dim=1)  # (b, num_tokens): a, b = prev, last
        return torch.log(self.table[previous, idx])  # (b, num_tokens, vocab_size)


def sequence_log_prob(table: torch.Tensor, tokens: list[int]) -> float:
    """log p of tokens[2:] given the first two, by the chain rule, in float64."""
    return sum(
        float(torch.log(table[tokens[i - 2], tokens[i - 1], tokens[i]].double()))
        for i in range(2, len(tokens))
    )


def brute_force(table: torch.Tensor, prompt: list[int], n: int) -> list[tuple[float, list[int]]]:
    """Every continuation of n tokens with its log-probability, most likely first."""
    vocab_size = table.shape[-1]
    found = []
    for new in itertools.product(range(vocab_size), repeat=n):
        found.append((sequence_log_prob(table, prompt + list(new)), prompt + list(new)))
    return sorted(found, key=lambda pair: -pair[0])


def test_beam_search_finds_the_sequence_greedy_misses():
    # After "2 2" token 0 is likeliest (0.5), but after 0 the model hesitates (0.4 at best),
    # while after 1 it is sure to say 1 again (0.9): greedy takes 0, 0, 0 (0.5 * 0.4 * 0.4 =
    # 0.08); the best three tokens are 1, 1, 1 (0.4 * 0.9 * 0.9 = 0.324).
    after = {0: [0.4, 0.3, 0.3], 1: [0.05, 0.9, 0.05], 2: [0.5, 0.4, 0.1]}
    table = torch.tensor([[after[b] for b in range(3)] for _ in range(3)])  # depends on b only
    model = TableModel(table)
    prompt = torch.tensor([[2, 2]])
    best_score, best = brute_force(table, [2, 2], 3)[0]
    assert best == [2, 2, 1, 1, 1] and best_score == pytest.approx(math.log(0.324))

    greedy, _ = generate(model, prompt, 3, use_cache=False)
    assert greedy[0].tolist() == [2, 2, 0, 0, 0]
    tokens, scores = beam_search(model, prompt, 3, num_beams=1, use_cache=False)
    assert tokens.tolist() == [[2, 2, 0, 0, 0]]  # width 1 is greedy
    assert scores.item() == pytest.approx(math.log(0.08))
    tokens, scores = beam_search(model, prompt, 3, num_beams=2, use_cache=False)
    assert tokens[0].tolist() == best and scores[0].item() == pytest.approx(best_score)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_beam_as_wide_as_every_prefix_ranks_every_sequence_exactly(seed):
    generator = torch.Generator().manual_seed(seed)
    table = torch.softmax(3 * torch.randn(3, 3, 3, generator=generator), dim=-1)
    prompt, n = [1, 0], 4
    ranked = brute_force(table, prompt, n)
    # 3**3 beams keep every prefix of 3 tokens: the search is exhaustive
    tokens, scores = beam_search(TableModel(table), torch.tensor([prompt]), n, 27, use_cache=False)
    assert tokens.tolist() == [sequence for _, sequence in ranked[:27]]
    torch.testing.assert_close(scores, torch.tensor([s for s, _ in ranked[:27]]).double())
    # a narrow beam returns sequences whose scores are their true log-probabilities, best first
    tokens, scores = beam_search(TableModel(table), torch.tensor([prompt]), n, 2, use_cache=False)
    assert scores[0] >= scores[1] and tokens[0].tolist() != tokens[1].tolist()
    for row, score in zip(tokens.tolist(), scores.tolist(), strict=True):
        assert score == pytest.approx(sequence_log_prob(table, row))


@pytest.mark.parametrize("use_cache", [True, False])
def test_beam_search_on_a_gpt_is_greedy_at_width_1_past_the_context(use_cache):
    gpt = model()
    prompt = torch.randint(0, VOCAB, (1, 5), generator=torch.Generator().manual_seed(2))
    greedy, logits = generate(gpt, prompt, max_new_tokens=80, use_cache=False)  # context 64
    tokens, scores = beam_search(gpt, prompt, 80, num_beams=1, use_cache=use_cache)
    assert torch.equal(tokens, greedy)
    # the same window as generate: the logits each token was chosen from give the same score
    log_probs = torch.log_softmax(logits.double(), dim=-1)  # (1, 80, VOCAB)
    greedy_score = log_probs.gather(-1, greedy[:, 5:, None]).sum()
    torch.testing.assert_close(scores[0], greedy_score, rtol=1e-6, atol=1e-4)


def test_beam_scores_are_the_models_log_probabilities():
    gpt = model()
    prompt = torch.randint(0, VOCAB, (1, 5), generator=torch.Generator().manual_seed(3))
    tokens, scores = beam_search(gpt, prompt, 20, num_beams=3)
    assert tokens.shape == (3, 25) and scores.shape == (3,)
    assert len({tuple(row) for row in tokens.tolist()}) == 3  # three different sequences
    assert torch.all(scores[:-1] >= scores[1:])  # best first
    log_probs = torch.log_softmax(gpt(tokens[:, :-1]).double(), dim=-1)  # (3, 24, VOCAB)
    recomputed = log_probs[:, 4:].gather(-1, tokens[:, 5:, None]).sum(dim=(1, 2))  # (3,)
    torch.testing.assert_close(scores, recomputed, rtol=1e-5, atol=1e-4)
    greedy, _ = generate(gpt, prompt, 20)
    greedy_score = torch.log_softmax(gpt(greedy[:, :-1]).double(), dim=-1)[:, 4:]
    greedy_score = greedy_score.gather(-1, greedy[:, 5:, None]).sum()
    assert scores[0] >= greedy_score - 1e-4  # here the beam does at least as well as greedy


@pytest.mark.parametrize("num_kv_groups", [None, 2])
def test_cached_beam_search_equals_uncached_past_the_context(num_kv_groups):
    # the cache rows must follow their sequences: without reorder, a row keeps the keys of
    # the sequence that sat there before
    gpt = model(num_kv_groups, seed=1)
    prompt = torch.randint(0, VOCAB, (1, 5), generator=torch.Generator().manual_seed(4))
    tokens, scores = beam_search(gpt, prompt, 70, num_beams=3, use_cache=True)  # context 64
    tokens_ref, scores_ref = beam_search(gpt, prompt, 70, num_beams=3, use_cache=False)
    assert torch.equal(tokens, tokens_ref)
    torch.testing.assert_close(scores, scores_ref, rtol=1e-5, atol=1e-4)


def test_kv_cache_reorder_keeps_the_chosen_rows():
    cache = KVCache(2)
    keys = torch.arange(3.0).view(3, 1, 1, 1).expand(3, 2, 4, 8)  # row r holds r
    cache.update(0, keys, -keys)
    cache.reorder(torch.tensor([2, 2, 0, 1]))
    assert cache.keys[0][:, 0, 0, 0].tolist() == [2.0, 2.0, 0.0, 1.0]
    assert cache.values[0][:, 0, 0, 0].tolist() == [-2.0, -2.0, 0.0, -1.0]
    assert cache.keys[1] is None and cache.num_cached(0) == 4


def test_beam_search_refuses_a_batch_and_a_zero_width():
    gpt = model()
    with pytest.raises(ValueError, match="one prompt"):
        beam_search(gpt, torch.zeros(2, 3, dtype=torch.long), 5, 2)
    with pytest.raises(ValueError, match="num_beams=0"):
        beam_search(gpt, torch.zeros(1, 3, dtype=torch.long), 5, 0)
