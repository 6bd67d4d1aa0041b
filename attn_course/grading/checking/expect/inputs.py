"""Seeded inputs: every random input of a check comes from a seed plus the grade run's salt.

``randn`` and ``rng`` draw from private generators (the learner's global RNG is untouched);
``seeded`` runs a block with torch's global RNG seeded and restores it after, under
``RNG_LOCK`` (the grade command checks several notebooks at once, in threads).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from ...kernel.context import SALT

RNG_LOCK = threading.RLock()  # around every use of torch's global RNG


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run the block with torch's global RNG seeded, then restore the learner's RNG state.

    Holds ``RNG_LOCK``: the grade command runs checks of several notebooks in threads.
    """
    with RNG_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def salted(seed: int) -> int:
    """``seed`` plus the grading run's secret (0 in the notebook)."""
    return seed + SALT.get()


def randn(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Standard-normal tensor from a private generator (the global RNG is untouched)."""
    generator = torch.Generator().manual_seed(salted(seed))
    return torch.randn(*shape, generator=generator, dtype=dtype)


def rng(seed: int) -> np.random.Generator:
    """A NumPy generator for the inputs of the NumPy exercises (salted like ``randn``)."""
    return np.random.default_rng(salted(seed))
