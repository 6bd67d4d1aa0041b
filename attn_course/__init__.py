"""attn_course: the helper package of the attention course.

The layers, each importing only from the layers above it (arrows point downward):

1. Maths and models, what the lectures build. Lectures 00-07: ``attention`` (the lecture
   classes), ``numpy_attention`` (lecture 00 in NumPy, attention with no weights included),
   ``blocks`` (lecture 05's transformer components, cross-attention, ``BlockConfig``),
   ``data`` (example inputs), ``validation`` (a clear ValueError for bad input); lecture 08:
   ``positions`` (learned, sinusoidal, RoPE), ``model`` (the tiny transformer), ``tasks``,
   ``training`` (also the ``train`` command and the shipped weights), ``recordings`` (numbers
   stored while training); lectures 09-11: ``generation`` (``GPTConfig``, ``GPTModel``, the KV
   cache), ``gqa`` (grouped-query attention), ``tiled`` (online softmax, tiled attention),
   ``corpus`` (the shipped Shakespeare text), ``tokenizer``, ``bpe``, ``sampling``, ``lm`` (the
   language model's training, shipped weights, ``evaluate``, GQA by mean-pooling),
   ``live_training`` (the live run and its stored record); measurements of trained models:
   ``head_scores`` and ``circuits`` (lecture 08's heads found by scores and read from
   weights), ``text_heads`` (heads on real text), ``patching`` (path patching: a layer's
   queries or keys read from another run), ``generation_metrics``.
2. Teaching views, the pictures computed from layer 1, no widgets: ``viz`` (matplotlib
   heatmaps), ``svg`` (the head grid as hand-written SVG, fast enough to redraw on every
   slider move), ``explore`` (the attention explorers' settings and pictures, drawn by
   ``svg``), ``model_views`` and ``lm_views`` (matplotlib).
3. ``ui``, the widgets: ``ui.widgets`` (sliders around ``explore``; ``starting_settings``,
   every explorer's start), ``ui.model_explorer`` (around ``model_views``),
   ``ui.lm_explorer`` (around ``lm_views``).
4. Commands and authoring tools: ``__main__`` (``attn-course COMMAND``, the dispatch) and
   ``tools``: ``tools.lab``, ``tools.execute``, ``tools.copies`` (the notebooks' teaching
   copies of package code), ``tools.exercises`` (exercises/ from solutions/),
   ``tools.protocol`` (cell tags and markers), ``tools.generate_cli``.
5. ``grading``: the grader, in three rooms of its own: ``grading.checking`` (what is asked
   and judged: the checks, their library, hints, what is withheld), ``grading.kernel`` (how a
   learner's kernel is sandboxed, run and spoken to) and ``grading.classrun`` (the grade
   command, rosters, results, gradebooks, feedback pages); its own docstring maps it.

New lecture code goes in layer 1 beside its lecture's modules; a new picture in layer 2
(settings in, a picture out, testable without widgets); a new explorer in ``ui`` around a
layer-2 view (CONTRIBUTING.md, "Add a lecture", step 3); a new command or authoring tool in
``tools`` (with its line in ``__main__.COMMANDS``); a new check in ``grading/checking/checks``.
Importing the package draws and prints nothing, and imports torch only when one of the names
below is first used (so that ``attn-course grade`` can start its kernels while torch loads).

Names. One name per quantity, in code, shape comments and messages:

===================  ===========================================================  =====
name                 meaning                                                      shape
===================  ===========================================================  =====
``b``                sequences in a batch                                         b
``num_tokens``       tokens of a sequence (``num_queries``, ``num_keys`` apart)   T
``num_heads``        attention heads of a layer                                   h
``head_dim``         width of one head: ``d_out // num_heads``                    hd
``num_kv_groups``    key/value heads that groups of query heads share (GQA)
``num_layers``       layers (blocks) of a model
``d_in``, ``d_out``  input and output width of an attention module
``d_model``          width of a model's token vectors (its residual stream)
``d_ff``             hidden width of a feed-forward layer (4 * d_model in GPT-2)
``context_length``   the most tokens a module accepts (its causal mask's size)
``dropout``          a dropout probability
``att``              the attention submodule of a block
===================  ===========================================================  =====

Where a name follows the lectures, the lectures win: ``MultiHeadAttention(d_in, d_out,
context_length, dropout, num_heads, qkv_bias)`` and its ``W_query``/``W_key``/``W_value``/
``out_proj`` are the seeds' (and LLMs-from-scratch's), and so are GPTModel's ``tok_emb``,
``pos_emb``, ``trf_blocks``, ``att``, ``ff`` and ``drop_shortcut``, so that its
``state_dict`` loads LLMs-from-scratch weights. Its config dict's keys are converted, not
accepted beside ours: ``BlockConfig.from_llms_from_scratch(GPT_CONFIG_124M)`` (and
``GPTConfig``'s) maps ``emb_dim``, ``n_heads``, ``n_layers``, ``drop_rate`` to ``d_model``,
``num_heads``, ``num_layers``, ``dropout``; passing the book's names to the constructor
raises a TypeError that says so. The lecture classes spell their shape
comments out as the seeds do, ``(b, num_tokens, d_out)``; other code may use the letters,
``(b, h, T, hd)``, declared at the top of each module that does. Lecture 05's seed calls
the encoder layer's attention ``self_attention`` and its heads ``n_heads``; here they are
``att`` and ``num_heads``, as in every other block. Key/value head counts are
``num_kv_groups`` everywhere, published models' too (``gqa.PublishedConfig``), where papers
and other code say ``num_kv_heads`` or ``n_kv_heads``.
Input validation is ``validation.validate_*``; "check" means grading only. Explorers: their
settings are a frozen ``*Settings`` that checks itself (``AttentionSettings``,
``EncoderSettings``, ``ModelSettings``, ``LineSettings``); ``*_picture(settings)`` computes
what one draws (``attention_picture``/``encoder_picture`` -> ``Picture``, ``model_picture``
-> ``ModelPicture``, ``line_picture`` -> ``LinePicture``); ``ui.widgets.starting_settings``
is every explorer's start, which shows a refused setting's message in the explorer.
"""

import importlib

__all__ = [
    "CausalAttention",
    "MultiHeadAttention",
    "MultiHeadAttentionSDPA",
    "MultiHeadAttentionWrapper",
    "causal_mask",
    "scaled_dot_product_attention",
]


def __getattr__(name: str) -> object:
    """The lecture classes and functions, imported from ``attention`` on first use."""
    if name in __all__:
        return getattr(importlib.import_module(".attention", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
