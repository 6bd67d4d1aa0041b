"""``python -m attn_course generate PROMPT``: the shipped Shakespeare model continues a prompt.

Example: ``python -m attn_course generate "ROMEO:" --max-new-tokens 300 --temperature 0.8
--top-k 10 --top-p 0.9 --seed 1``. Prints the prompt and its continuation. ``--temperature
0`` is greedy; ``--no-cache`` runs the whole window through the model at every step (same
text, slower).
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from ..generation import generate
from ..lm import pretrained_lm, tokenizer
from ..sampling import validate_sampling

__all__ = ["main"]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m attn_course generate",
        description="Continue PROMPT with the course's shipped Shakespeare model.",
    )
    parser.add_argument("prompt", help='the text to continue, e.g. "ROMEO:"')
    parser.add_argument("--max-new-tokens", type=int, default=300, help="default 300")
    parser.add_argument("--temperature", type=float, default=0.8, help="0 = greedy; default 0.8")
    parser.add_argument("--top-k", type=int, default=None, help="keep the K most likely")
    parser.add_argument("--top-p", type=float, default=None, help="keep the nucleus of mass P")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draws; default 0")
    parser.add_argument("--no-cache", action="store_true", help="generate without the KV cache")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)  # one step is many small operations: 1 thread waits least
    try:
        if args.max_new_tokens < 1:
            raise ValueError(f"--max-new-tokens {args.max_new_tokens} must be at least 1.")
        validate_sampling(args.temperature, args.top_k, args.top_p)
        model = pretrained_lm()
        prompt = tokenizer().encode_prompt(args.prompt, model.cfg.context_length)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if prompt.note:
        print(f"note: {prompt.note}", file=sys.stderr)
    start = time.perf_counter()
    tokens, _ = generate(
        model,
        torch.tensor([prompt.ids]),
        args.max_new_tokens,
        use_cache=not args.no_cache,
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        generator=torch.Generator().manual_seed(args.seed),
    )
    seconds = time.perf_counter() - start
    print(args.prompt + tokenizer().decode(tokens[0, len(prompt.ids) :].tolist()))
    cache = "without" if args.no_cache else "with"
    print(
        f"({args.max_new_tokens} tokens in {seconds:.2f} s, {cache} the KV cache)", file=sys.stderr
    )
    return 0
