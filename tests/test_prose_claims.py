"""Numbers in the lectures' prose agree with the outputs printed beside them.

Each claim names a phrase of a markdown cell, the figure that phrase states, and a regular
expression whose first group picks the printed number out of the text output of a code cell
near that markdown cell (at most ``WINDOW`` cells before or after it). The test fails when the
phrase is gone, when no nearby output prints the number, or when the printed number, rounded
as the prose rounds it, differs from the stated figure.
"""

from __future__ import annotations

import re

import nbformat
import pytest
from support import ROOT

WINDOW = 3

# (notebook, phrase in the prose, figure the prose states, decimals it is rounded to,
#  regex over a nearby cell's text output whose group 1 is the printed number)
CLAIMS = [
    (
        "11_language_model",
        "the final losses must agree within\n0.15 nats",
        "0.15",
        2,
        r"ends within ([\d.]+) nats of the stored run: True",
    ),
    (
        "11_language_model",
        "500 steps of AdamW",
        "500",
        0,
        r"context \d+, (\d+) steps of batch",
    ),
    (
        "11_language_model",
        "At step 0 the untrained model's held-out loss, 4.43",
        "4.43",
        2,
        r"\n +0 +[\d.]+ +([\d.]+)",
    ),
    (
        "11_language_model",
        "all 75 characters (4.32)",
        "4.32",
        2,
        r"log\(75\) = ([\d.]+) nats",
    ),
    (
        "11_language_model",
        "held-out loss is down to 2.71",
        "2.71",
        2,
        r"\n +50 +[\d.]+ +([\d.]+)",
    ),
    (
        "11_language_model",
        "loss (3.39) stands above",
        "3.39",
        2,
        r"\n +50 +([\d.]+)",
    ),
    (
        "11_language_model",
        "L0 H0 gives 0.98 of its weight",
        "0.98",
        2,
        r"L0 H0 +([\d.]+)",
    ),
    (
        "11_language_model",
        "L0 H1 0.97 to the one two back",
        "0.97",
        2,
        r"L0 H1 +[\d.]+ +([\d.]+)",
    ),
    (
        "11_language_model",
        "gives the first letter of the\nword 0.41",
        "0.41",
        2,
        r"best word start head: L1 H3, score ([\d.]+)",
    ),
    (
        "11_language_model",
        "gives the line break 0.37",
        "0.37",
        2,
        r"best line start head: L2 H0, score ([\d.]+)",
    ),
    (
        "11_language_model",
        "uniform head's 0.03 and 0.02",
        "0.03",
        2,
        r"uniform +(?:[\d.]+ +){2}([\d.]+)",
    ),
    (
        "11_language_model",
        "0.03 and 0.02",
        "0.02",
        2,
        r"uniform +(?:[\d.]+ +){3}([\d.]+)",
    ),
    (
        "11_language_model",
        "speaker-name score, 0.19 (L1 H2)",
        "0.19",
        2,
        r"best speaker name head: L1 H2, score ([\d.]+)",
    ),
    (
        "11_language_model",
        "uniform head's 0.17",
        "0.17",
        2,
        r"uniform +(?:[\d.]+ +){4}([\d.]+)",
    ),
    (
        "11_language_model",
        "far above the uniform head's 0.03",
        "0.03",
        2,
        r"uniform +(?:[\d.]+ +){5}([\d.]+)",
    ),
    (
        "11_language_model",
        "the most is L1 H2's 0.24",
        "0.24",
        2,
        r"best first token head: L1 H2, score ([\d.]+)",
    ),
    (
        "11_language_model",
        "L0 H2 scores at most 0.21",
        "0.21",
        2,
        r"L0 H2 +(?:[\d.]+ +){2}([\d.]+)",
    ),
    (
        "11_language_model",
        "**three back (0.82)**",
        "0.82",
        2,
        r"L0 H2 +(?:[\d.]+ +){3}([\d.]+)(?: +[\d.]+){6}",
    ),
    (
        "11_language_model",
        "L0 H3 puts 0.38 one back",
        "0.38",
        2,
        r"L0 H3 +[\d.]+ +([\d.]+)(?: +[\d.]+){8}",
    ),
    (
        "11_language_model",
        "L1 H2 puts 0.94",
        "0.94",
        2,
        r"L1 H2 +(?:[\d.]+ +){9}([\d.]+)",
    ),
    (
        "11_language_model",
        "its score reaches 0.5",
        "0.5",
        1,
        r"named at a score of ([\d.]+)",
    ),
    (
        "11_language_model",
        "(second copy 1.97)",
        "1.97",
        2,
        r"L0 H1 +[\d.]+ +([\d.]+)",
    ),
    (
        "11_language_model",
        "(0.60 against 0.11)",
        "0.60",
        2,
        r"L0 H2 +[\d.]+ +([\d.]+)",
    ),
    (
        "11_language_model",
        "(1.50): L0 H2 serves",
        "1.50",
        2,
        r"L0 H2 +([\d.]+)",
    ),
    (
        "11_language_model",
        "Only L0 H3 can go (0.13)",
        "0.13",
        2,
        r"L0 H3 +[\d.]+ +([\d.]+)",
    ),
    (
        "11_language_model",
        "from 0.67 to 0.24",
        "0.24",
        2,
        r"L0 H0 +([\d.]+) +[\d.]+ +[\d.]+ +[\d.]+\n",
    ),
    (
        "11_language_model",
        "in the queries, to 0.34",
        "0.34",
        2,
        r"L0 H0 +[\d.]+ +[\d.]+ +([\d.]+) +[\d.]+\n",
    ),
    (
        "11_language_model",
        "(1.38, 1.10)",
        "1.38",
        2,
        r"L0 H0 +[\d.]+ +([\d.]+) +[\d.]+ +[\d.]+\n",
    ),
    (
        "11_language_model",
        "1.38, 1.10)",
        "1.10",
        2,
        r"L0 H0 +[\d.]+ +[\d.]+ +[\d.]+ +([\d.]+)\n",
    ),
    (
        "11_language_model",
        "the score falls to 0.40",
        "0.40",
        2,
        r"L0 H2 +([\d.]+) +[\d.]+ +[\d.]+ +[\d.]+\n",
    ),
    (
        "11_language_model",
        "(0.71, second copy 0.10)",
        "0.71",
        2,
        r"L0 H2 +[\d.]+ +[\d.]+ +([\d.]+) +[\d.]+\n",
    ),
    (
        "11_language_model",
        "second copy 0.10)",
        "0.10",
        2,
        r"L0 H2 +[\d.]+ +[\d.]+ +[\d.]+ +([\d.]+)\n",
    ),
    (
        "11_language_model",
        "copying would be right for 7.9 %",
        "7.9",
        1,
        r"\n +2 +[\d.]+% +([\d.]+)%",
    ),
    (
        "11_language_model",
        "(of the 26.9 % that",
        "26.9",
        1,
        r"\n +2 +([\d.]+)%",
    ),
    (
        "11_language_model",
        "after 4 for 2.4 %",
        "2.4",
        1,
        r"\n +4 +[\d.]+% +([\d.]+)%",
    ),
    (
        "11_language_model",
        "after 8 for only 0.5 %",
        "0.5",
        1,
        r"\n +8 +[\d.]+% +([\d.]+)%",
    ),
    (
        "11_language_model",
        "the second copy costs 1.50 nats per character",
        "1.50",
        2,
        r"plain windows \(recorded\) +[\d.]+ +([\d.]+)",
    ),
    (
        "11_language_model",
        "against 1.44 for the first",
        "1.44",
        2,
        r"plain windows \(recorded\) +([\d.]+)",
    ),
    (
        "11_language_model",
        "the best induction score is 0.01 (L0 H2)",
        "0.01",
        2,
        r"plain windows \(recorded\) +[\d.]+ +[\d.]+ +L0 H2 ([\d.]+)",
    ),
    (
        "11_language_model",
        "loops (distinct-2 0.10)",
        "0.10",
        2,
        r"greedy \(one text\) +[\d.]+ +[\d.]+ +([\d.]+)",
    ),
    (
        "11_language_model",
        "(0.89 ± 0.08)",
        "0.89",
        2,
        r"T = 1\.0 +([\d.]+) ±",
    ),
    (
        "11_language_model",
        "(0.89 ± 0.08)",
        "0.08",
        2,
        r"T = 1\.0 +[\d.]+ ± ([\d.]+)",
    ),
    (
        "11_language_model",
        "distinct-2 0.89 ± 0.32",
        "0.32",
        2,
        r"T = 1\.0 +(?:[\d.]+ ± [\d.]+ +){2}[\d.]+ ± ([\d.]+)",
    ),
    (
        "11_language_model",
        "its distinct-2 is 0.11",
        "0.11",
        2,
        r"lowest distinct-2 of the 8 texts: T = 1\.0 ([\d.]+)",
    ),
    (
        "11_language_model",
        "0.94 to 0.96 real words",
        "0.94",
        2,
        r"T = 0\.8 +([\d.]+) ±",
    ),
    (
        "11_language_model",
        "0.94 to 0.96 real words",
        "0.96",
        2,
        r"T = 0\.8, top-p 0\.9 +([\d.]+) ±",
    ),
    (
        "11_language_model",
        "second copy costs 0.11 nats per character",
        "0.11",
        2,
        r"mean loss on the second copy: ([\d.]+)",
    ),
    (
        "11_language_model",
        "against 1.45 for the\nfirst",
        "1.45",
        2,
        r"mean loss on the first copy: +([\d.]+)",
    ),
    (
        "11_language_model",
        "L1 H2 with an\ninduction score of 0.67",
        "0.67",
        2,
        r"strongest: L1 H2, ([\d.]+)",
    ),
    (
        "11_language_model",
        "induction score falls from 0.67 to 0.03",
        "0.03",
        2,
        r"L0 H0 +[\d.]+ +[\d.]+ +([\d.]+)",
    ),
    (
        "11_language_model",
        "the second copy costs\n2.77 nats per character",
        "2.77",
        2,
        r"L0 H0 +[\d.]+ +([\d.]+)",
    ),
    (
        "11_language_model",
        "no less than the first (2.72)",
        "2.72",
        2,
        r"L0 H0 +([\d.]+)",
    ),
    (
        "00_numpy_attention",
        "most similar to itself (1.495)",
        "1.495",
        3,
        r"against every token: \[\s*[\d.]+\s+([\d.]+)",
    ),
    (
        "00_numpy_attention",
        'to "starts" (1.4754)',
        "1.4754",
        4,
        r"against every token: \[\s*(?:[\d.]+\s+){2}([\d.]+)",
    ),
    (
        "00_numpy_attention",
        "the answer, 14.8, blends",
        "14.8",
        1,
        r"scores x  1: .*-> value ([\d.]+)",
    ),
    (
        "00_numpy_attention",
        "almost exactly the first key's value, 10.",
        "10",
        0,
        r"scores x 10: .*-> value ([\d.]+)",
    ),
    (
        "00_numpy_attention",
        "unscaled it gives 0.99 of its weight to itself",
        "0.99",
        2,
        r"without scaling:\n(?:.*\n){3}.*?([\d.]+)\]\]",
    ),
    (
        "00_numpy_attention",
        "scaled it keeps 0.15 for `x1`",
        "0.15",
        2,
        r"with scaling by sqrt\(6\):\n(?:.*\n){3}\s*\[\s*([\d.]+)",
    ),
    (
        "00_numpy_attention",
        "start with a standard deviation of about $1/3$",
        "0.33",
        2,
        r"d_model=768, 12 heads: std of the scaled scores ([\d.]+)",
    ),
    (
        "00_numpy_attention",
        "agree to about 6 significant",
        "6",
        0,
        r"normwise \|torch - numpy\| / \|numpy\|: \S+ about (\d+) digits",
    ),
    ("00_numpy_attention", "of one element is 1.3e-05", "1.3e-05", 6, r"element: ([\d.e-]+),"),
    ("00_numpy_attention", "$-0.317$", "-0.317", 3, r"on output (-[\d.]+);"),
    ("00_numpy_attention", "by 1.4e-07 normwise", "1.4e-07", 8, r"inputs alone, normwise: (\S+)"),
    ("00_numpy_attention", "of\nthe 3.8e-07 total", "3.8e-07", 8, r"/ \|numpy\|: ([\d.e-]+),"),
    ("00_numpy_attention", "from 2.6 at `d_k = 4`", "2.6", 1, r"\n +4 \|[^|]*\| +([\d.]+)"),
    ("00_numpy_attention", "to 64 at 4,096", "64", 0, r"\n4096 \|[^|]*\| +([\d.]+)"),
    (
        "00_numpy_attention",
        "between 1.30 and 1.43",
        "1.30",
        2,
        r"\n +4 \|[^|]*\| +[\d.]+ +([\d.]+)",
    ),
    (
        "00_numpy_attention",
        "between 1.30 and 1.43",
        "1.43",
        2,
        r"\n +64 \|[^|]*\| +[\d.]+ +([\d.]+)",
    ),
    ("00_numpy_attention", "(16 at 4,096)", "16", 0, r"\n4096(?: \|.*){2}\| +([\d.]+)"),
    ("00_numpy_attention", "from 0.00 to 1.00", "0.00", 2, r"\n +4 \|.* ([\d.]+)\n"),
    ("00_numpy_attention", "from 0.00 to 1.00", "1.00", 2, r"\n4096 \|.* ([\d.]+)\n"),
    ("01_causal_attention", "sum to 1.1111", "1.1111", 4, r"1 / \(1 - 0.1\) = ([\d.]+)"),
    ("02_multihead_wrapper", "from 0.025 to 0.326", "0.025", 3, r"\n +1 \| +[\d.]+ +([\d.]+)"),
    ("02_multihead_wrapper", "from 0.025 to 0.326", "0.326", 3, r"\n +64 \| +[\d.]+ +([\d.]+)"),
    ("02_multihead_wrapper", "(8 × 0.041 at", "0.041", 3, r"\n +64 \| +([\d.]+)"),
    ("02_multihead_wrapper", "between 0.025 and 0.043", "0.025", 3, r"\n +1 \| +([\d.]+)"),
    ("02_multihead_wrapper", "between 0.025 and 0.043", "0.043", 3, r"\n +16 \| +([\d.]+)"),
    (
        "02_multihead_wrapper",
        "largest weight averages 0.26 instead of 0.18",
        "0.26",
        2,
        r"\n +64 \|.*\| +[\d.]+ +([\d.]+)",
    ),
    (
        "02_multihead_wrapper",
        "averages only 0.26 (uniform: 0.17)",
        "0.26",
        2,
        r"\n +0\.1 \| +([\d.]+)",
    ),
    ("02_multihead_wrapper", "favourite (0.72 on average)", "0.72", 2, r"\n +0\.01 \| +([\d.]+)"),
    (
        "05_transformer_blocks",
        "input (cosine 0.97)",
        "0.97",
        2,
        r"with Add & Norm .*cosine with the input ([\d.]+)",
    ),
    (
        "05_transformer_blocks",
        "embedding (38.6M of 124.4M)",
        "38.6",
        1,
        r"token embedding ([\d.]+)M of",
    ),
    (
        "05_transformer_blocks",
        "124,439,808 for GPT-2 small",
        "124439808",
        0,
        r"small +768 +12 .* ([\d,]+)\n",
    ),
    (
        "05_transformer_blocks",
        "two thirds of each\nblock's parameters",
        "67",
        0,
        r"feed-forward share of a block: ([\d.]+)%",
    ),
    ("05_transformer_blocks", "(rounded to -998,244,352)", "-998244352", 0, r"bfloat16: (-[\d.]+)"),
    ("05_transformer_blocks", "(-65,504 in float16)", "-65504", 0, r"min = (-[\d.]+)\)"),
    ("05_transformer_blocks", "between 0.05 and 0.89", "0.05", 2, r"entries from ([\d.]+) to"),
    (
        "05_transformer_blocks",
        "between 0.05 and 0.89",
        "0.89",
        2,
        r"entries from [\d.]+ to ([\d.]+)",
    ),
    ("05_transformer_blocks", "std of only about 0.01", "0.01", 2, r"std ([\d.]+) within a row"),
    (
        "06_attention_cost",
        "4,608\ntokens for GPT-2 small",
        "4608",
        0,
        r"whole block: +crossover at n = 6d = ([\d,]+) tokens",
    ),
    (
        "06_attention_cost",
        "49,152 for a model of width 8,192",
        "49152",
        0,
        r"d = 8192: +crossover at n = 6d = ([\d,]+) tokens",
    ),
    (
        "06_attention_cost",
        "counted work by about 100",
        "100",
        -1,
        r"counted work grows (\d+)x",
    ),
    ("06_attention_cost", "(0.56 GiB)", "0.56", 2, r"1,024 +([\d.]+) GiB"),
    ("06_attention_cost", "9,216 tokens for GPT-2 small", "9216", 0, r"n = 12d = ([\d,]+) tokens"),
    ("06_attention_cost", "only 6 MiB even at 128k", "6", 0, r"131,072 .* ([\d.]+) MiB"),
    ("06_attention_cost", "has grown to 9 GiB", "9", 0, r"131,072 .* ([\d.]+) GiB\n"),
    (
        "06_attention_cost",
        "still\n768 GiB at 128k tokens",
        "768",
        0,
        r"131,072 +[\d,.]+ GiB +([\d,.]+) GiB",
    ),
    (
        "07_bug_zoo",
        "standard deviation is 0.06 instead of 1",
        "0.06",
        2,
        r"\n +1 \|.*\| +[\d.]+ +([\d.]+)\n",
    ),
    (
        "08_trained_attention",
        "the largest weight in a row is 0.29 on average",
        "0.29",
        2,
        r"untrained: .*mean over rows and heads: ([\d.]+)",
    ),
    (
        "08_trained_attention",
        "0.84-0.92 to 0.15",
        "0.15",
        2,
        r"keys without L0 H3 +layer-1 induction scores: ([\d.]+)",
    ),
    ("08_trained_attention", "99.9% to 25.6%", "25.6", 1, r"without L0 H3: +([\d.]+)%"),
    (
        "10_tiled_attention",
        "each such tensor is 16 MiB",
        "16",
        0,
        r"float32 tensor at n = 1,024: (\d+) MiB",
    ),
    ("10_tiled_attention", "a tile is 256 KiB", "256", 0, r"tile: (\d+) KiB"),
    (
        "08_trained_attention",
        "accuracy collapses to 2.0%",
        "2.0",
        1,
        r"without all of layer 1: ([\d.]+)%",
    ),
    (
        "08_trained_attention",
        "falls to 11.1%",
        "11.1",
        1,
        r"induction-fixed +tested on induction +: +([\d.]+)%",
    ),
    (
        "08_trained_attention",
        "reaches 83.1% after 1,000 steps",
        "83.1",
        1,
        r"after  1000 steps: ([\d.]+)%",
    ),
    (
        "08_trained_attention",
        "far above chance (3.1%)",
        "3.1",
        1,
        r"chance: 1 in 32 = ([\d.]+)%",
    ),
    (
        "08_trained_attention",
        "below 1e-05 over the 32\npositions",
        "1e-05",
        5,
        r"positions 0\.\.31 +k = 9: .* < ([\de.-]+): True",
    ),
    (
        "08_trained_attention",
        "below 1e-04 over 1,024",
        "1e-04",
        4,
        r"positions 0\.\.1023 k = 9: .* < ([\de.-]+): True",
    ),
    (
        "08_trained_attention",
        "accuracy creeps up to 24.7%",
        "24.7",
        1,
        r"\n  150 +[\d.]+ +[\d.]+ +([\d.]+)%",
    ),
    (
        "08_trained_attention",
        "the previous-token score rises from 0.15 to 0.69",
        "0.69",
        2,
        r"\n  325 +([\d.]+)",
    ),
    (
        "08_trained_attention",
        "the best induction score from 0.16 to 0.75",
        "0.16",
        2,
        r"\n  175 +[\d.]+ +([\d.]+)",
    ),
    (
        "08_trained_attention",
        "and the accuracy from 27.9% to 95.1%",
        "95.1",
        1,
        r"\n  325 +[\d.]+ +[\d.]+ +([\d.]+)%",
    ),
    (
        "08_trained_attention",
        "L0 H3's row entropy is 0.11",
        "0.11",
        2,
        r"trained on induction\n.*\n(?:.*\n){3}L0 H3 +(?:[\d.]+ +){4}([\d.]+)",
    ),
    (
        "08_trained_attention",
        "stay broad (0.71 to 0.80)",
        "0.80",
        2,
        r"trained on induction\n.*\nL0 H0 +(?:[\d.]+ +){4}([\d.]+)",
    ),
    (
        "08_trained_attention",
        "Half of the rows (3,256 of 6,417)",
        "3256",
        0,
        r"of them in the repeat: ([\d,]+)",
    ),
    (
        "08_trained_attention",
        "the layer-1 scores are 0.96, 0.89, 0.96 and 0.95",
        "0.89",
        2,
        r"the repeat only: [\d.]+ ([\d.]+)",
    ),
    (
        "08_trained_attention",
        "its largest weight is 0.55 to 0.56",
        "0.56",
        2,
        r"largest weight of the row, mean: +([\d.]+)",
    ),
    (
        "08_trained_attention",
        "largest weight in more than 0.07 of these rows",
        "0.07",
        2,
        r"key position that gets it most often: +([\d.]+)",
    ),
    (
        "08_trained_attention",
        "copies the token it attends to (100% of the 32 tokens)",
        "100",
        0,
        r"L1 H3: OV top-1 on the diagonal for (\d+)%",
    ),
    (
        "08_trained_attention",
        "keys whose previous token is the query's (100%)",
        "100",
        0,
        r"L1 H3: .*QK through L0 H3 for (\d+)%",
    ),
    (
        "08_trained_attention",
        "(0.05 for every layer-1 head",
        "0.05",
        2,
        r"L1 H2 reading: (?:[\d.]+ ){3}([\d.]+)",
    ),
    (
        "08_trained_attention",
        "against 0.09 to 0.17 for the",
        "0.17",
        2,
        r"L1 H2 reading: [\d.]+ ([\d.]+)",
    ),
    (
        "08_trained_attention",
        "(‖W_O W_V‖ 5.86 against 2.44 to 2.62)",
        "5.86",
        2,
        r"layer-0 heads H0 H1 H2 H3: (?:[\d.]+ ){3}([\d.]+)",
    ),
    (
        "08_trained_attention",
        "25.6% zero-ablated and 27.4% mean-ablated",
        "27.4",
        1,
        r"mean-ablated ([\d.]+)%",
    ),
    (
        "08_trained_attention",
        "(induction scores 0.02 to 0.06 on this sequence",
        "0.06",
        2,
        r"layer-1 induction scores: +[\d.]+ ([\d.]+)",
    ),
    (
        "08_trained_attention",
        "against 0.98 for the induction model's L0 H3",
        "0.98",
        2,
        r"the induction model: (?:[\d.]+ ){3}([\d.]+)",
    ),
    (
        "08_trained_attention",
        "the latest-copy rule scores\n100.00% on both tasks",
        "100.00",
        2,
        r"induction-colliding .*latest-copy rule ([\d.]+)%",
    ),
    (
        "08_trained_attention",
        "reaches 99.31% after 800 steps",
        "99.31",
        2,
        r"after   800 steps: ([\d.]+)%",
    ),
    (
        "08_trained_attention",
        "and 99.55% after 2,400",
        "99.55",
        2,
        r"after  2400 steps: ([\d.]+)%",
    ),
    (
        "08_trained_attention",
        "21.9% of the scored positions are ambiguous",
        "21.9",
        1,
        r"induction-colliding +ambiguous scored positions +([\d.]+)%",
    ),
    (
        "09_generation_kv_cache",
        "equals its 12.6 GiB of weights",
        "12.6",
        1,
        r"Llama-2-7B +([\d.]+)",
    ),
    (
        "09_generation_kv_cache",
        "at about 25,700 tokens",
        "25700",
        -2,
        r"Llama-2-7B +[\d.]+ +[\d,]+ +([\d,]+)",
    ),
    (
        "09_generation_kv_cache",
        "needs about 122,500 tokens",
        "122500",
        -2,
        r"Llama-3-8B +[\d.]+ +[\d,]+ +([\d,]+)",
    ),
    (
        "09_generation_kv_cache",
        "a batch of 15 at its 8,192",
        "15",
        0,
        r"Llama-3-8B(?: +[\d.,]+){3} +([\d.]+)",
    ),
    (
        "09_generation_kv_cache",
        "only with 27 full sequences",
        "27",
        0,
        r"Mistral-7B-v0.1(?: +[\d.,]+){3} +([\d.]+)",
    ),
    (
        "09_generation_kv_cache",
        "reads 32 GiB of cache",
        "32",
        0,
        r"Llama-2-7B +1 +1 +([\d.]+)",
    ),
    (
        "09_generation_kv_cache",
        "about 10 ms at the H100's bandwidth",
        "10",
        0,
        r"Llama-2-7B +1 +1 +[\d.]+ +([\d.]+)",
    ),
    (
        "09_generation_kv_cache",
        "Llama-3-8B reads 8 GiB",
        "8",
        0,
        r"Llama-3-8B +4 +4 +([\d.]+)",
    ),
    (
        "09_generation_kv_cache",
        "only 71 FLOPs per byte of cache",
        "71",
        0,
        r"Falcon-7B \(MQA\) +\d+ +(\d+)",
    ),
    (
        "09_generation_kv_cache",
        "far below the 295 the GPU",
        "295",
        0,
        r"H100: (\d+) FLOPs per byte",
    ),
    (
        "09_generation_kv_cache",
        "but scores 46.6",
        "46.6",
        1,
        r"MQA +([\d.]+)",
    ),
    (
        "09_generation_kv_cache",
        "(0.28 s) and scores 47.1",
        "47.1",
        1,
        r"GQA-8 +([\d.]+)",
    ),
    (
        "09_generation_kv_cache",
        "draw on about 131,000 tokens",
        "131000",
        -3,
        r"= ([\d,]+) tokens",
    ),
    (
        "09_generation_kv_cache",
        "Greedy text is all real words (100 %)",
        "100",
        0,
        r"greedy +(\d+)%",
    ),
    (
        "09_generation_kv_cache",
        "most likely under the model (0.11 nats",
        "0.11",
        2,
        r"greedy +\d+% +[\d.]+ +[\d.]+ +([\d.]+)",
    ),
    (
        "09_generation_kv_cache",
        "distinct-2 of 0.12",
        "0.12",
        2,
        r"greedy +\d+% +[\d.]+ +([\d.]+)",
    ),
    (
        "09_generation_kv_cache",
        "misspells more (83 % real",
        "83",
        0,
        r"T = 1.0 +(\d+)%",
    ),
    (
        "09_generation_kv_cache",
        "words, loss 1.46)",
        "1.46",
        2,
        r"T = 1.0 +\d+%(?: +[\d.]+){2} +([\d.]+)",
    ),
    (
        "09_generation_kv_cache",
        "At temperature 0.8, 92 % of the generated words",
        "92",
        0,
        r"T = 0.8 +(\d+)%",
    ),
    (
        "09_generation_kv_cache",
        "top-k 10 (93 %)",
        "93",
        0,
        r"top-k 10 +(\d+)%",
    ),
    (
        "09_generation_kv_cache",
        "top-p 0.9 (96 %)",
        "96",
        0,
        r"top-p 0.9 +(\d+)%",
    ),
    (
        "09_generation_kv_cache",
        "(distinct-1 0.81 at T = 0.8",
        "0.81",
        2,
        r"T = 0.8 +\d+% +([\d.]+)",
    ),
    (
        "09_generation_kv_cache",
        "0.52 with top-p",
        "0.52",
        2,
        r"top-p 0.9 +\d+% +([\d.]+)",
    ),
    (
        "09_generation_kv_cache",
        "raise the held-out loss from 1.452",
        "1.452",
        3,
        r"\n +4 +([\d.]+)",
    ),
    (
        "09_generation_kv_cache",
        "to 2.646 nats per",
        "2.646",
        3,
        r"\n +2 +([\d.]+)",
    ),
    (
        "09_generation_kv_cache",
        "to 3.260, not far",
        "3.260",
        3,
        r"\n +1 +([\d.]+)",
    ),
    (
        "09_generation_kv_cache",
        "not far from the 4.3 of guessing",
        "4.3",
        1,
        r"= ([\d.]+) nats",
    ),
]


def text_outputs(cell: nbformat.NotebookNode) -> str:
    """The stream and text/plain outputs of a code cell, joined."""
    parts = []
    for output in cell.get("outputs", []):
        if "text" in output:
            parts.append(output["text"])
        elif "text/plain" in output.get("data", {}):
            parts.append(output["data"]["text/plain"])
    return "\n".join(parts)


def nearby_outputs(cells: list, phrase: str) -> list[str]:
    """Text outputs of the code cells within WINDOW cells of the markdown cell with ``phrase``."""
    found = [i for i, c in enumerate(cells) if c.cell_type == "markdown" and phrase in c.source]
    assert len(found) == 1, f"the phrase {phrase!r} is in {len(found)} markdown cells, not 1"
    lo, hi = max(0, found[0] - WINDOW), found[0] + WINDOW + 1
    return [text_outputs(c) for c in cells[lo:hi] if c.cell_type == "code"]


@pytest.mark.parametrize(
    ("notebook", "phrase", "figure", "decimals", "pattern"),
    CLAIMS,
    ids=[f"{c[0]}::{c[1][:40]}" for c in CLAIMS],
)
def test_prose_figure_is_printed_beside_it(notebook, phrase, figure, decimals, pattern):
    cells = nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4).cells
    printed = [m for text in nearby_outputs(cells, phrase) if (m := re.search(pattern, text))]
    assert printed, f"{notebook}: no output near {phrase!r} matches {pattern!r}"
    value = float(printed[0].group(1).replace(",", ""))
    assert round(value, decimals) == round(float(figure), decimals), (
        f"{notebook}: the prose says {figure} ({phrase!r}), the output prints {value}"
    )


def test_tiled_traffic_claims():
    """10: the naive path's (n, n) traffic grows 4x per doubling; the tiled loop has none."""
    cells = nbformat.read(ROOT / "notebooks" / "10_tiled_attention.ipynb", as_version=4).cells
    text = "\n".join(nearby_outputs(cells, "4 times as many bytes per"))
    rows = re.findall(r"\n +(\d+) +(naive|tiled) +([\d.]+) +([\d.]+) +([\d.]+)", text)
    naive = [float(r[2]) for r in rows if r[1] == "naive"]
    assert len(naive) == 3 and all(b / a == 4 for a, b in zip(naive, naive[1:], strict=False))
    assert [float(r[2]) for r in rows if r[1] == "tiled"] == [0.0, 0.0, 0.0]


def test_tiled_loop_beats_naive_in_the_stored_run():
    """10: "faster than the naive path at every length from 512 tokens on", masked or not."""
    cells = nbformat.read(ROOT / "notebooks" / "10_tiled_attention.ipynb", as_version=4).cells
    text = "\n".join(nearby_outputs(cells, "at every length from 512 tokens on"))
    pattern = r"causal, n = (\d+): naive ([\d.]+) ms, tiled ([\d.]+) ms, fused [\d.]+ ms"
    rows = re.findall(pattern, text)
    assert len(rows) == 5, rows  # four causal lengths and one line without the mask
    for n, naive, tiled in rows:
        assert int(n) < 512 or float(tiled) < float(naive), f"at n = {n}: {naive} vs {tiled} ms"
