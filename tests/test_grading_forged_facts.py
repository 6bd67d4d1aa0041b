"""Facts the kernel reports, forged or dropped by the notebook, through the real ``grade``.

Some verdicts rest on facts computed in the learner's kernel by the grader's agent
(``storage``, ``mixed_devices``, ``largest``, ``sdpa_calls``: README, "Facts from the
kernel"). A notebook can patch the agent. Each attack here patches it to drop or forge the
fact its wrong answer would fail on; each must earn 0 marks for that check: a missing fact
fails, and where a forged one would pass, the memory measured from outside still fails it.
Also the device test's escape: a forward that reads a value is judged on the meta device.
"""

from __future__ import annotations

import json

import pytest
from support import grade_command, write_notebook

from attn_course.grading.kernel import sandbox

pytestmark = [
    pytest.mark.slow,  # grades a class in kernels
    pytest.mark.skipif(
        sandbox.available() is not None, reason=f"no grading sandbox: {sandbox.available()}"
    ),
]

IMPORTS = "import torch\nfrom torch import nn\nfrom attn_course.grading import check"


def patched(edit: str) -> str:
    """A cell that patches the agent's ``call`` to edit every reply (``r``) before it goes."""
    return (  # a closure, so that two patches stack
        "import attn_course.grading.kernel.agent as agent\n"
        "def _patch(_call):\n"
        "    def call(*args, **kwargs):\n"
        "        r = _call(*args, **kwargs)\n"
        f"        {edit}\n"
        "        return r\n"
        "    return call\n"
        "agent.call = _patch(agent.call)"
    )


CACHED_MASK = (
    "CACHE = torch.ones(2048, 2048, dtype=torch.bool).triu(1)\n"
    "def causal_mask(num_tokens):\n"
    "    return CACHE[:num_tokens, :num_tokens]"
)


def cpu_mask_attention(reads_a_value: bool) -> str:
    """A right CausalAttention but for its mask, built on the CPU in forward."""
    read = "        x.sum().item()  # reads a value: once not judged on meta\n"
    return (
        "class CausalAttention(nn.Module):\n"
        "    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):\n"
        "        super().__init__()\n"
        "        self.d_in, self.d_out, self.context_length = d_in, d_out, context_length\n"
        "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
        "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
        "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
        "        self.dropout = nn.Dropout(dropout)\n"
        "        self.register_buffer('mask', torch.ones(context_length, context_length).triu(1))\n"
        "    def forward(self, x):\n" + (read if reads_a_value else "") + "        n = x.shape[1]\n"
        "        mask = torch.ones(n, n).triu(1).bool()  # on the CPU, whatever x's device\n"
        "        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)\n"
        "        scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5\n"
        "        scores.masked_fill_(mask, -torch.inf)\n"
        "        return self.dropout(torch.softmax(scores, dim=-1)) @ v"
    )


FULL_ATTENTION = (
    "def tiled_attention(queries, keys, values, causal=False, block_size=64):\n"
    "    scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5\n"
    "    if causal:\n"
    "        nq, nk = scores.shape[-2:]\n"
    "        hidden = torch.ones(nq, nk, dtype=torch.bool).triu(1 + nk - nq)\n"
    "        scores = scores.masked_fill(hidden, float('-inf'))\n"
    "    return torch.softmax(scores, dim=-1) @ values"
)

SCORES_BY_HAND = (
    "from attn_course.attention import MultiHeadAttention\n"
    "class MultiHeadAttentionSDPA(MultiHeadAttention):\n"
    "    def forward(self, x):\n"
    "        b, n, _ = x.shape\n"
    "        shape = (b, n, self.num_heads, self.head_dim)\n"
    "        weights = (self.W_key, self.W_query, self.W_value)\n"
    "        k, q, v = (w(x).view(shape).transpose(1, 2) for w in weights)\n"
    "        scores = q @ k.transpose(-2, -1) / self.head_dim**0.5\n"
    "        scores = scores.masked_fill(self.mask.bool()[:n, :n], float('-inf'))\n"
    "        context = self.dropout(torch.softmax(scores, dim=-1)) @ v\n"
    "        return self.out_proj(context.transpose(1, 2).contiguous().view(b, n, self.d_out))"
)

# A mask cached once and hidden on its diagonal too: wrong values, whatever the facts say.
CACHED_DIAGONAL_MASK = (
    "CACHE2 = torch.ones(2048, 2048, dtype=torch.bool).triu(0)\n"
    "def causal_mask(num_tokens):\n"
    "    return CACHE2[:num_tokens, :num_tokens]"
)

# student -> (notebook, the check it must fail, its cells)
ATTACKS = {
    "no_storage": (
        "01_causal_attention",
        "causal_mask",
        [
            IMPORTS,
            patched('r.pop("storage", None)'),
            CACHED_MASK,
            'check("causal_mask", causal_mask)',
        ],
    ),
    "reads_a_value": (
        "01_causal_attention",
        "causal_attention",
        [IMPORTS, cpu_mask_attention(True), 'check("causal_attention", CausalAttention)'],
    ),
    "no_devices": (
        "01_causal_attention",
        "causal_attention",
        [
            IMPORTS,
            patched('r.pop("mixed_devices", None)'),
            cpu_mask_attention(False),
            'check("causal_attention", CausalAttention)',
            # a second attack in the same kernel: the storage forged, the values wrong
            patched('r.update(storage=id(r)) if "storage" in r else None'),
            CACHED_DIAGONAL_MASK,
            'check("causal_mask", causal_mask)',
        ],
    ),
    "forged_largest": (
        "10_tiled_attention",
        "tiled_attention",
        [
            IMPORTS,
            patched('r.update(largest=1) if "largest" in r else None'),
            FULL_ATTENTION,
            'check("tiled_attention", tiled_attention)',
        ],
    ),
    "forged_sdpa_calls": (
        "06_attention_cost",
        "sdpa_attention",
        [
            IMPORTS,
            patched("r.update(sdpa_calls=1)"),
            SCORES_BY_HAND,
            'check("sdpa_attention", MultiHeadAttentionSDPA)',
        ],
    ),
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    root = tmp_path_factory.mktemp("forged")
    for student, (notebook, _, cells) in ATTACKS.items():
        write_notebook(root / "class" / student / f"{notebook}.ipynb", cells)
    process = grade_command("--roster", root / "class", "--out", root / "out", cwd=root)
    assert process.returncode == 0, process.stderr[-3000:]
    return {s: json.loads((root / "out" / "students" / f"{s}.json").read_text()) for s in ATTACKS}


@pytest.mark.parametrize("student", sorted(ATTACKS))
def test_a_dropped_or_forged_fact_earns_nothing(reports, student):
    _, check_id, _ = ATTACKS[student]
    (report,) = reports[student]["notebooks"]
    (result,) = [c for c in report["checks"] if c["id"] == check_id]
    assert result["status"] in ("failed", "error"), result
    expected = {
        "no_storage": "could not see where",
        "reads_a_value": "got a tensor on the CPU",
        "no_devices": "could not see which devices",
        "forged_largest": "memory grew",
        "forged_sdpa_calls": "memory grew",
    }[student]
    assert expected in result["message"], result


def test_a_forged_fact_does_not_pass_wrong_values(reports):
    """README: forging ``storage`` passes the one-memory requirement and nothing else; a
    cached mask that also hides the diagonal fails on its values."""
    (report,) = reports["no_devices"]["notebooks"]
    (result,) = [c for c in report["checks"] if c["id"] == "causal_mask"]
    assert result["status"] == "failed", result
    assert "off by one" in result["message"], result
