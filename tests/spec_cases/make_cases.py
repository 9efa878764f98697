#!/usr/bin/env python3
"""Writes the spec cases: case folders (spec/cases.md) for options of spec/attention.md that the shared
golden cases leave out. Inputs and weights come from numpy's default_rng with a fixed seed per case;
y.npy is reference.run_case() of the written folder, so BF16 weights are seen exactly as stored.

usage: make_cases.py OUT_DIR
"""
import json
import os
import sys

import numpy as np

import reference
import safetensors_io


def matrix(rng, *shape, fan_in=None):
    """A weight with unit-variance outputs: normal / sqrt(fan_in), fan_in the last dim by default."""
    return (rng.standard_normal(shape) / np.sqrt(fan_in or shape[-1])).astype(np.float32)


def noise(rng, *shape, scale=0.2, mean=0.0):
    return (mean + scale * rng.standard_normal(shape)).astype(np.float32)


def prefill_lengths(case):
    """The --prefill values run besides the forward: [0, 1, S/2] for causal cases."""
    kind, config = case['kind'], case['config']
    # A bidirectional layer (EmbeddingGemma's) has no prefill/decode split: hattn refuses --prefill.
    causal = (kind in ('cached_attention', 'zaya_cca', 'glm_dsa') and not case.get('cross')
              and not config.get('use_bidirectional_attention')) \
        or (kind in ('cca', 'ccgqa') and config.get('mode', 'encoder') == 'decoder')
    return [0, 1, case['seq_len'] // 2] if causal else []


def write_case(out_dir, name, kind, config, weights, x, tolerance=None, context=None, mask=None,
               dtype='F32', layer=None, outputs_by_prefill=False):
    """Writes one case folder and its expected output; returns the folder. With `layer`, the case
    is layer `layer` of a whole model: its weights under the prefix model.layers.<layer>.self_attn.,
    which config.json's "prefix" names (spec/cases.md). outputs_by_prefill: the output of each
    --prefill P may differ from the forward's (LongRoPE picks its factors per call): written as
    y_prefill_P.npy, and so marked in config.json."""
    folder = os.path.join(out_dir, name)
    os.makedirs(folder)
    case = {'kind': kind, 'config': config, 'batch': x.shape[0], 'seq_len': x.shape[1]}
    if outputs_by_prefill:
        case['outputs_by_prefill'] = True
    if layer is not None:
        case['prefix'] = f'model.layers.{layer}.self_attn.'
        weights = {case['prefix'] + n: t for n, t in weights.items()}
    if context is not None:
        case['cross'] = True
        np.save(os.path.join(folder, 'context.npy'), context)
    if mask is not None:
        np.save(os.path.join(folder, 'mask.npy'), mask)
    if tolerance is not None:
        case['tolerance'] = tolerance
    with open(os.path.join(folder, 'config.json'), 'w') as f:
        json.dump(case, f, indent=1)
    safetensors_io.save(os.path.join(folder, 'weights.safetensors'), weights, dtype)
    np.save(os.path.join(folder, 'x.npy'), x)
    np.save(os.path.join(folder, 'y.npy'), reference.run_case(folder).astype(np.float32))
    for prefill in prefill_lengths(case) if outputs_by_prefill else []:
        np.save(os.path.join(folder, f'y_prefill_{prefill}.npy'), reference.run_case(folder, prefill).astype(np.float32))
    return folder


def attention_shapes(names, e, heads, kv_heads, head_dim):
    """{name: (rows, cols)} of the query, key, value and output projections named `names`."""
    q, k, v, o = names
    return {q: (heads * head_dim, e), k: (kv_heads * head_dim, e), v: (kv_heads * head_dim, e),
            o: (e, heads * head_dim)}


def projections(rng, shapes, has_bias):
    """The weight of each projection in shapes {name: (rows, cols)}, and a bias where has_bias(name)."""
    weights = {}
    for layer, (rows, cols) in shapes.items():
        weights[layer + '.weight'] = matrix(rng, rows, cols)
        if has_bias(layer):
            weights[layer + '.bias'] = noise(rng, rows)
    return weights


def cached_case(out_dir, name, seed, config, batch, seq_len, context_len=None, masked=False, dtype='F32'):
    """§1. masked: about 30% of the keys masked at random and every key of query row 1 (batch 0)."""
    rng = np.random.default_rng(seed)
    e, heads = config['embedding_dimension'], config['number_of_heads']
    kv_heads = config.get('number_of_key_value_heads') or heads
    head_dim = config.get('head_dimension') or e // heads
    shapes = attention_shapes(('query_projection', 'key_projection', 'value_projection', 'output_projection'),
                              e, heads, kv_heads, head_dim)
    weights = projections(rng, shapes, lambda layer: config.get('bias', True))
    x = rng.standard_normal((batch, seq_len, e)).astype(np.float32)
    context = None if context_len is None else rng.standard_normal((batch, context_len, e)).astype(np.float32)
    mask = None
    if masked:
        mask = rng.random((batch, 1, seq_len, context_len or seq_len)) < 0.3
        mask[0, 0, 1, :] = True
    return write_case(out_dir, name, 'cached_attention', config, weights, x, context=context, mask=mask,
                      dtype=dtype)


def llama_case(out_dir, name, seed, config, batch, seq_len, biases, qk_norm=None, layer=None, sinks=False,
               outputs_by_prefill=False):
    """§1 under a Hugging Face Llama-family config.json and names; `biases` lists the projections
    that have one (Qwen2: q, k and v). qk_norm 'head' (Qwen3), 'all' (OLMo 2), 'each_head_own'
    (Command R+) or 'head_modules' (StableLM): norm weights of a head's width, all heads', each
    head's own [heads, D], or each head's [D] under a name of its own. sinks: gpt-oss's [H] weight `sinks`."""
    rng = np.random.default_rng(seed)
    # Class defaults configs may leave out: Gemma's heads, GLM's KV heads.
    gemma, glm = config['model_type'] in ('gemma2', 'gemma3_text'), config['model_type'] in ('glm', 'glm4')
    e, heads = config['hidden_size'], config.get('num_attention_heads', 8 if gemma else None)
    kv_heads = config.get('num_key_value_heads', 4 if gemma else 2 if glm else 8 if config['model_type'] == 'glm4_moe' else heads)
    if config['model_type'] == 'falcon':
        kv_heads = reference.falcon_kv_heads(config)
    head_dim = config.get('head_dim') or e // heads
    shapes = attention_shapes(('q_proj', 'k_proj', 'v_proj', 'o_proj'), e, heads, kv_heads, head_dim)
    weights = projections(rng, shapes, lambda layer: layer in biases)
    if qk_norm == 'head_modules':  # StableLM: each head's weights in a module of its own
        for of, n_heads in (('q', heads), ('k', kv_heads)):
            for h in range(n_heads):
                weights[f'{of}_layernorm.norms.{h}.weight'] = noise(rng, head_dim, mean=1.0)
    elif qk_norm:
        for norm, n_heads in (('q_norm', heads), ('k_norm', kv_heads)):
            shape = {'head': (head_dim,), 'all': (n_heads * head_dim,), 'each_head_own': (n_heads, head_dim)}[qk_norm]
            weights[norm + '.weight'] = noise(rng, *shape, mean=1.0)
    if config['model_type'] == 'hunyuan_v1_dense':  # its norms' modules
        for of, to in (('q_norm', 'query_layernorm'), ('k_norm', 'key_layernorm')):
            weights[to + '.weight'] = weights.pop(of + '.weight')
    if sinks:  # about the scores' scale, so that they take a visible share of the weight
        weights['sinks'] = noise(rng, heads, scale=1.5)
    if config['model_type'] in ('phi', 'gpt_neox', 'falcon'):  # Phi-2's, GPT-NeoX's and Falcon's output projection is `dense`
        for kind in ('weight', 'bias'):
            if 'o_proj.' + kind in weights:
                weights['dense.' + kind] = weights.pop('o_proj.' + kind)
    if config['model_type'] in ('gpt_neox', 'falcon'):  # per KV head, its query heads' rows, then its k's and v's
        g = heads // kv_heads
        for kind in ('weight', 'bias'):
            parts = [weights.pop(f'{name}.{kind}') for name in ('q_proj', 'k_proj', 'v_proj') if f'{name}.{kind}' in weights]
            if parts:
                q, k, v = (p.reshape(kv_heads, -1, head_dim, *p.shape[1:]) for p in parts)
                weights['query_key_value.' + kind] = np.concatenate([q, k, v], axis=1).reshape(-1, *parts[0].shape[1:])
    if config['model_type'] == 'phi3':  # q, k and v stacked in one projection
        weights['qkv_proj.weight'] = np.concatenate([weights.pop(name + '.weight') for name in ('q_proj', 'k_proj', 'v_proj')])
    x = rng.standard_normal((batch, seq_len, e)).astype(np.float32)
    return write_case(out_dir, name, 'cached_attention', config, weights, x, layer=layer,
                      outputs_by_prefill=outputs_by_prefill)


def cca_case(out_dir, name, seed, config, batch, seq_len, grouped, tolerance=None):
    """§2 CCA (grouped=False) or CCGQA (grouped=True)."""
    rng = np.random.default_rng(seed)
    e, heads = config['hidden_size'], config['num_heads']
    prefix = 'ccgqa_' if grouped else 'cca_'
    if grouped:
        q_rank = config.get('ccgqa_query_latent_rank', max(1, e // 2))
        kv_rank = config.get('ccgqa_kv_latent_rank', max(1, e // 8))
    else:
        q_rank = kv_rank = config.get('cca_latent_rank', max(1, e // 4))
    dh = q_rank // heads
    channels = q_rank + kv_rank
    weights = {'linear_qk.weight': matrix(rng, channels, e), 'out_proj.weight': matrix(rng, e, q_rank),
               'temp': noise(rng, 1, scale=0.5)}
    if config.get(prefix + 'value_shift', True):
        weights['val_proj1.weight'] = matrix(rng, kv_rank // 2, e)
        weights['val_proj2.weight'] = matrix(rng, kv_rank // 2, e)
    else:
        weights['val_proj.weight'] = matrix(rng, kv_rank, e)
    conv_layers = config.get(prefix + 'num_conv_layers', 2)
    if conv_layers >= 1:
        weights['conv_qk0.weight'] = matrix(rng, channels, 1, config.get(prefix + 'conv_kernel_seq', 4))
    if conv_layers >= 2:
        kernel = config.get(prefix + 'conv_kernel_ch', 3)
        weights['conv_qk1.weight'] = matrix(rng, channels, dh, kernel, fan_in=dh * kernel)
    x = rng.standard_normal((batch, seq_len, e)).astype(np.float32)
    return write_case(out_dir, name, 'ccgqa' if grouped else 'cca', config, weights, x, tolerance)


def zaya_case(out_dir, name, seed, config, batch, seq_len):
    """§3 ZAYA CCA; config must name num_attention_heads, num_key_value_heads and head_dim."""
    rng = np.random.default_rng(seed)
    e, heads = config['hidden_size'], config['num_attention_heads']
    kv_heads, head_dim = config['num_key_value_heads'], config['head_dim']
    k0, k1 = config.get('cca_time0', 2), config.get('cca_time1', 2)
    channels = (heads + kv_heads) * head_dim
    projections = {'qkv_proj.q_proj': (heads * head_dim, e), 'qkv_proj.k_proj': (kv_heads * head_dim, e),
                   'qkv_proj.v_proj_current': (kv_heads * head_dim // 2, e),
                   'qkv_proj.v_proj_delayed': (kv_heads * head_dim // 2, e), 'o_proj': (e, heads * head_dim)}
    weights = {}
    for layer, shape in projections.items():
        weights[layer + '.weight'] = matrix(rng, *shape)
        if config.get('attention_bias', False):
            weights[layer + '.bias'] = noise(rng, shape[0])
    weights.update({
        'qkv_proj.conv_qk_depthwise.weight': matrix(rng, channels, 1, k0),
        'qkv_proj.conv_qk_depthwise.bias': noise(rng, channels),
        'qkv_proj.conv_qk_grouped.weight': matrix(rng, channels, head_dim, k1, fan_in=head_dim * k1),
        'qkv_proj.conv_qk_grouped.bias': noise(rng, channels),
        'qk_norm.temp': noise(rng, kv_heads, scale=0.5, mean=1.0)})
    x = rng.standard_normal((batch, seq_len, e)).astype(np.float32)
    return write_case(out_dir, name, 'zaya_cca', config, weights, x)


def dsa_case(out_dir, name, seed, config, batch, seq_len, dtype='F32', zero_index_queries=False):
    """§4 GLM-5 DSA. zero_index_queries: every indexer score is 0, so the tie rule alone selects."""
    rng = np.random.default_rng(seed)
    e, heads = config['hidden_size'], config['num_attention_heads']
    q_rank, kv_rank = config['q_lora_rank'], config['kv_lora_rank']
    nope, rope_dim, v_dim = config['qk_nope_head_dim'], config['qk_rope_head_dim'], config['v_head_dim']
    index_heads, index_dim = config['index_n_heads'], config['index_head_dim']
    weights = {
        'q_a_proj.weight': matrix(rng, q_rank, e),
        'q_a_layernorm.weight': noise(rng, q_rank, mean=1.0),
        'q_b_proj.weight': matrix(rng, heads * (nope + rope_dim), q_rank),
        'kv_a_proj_with_mqa.weight': matrix(rng, kv_rank + rope_dim, e),
        'kv_a_layernorm.weight': noise(rng, kv_rank, mean=1.0),
        'kv_b_proj.weight': matrix(rng, heads * (nope + v_dim), kv_rank),
        'o_proj.weight': matrix(rng, e, heads * v_dim),
        'indexer.wq_b.weight': matrix(rng, index_heads * index_dim, q_rank),
        'indexer.wk.weight': matrix(rng, index_dim, e),
        'indexer.k_norm.weight': noise(rng, index_dim, mean=1.0),
        'indexer.k_norm.bias': noise(rng, index_dim),
        'indexer.weights_proj.weight': matrix(rng, index_heads, e)}
    if zero_index_queries:
        weights['indexer.wq_b.weight'][:] = 0
    if config.get('attention_bias', False):
        weights['q_a_proj.bias'] = noise(rng, q_rank)
        weights['kv_a_proj_with_mqa.bias'] = noise(rng, kv_rank + rope_dim)
        weights['o_proj.bias'] = noise(rng, e)
    x = rng.standard_normal((batch, seq_len, e)).astype(np.float32)
    folder = write_case(out_dir, name, 'glm_dsa', config, weights, x, dtype=dtype)
    check_selection_margin(folder)
    return folder


def check_selection_margin(folder, relative=1e-5):
    """Exits when float32 rounding of the indexer scores could change a row's top-K selection. Safe
    rows: the K-th and (K+1)-th best scores differ clearly, or they tie at exactly 0 while every
    other score is clearly away from 0 (scores are weighted sums, of either sign) and each key scoring
    0 has every dot product exactly 0 or clearly negative (so its score stays 0 in float32 and the tie
    rule decides)."""
    def path(name):
        return os.path.join(folder, name)

    with open(path('config.json')) as f:
        config = json.load(f)['config']
    score, dots = reference.dsa_indexer_scores(config, safetensors_io.load(path('weights.safetensors')),
                                               np.load(path('x.npy')).astype(np.float64))
    top_k = config['index_topk']
    score_margin = relative * max(np.abs(score[np.isfinite(score)]).max(), 1e-30)
    dot_margin = relative * np.abs(dots).max()
    for b, s in np.ndindex(score.shape[:2]):
        row = score[b, s, :s + 1]
        if row.size <= top_k:
            continue
        kth, next_best = np.sort(row)[::-1][top_k - 1:top_k + 1]
        if kth - next_best > score_margin:
            continue
        zero = row == 0
        zero_dots = dots[b, :, s, :s + 1][:, zero]
        if (kth == 0 and (np.abs(row[~zero]) > score_margin).all()
                and ((zero_dots < -dot_margin) | (zero_dots == 0)).all()):
            continue
        sys.exit(f'{folder}: batch {b} query {s}: the top-{top_k} selection is within float32 rounding; '
                 'change the seed')


def write_all(out_dir):
    """Writes every case into out_dir (created; must not hold them already); returns the folders."""
    os.makedirs(out_dir, exist_ok=True)
    cases = []

    # §1 cached attention
    mha = {'embedding_dimension': 32, 'number_of_heads': 4, 'rope_base': 10000.0}
    gqa = {'embedding_dimension': 32, 'number_of_heads': 8, 'number_of_key_value_heads': 2,
           'attention_type': 'grouped_query'}
    cases += [
        cached_case(out_dir, 'cached_cross_rope_base_set', 1, mha, 1, 5, context_len=7),
        cached_case(out_dir, 'cached_gqa_cross_masked', 2, gqa, 2, 6, context_len=9, masked=True),
        cached_case(out_dir, 'cached_self_masked', 3, mha, 2, 8, masked=True),
        cached_case(out_dir, 'cached_head_dim_16_e50_h4_rope', 4,
                    {'embedding_dimension': 50, 'number_of_heads': 4, 'number_of_key_value_heads': 2,
                     'attention_type': 'grouped_query', 'head_dimension': 16, 'bias': False,
                     'rope_base': 10000.0}, 2, 11),
        cached_case(out_dir, 'cached_gqa_rope_bf16', 5, dict(gqa, rope_base=10000.0), 1, 12, dtype='BF16'),
        llama_case(out_dir, 'llama_gqa_rope_theta_5e5', 25,
                   {'model_type': 'llama', 'hidden_size': 64, 'num_attention_heads': 8, 'num_key_value_heads': 2,
                    'rope_theta': 500000.0, 'attention_bias': False, 'rope_scaling': None}, 2, 9, biases=()),
        llama_case(out_dir, 'qwen2_qkv_biases_head_dim_12', 26,
                   {'model_type': 'qwen2', 'hidden_size': 40, 'num_attention_heads': 4, 'num_key_value_heads': 1,
                    'head_dim': 12, 'rope_theta': 1000000.0, 'sliding_window': 32768, 'use_sliding_window': False},
                   1, 10, biases=('q_proj', 'k_proj', 'v_proj')),
        # Llama 3.1's scaling at a short original context, so that every band of it is used: with
        # D = 32 and theta 10000 the wavelengths run from 6 to 40000 positions.
        llama_case(out_dir, 'llama31_rope_scaling', 27,
                   {'model_type': 'llama', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'head_dim': 32, 'rope_parameters': {'rope_type': 'llama3', 'rope_theta': 10000.0, 'factor': 8.0,
                                        'low_freq_factor': 1.0, 'high_freq_factor': 4.0,
                                        'original_max_position_embeddings': 256}}, 1, 24, biases=()),
        # Mistral 7B v0.1's window, shorter than the sequence: a query sees its last 4 keys. 300
        # tokens cross the layer's 256-query prefill blocks.
        llama_case(out_dir, 'mistral_sliding_window_4_of_300', 29,
                   {'model_type': 'mistral', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 1,
                    'rope_theta': 10000.0, 'sliding_window': 4}, 2, 300, biases=()),
        # QK-norm: Qwen3 over each head (head_dim beside hidden_size), OLMo 2 over all heads.
        llama_case(out_dir, 'qwen3_qk_norm_each_head', 30,
                   {'model_type': 'qwen3', 'hidden_size': 48, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'head_dim': 16, 'rope_theta': 1000000.0, 'rms_norm_eps': 1e-6, 'attention_bias': True,
                    'use_sliding_window': False, 'sliding_window': None}, 2, 11,
                   biases=('q_proj', 'k_proj', 'v_proj', 'o_proj'), qk_norm='head'),
        llama_case(out_dir, 'olmo2_qk_norm_all_heads', 31,
                   {'model_type': 'olmo2', 'hidden_size': 64, 'num_attention_heads': 4, 'rope_theta': 500000.0,
                    'rms_norm_eps': 1e-6}, 1, 10, biases=(), qk_norm='all'),
        # YaRN as Qwen's long-context configs state it (factor 4 beside a max_position_embeddings
        # that is not 4 x the original), at an original context that puts the ramp inside the head:
        # D = 32 and theta 10000 ramp pairs 4 to 11 of 16 over 2048 positions.
        llama_case(out_dir, 'qwen2_yarn_factor_4', 32,
                   {'model_type': 'qwen2', 'hidden_size': 64, 'num_attention_heads': 2, 'num_key_value_heads': 1,
                    'rope_theta': 10000.0, 'max_position_embeddings': 2560,
                    'rope_scaling': {'type': 'yarn', 'factor': 4.0, 'original_max_position_embeddings': 2048}},
                   1, 40, biases=('q_proj', 'k_proj', 'v_proj')),
        # DeepSeek's mscale pair, the ramp's ends unrounded (pairs 0.21 to 2.02 of 8) and moved,
        # the original context from max_position_embeddings, inside transformers 5's rope_parameters.
        llama_case(out_dir, 'llama_yarn_mscale_untruncated', 33,
                   {'model_type': 'llama', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'max_position_embeddings': 128,
                    'rope_parameters': {'rope_type': 'yarn', 'rope_theta': 10000.0, 'factor': 8.0, 'mscale': 0.707,
                                        'mscale_all_dim': 1.0, 'beta_fast': 16, 'beta_slow': 2,
                                        'truncate': False}}, 1, 20, biases=()),
        # Phi-3's partial rotary (3/4 of each head, as Phi-4-mini states beside its refused longrope)
        # and its window of 2047, here 5.
        llama_case(out_dir, 'phi3_fused_qkv_partial_rotary_window_5', 34,
                   {'model_type': 'phi3', 'hidden_size': 96, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'rope_theta': 10000.0, 'partial_rotary_factor': 0.75, 'sliding_window': 5,
                    'attention_bias': False}, 2, 13, biases=()),
        # Gemma 3: layer 2 slides (4 keys, RoPE base 50), layer 5 is full (rope_theta, linear
        # scaling); norms with 1 + w, scores by query_pre_attn_scalar, class defaults for the heads.
        llama_case(out_dir, 'gemma3_sliding_layer_2', 35,
                   {'model_type': 'gemma3_text', 'hidden_size': 48, 'head_dim': 16, 'query_pre_attn_scalar': 20,
                    'sliding_window': 4, 'rope_local_base_freq': 50.0, 'rope_theta': 1e6, 'attention_bias': True,
                    'rope_scaling': {'rope_type': 'linear', 'factor': 8.0}}, 2, 12,
                   biases=('q_proj', 'k_proj', 'v_proj', 'o_proj'), qk_norm='head', layer=2),
        llama_case(out_dir, 'gemma3_full_layer_5', 36,
                   {'model_type': 'gemma3_text', 'hidden_size': 48, 'num_attention_heads': 4, 'num_key_value_heads': 1,
                    'head_dim': 16, 'query_pre_attn_scalar': 20, 'sliding_window': 4, 'rope_theta': 100.0,
                    'rope_scaling': {'rope_type': 'linear', 'factor': 8.0}, 'rms_norm_eps': 1e-6}, 1, 12,
                   biases=(), qk_norm='head', layer=5),
        # A stated attn_logit_softcapping, which transformers' Gemma 3 stores and never applies.
        llama_case(out_dir, 'gemma3_unused_softcap_layer_5', 38,
                   {'model_type': 'gemma3_text', 'hidden_size': 48, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'head_dim': 16, 'query_pre_attn_scalar': 20, 'sliding_window': 4, 'rope_theta': 100.0,
                    'attn_logit_softcapping': 0.5}, 2, 12, biases=(), qk_norm='head', layer=5),
        # EmbeddingGemma (use_bidirectional_attention): layer 0 slides both ways, |p - j| < 6 // 2 + 1
        # (transformers' rewrite of sliding_window 6), layer 5 sees every key; over 13 tokens. No
        # prefill runs: a bidirectional layer refuses them.
        *[llama_case(out_dir, f'embeddinggemma_{kind}_layer_{layer}', 65,
                     {'model_type': 'gemma3_text', 'hidden_size': 48, 'num_attention_heads': 3,
                      'num_key_value_heads': 1, 'head_dim': 16, 'query_pre_attn_scalar': 16, 'sliding_window': 6,
                      'rope_local_base_freq': 100.0, 'rope_theta': 1000.0, 'use_bidirectional_attention': True},
                     2, 13, biases=(), qk_norm='head', layer=layer)
          for layer, kind in ((0, 'sliding_both_ways'), (5, 'full_both_ways'))],
        # Cohere (Command R): RoPE on dims (2i, 2i + 1) in place, which the layer computes on the
        # de-interleaved head (the same scores); its biases per attention_bias.
        llama_case(out_dir, 'cohere_interleaved_rope', 37,
                   {'model_type': 'cohere', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'rope_theta': 8000000.0, 'attention_bias': True, 'use_qk_norm': False, 'logit_scale': 0.0625},
                   2, 11, biases=('q_proj', 'k_proj', 'v_proj', 'o_proj')),
        # Command R+: per-head LayerNorms of q and k (each head its own weights; eps stated), then
        # Cohere's interleaved RoPE.
        llama_case(out_dir, 'cohere_plus_qk_layer_norms', 45,
                   {'model_type': 'cohere', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'rope_theta': 75000000.0, 'use_qk_norm': True, 'layer_norm_eps': 1e-5},
                   2, 11, biases=(), qk_norm='each_head_own'),
        # Cohere2 (Command R7B): layer 1 slides (3 keys, interleaved RoPE), layer 3 is full without RoPE.
        llama_case(out_dir, 'cohere2_sliding_layer_1', 38,
                   {'model_type': 'cohere2', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'rope_theta': 50000.0, 'sliding_window': 3, 'num_hidden_layers': 4}, 2, 10, biases=(), layer=1),
        llama_case(out_dir, 'cohere2_full_layer_3_no_rope', 39,
                   {'model_type': 'cohere2', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'rope_theta': 50000.0, 'sliding_window': 3, 'attention_bias': True,
                    'layer_types': ['sliding_attention', 'sliding_attention', 'sliding_attention', 'full_attention']},
                   1, 10, biases=('q_proj', 'k_proj', 'v_proj', 'o_proj'), layer=3),
        # gpt-oss: sinks; layer 0 slides (4 keys), layer 1 is full; YaRN untruncated, its ramp
        # (pairs 0 to 2.02 of 8 over an original context of 64) and amplitude visible at 12 tokens.
        *[llama_case(out_dir, f'gpt_oss_{kind}_layer_{layer}_sinks', 40 + layer,
                     {'model_type': 'gpt_oss', 'hidden_size': 48, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                      'head_dim': 16, 'sliding_window': 4, 'num_hidden_layers': 2, 'attention_bias': True,
                      'rope_theta': 10000.0,
                      'rope_scaling': {'rope_type': 'yarn', 'factor': 32.0, 'beta_fast': 32.0, 'beta_slow': 1.0,
                                       'truncate': False, 'original_max_position_embeddings': 64}},
                     2, 12, biases=('q_proj', 'k_proj', 'v_proj', 'o_proj'), layer=layer, sinks=True)
          for layer, kind in ((0, 'sliding'), (1, 'full'))],
        # Gemma 2: scores soft-capped (at 1.5 and 2, low enough to bend them) after the
        # query_pre_attn_scalar scale; layer 0 slides (4 keys; 4 heads, 2 KV heads), layer 1 is
        # full, with the class's 8 heads and 4 KV heads, and biases.
        llama_case(out_dir, 'gemma2_sliding_layer_0_softcap', 42,
                   {'model_type': 'gemma2', 'hidden_size': 48, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'head_dim': 16, 'query_pre_attn_scalar': 12, 'sliding_window': 4, 'num_hidden_layers': 2,
                    'attn_logit_softcapping': 1.5, 'rope_theta': 10000.0}, 2, 12, biases=(), layer=0),
        llama_case(out_dir, 'gemma2_full_layer_1_softcap', 43,
                   {'model_type': 'gemma2', 'hidden_size': 48, 'head_dim': 16, 'query_pre_attn_scalar': 12,
                    'sliding_window': 4, 'num_hidden_layers': 2, 'attn_logit_softcapping': 2.0,
                    'attention_bias': True}, 1, 12, biases=('q_proj', 'k_proj', 'v_proj', 'o_proj'), layer=1),
        # Phi-3 (Phi-4-mini's partial rotary 0.75) with LongRoPE over an original context of 5
        # (transformers picks the factors per call): the forward's 12 tokens, and a prefill of 6
        # that passes 5, turn by the long factors; prefills of 0 and 1, then a call per token, turn
        # positions 0-4 by the short ones and the rest by the long. Both scale cos and sin by
        # sqrt(1 + ln(64 / 5) / ln 5).
        llama_case(out_dir, 'phi3_longrope_per_call', 48,
                   {'model_type': 'phi3', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'rope_theta': 10000.0, 'partial_rotary_factor': 0.75, 'original_max_position_embeddings': 5,
                    'max_position_embeddings': 64,
                    'rope_scaling': {'type': 'longrope', 'short_factor': [1.0, 1.1, 1.3, 2.0, 3.5, 5.0],
                                     'long_factor': [1.0, 1.6, 3.0, 6.0, 11.0, 16.0]}},
                   2, 12, biases=(), outputs_by_prefill=True),
        # Dynamic NTK from max_position_embeddings 5: the forward's 12 tokens turn by the base of
        # length 12; prefills of 0 and 1, then a call per token, by each call's own length (from
        # position 5 on); a prefill of 6 by that of 6 for its tokens.
        llama_case(out_dir, 'llama_dynamic_ntk_per_call', 56,
                   {'model_type': 'llama', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'rope_theta': 100.0, 'max_position_embeddings': 5, 'rope_scaling': {'type': 'dynamic', 'factor': 3.0}},
                   2, 12, biases=(), outputs_by_prefill=True),
        # Qwen2 with use_sliding_window: layer 1 slides over 3 keys as layer_types says.
        llama_case(out_dir, 'qwen2_sliding_layer_1', 47,
                   {'model_type': 'qwen2', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'rope_theta': 10000.0, 'use_sliding_window': True, 'sliding_window': 3, 'num_hidden_layers': 2,
                    'layer_types': ['full_attention', 'sliding_attention']}, 2, 10,
                   biases=('q_proj', 'k_proj', 'v_proj'), layer=1),
        # SmolLM3: layer 3 has no RoPE (every fourth by default), layer 1 has it as no_rope_layers
        # says; the same weights' seed for both.
        llama_case(out_dir, 'smollm3_nope_layer_3', 46,
                   {'model_type': 'smollm3', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'rope_theta': 2000000.0, 'num_hidden_layers': 4}, 2, 10, biases=(), layer=3),
        llama_case(out_dir, 'smollm3_rope_layer_1', 46,
                   {'model_type': 'smollm3', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'rope_theta': 10.0, 'num_hidden_layers': 4, 'no_rope_layers': [0, 1, 0, 0]}, 2, 10, biases=(),
                   layer=1),
        # Llama 4: layer 0 rotates pairs in place (llama3-scaled, as Scout), L2-normalises q and k
        # and attends within chunks of 4 keys; layer 3 has no RoPE and scales its queries by
        # position (floor_scale 3, attn_scale 0.5: from position 2 on). The same weights' seed.
        *[llama_case(out_dir, f'llama4_{kind}_layer_{layer}', 49,
                     {'model_type': 'llama4_text', 'hidden_size': 64, 'num_attention_heads': 4,
                      'num_key_value_heads': 2, 'head_dim': 16, 'rope_theta': 10000.0, 'num_hidden_layers': 4,
                      'no_rope_layers': [], 'attention_chunk_size': 4, 'attn_temperature_tuning': 4,
                      'floor_scale': 3, 'attn_scale': 0.5, 'rms_norm_eps': 1e-5,
                      'rope_scaling': {'rope_type': 'llama3', 'factor': 8.0, 'low_freq_factor': 1.0,
                                       'high_freq_factor': 4.0, 'original_max_position_embeddings': 8}},
                     2, 11, biases=(), layer=layer)
          for layer, kind in ((0, 'chunked'), (3, 'temperature'))],
        # GLM-4: the first half of each head (8 of 16 dims) turns its pairs in place; q, k and v
        # biased (attention_bias's default), o not. GLM-4-0414 (glm4) without biases, three
        # quarters of each head rotated.
        llama_case(out_dir, 'glm_half_rotary_pairs', 50,
                   {'model_type': 'glm', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'head_dim': 16, 'rope_theta': 10000.0}, 2, 11, biases=('q_proj', 'k_proj', 'v_proj')),
        llama_case(out_dir, 'glm4_three_quarters_rotary_no_bias', 51,
                   {'model_type': 'glm4', 'hidden_size': 64, 'num_attention_heads': 4, 'head_dim': 16,
                    'rope_theta': 500.0, 'partial_rotary_factor': 0.75, 'attention_bias': False}, 1, 12, biases=()),
        # GLM-4.5 (glm4_moe): half of each head (8 of 16) turns as halves, q and k RMS-normed per head
        # (use_qk_norm), q, k and v biased (attention_bias), o not; and without either, a quarter turned.
        llama_case(out_dir, 'glm4_moe_half_rotary_qk_norm', 63,
                   {'model_type': 'glm4_moe', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'head_dim': 16, 'rope_theta': 10000.0, 'attention_bias': True, 'use_qk_norm': True,
                    'rms_norm_eps': 1e-5}, 2, 11, biases=('q_proj', 'k_proj', 'v_proj'), qk_norm='head'),
        llama_case(out_dir, 'glm4_moe_quarter_rotary_plain', 64,
                   {'model_type': 'glm4_moe', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 1,
                    'head_dim': 16, 'rope_theta': 500.0, 'partial_rotary_factor': 0.25}, 1, 12, biases=()),
        # StarCoder2: all four biased (use_bias's default), every layer sliding over 5 keys.
        llama_case(out_dir, 'starcoder2_biased_window_5', 66,
                   {'model_type': 'starcoder2', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'rope_theta': 1000.0, 'sliding_window': 5}, 2, 11, biases=('q_proj', 'k_proj', 'v_proj', 'o_proj')),
        # OLMoE: q and k RMS-normed over all of a token's heads (OLMo 2's norm), clip_qkv null.
        llama_case(out_dir, 'olmoe_norm_over_all_heads', 67,
                   {'model_type': 'olmoe', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'rope_theta': 10000.0, 'clip_qkv': None, 'rms_norm_eps': 1e-5}, 2, 10, biases=(), qk_norm='all'),
        # Nemotron: half of each head (8 of 16) rotated as halves (its default factor), all four biased.
        llama_case(out_dir, 'nemotron_half_rotary', 68,
                   {'model_type': 'nemotron', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'head_dim': 16, 'rope_theta': 1000.0, 'attention_bias': True}, 1, 12,
                   biases=('q_proj', 'k_proj', 'v_proj', 'o_proj')),
        # Apertus: q and k RMS-normed per head, llama3-scaled RoPE (stated, as the reader requires).
        llama_case(out_dir, 'apertus_qk_norm_llama3', 69,
                   {'model_type': 'apertus', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'rope_theta': 10000.0, 'rms_norm_eps': 1e-5,
                    'rope_scaling': {'rope_type': 'llama3', 'factor': 8.0, 'low_freq_factor': 1.0,
                                     'high_freq_factor': 4.0, 'original_max_position_embeddings': 8}},
                   2, 11, biases=(), qk_norm='head'),
        # Arcee (AFM): Llama's attention.
        llama_case(out_dir, 'arcee_llama_attention', 70,
                   {'model_type': 'arcee', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 1,
                    'rope_theta': 10000.0}, 1, 10, biases=()),
        # Helium: pairs (2i, 2i + 1) in place; q, k and v biased (attention_bias), o never.
        llama_case(out_dir, 'helium_pairs_in_place', 71,
                   {'model_type': 'helium', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'head_dim': 16, 'rope_theta': 100.0, 'attention_bias': True}, 2, 10,
                   biases=('q_proj', 'k_proj', 'v_proj')),
        # EXAONE 4: q and k RMS-normed per head; layer 1 slides over 4 keys with RoPE, layer 3 (every
        # fourth) sees all without RoPE; with a null sliding_window layer 3 is full and rotates. The
        # same weights' seed.
        *[llama_case(out_dir, f'exaone4_{kind}_layer_{layer}', 73,
                     {'model_type': 'exaone4', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                      'rope_theta': 100.0, 'rms_norm_eps': 1e-5, 'num_hidden_layers': 4, 'sliding_window': window},
                     2, 11, biases=(), qk_norm='head', layer=layer)
          for layer, kind, window in ((1, 'sliding', 4), (3, 'full_without_rope', 4), (3, 'windowless_rotating', None))],
        # ERNIE 4.5: pairs (2i, 2i + 1) in place; the four biased where use_bias says.
        llama_case(out_dir, 'ernie4_5_pairs_in_place_biased', 74,
                   {'model_type': 'ernie4_5', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'head_dim': 16, 'rope_theta': 100.0, 'use_bias': True}, 2, 10,
                   biases=('q_proj', 'k_proj', 'v_proj', 'o_proj')),
        # Phi-2: the four biased, the output projection `dense`, half of each head (8 of 16) rotated.
        llama_case(out_dir, 'phi2_dense_half_rotary', 76,
                   {'model_type': 'phi', 'hidden_size': 64, 'num_attention_heads': 4, 'rope_theta': 1000.0,
                    'partial_rotary_factor': 0.5}, 2, 10, biases=('q_proj', 'k_proj', 'v_proj', 'o_proj')),
        # GPT-NeoX (Pythia): each head's q, k and v rows in turn in query_key_value, the output
        # `dense`, all biased; a quarter of each head (4 of 16) rotated, by rotary_pct and rotary_emb_base.
        llama_case(out_dir, 'gpt_neox_fused_heads_quarter_rotary', 77,
                   {'model_type': 'gpt_neox', 'hidden_size': 64, 'num_attention_heads': 4, 'rotary_pct': 0.25,
                    'rotary_emb_base': 1000}, 2, 10, biases=('q_proj', 'k_proj', 'v_proj', 'o_proj')),
        # Ministral 3: YaRN (x4 from 4 positions, its amplitude 1 by mscale = mscale_all_dim), the
        # queries scaled by 1 + 0.5 ln(1 + floor(p / 4)) from position 4 on, over 13 tokens, and a
        # window of 6 keys.
        llama_case(out_dir, 'ministral3_yarn_scaled_queries_window_6', 75,
                   {'model_type': 'ministral3', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'head_dim': 16, 'sliding_window': 6,
                    'rope_parameters': {'rope_type': 'yarn', 'rope_theta': 1000.0, 'factor': 4.0,
                                                        'original_max_position_embeddings': 4, 'beta_fast': 32.0,
                                                        'beta_slow': 1.0, 'mscale': 1.0, 'mscale_all_dim': 1.0,
                                                        'llama_4_scaling_beta': 0.5}}, 2, 13, biases=()),
        # Falcon-40B's layout: query_key_value grouped per KV head (2 query heads each), all biased.
        llama_case(out_dir, 'falcon_grouped_query_key_value', 79,
                   {'model_type': 'falcon', 'hidden_size': 64, 'num_attention_heads': 4, 'num_kv_heads': 2,
                    'new_decoder_architecture': True, 'bias': True, 'rope_theta': 100.0}, 2, 10,
                   biases=('q_proj', 'k_proj', 'v_proj', 'o_proj')),
        # Falcon-7B's: one KV head (multi_query, its default), no biases.
        llama_case(out_dir, 'falcon_multi_query', 80,
                   {'model_type': 'falcon', 'hidden_size': 64, 'num_attention_heads': 4, 'rope_theta': 100.0}, 2, 10,
                   biases=()),
        # Hunyuan dense: q and k RMS-normed per head after RoPE; a dynamic RoPE whose alpha 100
        # raises the base within max_position_embeddings 6; calls past it turn by dynamic NTK from
        # rope_theta alone (the forward's 12 tokens, and each --prefill's calls, by their own ends).
        llama_case(out_dir, 'hunyuan_norms_after_rope_alpha', 78,
                   {'model_type': 'hunyuan_v1_dense', 'hidden_size': 64, 'num_attention_heads': 4,
                    'num_key_value_heads': 2, 'head_dim': 16, 'rope_theta': 100.0, 'attention_bias': True,
                    'max_position_embeddings': 6, 'use_qk_norm': True,
                    'rope_scaling': {'type': 'dynamic', 'alpha': 100.0, 'factor': 1.0}}, 2, 12,
                   biases=('q_proj', 'k_proj', 'v_proj', 'o_proj'), qk_norm='head', outputs_by_prefill=True),
        # Seed-OSS: q, k and v biased (attention_bias's default), o as attention_out_bias says.
        llama_case(out_dir, 'seed_oss_out_bias', 72,
                   {'model_type': 'seed_oss', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'head_dim': 16, 'rope_theta': 100.0, 'attention_out_bias': True}, 2, 10,
                   biases=('q_proj', 'k_proj', 'v_proj', 'o_proj')),
        # OLMo 3: OLMo 2's norms over all heads; layer 0 slides over 3 keys with plain RoPE, layer 3
        # (every fourth) sees all with YaRN (x8 from 4 positions: most pairs slowed, cos and sin
        # scaled by 0.1 ln 8 + 1).
        *[llama_case(out_dir, f'olmo3_{kind}_layer_{layer}', 55,
                     {'model_type': 'olmo3', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                      'rope_theta': 10000.0, 'sliding_window': 3, 'num_hidden_layers': 4, 'attention_bias': True,
                      'rope_scaling': {'rope_type': 'yarn', 'factor': 8.0, 'original_max_position_embeddings': 4}},
                     2, 10, biases=('q_proj', 'k_proj', 'v_proj', 'o_proj'), qk_norm='all', layer=layer)
          for layer, kind in ((0, 'sliding'), (3, 'full_yarn'))],
        # OLMo 1: Llama's attention with biases as attention_bias says, where clip_qkv is null
        # (OLMo-1B-hf, OLMo-7B-hf); q, k and v clamped where it is set (OLMo-7B-0424's 8; 0.4 here,
        # which bends most of them).
        llama_case(out_dir, 'olmo_clip_qkv_null_biases', 54,
                   {'model_type': 'olmo', 'hidden_size': 64, 'num_attention_heads': 4, 'rope_theta': 10000.0,
                    'clip_qkv': None, 'attention_bias': True}, 2, 9, biases=('q_proj', 'k_proj', 'v_proj', 'o_proj')),
        llama_case(out_dir, 'olmo_clip_qkv', 57,
                   {'model_type': 'olmo', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'rope_theta': 10000.0, 'clip_qkv': 0.4}, 2, 11, biases=()),
        # StableLM: a quarter of each head rotated (4 of 16 dims, as halves), q, k and v biased
        # (use_qkv_bias); StableLM 2 12B's per-head LayerNorms of q and k (qk_layernorm).
        llama_case(out_dir, 'stablelm_quarter_rotary_qkv_bias', 52,
                   {'model_type': 'stablelm', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'rope_theta': 10000.0, 'use_qkv_bias': True}, 2, 11, biases=('q_proj', 'k_proj', 'v_proj')),
        llama_case(out_dir, 'stablelm_qk_layernorm_per_head', 53,
                   {'model_type': 'stablelm', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'rope_theta': 10000.0, 'partial_rotary_factor': 0.5, 'qk_layernorm': True,
                    'layer_norm_eps': 1e-4}, 1, 12, biases=(), qk_norm='head_modules'),
        # Granite: Llama's attention with scores scaled by attention_multiplier (1 / head_dim in
        # the released configs; 0.3 here, far from 16^-1/2 = 0.25 and 1 / 16), four biases.
        llama_case(out_dir, 'granite_attention_multiplier', 44,
                   {'model_type': 'granite', 'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2,
                    'attention_multiplier': 0.3, 'attention_bias': True, 'rope_theta': 10000.0},
                   2, 11, biases=('q_proj', 'k_proj', 'v_proj', 'o_proj')),
        llama_case(out_dir, 'llama_linear_rope_scaling', 28,
                   {'model_type': 'mistral', 'hidden_size': 64, 'num_attention_heads': 4, 'rope_theta': 10000.0,
                    'rope_scaling': {'type': 'linear', 'factor': 4.0}}, 1, 12, biases=()),
    ]

    # §2 CCA / CCGQA
    cases += [
        cca_case(out_dir, 'cca_latent_rank_32_rope_base_500', 6,
                 {'hidden_size': 64, 'num_heads': 4, 'mode': 'decoder', 'cca_latent_rank': 32,
                  'rope_base': 500.0}, 2, 13, grouped=False),
        cca_case(out_dir, 'ccgqa_encoder', 7, {'hidden_size': 128, 'num_heads': 8, 'mode': 'encoder'}, 1, 13,
                 grouped=True),
        cca_case(out_dir, 'ccgqa_bitnet', 8, {'hidden_size': 128, 'num_heads': 8, 'mode': 'decoder',
                                              'use_bitnet': True}, 1, 17, grouped=True, tolerance=1e-3),
    ]

    # §3 ZAYA CCA
    zaya = {'hidden_size': 64, 'num_attention_heads': 4, 'num_key_value_heads': 2, 'head_dim': 16}
    zaya_small = {'num_attention_heads': 4, 'head_dim': 8, 'rope_theta': 100.0}
    cases += [
        zaya_case(out_dir, 'zaya_kv_heads_1', 9,
                  dict(zaya_small, hidden_size=32, num_key_value_heads=1), 1, 12),
        zaya_case(out_dir, 'zaya_kv_heads_3_bias', 10,
                  dict(zaya_small, hidden_size=48, num_attention_heads=6, num_key_value_heads=3,
                       attention_bias=True), 2, 12),
        zaya_case(out_dir, 'zaya_rotary_factor_1', 11,
                  dict(zaya, partial_rotary_factor=1.0, rope_theta=10000.0), 1, 14),
        zaya_case(out_dir, 'zaya_rotary_factor_quarter', 12,
                  dict(zaya, partial_rotary_factor=0.25, rope_theta=10000.0), 1, 14),
        zaya_case(out_dir, 'zaya_cca_time_1_3', 13,
                  dict(zaya, cca_time0=1, cca_time1=3, rope_theta=100.0), 1, 15),
        zaya_case(out_dir, 'zaya_cca_time_4_4', 14,
                  dict(zaya, cca_time0=4, cca_time1=4, rope_theta=100.0), 1, 30),
        zaya_case(out_dir, 'zaya_nested_rope_theta', 15,
                  dict(zaya, rope_parameters={'hybrid': {'rope_theta': 1000.0}}), 1, 14),
    ]

    # §4 GLM-5 DSA
    dsa = {'hidden_size': 64, 'num_attention_heads': 4, 'q_lora_rank': 48, 'kv_lora_rank': 32,
           'qk_nope_head_dim': 16, 'qk_rope_head_dim': 8, 'v_head_dim': 16, 'index_n_heads': 4,
           'index_head_dim': 16, 'index_topk': 6, 'rope_theta': 10000.0}
    theta_in_rope_parameters = {k: v for k, v in dsa.items() if k != 'rope_theta'}
    theta_in_rope_parameters['rope_parameters'] = {'rope_type': 'default', 'rope_theta': 50.0}
    cases += [
        # S > 256: more than one block of indexer queries. (Seed 24: with 16 or 17 some row's top-16
        # is within float32 rounding, see check_selection_margin.)
        dsa_case(out_dir, 'dsa_seq_300', 24, dict(dsa, index_topk=16), 1, 300),
        dsa_case(out_dir, 'dsa_rms_norm_eps', 17, dict(dsa, rms_norm_eps=0.5), 1, 16),
        dsa_case(out_dir, 'dsa_rope_parameters_theta', 18, theta_in_rope_parameters, 1, 16),
        dsa_case(out_dir, 'dsa_topk_1', 19, dict(dsa, index_topk=1), 1, 12),
        dsa_case(out_dir, 'dsa_rope_dim_equals_index_dim', 20,
                 dict(dsa, qk_rope_head_dim=16, index_head_dim=16, v_head_dim=8, index_n_heads=2), 1, 15),
        dsa_case(out_dir, 'dsa_all_scores_tie', 21, dsa, 2, 14, zero_index_queries=True),
        dsa_case(out_dir, 'dsa_bias_bf16', 22, dict(dsa, attention_bias=True), 1, 20, dtype='BF16'),
    ]
    return cases


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for folder in write_all(sys.argv[1]):
        print(folder)
