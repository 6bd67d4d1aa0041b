"""Exercise checks, one module per notebook; importing this package registers them all."""

from . import (  # noqa: F401
    nb00_numpy_attention,
    nb01_causal_attention,
    nb02_multihead_wrapper,
    nb03_weight_split_mha,
    nb04_stepwise_reshape,
    nb05_transformer_blocks,
    nb06_attention_cost,
    nb07_bug_zoo,
    nb08_trained_attention,
    nb09_generation_kv_cache,
    nb10_tiled_attention,
    nb11_language_model,
)
