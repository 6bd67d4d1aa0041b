"""QK/OV circuits, composition scores and mean-ablation (attn_course.circuits)."""

from __future__ import annotations

import pytest
import torch

from attn_course.circuits import (
    composition_score,
    composition_scores,
    diagonal_top1,
    direct_logit_attribution,
    head_matrices,
    k_composition_qk_circuit,
    mean_ablated,
    ov_circuit,
    patched,
    q_composition_qk_circuit,
    random_composition_scores,
)
from attn_course.model import ModelConfig, TinyTransformer, ablated
from attn_course.training import pretrained


@pytest.fixture(scope="module")
def induction_model():
    return pretrained("induction")


def small_model(seed: int = 0, vocab_size: int = 9) -> TinyTransformer:
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=vocab_size, context_length=8, d_model=8, num_heads=2)
    return TinyTransformer(cfg).eval()


@torch.no_grad()
def test_ov_circuit_is_what_the_head_adds_to_the_logits_of_an_attended_token():
    model = small_model()
    att = model.layers[1]
    for s in range(9):
        v = att.W_value(model.tok_emb.weight[s]).clone()  # (d_model,): every head's value
        v[: att.head_dim] = 0.0  # keep head 1 only
        logits = model.out_head.weight @ (att.out_proj.weight @ v)
        torch.testing.assert_close(ov_circuit(model, 1, 1)[s], logits)


@torch.no_grad()
def test_k_composition_qk_circuit_is_the_score_of_a_key_holding_the_writers_output():
    model = small_model(1)
    reader, writer = model.layers[1], model.layers[0]
    table = k_composition_qk_circuit(model, (1, 0), (0, 1))
    for q in range(9):
        for p in range(9):
            v = writer.W_value(model.tok_emb.weight[p]).clone()
            v[: writer.head_dim] = 0.0  # writer head 1 only
            key_stream = writer.out_proj.weight @ v
            query = reader.W_query(model.tok_emb.weight[q])[: reader.head_dim]  # head 0
            key = reader.W_key(key_stream)[: reader.head_dim]
            assert table[q, p].item() == pytest.approx((query @ key).item(), abs=1e-5)


@torch.no_grad()
def test_q_composition_qk_circuit_is_the_score_of_a_query_holding_the_writers_output():
    model = small_model(1)
    reader, writer = model.layers[1], model.layers[0]
    table = q_composition_qk_circuit(model, (1, 0), (0, 1))
    assert not torch.allclose(table, k_composition_qk_circuit(model, (1, 0), (0, 1)), atol=1e-3)
    for p in range(9):
        for k in range(9):
            v = writer.W_value(model.tok_emb.weight[p]).clone()
            v[: writer.head_dim] = 0.0  # writer head 1 only
            query_stream = writer.out_proj.weight @ v
            query = reader.W_query(query_stream)[: reader.head_dim]  # head 0
            key = reader.W_key(model.tok_emb.weight[k])[: reader.head_dim]
            assert table[p, k].item() == pytest.approx((query @ key).item(), abs=1e-5)


def test_k_composition_needs_an_earlier_source():
    with pytest.raises(ValueError, match="earlier layer"):
        k_composition_qk_circuit(small_model(), (1, 0), (1, 1))
    with pytest.raises(ValueError, match="earlier layer"):
        q_composition_qk_circuit(small_model(), (1, 0), (1, 1))


def test_shipped_induction_heads_copy_and_match_previous_tokens(induction_model):
    for head in range(4):
        assert diagonal_top1(ov_circuit(induction_model, 1, head)) == 1.0
        assert diagonal_top1(k_composition_qk_circuit(induction_model, (1, head), (0, 3))) == 1.0
    untrained = small_model(vocab_size=32)  # not trained: about chance, 1/32 per row
    assert diagonal_top1(ov_circuit(untrained, 1, 0)) < 0.3


def test_shipped_prefix_matching_is_l0_h3_in_the_keys_not_the_queries(induction_model):
    """Lecture 08's controls: the 100% needs L0 H3's output in the keys; in the queries, or
    another layer-0 head in the keys, the diagonal wins far less often (chance 1/32)."""
    for head in range(4):
        assert diagonal_top1(k_composition_qk_circuit(induction_model, (1, head), (0, 3))) == 1.0
        assert diagonal_top1(q_composition_qk_circuit(induction_model, (1, head), (0, 3))) < 0.1
        for writer in range(3):
            table = k_composition_qk_circuit(induction_model, (1, head), (0, writer))
            assert diagonal_top1(table) < 0.7


@torch.no_grad()
def test_shipped_l0_h3_out_of_the_queries_moves_parking_rows_out_of_the_keys_the_copy_rows(
    induction_model,
):
    """Lecture 08, cells 78-79: L0 H3 removed from layer 1's queries only leaves the rows with
    an earlier copy almost in place and moves the rows without one more; removed from the keys
    only (the reversed claim), it moves the rows with an earlier copy most."""
    from attn_course.attention import causal_mask, split_heads
    from attn_course.tasks import TASKS

    model, tokens = induction_model, TASKS["induction"].batch(100, seed=1).tokens
    att = model.layers[1]

    def stream() -> torch.Tensor:  # (b, num_tokens, d_model): what layer 1 reads
        x = model.tok_emb(tokens) + model.positions(tokens.shape[1])
        return x + model.layers[0](x)

    def weights(x_q: torch.Tensor, x_k: torch.Tensor) -> torch.Tensor:  # (b, h, t, t)
        q = split_heads(att.W_query(x_q), att.num_heads)
        k = split_heads(att.W_key(x_k), att.num_heads)
        s = (q @ k.transpose(-2, -1) / att.head_dim**0.5).masked_fill(
            causal_mask(tokens.shape[1]), -torch.inf
        )
        return torch.softmax(s, dim=-1)

    intact = stream()
    with ablated(model, [(0, 3)]):
        damaged = stream()
    has_copy = (tokens[:, :, None] == tokens[:, None, :]).tril(diagonal=-1).any(dim=-1)
    reference = weights(intact, intact)
    change = {
        path: ((w - reference).abs().sum(dim=-1) / 2).transpose(0, 1)  # (h, b, t)
        for path, w in (("queries", weights(damaged, intact)), ("keys", weights(intact, damaged)))
    }
    copy_rows = {path: c[:, has_copy].mean(dim=-1) for path, c in change.items()}  # (h,)
    parking_rows = {path: c[:, ~has_copy].mean(dim=-1) for path, c in change.items()}  # (h,)
    assert (copy_rows["queries"] < 0.1).all() and (parking_rows["queries"] > 0.12).all()
    assert (copy_rows["keys"] > 0.5).all() and (copy_rows["keys"] > parking_rows["keys"]).all()


def test_diagonal_top1_counts_rows_won_by_their_own_token():
    table = torch.eye(4) + torch.tensor([[0, 0, 0, 0], [2.0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    assert diagonal_top1(table) == 0.75
    with pytest.raises(ValueError, match="square"):
        diagonal_top1(torch.zeros(2, 3))


def set_head(model: TinyTransformer, layer: int, head: int, **matrices: torch.Tensor) -> None:
    att = model.layers[layer]
    rows = slice(head * att.head_dim, (head + 1) * att.head_dim)
    with torch.no_grad():
        for name, value in matrices.items():
            if name == "W_O":
                att.out_proj.weight[:, rows] = value
            else:
                getattr(att, name).weight[rows] = value


def subspace_model() -> tuple[TinyTransformer, list[torch.Tensor]]:
    """d_model 12, three heads of width 4; the three blocks of 4 dimensions A, B, C.

    Reader L1 H0 reads its queries from A, its keys from B, its values from C. Writer L0 Hi
    writes only into block i (W_V and W_O the projection on it).
    """
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=9, context_length=8, d_model=12, num_heads=3)
    model = TinyTransformer(cfg).eval()
    blocks = list(torch.eye(12).split(4))  # 3 x (head_dim, d_model): A, B, C
    A, B, C = blocks
    set_head(model, 1, 0, W_query=A, W_key=B, W_value=C, W_O=A.T)
    for i, block in enumerate(blocks):
        set_head(model, 0, i, W_value=block, W_O=block.T)
    return model, blocks


def test_composition_scores_tell_queries_keys_and_values_apart():
    model, _ = subspace_model()
    scores = composition_scores(model)  # {kind: (reader, writer)}
    # ||P_A P_B|| / (||P_A|| ||P_B||) = 2 / (2 * 2) for rank-4 projections, 1/sqrt(rank): the
    # most that aligned heads with equal singular values score (08 cell 75); one writer each
    torch.testing.assert_close(scores["Q"][0], torch.tensor([0.5, 0.0, 0.0]))  # into A: queries
    torch.testing.assert_close(scores["K"][0], torch.tensor([0.0, 0.5, 0.0]))  # into B: keys
    torch.testing.assert_close(scores["V"][0], torch.tensor([0.0, 0.0, 0.5]))  # into C: values
    assert head_matrices(model, 0, 1)["W_O"].shape == (12, 4)


@torch.no_grad()
def test_k_composition_is_what_moves_the_readers_scores_through_its_keys():
    """Behaviour, not formula: a writer in the keys' block changes the score, one in A does not.

    The score of a query x_q against a key stream x_k + (W_OV y) changes with y only when the
    writer's output reaches W_K; the K-composition score must be high exactly then.
    """
    model, _ = subspace_model()
    reader = model.layers[1]
    x_q, x_k, y = torch.randn(3, 12, generator=torch.Generator().manual_seed(1))
    scores = composition_scores(model)
    for writer in range(3):
        att = model.layers[0]
        cols = slice(writer * 4, (writer + 1) * 4)
        written = att.out_proj.weight[:, cols] @ att.W_value.weight[cols] @ y  # (d_model,)
        q, k = reader.W_query.weight[:4] @ x_q, reader.W_key.weight[:4] @ x_k
        moved = q @ (reader.W_key.weight[:4] @ (x_k + written)) - q @ k
        assert (abs(moved.item()) > 1e-3) == (scores["K"][0, writer].item() > 0.1)


def test_composition_score_rejects_an_unknown_kind_and_layer_0():
    model, _ = subspace_model()
    with pytest.raises(ValueError, match="kind"):
        composition_score(head_matrices(model, 1, 0), head_matrices(model, 0, 0), "O")
    with pytest.raises(ValueError, match="layer 1 or later"):
        composition_scores(model, layer=0)


def test_random_baseline_sits_near_one_over_sqrt_d_model():
    baseline = random_composition_scores(d_model=64, head_dim=16, draws=50, seed=0)
    for kind in "QKV":
        assert baseline[kind].shape == (50,)
        assert baseline[kind].mean().item() == pytest.approx(64**-0.5, abs=0.01)
    torch.testing.assert_close(random_composition_scores(64, 16, 50, 0)["K"], baseline["K"])
    assert not torch.equal(random_composition_scores(64, 16, 50, 1)["K"], baseline["K"])


def test_shipped_induction_heads_read_the_previous_token_head_through_their_keys(
    induction_model,
):
    scores = composition_scores(induction_model)
    baseline = random_composition_scores(64, 16, draws=50)
    for reader in range(4):
        assert scores["K"][reader].argmax().item() == 3  # L0 H3, the previous-token head
        assert scores["K"][reader, 3] > baseline["K"].max()
        assert scores["Q"][reader, 3] < baseline["Q"].min()


def centred_target_logits(model: TinyTransformer, tokens: torch.Tensor, targets: torch.Tensor):
    logits = model(tokens)  # (b, num_tokens, vocab)
    centred = logits - logits.mean(dim=-1, keepdim=True)
    return centred.gather(-1, targets[..., None])[..., 0]  # (b, num_tokens)


@torch.no_grad()
def test_direct_logit_attribution_sums_to_the_logit_and_is_the_last_layers_ablation():
    model = small_model(2)
    gen = torch.Generator().manual_seed(0)
    tokens, targets = torch.randint(9, (2, 2, 8), generator=gen)
    parts = direct_logit_attribution(model, tokens, targets)
    assert parts["heads"].shape == (2, 2, 2, 8)
    whole = centred_target_logits(model, tokens, targets)
    torch.testing.assert_close(parts["heads"].sum(dim=(0, 1)) + parts["rest"], whole)
    for head in range(2):  # a last-layer head reaches the logits only directly
        with ablated(model, [(1, head)]):
            without = centred_target_logits(model, tokens, targets)
        torch.testing.assert_close(whole - without, parts["heads"][1, head])


@torch.no_grad()
def test_direct_logit_attribution_centres_each_position_over_the_vocabulary(induction_model):
    """08 §8: "subtract, at each position, the mean logit over the 32 vocabulary entries". The
    shipped model has 32 tokens and 32 positions, so only the centring tells them apart: the
    parts sum to the logits centred over the vocabulary, not over the positions, and only the
    former leaves every position's probabilities as they were."""
    from attn_course.tasks import TASKS

    batch = TASKS["induction"].batch(20, seed=1)
    parts = direct_logit_attribution(induction_model, batch.tokens, batch.targets)
    total = parts["heads"].sum(dim=(0, 1)) + parts["rest"]  # (b, num_tokens)
    logits = induction_model(batch.tokens)  # (b, num_tokens, vocab)
    assert logits.shape[1:] == (32, 32)
    over_vocab = logits - logits.mean(dim=-1, keepdim=True)
    over_positions = logits - logits.mean(dim=1, keepdim=True)
    for centred, same in ((over_vocab, True), (over_positions, False)):
        answer = centred.gather(-1, batch.targets[..., None])[..., 0]
        assert torch.allclose(total, answer, atol=1e-3) is same
        assert torch.allclose(centred.softmax(-1), logits.softmax(-1), atol=1e-6) is same


def test_direct_logit_attribution_of_the_shipped_induction_model(induction_model):
    from attn_course.tasks import TASKS

    batch = TASKS["induction"].batch(100, seed=1)
    heads = direct_logit_attribution(induction_model, batch.tokens, batch.targets)["heads"]
    mean = heads[:, :, batch.scored].mean(dim=-1)  # (num_layers, num_heads)
    assert (mean[1] > 1.0).all()  # every induction head raises the answer directly
    assert mean[0].abs().max() < 0.2  # the previous-token head acts only through layer 1


@torch.no_grad()
def test_patched_head_writes_its_output_from_the_source_run():
    model = small_model(3)
    gen = torch.Generator().manual_seed(0)
    clean, corrupted = torch.randint(9, (2, 3, 8), generator=gen)
    intact = model(corrupted)
    att, cols = model.layers[1], slice(4, 8)  # head 1 of the last layer
    outputs = {}
    for name, tokens in (("clean", clean), ("corrupted", corrupted)):
        hook = att.out_proj.register_forward_pre_hook(
            lambda _, args, name=name: outputs.__setitem__(name, args[0][..., cols].clone())
        )
        model(tokens)
        hook.remove()
    change = (outputs["clean"] - outputs["corrupted"]) @ att.out_proj.weight[:, cols].T
    with patched(model, [(1, 1)], clean):
        torch.testing.assert_close(model(corrupted), intact + change @ model.out_head.weight.T)
        with pytest.raises(AssertionError):  # swapping the roles gives another answer
            torch.testing.assert_close(model(corrupted), model(clean))
    torch.testing.assert_close(model(corrupted), intact)  # restored on exit
    with patched(model, [(0, 0), (1, 1)], corrupted):  # patching a run with itself: no change
        torch.testing.assert_close(model(corrupted), intact)


@torch.no_grad()
def test_mean_ablation_keeps_the_mean_and_removes_the_rest():
    model = small_model()
    tokens = torch.randint(9, (6, 8), generator=torch.Generator().manual_seed(0))
    intact = model(tokens)
    with mean_ablated(model, [(0, 1)], tokens[:1]):  # the mean of one sequence is itself
        torch.testing.assert_close(model(tokens[:1]), intact[:1])
        other = model(tokens[1:])
    assert not torch.allclose(other, intact[1:])
    with ablated(model, [(0, 1)]):
        assert not torch.allclose(model(tokens[1:]), other)  # zero is not the mean
    torch.testing.assert_close(model(tokens), intact)  # restored on exit
