"""Every hint a learner can see for a recognised mistake, in one catalogue.

``HINTS`` maps a mistake name (the key a ``*_mistakes`` function or a check uses) to its
text. Torch wording; ``NUMPY_HINTS`` overrides the names whose fix reads differently in
the NumPy exercises. ``tests/test_checks.py`` asserts that every mistake a check can
diagnose has a hint here.
"""

from __future__ import annotations

__all__ = ["HINTS", "NUMPY_HINTS"]

HINTS: dict[str, str] = {
    # scaled dot-product attention
    "no_scale": "missing the 1/sqrt(head_dim) scaling: divide the scores by "
    "keys.shape[-1] ** 0.5 before the softmax.",
    "scale_by_d": "the scores are divided by head_dim instead of sqrt(head_dim).",
    "softmax_dim": "softmax over the wrong dim: the columns sum to 1 instead of the rows; "
    "use softmax(..., dim=-1) so each query's weights over the keys sum to 1.",
    "mask_lost": "the mask is not applied. Is it applied in place? masked_fill returns a new "
    "tensor; use masked_fill_ or assign the result (scores = scores.masked_fill(...)).",
    "mask_inverted": "mask inverted: True means HIDDEN in this course, so fill the scores "
    "where the mask is True (not where it is False).",
    "mask_diagonal": "mask off by one: the diagonal is hidden too, but a token may attend to "
    "itself; torch.triu(..., diagonal=1) keeps the diagonal visible.",
    "zero_fill": "hidden scores are set to 0 instead of -inf: exp(0) = 1, so hidden keys "
    "still get weight. Fill with -torch.inf.",
    "mask_after_softmax": "the mask is applied after the softmax: the rows no longer sum to 1. "
    "Mask the scores with -inf BEFORE the softmax.",
    "keys_are_values": "the scores use the values instead of the keys: they must be "
    "queries @ keys.transpose(-2, -1).",
    "keys_queries_swapped": "the scores are keys @ queries^T (transposed): "
    "use queries @ keys.transpose(-2, -1) so row i belongs to query i.",
    "nan": "contains NaN where the reference has none. A row with every score -inf gives NaN "
    "after the softmax; overflowing exp gives inf.",
    # the causal mask
    "causal_inverted": "mask inverted: True must mean HIDDEN, i.e. the future (above the "
    "diagonal).",
    "causal_next_visible": "off by one: the key right after the query (j = i + 1) is the "
    "future too; torch.triu(..., diagonal=1) hides it, diagonal=2 does not.",
    "causal_past": "the mask hides the past (below the diagonal) instead of the future: "
    "use torch.triu, not torch.tril.",
    # multi-head attention; splitting and merging heads (notebooks 03 and 04)
    "split_reshape": "heads split with reshape/view straight to (b, num_heads, num_tokens, "
    "head_dim), which mixes tokens and heads: view as (b, num_tokens, num_heads, head_dim), "
    "then transpose(1, 2).",
    "split_no_transpose": "that is the shape after the view: transpose(1, 2) then groups "
    "the tokens by head, (b, num_heads, num_tokens, head_dim).",
    "merge_no_transpose": "heads merged without transposing back: transpose(1, 2) to (b, "
    "num_tokens, num_heads, head_dim) before .contiguous().view(b, num_tokens, d_out).",
    "scale_d_out": "scores scaled by sqrt(d_out) instead of sqrt(head_dim): each head's dot "
    "products have head_dim terms, so divide by head_dim ** 0.5.",
    "scale_d_in": "scores scaled by sqrt(d_in), the input width: the dot products have as "
    "many terms as a query has numbers, so divide by keys.shape[-1] ** 0.5.",
    "scale_width": "scores scaled by the width of the whole projection (sqrt(d_out), here "
    "equal to sqrt(d_in)) instead of sqrt(head_dim): each head's dot products have head_dim "
    "terms, so divide by head_dim ** 0.5.",
    "no_out_proj": "missing out_proj: apply self.out_proj to the merged heads.",
    "wrapper_out_proj": "the heads are right but the wrapper has no output projection: "
    "set mha.out_proj to the identity (weight = torch.eye(d_out), bias = 0).",
    # F.scaled_dot_product_attention
    "sdpa_mask_lost": "no causal mask: pass is_causal=True to F.scaled_dot_product_attention.",
    "sdpa_attn_mask": "mask inverted: F.scaled_dot_product_attention's boolean attn_mask is "
    "True where attention is ALLOWED, the opposite of causal_mask; use is_causal=True.",
    # padding mask
    "padding_inverted": "mask inverted: True must mark the PADDED positions (hidden).",
    "padding_one_less": "off by one: position `length` is the first padded one (positions "
    "count from 0), so hide positions >= length.",
    "padding_one_more": "off by one: the last real token (position length - 1) is hidden too.",
    # feed-forward
    "no_activation": "missing the activation: without it the two linears collapse into one. "
    "Apply ReLU between linear1 and linear2.",
    "activation_last": "the ReLU belongs between linear1 and linear2, not after linear2.",
    "gelu": "this feed-forward uses ReLU (the original transformer), not GELU.",
    # layer norm
    "unbiased": "use the biased variance: x.var(dim=-1, keepdim=True, unbiased=False), like "
    "nn.LayerNorm.",
    "std_eps_outside": "this is x.std() + eps (the unbiased standard deviation, eps outside "
    "the root): use the biased variance and put eps inside, "
    "(x - mean) / torch.sqrt(x.var(dim=-1, keepdim=True, unbiased=False) + eps).",
    "eps_outside": "eps goes inside the square root: sqrt(var + eps), not sqrt(var) + eps "
    "(the two differ for rows whose values barely differ).",
    "no_eps": "eps is missing: a row whose values are all equal has variance 0, and 0 / 0 is "
    "NaN. Divide by torch.sqrt(var + self.eps).",
    "eps_ignored": "the eps argument is ignored (this layer was built with another eps): "
    "store it in __init__ (self.eps = eps) and use self.eps in forward.",
    "norm_dim": "normalise each token vector: mean and variance over the last dim (dim=-1, "
    "keepdim=True).",
    "no_affine": "missing the learned scale and shift: return scale * norm + shift.",
    "nan_layer_norm": "contains NaN: a row whose values are all equal has variance 0, so "
    "dividing by sqrt(var) is 0 / 0. Put eps inside the square root: sqrt(var + eps).",
    # encoder layer (post-LN)
    "no_residual": "encoder layer without residual: add the sublayer's input back before each "
    "norm: norm1(x + attn_out), norm2(x + ffn_out).",
    "no_norm": "encoder layer without norm: apply norm1 and norm2 to the residual sums (post-LN).",
    "neither": "neither the residual connections nor the norms are applied: "
    "x = norm1(x + attn_out), then norm2(x + ffn_out).",
    "pre_ln": "this is pre-LN (GPT-2 style); this encoder layer is post-LN: the norm comes "
    "AFTER adding the residual.",
    "norm1_twice": "norm1 is used twice: the second Add & Norm must use norm2 (the two norms "
    "learn different scales and shifts).",
    "norms_swapped": "norm1 and norm2 are swapped: norm1 follows the attention, norm2 the "
    "feed-forward.",
    "mask_ignored": "the padding mask is not used: pass mask to the self-attention.",
    # GPT-2 block (pre-LN)
    "post_ln": "this is post-LN; GPT-2's block is pre-LN: x = x + att(norm1(x)), then "
    "x = x + ff(norm2(x)).",
    "block_no_residual": "missing the shortcut connections: add x back after the attention "
    "and after the feed-forward.",
    "block_norm1_twice": "norm1 is used twice: the feed-forward's input is norm2(x).",
    "block_norms_swapped": "norm1 and norm2 are swapped: att(norm1(x)), then ff(norm2(x)).",
    # cross-attention
    "keys_for_values": "the values are projected from the key input: use W_value(value).",
    "self_attention": "keys and values come from the query input: in cross-attention they are "
    "projected from the `key` and `value` arguments (the encoder's memory).",
    "cross_mask_ignored": "the padding mask is not used: pass mask to the attention.",
    # where dropout goes (train mode, same RNG state as the reference)
    "dropout_attention": "Apply self.dropout to the attention weights, after the softmax and "
    "before multiplying by the values (not to the scores, not to the context vectors).",
    "dropout_sdpa": "Pass dropout_p=self.dropout.p to F.scaled_dot_product_attention in "
    "training mode and 0.0 in eval mode (dropout_p=self.dropout.p if self.training else 0.0).",
    "dropout_feed_forward": "Apply self.dropout after the ReLU, between linear1 and linear2.",
    "dropout_encoder": "Apply self.dropout to each sublayer's output before adding the "
    "residual: norm1(x + dropout(attn_out)), then norm2(x + dropout(ffn_out)); the attention "
    "and the feed-forward apply their own dropout inside.",
    "dropout_cross": "Apply self.dropout to the attention weights (pass it to the attention), "
    "as in the lecture's MultiHeadCrossAttention.",
    "dropout_block": "Apply drop_shortcut to each sublayer's output before adding the "
    "shortcut: x + drop_shortcut(att(norm1(x))), then x + drop_shortcut(ff(norm2(x))).",
    # errors the learner's code raises, recognised by their message (expect.call_explained)
    "no_grad_in_place": "changing a parameter in place fails outside torch.no_grad() (a leaf "
    "tensor that requires grad): wrap the change in `with torch.no_grad():` or decorate the "
    "function with @torch.no_grad().",
    "view_not_contiguous": "after transpose the tensor is not contiguous in memory, so .view "
    "fails: call .contiguous() before .view (or use .reshape).",
    # backward through a function (expect.expect_function_gradients)
    "no_autograd": "Training needs the gradients: compute with torch operations on the "
    "tensors themselves, not under torch.no_grad(), not through NumPy (.numpy()) and not on "
    ".detach()ed or .data copies.",
    # errors raised in a module's forward (expect.FORWARD_ERROR_HINTS)
    "mask_not_sliced": "The mask holds context_length x context_length entries: slice it to "
    "the input's length, self.mask[:num_tokens, :num_tokens].",
    "view_sizes": "A view or reshape asks for sizes that do not fit the tensor: take each "
    "size from the tensor itself (b, num_tokens = x.shape[:2]) or from the right constructor "
    "argument (head_dim = d_out // num_heads), not from another argument or a fixed number.",
    "linear_width": "A matrix product got the wrong widths: nn.Linear(in_features, "
    "out_features) takes inputs whose last dim is in_features (d_in for W_query, W_key, "
    "W_value; d_out for out_proj).",
    # a module that keeps state between calls (expect.expect_module)
    "longer_input": "Does forward handle every length up to context_length? Slice the mask "
    "built in __init__ from context_length: self.mask[:num_tokens, :num_tokens].",
    "kept_state_named": "forward changed {names} on an earlier call and kept the change (the "
    "lecture's forward does not): keep what one call computes in local variables, e.g. "
    "mask = self.mask[:n, :n].",
    "other_configuration": "Look at what differs between the two (the sizes, d_in against "
    "d_out, the number of heads, a mask or none): a fixed number, or one argument used where "
    "another belongs, fails only on some configurations.",
    # dropout judged by what it means (expect.expect_dropout), in training mode
    "dropout_module_rate": "your self.{name} drops with p={got}, the lecture's with "
    "p={want}: build each dropout from the constructor's dropout argument (a sublayer "
    "built with 0.0 or a hard-coded rate drops the wrong share).",
    "dropout_unscaled": "the kept values are not scaled by 1/(1 - p), so on average the "
    "output shrinks. nn.Dropout does the scaling; a hand-written mask needs it: "
    "w * keep / (1 - p).",
    "dropout_rate": "it drops about {got:.0%} of the values instead of the dropout argument's "
    "{want:.0%}: use the rate the module was built with, not a fixed one.",
    "dropout_missing_at": "no dropout where the lecture's self.{name} applies it: build "
    "that part with the constructor's dropout argument, not 0.0.",
    # a module moved to another device (expect.expect_on_meta)
    "device": "A tensor built in forward (torch.ones(...), torch.triu(...)) stays on the CPU "
    "when the module moves to a GPU: build the mask once in __init__ with "
    "self.register_buffer('mask', ...), which .to(device) moves with the weights, and slice "
    "it in forward (or create tensors with device=x.device).",
    # trained attention (notebook 08)
    "previous_diagonal": "this is the weight a query gives ITSELF (the diagonal); the previous "
    "token is key t - 1: diagonal(offset=-1, dim1=-2, dim2=-1).",
    "previous_diagonal_all_rows": "this is the weight a query gives ITSELF (the diagonal, "
    "diagonal(offset=0)); the previous token is key t - 1: diagonal(offset=-1, dim1=-2, "
    "dim2=-1).",
    "previous_next": "key t + 1 is in the future, hidden by the causal mask: the previous "
    "token is offset=-1, below the diagonal.",
    "previous_all_rows": "row 0 has no previous token: average over the num_tokens - 1 rows "
    "t = 1 .. num_tokens - 1, not over all rows.",
    "sinusoid_swapped": "sin and cos are swapped: even columns 2i hold sin, odd columns "
    "2i + 1 hold cos.",
    "sinusoid_blocks": "all the sines come first, then all the cosines: interleave them, "
    "table[:, 0::2] = sin and table[:, 1::2] = cos.",
    "sinusoid_no_two": "the frequencies are off: column pair i uses 10000 ** (2i / d_model); "
    "torch.arange(0, d_model, 2) gives the 2i directly.",
    "rope_halves": "you paired dimension i with i + head_dim / 2 (the GPT-NeoX 'rotate_half' "
    "layout); this course turns the interleaved pairs (x[..., 2i], x[..., 2i + 1]), like the "
    "sinusoidal table's sin/cos columns.",
    "rope_no_two": "the frequencies are off: pair i turns by position * base ** (-2i / head_dim); "
    "torch.arange(0, head_dim, 2) gives the 2i directly.",
    "rope_base_ignored": "you always used 10000: use the `base` argument, theta_i = "
    "base ** (-2i / head_dim).",
    "rope_start_ignored": "token k of x stands at position start + k, not k: with a KV cache "
    "the new tokens come after the cached ones.",
    "rope_off_by_one": "off by one: the first token of x is at position `start` (0 by default), "
    "where the rotation is the identity.",
    "rope_backwards": "the rotation turns the wrong way: (x0 cos - x1 sin, x0 sin + x1 cos), "
    "the sine with a minus sign in the FIRST component.",
    "rope_values": "you rotated the values too: RoPE turns only the queries and the keys, so "
    "that their dot product sees the offset; the values are what is moved, unrotated.",
    "rope_queries_only": "only the queries are rotated: turn the keys too, each by its own "
    "position, so that the score depends on the difference of the two.",
    "rope_keys_only": "only the keys are rotated: turn the queries too, each by its own "
    "position, so that the score depends on the difference of the two.",
    "rope_not_causal": "every query sees future keys: hide them with the causal mask "
    "(causal_mask(num_tokens), True = hidden).",
    "ablation_rows": "you zeroed ROWS of out_proj.weight; a head's output enters through "
    "its COLUMNS: out_proj.weight[:, head * head_dim : (head + 1) * head_dim].",
    "ablation_next_head": "you zeroed the next head: head h owns columns h * head_dim up "
    "to (h + 1) * head_dim, counting from 0.",
    "ablation_queries": "zeroing a head's queries (or its keys, which gives the same "
    "output) does not silence it: its scores all become 0, so it attends uniformly and still "
    "writes its values. Zero its out_proj columns.",
    # generation and the KV cache (notebook 09)
    "window_one_too_many": "off by one: each query sees `window` keys, itself included, "
    "so hide the keys `window` or more positions back (i - j >= window).",
    "window_one_too_few": "off by one: each query sees itself AND the window - 1 keys "
    "before it; you hide one key too many.",
    "window_not_causal": "the future is visible: a sliding window is still causal, so "
    "hide the keys after the query (j > i) too, as causal_mask does.",
    "window_inverted": "mask inverted: True means HIDDEN in this course.",
    "repeat_kv_tiled": "the copies of one key/value head must sit next to each other (query "
    "head h reads key/value head h // group_size); x.repeat tiles the whole set of "
    "heads instead. Use x.repeat_interleave(group_size, dim=1).",
    "cache_stale_offset": "stale position offset: the new queries sit at positions "
    "start .. start + num_new - 1, with start = cache.num_cached(layer) read "
    "BEFORE the update; use those rows of att.mask, not rows 0 .. num_new - 1.",
    "cache_no_mask": "no causal mask: with several new tokens, each may only see "
    "the cached tokens and the new ones up to itself.",
    "cache_new_keys_only": "the new queries only see the new keys: attend to ALL "
    "the keys and values cache.update returns (cached + new).",
    # tiled attention (notebook 10)
    "online_no_rescale": "forgot to rescale the running sum: when the max grows from m to "
    "m_new, every term already in s was computed against the old max; multiply s by "
    "exp(m - m_new) before adding the new terms.",
    "online_no_shift": "the new terms are exp of the raw scores: subtract the new running "
    "max, exp(block - m_new) (exp overflows otherwise), and rescale s by exp(m - m_new).",
    "online_rescale_inverted": "the rescale factor is upside down: it is exp(m - m_new) (at "
    "most 1), not exp(m_new - m).",
    "online_overflow": "exp overflowed: compute exp(block - m_new) and exp(m - m_new), "
    "differences with the running max (at most 0), never exp of a score alone.",
    "online_old_max": "the new terms must be exp(block - m_new), relative to the NEW max.",
    "tile_sum_not_rescaled": "forgot to rescale the running sum s by exp(m - m_new) when the "
    "max grows.",
    "tile_acc_not_rescaled": "forgot to rescale acc: the weighted sum of values so far was "
    "computed against the old max too; multiply it by exp(m - m_new), like s.",
    "tile_overflow": "contains inf or NaN: exp overflowed (in float32 exp(x) is inf above "
    "x = 88). Compute exp(scores - m_new) and exp(m - m_new), differences with the running "
    "max (at most 0), never exp of a score alone.",
    "tile_mask_inverted": "mask inverted: True means HIDDEN, so fill the scores where the "
    "mask is True (scores.masked_fill(mask, -torch.inf)), not where it is False (a query whose "
    "keys are all hidden then gets NaN).",
    "tile_max_not_running": "m_new is the block's max alone: the running max is "
    "torch.maximum(m, scores.amax(dim=-1, keepdim=True)), over every key block so far.",
    "tile_mask_ignored": "the mask is not applied: fill the hidden scores with -inf before exp.",
    "tiled_diagonal_skipped": "a causal block skipped wrongly: the key block on the "
    "diagonal (same positions as the query block) holds each query's own key "
    "and the ones just before it; visit key blocks up to the query block's END.",
    "tiled_diagonal_unmasked": "the diagonal tile is not masked: inside it, keys "
    "after a query are the future; mask them (key position > query position).",
    "tiled_top_left": "with fewer queries than keys, the queries are the LAST positions (as "
    "with a KV cache): query i sits at position num_keys - num_queries + i and sees the keys up "
    "to it. Yours treats query i as position i.",
    # the language model (notebook 11)
    "sampling_softmax_axis": "softmax over the wrong axis: each ROW (one position's logits "
    "over the vocabulary) must sum to 1; use torch.softmax(logits, dim=-1).",
    "sampling_temperature_after": "the temperature is applied after the softmax: divide the "
    "LOGITS by the temperature, then take the softmax (probabilities divided by T no "
    "longer sum to 1).",
    "sampling_no_temperature": "the temperature changes nothing: divide the logits by it "
    "BEFORE the softmax (dividing the probabilities and renormalising undoes it).",
    "sampling_greedy": "temperature 0 means greedy: probability 1 on the most likely token "
    "(logits / 0 gives inf and NaN). Handle temperature == 0 first.",
    "top_p_before_top_k": "top-p was applied to the whole distribution, before top-k: apply "
    "top-k first, then top-p to the probabilities of the tokens top-k kept (the softmax of the "
    "kept logits, renormalised), so top-p may keep fewer tokens than top-k.",
    "sampling_greedy_split": "temperature 0 gives probability 1 to ONE token, the first of the "
    "tied largest logits (as argmax picks), not shared among them: handle temperature == 0 "
    "first, with one_hot(logits.argmax(dim=-1)).",
    "top_k_ties_by_position": "top-k keeps exactly k tokens and breaks ties at the k-th "
    "largest logit by position: a token's fate must depend on its logit only. Keep every "
    "token whose logit is >= the k-th largest (logits.topk(k, dim=-1).values[..., -1:]).",
    "top_k_ties_dropped": "top-k drops the tokens that TIE with the k-th largest logit: keep "
    "the logits >= the k-th largest, not >.",
    "top_p_one_too_few": "top-p keeps one token too few: keep the smallest set of most likely "
    "tokens whose probabilities add up to AT LEAST p, so the token that crosses p stays.",
    "top_p_one_too_many": "top-p keeps one token too many: stop at the first token that "
    "brings the total to at least p (a token stays when the more likely tokens hold LESS "
    "than p).",
    "bpe_least_frequent": "you merged the LEAST frequent pair: BPE merges the pair of "
    "neighbouring tokens that occurs most often.",
    "bpe_tie_last": "between equally frequent pairs, take the one that sorts FIRST "
    "(min over (-count, pair)), as learn_merges does, so that learning is deterministic.",
    "bpe_right_to_left": "the merges go right to left: in 'a a a' the pair (a, a) merges "
    "as 'aa a', scanning from the left, and occurrences never overlap.",
    "bpe_count_non_overlapping": "count every pair of neighbouring tokens, overlapping ones "
    "too: in ['a', 'a', 'a'] the pair ('a', 'a') occurs twice (zip(tokens, tokens[1:])); only "
    "the MERGE skips overlaps, left to right.",
    "bpe_overlapping_merge": "occurrences never overlap: after merging tokens i and i + 1, "
    "go on at i + 2 (['a', 'a', 'a'] becomes ['aa', 'a'], not ['aa', 'aa', 'a']).",
    "bpe_first_only": "only the first occurrence is merged: replace EVERY occurrence of the "
    "pair, left to right.",
    "loss_no_log": "the loss is -probability: take -log of the target's probability "
    "(torch.log_softmax(logits, dim=-1) picks it out stably).",
    "loss_bits": "the loss is in bits (log base 2): the course measures in nats, the natural "
    "log that cross_entropy uses.",
    "loss_softmax_axis": "the softmax runs over the wrong axis: each position's logits over "
    "the vocabulary (dim=-1) form one distribution.",
    "loss_sign": "the sign is wrong: the loss is MINUS the log-probability, so it is "
    "positive and lower is better.",
    "perplexity_mean_of_exp": "that is the mean of exp(loss): perplexity is exp of the MEAN "
    "loss (the geometric mean of 1/probability).",
    "perplexity_exp_sum": "exp of the SUM grows with the length of the text: take exp of the "
    "MEAN loss.",
    "perplexity_base_2": "the losses are in nats, so the perplexity is e ** mean, not 2 ** mean.",
    "perplexity_no_exp": "that is the mean loss itself: the perplexity is exp(mean loss).",
    # the next-token loss and one training step (notebook 08)
    "loss_no_shift": "position t's logits are scored against the token AT t, not the next "
    "one: pair logits[:, :-1] with tokens[:, 1:] (the last position has no next token).",
    "loss_no_shift_trimmed": "logits and targets come from the same positions (both trimmed "
    "at the end): position t's logits predict tokens[:, t + 1]; pair logits[:, :-1] with "
    "tokens[:, 1:].",
    "loss_shift_backwards": "the shift goes the wrong way: position t's logits predict the "
    "token AFTER t. Pair logits[:, :-1] with tokens[:, 1:], not logits[:, 1:] with "
    "tokens[:, :-1].",
    "loss_sum": "that is the SUM over the predictions: take the mean (F.cross_entropy's "
    "default), so the loss does not grow with the batch size or the length.",
    "loss_log10": "the loss uses log base 10: the course measures in nats, the natural log "
    "that torch.log and F.cross_entropy use.",
    "loss_double_softmax": "softmax was applied before F.cross_entropy, which takes LOGITS and "
    "applies log_softmax itself: pass the raw logits.",
    "loss_ignores_zero": "the targets equal to 0 are skipped: token 0 is a token like any "
    "other and every target counts (no ignore_index: these batches have no padding).",
    "loss_class_dim": "F.cross_entropy read the positions as the classes: it wants the "
    "classes in dim 1. Flatten to (b * (num_tokens - 1), vocab_size) logits and "
    "(b * (num_tokens - 1),) targets.",
    "loss_overflow": "is not finite: exp of a logit above about 88 overflows float32 (inf / "
    "inf = NaN). Use torch.log_softmax or F.cross_entropy, which subtract each row's maximum "
    "first.",
    "step_no_zero_grad": "the second call used the gradients of BOTH calls: backward() ADDS "
    "to .grad. Call optimizer.zero_grad() in every step, before loss.backward() (or after "
    "optimizer.step()).",
    "step_unclipped": "the update used the gradients before clipping: call "
    "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm) between loss.backward() and "
    "optimizer.step(). Clipping after step(), or not at all, changes nothing the step used.",
    "step_clip_value": "each gradient entry was clipped on its own (clip_grad_value_): clip "
    "the gradients' global NORM with torch.nn.utils.clip_grad_norm_(model.parameters(), "
    "max_norm), which keeps their direction.",
    "step_no_update": "the parameters did not change: call optimizer.step() after backward() "
    "and the clipping, and zero the gradients before backward() (or after step()), never "
    "between backward() and step().",
    "step_loss_sum": "the loss is the SUM over the positions (reduction='sum'): take the mean, "
    "as next_token_loss does; with a sum, the loss, the gradient and the step grow with the "
    "batch size and the length.",
    "step_loss_bits": "the loss is in bits (log base 2, or divided by ln 2): train and report "
    "in nats, the natural log of F.cross_entropy; bits scale the loss and the gradient by "
    "1/ln 2.",
    "step_no_shift": "the loss scores each position's logits against the token AT that "
    "position: use the next-token loss (logits[:, :-1] against tokens[:, 1:]).",
    "step_ascent": "the loss went UP on the same batch: the step climbs the loss. Call "
    "loss.backward() on the loss itself (no minus sign); optimizer.step() moves against the "
    "gradient.",
    "prev_char_stale": "that head is where the weights the model kept from an EARLIER run "
    "point: run model(ids) first; each block's att.attn_weights holds the weights of the last "
    "forward pass.",
    "prev_char_reversed": "return (layer, head), the layer first: you returned (head, layer).",
    "prev_char_one_based": "layers and heads are numbered from 0, as model.trf_blocks[layer] "
    "and the columns of the weights are.",
    "prev_char_diagonal": "that head looks at the character ITSELF (the diagonal); the previous "
    "character is key t - 1: diagonal(offset=-1, dim1=-2, dim2=-1).",
    "prev_char_lowest": "that is the head with the LOWEST previous-character score: take the "
    "argmax.",
    "prev_char_first_token": "that head puts its weight on the first character (key 0), the "
    "sink; the previous character is key t - 1.",
}

NUMPY_HINTS: dict[str, str] = {
    "weightless_scaled": "this attention has no scaling yet: the scores are the plain dot "
    "products X @ X.T (the 1/sqrt(d) scaling comes with the projections).",
    "weightless_softmax_axis": "softmax over the wrong axis: each ROW (one query) must sum to "
    "1; use axis=-1.",
    "weightless_no_softmax": "the weights are the raw scores: apply softmax to each row so they "
    "are positive and sum to 1.",
    "weightless_transposed": "the context uses the transposed weights: row i is "
    "sum_j weights[i, j] * X[j], that is weights @ X.",
    "overflow": "exp overflows for large scores (exp(1000) = inf): subtract the max along the "
    "axis first (it does not change the result).",
    "shift_min": "subtracting the MIN does not prevent the overflow: the largest score then "
    "becomes max - min, and exp of a range of thousands is inf. Subtract the max: every "
    "exponent is then <= 0.",
    "shift_mean": "subtracting the MEAN does not prevent the overflow: a score thousands above "
    "the mean still gives exp(...) = inf. Subtract the max: every exponent is then <= 0.",
    "wrong_axis": "normalised along the wrong axis: use the `axis` argument for the max and "
    "the sum.",
    "keepdims": "the sum needs keepdims=True, otherwise it broadcasts along the wrong axis.",
    "no_W_O": "missing the output projection: multiply the concatenated heads by W_O.",
    "nan": "contains NaN where the reference has none. A row with every score -np.inf gives "
    "NaN after the softmax; overflowing np.exp gives inf.",
    "softmax_dim": "softmax along the wrong axis: the columns sum to 1 instead of the rows; "
    "normalise along axis=-1 so each query's weights over the keys sum to 1.",
    "mask_lost": "the causal mask is not applied: set the scores above the diagonal to -np.inf "
    "(np.where(mask, -np.inf, scores)) before the softmax.",
    "mask_inverted": "mask inverted: hide the FUTURE (above the diagonal, np.triu(..., k=1)), "
    "not the past.",
    "mask_diagonal": "mask off by one: the diagonal is hidden too, but a token may attend to "
    "itself; np.triu(np.ones((T, T), dtype=bool), k=1) keeps the diagonal visible.",
    "zero_fill": "hidden scores are set to 0 instead of -np.inf: exp(0) = 1, so hidden keys "
    "still get weight.",
    "mask_after_softmax": "the mask is applied after the softmax: the rows no longer sum to 1. "
    "Set the hidden scores to -np.inf BEFORE the softmax.",
    "keys_are_values": "the scores use the values instead of the keys: they must be Q @ K.T.",
    "keys_queries_swapped": "the scores are K @ Q.T (transposed): use Q @ K.T so row i "
    "belongs to query i.",
    "no_scale": "missing the 1/sqrt(d_k) scaling: divide the scores by np.sqrt(K.shape[-1]) "
    "before the softmax.",
    "scale_by_d": "the scores are divided by d_k instead of np.sqrt(d_k).",
}
