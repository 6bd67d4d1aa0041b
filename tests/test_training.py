"""Training, fast: seeded runs repeat exactly on one machine; the progress bar; the command;
the next-token loss and one training step."""

from __future__ import annotations

import io

import pytest
import torch
import torch.nn.functional as F

from attn_course.__main__ import main
from attn_course.model import ModelConfig, TinyTransformer
from attn_course.tasks import TASKS
from attn_course.training import TrainConfig, next_token_loss, train, train_step


def test_same_seed_same_model_other_seed_other_model():
    task = TASKS["previous-token"]
    a, b = (train(task, TrainConfig(steps=5, seed=1)) for _ in range(2))
    c = train(task, TrainConfig(steps=5, seed=2))
    for name, value in a.state_dict().items():
        assert torch.equal(value, b.state_dict()[name]), name
    assert not torch.equal(a.out_head.weight, c.out_head.weight)


def test_progress_bar_reaches_the_last_step():
    stream = io.StringIO()
    train(TASKS["kv-lookup"], TrainConfig(steps=30), progress=stream)
    lines = stream.getvalue().split("\r")
    assert lines[-1].startswith("[" + "#" * 30 + "] 30/30 loss ") and lines[-1].endswith("s\n")
    assert "] 25/30 " in stream.getvalue()


def test_unknown_task_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["train", "sorting"])
    assert "invalid choice" in capsys.readouterr().err


# --- the next-token objective and one training step (lecture 08, section 4) ----------------


def _random_logits(b: int, num_tokens: int, vocab_size: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    logits = 3 * torch.randn(b, num_tokens, vocab_size, generator=generator)
    tokens = torch.randint(vocab_size, (b, num_tokens), generator=generator)
    return logits, tokens


def test_next_token_loss_scores_position_t_against_the_token_after_it():
    logits, tokens = _random_logits(3, 7, 5, seed=0)
    log_probs = torch.log_softmax(logits, dim=-1)
    by_hand = [-log_probs[i, t, tokens[i, t + 1]] for i in range(3) for t in range(6)]
    loss = next_token_loss(logits, tokens)
    assert loss.shape == ()
    assert torch.allclose(loss, torch.stack(by_hand).mean())
    pairs = [(i, t) for i in range(3) for t in range(6)]
    backwards = torch.stack([-log_probs[i, t + 1, tokens[i, t]] for i, t in pairs])
    unshifted = torch.stack([-log_probs[i, t, tokens[i, t]] for i in range(3) for t in range(7)])
    assert not torch.allclose(loss, backwards.mean())  # the shift the other way differs
    assert not torch.allclose(loss, unshifted.mean())


def test_next_token_loss_is_finite_for_logits_past_exp_overflow():
    logits, tokens = _random_logits(2, 4, 6, seed=1)
    big = 1000 * logits  # exp(1000) is inf in float32: a naive softmax gives NaN
    loss = next_token_loss(big, tokens)
    assert torch.isfinite(loss)
    assert torch.allclose(loss, next_token_loss(big.double(), tokens).float())


@pytest.mark.parametrize("shapes", [((2, 1, 5), (2, 1)), ((2, 4, 5), (2, 3)), ((4, 5), (4,))])
def test_next_token_loss_refuses_what_it_cannot_score(shapes):
    logits_shape, tokens_shape = shapes
    with pytest.raises(ValueError, match="num_tokens >= 2"):
        next_token_loss(torch.zeros(logits_shape), torch.zeros(tokens_shape, dtype=torch.long))


def test_one_forward_pass_scores_every_prefix_of_a_causal_model():
    """The claim of lecture 08: with the causal mask, the loss over all positions of one
    forward pass is the mean of the losses of each prefix run on its own."""
    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig(vocab_size=11, context_length=9, d_model=16)).eval()
    tokens = torch.randint(11, (1, 9), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        whole = next_token_loss(model(tokens), tokens)
        prefixes = [
            F.cross_entropy(model(tokens[:, : t + 1])[:, -1], tokens[:, t + 1]) for t in range(8)
        ]
        assert torch.allclose(whole, torch.stack(prefixes).mean(), atol=1e-6)
        model.layers[0].mask.zero_()  # no mask: every position sees the future
        assert not torch.allclose(next_token_loss(model(tokens), tokens), whole, atol=1e-3)


def _small_model(seed: int = 0) -> TinyTransformer:
    torch.manual_seed(seed)
    return TinyTransformer(ModelConfig(vocab_size=13, context_length=8, d_model=16))


def test_train_step_updates_by_the_clipped_gradient_of_the_loss_before_the_update():
    model, tokens = _small_model(), torch.randint(13, (4, 8), generator=torch.Generator())
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    loss = next_token_loss(model(tokens), tokens)
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    norm = torch.cat([g.flatten() for g in grads.values()]).norm()
    max_norm = norm.item() / 4  # the clip is active: the gradient shrinks 4-fold
    for p in model.parameters():
        p.grad = torch.ones_like(p)  # left over from an earlier backward: must not leak in
    got = train_step(model, torch.optim.SGD(model.parameters(), lr=0.1), tokens, max_norm)
    assert isinstance(got, float) and got == pytest.approx(loss.item(), rel=1e-6)
    for name, p in model.named_parameters():
        want = before[name] - 0.1 * grads[name] * max_norm / norm
        assert torch.allclose(p.detach(), want, atol=1e-6), name


def test_train_step_lowers_the_loss_on_its_batch():
    model, tokens = _small_model(1), torch.randint(13, (4, 8), generator=torch.Generator())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = [train_step(model, optimizer, tokens) for _ in range(5)]
    assert all(b < a for a, b in zip(losses, losses[1:], strict=False)), losses
