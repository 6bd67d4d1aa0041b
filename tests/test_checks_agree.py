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

from attn_course.grading.registry import load_checks
from attn_course.grading.verdicts import run_check

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

CAUSAL_HAND_DROPOUT = (
    CAUSAL_INIT
    + """
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
        w = torch.softmax(scores.masked_fill(self.mask[:n, :n], -torch.inf), dim=-1)
        if self.training:
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

CASES = {  # folder: (notebook stem, check id, answer source, answer name)
    "hook": ("08_trained_attention", "zero_head", ZERO_HEAD_HOOK, "zero_head"),
    "identity": ("08_trained_attention", "zero_head", ZERO_HEAD_IDENTITY, "zero_head"),
    "cpu_mask": ("01_causal_attention", "causal_attention", CAUSAL_CPU_MASK, "CausalAttention"),
    "dropout": ("01_causal_attention", "causal_attention", CAUSAL_HAND_DROPOUT, "CausalAttention"),
    "shared_norm": ("05_transformer_blocks", "encoder_layer", ENCODER_SHARED_NORM, "EncoderLayer"),
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
    assert (remote["status"], remote["message"]) == (local.status.value, local.message)
    if folder == "dropout":
        assert local.status.value == "passed"
    else:
        assert local.status.value == "failed"
