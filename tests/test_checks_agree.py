"""check() in the notebook and the grade command give the same verdict, word for word.

The answers are right in the notebook's eyes or wrong in ways that only show outside it (a
forward hook, a replaced submodule, a mask made on the CPU, a hand-written dropout): each
notebook is graded by ONE grade command, and each answer also goes through ``check()``'s
path (``verdicts.run_check``) in this process.
"""

from __future__ import annotations

import json

import pytest
from support import IMPORTS, grade_ok, write_notebook

from attn_course.grading.checking.registry import load_checks
from attn_course.grading.checking.verdicts import run_check

pytestmark = pytest.mark.slow  # grades notebooks in kernels

ZERO_HEAD_HOOK = """
def zero_head(model, layer, head):
    att = model.layers[layer]
    cols = slice(head * att.head_dim, (head + 1) * att.head_dim)

    def silence(module, inputs):
        x = inputs[0].clone()
        x[..., cols] = 0.0
        return (x,)

    att.out_proj.register_forward_pre_hook(silence)
"""

ZERO_HEAD_IDENTITY = """
def zero_head(model, layer, head):
    model.layers[layer].out_proj = torch.nn.Identity()
"""

# The learner's own __init__: the lecture's is withheld while notebook 01 is graded.
CAUSAL_INIT = """
class CausalAttention(torch.nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = torch.nn.Dropout(dropout)
        ones = torch.ones(context_length, context_length, dtype=torch.bool)
        self.register_buffer("mask", ones.triu(1))
"""

CAUSAL_CPU_MASK = (
    CAUSAL_INIT
    + """
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1)
        scores.masked_fill_(torch.ones(n, n, dtype=torch.bool).triu(1), -torch.inf)
        return self.dropout(torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)) @ values
"""
)

# The attention weights, computed by hand: the forwards below go on from ``w``.
CAUSAL_WEIGHTS = """
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
        w = torch.softmax(scores.masked_fill(self.mask[:n, :n], -torch.inf), dim=-1)
"""

CAUSAL_HAND_DROPOUT = (
    CAUSAL_INIT
    + CAUSAL_WEIGHTS
    + """        if self.training:
            keep = torch.rand_like(w) >= self.dropout.p
            w = w * keep / (1 - self.dropout.p)
        return w @ values
"""
)

# Built on the lecture's parts, which the sandbox grading encoder_layer keeps (it withholds
# only the lecture's EncoderLayer and TransformerBlock).
ENCODER_SHARED_NORM = """
from attn_course import blocks

class EncoderLayer(torch.nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.1):
        super().__init__()
        self.att = blocks.MultiHeadSelfAttention(d_model, num_heads, dropout)
        self.feed_forward = blocks.FeedForward(d_model, d_ff, dropout)
        self.norm1 = blocks.LayerNorm(d_model)
        self.norm2 = self.norm1
        self.dropout = torch.nn.Dropout(dropout)

    def forward(self, x, mask=None):
        attn_out, _ = self.att(x, mask=mask)
        x = self.norm1(x + self.dropout(attn_out))
        return self.norm2(x + self.dropout(self.feed_forward(x)))
"""

# Issue 29: eval() overridden, so the dropout stays on after model.eval().
CAUSAL_EVAL_OVERRIDDEN = (
    CAUSAL_INIT
    + CAUSAL_WEIGHTS
    + """        return self.dropout(w) @ values

    def eval(self):
        return self
"""
)

BPE_IN_PLACE = """
def bpe_merge_step(tokens):
    counts = {}
    for pair in zip(tokens, tokens[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    best = min(counts, key=lambda pair: (-counts[pair], pair))
    i = 0
    while i < len(tokens) - 1:
        if (tokens[i], tokens[i + 1]) == best:
            tokens[i : i + 2] = [tokens[i] + tokens[i + 1]]
        i += 1
    return best, tokens
"""

# Right values, but every key block is visited (its own tile: the lecture's is withheld).
TILED_EVERY_BLOCK = """
def attention_tile(queries, keys, values, m, s, acc, mask=None):
    scores = queries @ keys.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(mask, -torch.inf)
    m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))
    p = torch.exp(scores - m_new)
    rescale = torch.exp(m - m_new)
    return m_new, s * rescale + p.sum(dim=-1, keepdim=True), acc * rescale + p @ values

def tiled_attention(queries, keys, values, causal=False, block_size=64):
    nq, nk = queries.shape[-2], keys.shape[-2]
    queries = queries / keys.shape[-1] ** 0.5
    out = []
    for q0 in range(0, nq, block_size):
        q = queries[..., q0 : q0 + block_size, :]
        m = torch.full((*q.shape[:-1], 1), -torch.inf)
        s, acc = torch.zeros(m.shape), torch.zeros(*q.shape[:-1], values.shape[-1])
        for k0 in range(0, nk, block_size):
            mask = None
            if causal:
                rows = nk - nq + torch.arange(q0, q0 + q.shape[-2])[:, None]
                mask = torch.arange(k0, min(k0 + block_size, nk))[None, :] > rows
            kb, vb = keys[..., k0 : k0 + block_size, :], values[..., k0 : k0 + block_size, :]
            m, s, acc = attention_tile(q, kb, vb, m, s, acc, mask)
        out.append(acc / s)
    return torch.cat(out, dim=-2)
"""

PREVIOUS_CHAR_WITHOUT_RUNNING = """
def find_previous_char_head(model, ids):
    scores = torch.stack([
        block.att.attn_weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))
        for block in model.trf_blocks
    ])
    return divmod(int(scores.argmax()), scores.shape[1])
"""

CASES = {  # folder: (notebook stem, check id, answer source, answer name)
    "hook": ("08_trained_attention", "zero_head", ZERO_HEAD_HOOK, "zero_head"),
    "identity": ("08_trained_attention", "zero_head", ZERO_HEAD_IDENTITY, "zero_head"),
    "cpu_mask": ("01_causal_attention", "causal_attention", CAUSAL_CPU_MASK, "CausalAttention"),
    "dropout": ("01_causal_attention", "causal_attention", CAUSAL_HAND_DROPOUT, "CausalAttention"),
    "shared_norm": ("05_transformer_blocks", "encoder_layer", ENCODER_SHARED_NORM, "EncoderLayer"),
    "eval_override": (
        "01_causal_attention",
        "causal_attention",
        CAUSAL_EVAL_OVERRIDDEN,
        "CausalAttention",
    ),
    "bpe_in_place": ("11_language_model", "bpe_merge_step", BPE_IN_PLACE, "bpe_merge_step"),
    "every_block": ("10_tiled_attention", "tiled_attention", TILED_EVERY_BLOCK, "tiled_attention"),
    "stale_weights": (
        "11_language_model",
        "find_previous_char_head",
        PREVIOUS_CHAR_WITHOUT_RUNNING,
        "find_previous_char_head",
    ),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("agree")
    paths = {
        folder: write_notebook(
            root / folder / f"{stem}.ipynb",
            [IMPORTS, source, f"check({check_id!r}, {name})"],
        )
        for folder, (stem, check_id, source, name) in CASES.items()
    }
    grade_ok(*paths.values(), "--json", root / "report.json", cwd=root)
    report = json.loads((root / "report.json").read_text(encoding="utf-8"))
    by_path = {nb["path"]: nb for nb in report["notebooks"]}
    return {folder: by_path[str(path)] for folder, path in paths.items()}


@pytest.mark.parametrize("folder", sorted(CASES))
def test_check_and_grade_agree(graded, folder):
    stem, check_id, source, name = CASES[folder]
    namespace: dict = {}
    exec(IMPORTS + "\n" + source, namespace)
    local = run_check(load_checks()[check_id], namespace[name])
    (remote,) = [c for c in graded[folder]["checks"] if c["id"] == check_id]
    if folder == "stale_weights":  # the hint names the passage, salted in the grade run
        assert remote["status"] == local.status.value
        assert "EARLIER run" in remote["message"] and "EARLIER run" in local.message
    else:
        assert (remote["status"], remote["message"]) == (local.status.value, local.message)
    if folder == "dropout":
        assert local.status.value == "passed"
    else:
        assert local.status.value == "failed"
