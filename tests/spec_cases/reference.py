"""Float64 reference of the attention layers, written from spec/attention.md alone.

The spec lives in ../shared/spec/ next to the checkout; "§n" below names its section n. Layouts are
PyTorch's: x is [B, S, E], per-head tensors are [B, heads, S, dim]. Everything is float64 except
BitLinear's quantisation, which §2 fixes in float32. run_case() gives the expected output of a case
folder (spec/cases.md). This file must not be derived from the C++ code.
"""
import json
import os

import numpy as np

import safetensors_io


def linear(x, weight, bias=None):
    """x W^T (+ b) in float64."""
    y = np.asarray(x, np.float64) @ np.asarray(weight, np.float64).T
    return y if bias is None else y + bias


def split_heads(y, heads):
    """[B, S, heads*dim] -> [B, heads, S, dim]."""
    b, s, _ = y.shape
    return y.reshape(b, s, heads, -1).transpose(0, 2, 1, 3)


def merge_heads(y):
    """[B, heads, S, dim] -> [B, S, heads*dim] (heads concatenated)."""
    b, heads, s, dim = y.shape
    return y.transpose(0, 2, 1, 3).reshape(b, s, heads * dim)


def shift_right(x):
    """x_{t-1} for every t, with x_{-1} = 0 (§2 step 4, §3)."""
    return np.pad(x, ((0, 0), (1, 0), (0, 0)))[:, :-1]


def rope_rotate_half(x, positions, base, rotary_dim=None, frequencies=None):
    """§1 RoPE, NeoX "rotate half" over the last axis: for pair i < rd/2, angle = pos * base^(-2i/rd),
    x1' = x1 cos - x2 sin, x2' = x1 sin + x2 cos (x1 = dims [0, rd/2), x2 = [rd/2, rd)).
    rd is the whole head unless rotary_dim is given (§3's partial RoPE: dims >= rd unchanged).
    `frequencies` replaces base^(-2i/rd) (a scaled RoPE)."""
    rd = x.shape[-1] if rotary_dim is None else rotary_dim
    half = rd // 2
    if frequencies is None:
        frequencies = base ** (-2.0 * np.arange(half) / rd)
    angle = np.asarray(positions, np.float64)[:, None] * frequencies
    cos, sin = np.cos(angle), np.sin(angle)
    x1, x2 = x[..., :half], x[..., half:rd]
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos, x[..., rd:]], axis=-1)


def rope_interleaved(x, positions, base):
    """§4 "interleaved" RoPE: de-interleave (x0,x1,x2,x3,.. -> x0,x2,..,x1,x3,..), then rotate half;
    the result stays in the de-interleaved order."""
    return rope_rotate_half(np.concatenate([x[..., 0::2], x[..., 1::2]], axis=-1), positions, base)


def rope_pairs_in_place(x, positions, frequencies):
    """Cohere's RoPE (transformers' CohereRotaryEmbedding and rotate_half): pair i is dims (2i, 2i+1),
    turned by pos * frequencies[i] where it lies: x_2i' = x_2i cos - x_2i+1 sin,
    x_2i+1' = x_2i+1 cos + x_2i sin."""
    angle = np.asarray(positions, np.float64)[:, None] * frequencies
    cos, sin = np.cos(angle), np.sin(angle)
    out = np.array(x, dtype=np.float64)
    even, odd = x[..., 0::2], x[..., 1::2]
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = odd * cos + even * sin
    return out


def attention(q, k, v, scale, causal, mask=None):
    """§1 softmax(q k^T * scale) v. q [B, H, Sq, D]; k, v [B, Hkv, Sk, D], query head h reads KV head
    h / (H/Hkv). mask [B, 1, Sq, Sk], True = masked; causal masks key j > query position j (Sq == Sk).
    A query row whose every key is masked gives a zero output."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scores = np.einsum('bhqd,bhkd->bhqk', q, k) * scale
    masked = np.zeros(scores.shape, bool)
    if mask is not None:
        masked |= mask
    if causal:
        masked |= np.triu(np.ones(scores.shape[-2:], bool), k=1)
    scores = np.where(masked, -np.inf, scores)
    row_max = scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores - np.where(np.isfinite(row_max), row_max, 0.0))
    total = weights.sum(axis=-1, keepdims=True)
    return np.einsum('bhqk,bhkd->bhqd', weights / np.where(total > 0, total, 1.0), v)


# §1 Cached MHA / GQA attention

def cached_attention(config, w, x, context=None, mask=None):
    """§1 whole sequence: causal self-attention (RoPE at positions 0..S-1 when rope_base is set), or,
    with a context, cross-attention over it: no causal mask, nothing rotated."""
    heads = config['number_of_heads']
    kv_heads = config.get('number_of_key_value_heads') or heads
    head_dim = config.get('head_dimension') or config['embedding_dimension'] // heads
    rope_base = config.get('rope_base')
    has_bias = config.get('bias', True)

    def project(name, inputs, n_heads):
        bias = w[name + '.bias'] if has_bias else None
        return split_heads(linear(inputs, w[name + '.weight'], bias), n_heads)

    kv_input = x if context is None else context
    q = project('query_projection', x, heads)
    k = project('key_projection', kv_input, kv_heads)
    v = project('value_projection', kv_input, kv_heads)
    if rope_base is not None and context is None:
        positions = np.arange(x.shape[1])
        q, k = rope_rotate_half(q, positions, rope_base), rope_rotate_half(k, positions, rope_base)
    o = attention(q, k, v, head_dim ** -0.5, causal=context is None, mask=mask)
    return linear(merge_heads(o), w['output_projection.weight'],
                  w['output_projection.bias'] if has_bias else None)


def llama_rope_frequencies(config, head_dim):
    """The RoPE frequencies of a Hugging Face Llama-family config: base^(-2i/D) for rope_theta,
    rescaled as its rope_scaling (or transformers 5's rope_parameters) says. 'linear' divides them
    by the factor; 'llama3' (Llama 3.1) divides those whose wavelength 2 pi / f exceeds
    original_max_position_embeddings / low_freq_factor, keeps those below
    original_max_position_embeddings / high_freq_factor, and in between mixes the two with weight
    s = (original / wavelength - low) / (high - low) on the kept one."""
    scaling = config.get('rope_parameters') or config.get('rope_scaling') or {}
    base = scaling.get('rope_theta', config.get('rope_theta', 10000.0))
    f = base ** (-2.0 * np.arange(head_dim // 2) / head_dim)
    kind = scaling.get('rope_type', scaling.get('type', 'default'))
    if kind == 'linear':
        return f / scaling['factor']
    if kind == 'llama3':
        factor, low, high = scaling['factor'], scaling['low_freq_factor'], scaling['high_freq_factor']
        original = scaling['original_max_position_embeddings']
        wavelength = 2 * np.pi / f
        s = (original / wavelength - low) / (high - low)
        mixed = (1 - s) * f / factor + s * f
        return np.where(wavelength > original / low, f / factor, np.where(wavelength < original / high, f, mixed))
    if kind == 'yarn':
        return yarn_frequencies(config, scaling, f, head_dim, base)
    # longrope divides them per call (longrope() below), dynamic raises the base per call (dynamic_ntk())
    assert kind in ('default', 'longrope', 'dynamic'), kind
    if kind == 'dynamic' and config['model_type'] == 'hunyuan_v1_dense':  # within the original context
        return f * hunyuan_alpha_base_factor(scaling, head_dim) ** (-2.0 * np.arange(head_dim // 2) / head_dim)
    return f


def hunyuan_alpha_base_factor(scaling, dim):
    """Hunyuan's dynamic RoPE within max_position_embeddings: the base times alpha^(d / (d - 2))
    (transformers' HunYuanDenseV1RotaryEmbedding); 1 without alpha."""
    return scaling.get('alpha', 1.0) ** (dim / (dim - 2))


def yarn_frequencies(config, scaling, f, dim, base):
    """YaRN (arXiv:2309.00071) as its code, vLLM and transformers compute it, `factor` as stated:
    pair i blends f_i / factor (weight r_i) with f_i, r_i = clamp((i - low) / (high - low), 0, 1),
    where low and high are the (fractional) pair indices turning beta_fast (32) and beta_slow (1)
    times over original_max_position_embeddings (else max_position_embeddings), floored and
    ceiled unless truncate is false, clipped to [0, dim - 1]."""
    factor = scaling['factor']
    original = scaling.get('original_max_position_embeddings') or config['max_position_embeddings']

    def pair(turns):
        return dim * np.log(original / (turns * 2 * np.pi)) / (2 * np.log(base))

    low, high = pair(scaling.get('beta_fast') or 32), pair(scaling.get('beta_slow') or 1)
    if scaling.get('truncate', True):
        low, high = np.floor(low), np.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    r = np.clip((np.arange(dim // 2) - low) / (high - low), 0, 1)
    return r * f / factor + (1 - r) * f


def yarn_attention_factor(config):
    """YaRN's scale of cos and sin (so of q and k): attention_factor, else 0.1 ln(factor) + 1 (1
    for factor <= 1), or with mscale and mscale_all_dim the ratio of two such terms (DeepSeek)."""
    scaling = config.get('rope_parameters') or config.get('rope_scaling') or {}
    if scaling.get('rope_type', scaling.get('type')) != 'yarn':
        return 1.0
    if scaling.get('attention_factor') is not None:
        return scaling['attention_factor']
    factor = scaling['factor']

    def magnitude(m):
        return 1.0 if factor <= 1 else 0.1 * m * np.log(factor) + 1.0

    if scaling.get('mscale') and scaling.get('mscale_all_dim'):
        return magnitude(scaling['mscale']) / magnitude(scaling['mscale_all_dim'])
    return magnitude(1.0)


def longrope(config):
    """LongRoPE (Phi-3, as transformers 4 reads it): (short, long, original, amplitude), the
    per-pair divisors of base^(-2i/rd) short_factor and long_factor, the original context (the
    config's original_max_position_embeddings, else Phi-3's class default 4096, else
    max_position_embeddings), and the scale of cos and sin: attention_factor, else
    sqrt(1 + ln(s) / ln(original)) with s = max_position_embeddings / original (1 for s <= 1).
    None without longrope."""
    scaling = config.get('rope_parameters') or config.get('rope_scaling') or {}
    if scaling.get('rope_type', scaling.get('type')) != 'longrope':
        return None
    original = config.get('original_max_position_embeddings') or \
        (4096 if config['model_type'] == 'phi3' else config['max_position_embeddings'])
    factor = config.get('max_position_embeddings', 4096) / original
    amplitude = scaling.get('attention_factor') or (1.0 if factor <= 1 else np.sqrt(1 + np.log(factor) / np.log(original)))
    return np.array(scaling['short_factor']), np.array(scaling['long_factor']), original, amplitude


def call_ends(seq_len, prefill):
    """Per position, its forward call's last position + 1: prefill None, one call of every token;
    else the first `prefill` tokens, then a call per token (`hattn run --prefill`)."""
    return np.array([seq_len if prefill is None else prefill if t < prefill else t + 1 for t in range(seq_len)])


def rotated_by_long_factors(seq_len, original, prefill):
    """Per position, whether LongRoPE rotates it by the long factors: transformers picks one set per
    forward call, the long one where the call's end (call_ends) passes the original context."""
    return call_ends(seq_len, prefill) > original


def dynamic_ntk(config):
    """Dynamic NTK scaling (transformers' "dynamic", growing from max_position_embeddings L0): a call
    ending at L > L0 turns its tokens by base * (factor L / L0 - (factor - 1))^(d / (d - 2)); None
    without it. Hunyuan's alpha (a third value, 1 for other models) raises the base within L0 only:
    transformers' dynamic update recomputes it past L0 from rope_theta alone."""
    scaling = config.get('rope_parameters') or config.get('rope_scaling') or {}
    if scaling.get('rope_type', scaling.get('type')) != 'dynamic':
        return None
    alpha = scaling.get('alpha', 1.0) if config['model_type'] == 'hunyuan_v1_dense' else 1.0
    return scaling['factor'], config['max_position_embeddings'], alpha


def by_call_base(rotate, ends, factor, original, alpha=1.0):
    """`rotate` (x, positions, base, rotary_dim, frequencies) with each token turned by the dynamic
    NTK base of its call's end ends[t]: base^(-2i/d) scaled by g^(-2i/d), g = (factor L / L0 -
    (factor - 1))^(d / (d - 2)) for L = max(ends[t], L0), so g = 1 up to the original context.
    Frequencies that carry Hunyuan's alpha (within L0) lose it past L0."""
    def rotate_by_call(x, p, base, rd, f):
        out = np.array(x, dtype=np.float64)
        for end in np.unique(ends):
            length = max(end, original)
            g = (factor * length / original - (factor - 1)) ** (rd / (rd - 2))
            if end > original:
                g /= hunyuan_alpha_base_factor({'alpha': alpha}, rd)
            rows = ends == end
            out[..., rows, :] = rotate(x, p, base, rd, f * g ** (-2.0 * np.arange(rd // 2) / rd))[..., rows, :]
        return out
    return rotate_by_call


def smollm3_rotates(config, layer):
    """Whether SmolLM3's layer `layer` has RoPE: no_rope_layers[layer] (1: RoPE), else all but
    every no_rope_layer_interval-th (default 4)."""
    if config.get('no_rope_layers') is not None:
        return bool(config['no_rope_layers'][layer])
    return (layer + 1) % config.get('no_rope_layer_interval', 4) != 0


# What a Llama-family model's attention changes, by model_type (transformers' classes): the default
# of partial_rotary_factor where the model reads it (others turn whole heads), and the models whose
# RoPE turns pairs (2i, 2i+1) in place rather than halves.
PARTIAL_ROTARY_DEFAULT = {'phi3': 1.0, 'glm': 0.5, 'glm4': 0.5, 'glm4_moe': 0.5, 'stablelm': 0.25, 'nemotron': 0.5,
                          'phi': 0.5, 'gpt_neox': 0.25}
PAIRS_IN_PLACE = {'cohere', 'glm', 'glm4', 'helium', 'ernie4_5'}


def llama_family_biases(config):
    """The projections that have a bias, as each model's attention builds them: Llama's four per
    attention_bias (also Qwen3, OLMo, OLMoE, Cohere, Granite, Nemotron, Apertus, Arcee),
    Mistral/Mixtral/Phi-3 none, Qwen2 q, k and v (Qwen2-MoE per qkv_bias), GLM q, k and v per
    attention_bias (default true; GLM-4.5's glm4_moe false), StableLM q, k and v per use_qkv_bias
    (default false), Helium q, k and v per attention_bias, StarCoder2 all four per use_bias
    (default true; ERNIE 4.5 false), Phi-2 all four always, GPT-NeoX all four per attention_bias
    (default true), Seed-OSS q, k and v per attention_bias (default true) and o per
    attention_out_bias (default false)."""
    model, qkv = config['model_type'], {'q_proj', 'k_proj', 'v_proj'}
    if model == 'falcon':
        return qkv | {'o_proj'} if config.get('bias', False) else set()
    if model == 'phi':
        return qkv | {'o_proj'}
    if model == 'gpt_neox':
        return qkv | {'o_proj'} if config.get('attention_bias', True) else set()
    if model in ('starcoder2', 'ernie4_5'):
        return qkv | {'o_proj'} if config.get('use_bias', model == 'starcoder2') else set()
    if model == 'seed_oss':
        return (qkv if config.get('attention_bias', True) else set()) | \
            ({'o_proj'} if config.get('attention_out_bias', False) else set())
    stated = {'qwen2': True, 'qwen2_moe': config.get('qkv_bias', True), 'glm': config.get('attention_bias', True),
              'glm4': config.get('attention_bias', True), 'glm4_moe': config.get('attention_bias', False),
              'stablelm': config.get('use_qkv_bias', False), 'helium': config.get('attention_bias', False)}
    if model in stated:
        return qkv if stated[model] else set()
    if model in ('mistral', 'mixtral', 'phi3'):
        return set()
    return qkv | {'o_proj'} if config.get('attention_bias') else set()


def falcon_kv_heads(config):
    """Falcon's KV heads: one under multi_query (its default) unless new_decoder_architecture, else
    num_kv_heads (default the heads)."""
    if config.get('multi_query', True) and not config.get('new_decoder_architecture', False):
        return 1
    return config.get('num_kv_heads') or config['num_attention_heads']


def llama_family_qk_norm(config, w, name, y, n_heads):
    """q or k (name 'q' or 'k'), projected [B, S, heads * D], as [B, heads, S, D] normed before RoPE
    where the model norms them: OLMo 2 RMSNorms all of a token's heads at once (q_norm, k_norm; eps
    rms_norm_eps, default 1e-5; OLMoE the same), Qwen3 each head (default 1e-6), GLM-4.5 each head
    where use_qk_norm, Apertus and EXAONE 4 each head (default 1e-5); Command R+ (cohere's
    use_qk_norm) takes a LayerNorm without bias over each head, each head its own weights [heads,
    D], and StableLM (qk_layernorm) the same with each head's weights in a module of its own
    (q_layernorm.norms.<h>.weight); both eps layer_norm_eps, default 1e-5."""
    model = config['model_type']
    if model in ('olmo2', 'olmoe'):
        y = rms_norm(y, w[name + '_norm.weight'], config.get('rms_norm_eps', 1e-5))
    y = split_heads(y, n_heads)
    if model in ('qwen3', 'qwen3_moe'):
        return rms_norm(y, w[name + '_norm.weight'], config.get('rms_norm_eps', 1e-6))
    if model in ('apertus', 'exaone4') or (model == 'glm4_moe' and config.get('use_qk_norm')):
        return rms_norm(y, w[name + '_norm.weight'], config.get('rms_norm_eps', 1e-5))
    per_head = None
    if model == 'cohere' and config.get('use_qk_norm'):
        per_head = w[name + '_norm.weight']
    if model == 'stablelm' and config.get('qk_layernorm'):
        per_head = np.stack([w[f'{name}_layernorm.norms.{h}.weight'] for h in range(n_heads)])
    if per_head is not None:  # y [B, heads, S, D], weights [heads, D]
        y = layer_norm(y, per_head[:, None, :], 0.0, config.get('layer_norm_eps', 1e-5))
    return y


def llama_attention(config, w, x, layer=None, prefill=None):
    """§1 causal self-attention as a Hugging Face Llama-family checkpoint states it (not in the
    spec's words; the math is §1's): config.json keys hidden_size, num_attention_heads,
    num_key_value_heads (default: the heads; GLM 2, GLM-4.5 8), head_dim (default E/H; Qwen3 and
    GLM 128), rope_theta (default 10000; RoPE always, scaled as llama_rope_frequencies says),
    weights q_proj / k_proj / v_proj / o_proj with the biases llama_family_biases says, q and k
    normed as llama_family_qk_norm says. RoPE turns the first int(head_dim * partial_rotary_factor)
    dims where the model reads the factor (PARTIAL_ROTARY_DEFAULT: Phi-2 and 3, GLM, StableLM,
    Nemotron, GPT-NeoX), as halves, or as pairs (2i, 2i+1) in place (PAIRS_IN_PLACE: Cohere, GLM,
    Helium, ERNIE 4.5).
    Phi-3 stacks q, k and v in qkv_proj; Phi-2 names o_proj dense; GPT-NeoX puts each head's q, k
    and v rows in turn in query_key_value (base rotary_emb_base, fraction rotary_pct). OLMo 1 clamps
    q, k and v to [-clip_qkv, clip_qkv] as projected. Sliding window W
    (Mistral/Mixtral/Phi-3/StarCoder2/Ministral 3; Qwen with use_sliding_window the layers
    layer_types names; EXAONE 4 the layers layer_slides says, with a pattern of 4, whose full
    layers then have no RoPE; a null sliding_window: all full, all rotating): query p sees keys
    p - W < j <= p. Granite scales the scores by
    attention_multiplier (default 1) rather than head_dim^-1/2. Ministral 3 multiplies the query at
    position p by 1 + beta ln(1 + floor(p / L)), beta and L its RoPE parameters'
    llama_4_scaling_beta and original_max_position_embeddings. Hunyuan dense RMS-norms each head of
    q and k after RoPE (query_layernorm, key_layernorm), its dynamic RoPE's alpha as
    hunyuan_alpha_base_factor says. SmolLM3's layer `layer` rotates
    only where smollm3_rotates says (sliding windows not covered here). LongRoPE rotates each token
    by its call's factors, dynamic NTK by its call's base: `prefill` says how `hattn run --prefill`
    splits the sequence into calls (None: one call)."""
    heads = config['num_attention_heads']
    model = config['model_type']
    if model == 'gpt_neox':  # transformers 4's names of the base and the fraction; no GQA
        config = dict(config, rope_theta=config.get('rotary_emb_base', 10000.0),
                      partial_rotary_factor=config.get('rotary_pct', 0.25), num_key_value_heads=heads)
    glm = model in ('glm', 'glm4')
    kv_heads = config.get('num_key_value_heads') or {'glm': 2, 'glm4': 2, 'glm4_moe': 8}.get(model, heads)
    if model == 'falcon':
        kv_heads = falcon_kv_heads(config)
    head_dim = config.get('head_dim') or (128 if model == 'qwen3' or glm else config['hidden_size'] // heads)
    if model == 'falcon':  # head_dim unread
        head_dim = config['hidden_size'] // heads
    rotary_dim = head_dim
    if model in PARTIAL_ROTARY_DEFAULT:
        rotary_dim = int(head_dim * config.get('partial_rotary_factor', PARTIAL_ROTARY_DEFAULT[model]))
    frequencies = llama_rope_frequencies(config, rotary_dim)
    if 'qkv_proj.weight' in w:  # Phi-3
        q_rows, kv_rows = heads * head_dim, kv_heads * head_dim
        qkv = w['qkv_proj.weight']
        w = dict(w, **{'q_proj.weight': qkv[:q_rows], 'k_proj.weight': qkv[q_rows:q_rows + kv_rows],
                       'v_proj.weight': qkv[q_rows + kv_rows:]})
    if 'query_key_value.weight' in w:  # per KV head its g query heads' rows, then its k's and v's
        g = heads // kv_heads  # (GPT-NeoX: 1, each head's q, k and v rows in turn)
        for kind in ('weight', 'bias'):
            fused = w.get('query_key_value.' + kind)
            if fused is not None:
                groups = fused.reshape(kv_heads, g + 2, head_dim, *fused.shape[1:])
                for name, part in (('q_proj', groups[:, :g]), ('k_proj', groups[:, g]), ('v_proj', groups[:, g + 1])):
                    w = dict(w, **{f'{name}.{kind}': part.reshape(-1, *fused.shape[1:])})
    if 'dense.weight' in w:  # Phi-2's and GPT-NeoX's output projection
        w = dict(w, **{'o_proj.' + kind: w['dense.' + kind] for kind in ('weight', 'bias') if 'dense.' + kind in w})
    biased = llama_family_biases(config)

    def project(name, n_heads):
        y = linear(x, w[name + '.weight'], w[name + '.bias'] if name in biased else None)
        if model == 'olmo' and config.get('clip_qkv') is not None and name != 'o_proj':
            y = np.clip(y, -config['clip_qkv'], config['clip_qkv'])
        return y

    positions = np.arange(x.shape[1])
    amplitude = yarn_attention_factor(config)  # cos and sin scaled: q and k are
    rotate = rope_rotate_half
    if model in PAIRS_IN_PLACE:  # within the rotated dims
        rotate = lambda x, p, base, rd, f: np.concatenate([rope_pairs_in_place(x[..., :rd], p, f), x[..., rd:]], axis=-1)
    if model == 'smollm3' and not smollm3_rotates(config, layer):
        rotate = lambda x, p, base, rd, f: x
    exaone4_slides = model == 'exaone4' and config.get('sliding_window', 4096) is not None and \
        layer_slides(config, layer, 4)
    if model == 'exaone4' and config.get('sliding_window', 4096) is not None and not exaone4_slides:
        rotate = lambda x, p, base, rd, f: x  # EXAONE 4's full layers have no RoPE while others slide
    if longrope(config) is not None:  # each token by its call's factors
        short, long, original, amplitude = longrope(config)
        by_long = rotated_by_long_factors(x.shape[1], original, prefill)[:, None]
        plain_rotate = rotate
        rotate = lambda x, p, base, rd, f: np.where(by_long, plain_rotate(x, p, base, rd, f / long),
                                                    plain_rotate(x, p, base, rd, f / short))
    if dynamic_ntk(config) is not None:  # each token by its call's base
        factor, original, alpha = dynamic_ntk(config)
        rotate = by_call_base(rotate, call_ends(x.shape[1], prefill), factor, original, alpha)
    q = rotate(llama_family_qk_norm(config, w, 'q', project('q_proj', heads), heads), positions, None, rotary_dim,
               frequencies)
    k = rotate(llama_family_qk_norm(config, w, 'k', project('k_proj', kv_heads), kv_heads), positions, None, rotary_dim,
               frequencies)
    q[..., :rotary_dim] *= amplitude
    k[..., :rotary_dim] *= amplitude
    if model == 'hunyuan_v1_dense':  # q and k normed after RoPE, each head (eps rms_norm_eps, default 1e-5)
        q = rms_norm(q, w['query_layernorm.weight'], config.get('rms_norm_eps', 1e-5))
        k = rms_norm(k, w['key_layernorm.weight'], config.get('rms_norm_eps', 1e-5))
    if model == 'ministral3':  # queries scaled by position, from 0
        scaling = config.get('rope_parameters') or config.get('rope_scaling')
        beta, original = scaling['llama_4_scaling_beta'], scaling['original_max_position_embeddings']
        q *= (1.0 + beta * np.log1p(np.floor(positions / original)))[:, None]
    window = config.get('sliding_window') if model in ('mistral', 'mixtral', 'phi3', 'starcoder2', 'ministral3') else None
    if exaone4_slides:
        window = config.get('sliding_window', 4096)
    if model.startswith('qwen') and config.get('use_sliding_window') and \
            config['layer_types'][layer] == 'sliding_attention':
        window = config.get('sliding_window', 4096)
    mask = None
    if window:  # Mistral: query p sees keys p - window < j <= p
        mask = (positions[None, :] <= positions[:, None] - window)[None, None]
    # Granite scales the scores by attention_multiplier (its class default 1), the others by head_dim^-1/2.
    scale = config.get('attention_multiplier', 1.0) if model.startswith('granite') else head_dim ** -0.5
    o = attention(q, k, split_heads(project('v_proj', kv_heads), kv_heads), scale, causal=True, mask=mask)
    return linear(merge_heads(o), w['o_proj.weight'], w['o_proj.bias'] if 'o_proj' in biased else None)


def layer_slides(config, layer, pattern):
    """Whether layer `layer` of a model whose layers differ slides: as layer_types says, else all
    but every sliding_window_pattern-th (default `pattern`) do."""
    if config.get('layer_types'):
        return config['layer_types'][layer] == 'sliding_attention'
    return (layer + 1) % config.get('sliding_window_pattern', pattern) != 0


def gemma3_attention(config, w, x, layer):
    """§1 as Gemma 3's layer `layer` computes it (transformers 4's Gemma3Attention): layer_types
    (else every sliding_window_pattern-th layer, default 6, is full) says whether it slides over
    sliding_window keys (default 4096) with an unscaled RoPE of rope_local_base_freq (default 1e4),
    or attends to all with rope_theta (default 1e6) scaled as rope_scaling says; q and k RMSNormed
    per head with weight 1 + w (eps rms_norm_eps, default 1e-6) before RoPE; scores scaled by
    query_pre_attn_scalar^-1/2 (default 256), never soft-capped (Gemma3Attention stores
    attn_logit_softcapping and does not pass it on); biases per attention_bias; class defaults for
    heads (8), KV heads (4) and head_dim (256). With use_bidirectional_attention (EmbeddingGemma)
    query p sees every key, a sliding layer those with |p - j| < (sliding_window // 2) + 1, the
    window transformers' config keeps."""
    heads = config.get('num_attention_heads', 8)
    kv_heads = config.get('num_key_value_heads', 4)
    head_dim = config.get('head_dim', 256)
    sliding = layer_slides(config, layer, 6)
    if sliding:
        base = config.get('rope_local_base_freq', 10000.0)
        frequencies = base ** (-2.0 * np.arange(head_dim // 2) / head_dim)
    else:
        frequencies = llama_rope_frequencies(dict(config, rope_theta=config.get('rope_theta', 1e6)), head_dim)
    biased = config.get('attention_bias', False)

    def project(name, n_heads):
        y = split_heads(linear(x, w[name + '.weight'], w[name + '.bias'] if biased else None), n_heads)
        norm = {'q_proj': 'q_norm', 'k_proj': 'k_norm'}.get(name)
        if norm:
            y = rms_norm(y, 1.0 + w[norm + '.weight'].astype(np.float64), config.get('rms_norm_eps', 1e-6))
        return y

    positions = np.arange(x.shape[1])
    q = rope_rotate_half(project('q_proj', heads), positions, None, frequencies=frequencies)
    k = rope_rotate_half(project('k_proj', kv_heads), positions, None, frequencies=frequencies)
    p = np.arange(x.shape[1])
    both_ways = config.get('use_bidirectional_attention', False)
    mask = np.zeros((x.shape[1], x.shape[1]), bool)
    if sliding and both_ways:
        mask |= np.abs(p[None, :] - p[:, None]) >= config.get('sliding_window', 4096) // 2 + 1
    elif sliding:
        mask |= p[None, :] <= p[:, None] - config.get('sliding_window', 4096)
    o = attention(q, k, project('v_proj', kv_heads), config.get('query_pre_attn_scalar', 256) ** -0.5,
                  causal=not both_ways, mask=mask[None, None])
    return linear(merge_heads(o), w['o_proj.weight'], w['o_proj.bias'] if biased else None)


def olmo3_attention(config, w, x, layer):
    """§1 as OLMo 3's layer `layer` computes it (transformers 4's Olmo3Attention): layer_types (else
    every fourth layer is full) says whether it slides over sliding_window keys (default 4096) with
    an unscaled RoPE of rope_theta, or attends to all with rope_theta scaled as rope_scaling says
    (YaRN's attention factor scaling cos and sin); q and k RMSNormed over all of a token's heads
    (q_norm, k_norm; eps rms_norm_eps, default 1e-5) before RoPE, halves rotated; the four biases
    per attention_bias; scores scaled by head_dim^-1/2."""
    heads = config['num_attention_heads']
    kv_heads = config.get('num_key_value_heads') or heads
    head_dim = config.get('head_dim') or config['hidden_size'] // heads
    sliding = layer_slides(config, layer, 4)
    unscaled = {k: v for k, v in config.items() if k != 'rope_scaling'}
    frequencies = llama_rope_frequencies(unscaled if sliding else config, head_dim)
    amplitude = 1.0 if sliding else yarn_attention_factor(config)
    biased = config.get('attention_bias', False)

    def project(name, n_heads):
        y = linear(x, w[name + '.weight'], w[name + '.bias'] if biased else None)
        norm = {'q_proj': 'q_norm', 'k_proj': 'k_norm'}.get(name)
        if norm:
            y = rms_norm(y, w[norm + '.weight'], config.get('rms_norm_eps', 1e-5))
        return split_heads(y, n_heads)

    positions = np.arange(x.shape[1])
    q = rope_rotate_half(project('q_proj', heads), positions, None, frequencies=frequencies) * amplitude
    k = rope_rotate_half(project('k_proj', kv_heads), positions, None, frequencies=frequencies) * amplitude
    mask = None
    if sliding:
        mask = (positions[None, :] <= positions[:, None] - config.get('sliding_window', 4096))[None, None]
    o = attention(q, k, project('v_proj', kv_heads), head_dim ** -0.5, causal=True, mask=mask)
    return linear(merge_heads(o), w['o_proj.weight'], w['o_proj.bias'] if biased else None)


def cohere2_attention(config, w, x, layer):
    """§1 as Cohere2 (Command R7B) layer `layer` computes it: layer_types (else every
    sliding_window_pattern-th layer, default 4, is full) says whether it slides over sliding_window
    keys (default 4096) with Cohere's RoPE (pairs (2i, 2i+1) in place, rope_theta), or attends to
    every key with no RoPE at all; biases per attention_bias; scores by head_dim^-1/2."""
    heads = config['num_attention_heads']
    kv_heads = config.get('num_key_value_heads') or heads
    head_dim = config['hidden_size'] // heads
    sliding = layer_slides(config, layer, 4)
    biased = config.get('attention_bias', False)

    def project(name, n_heads):
        return split_heads(linear(x, w[name + '.weight'], w[name + '.bias'] if biased else None), n_heads)

    q, k = project('q_proj', heads), project('k_proj', kv_heads)
    mask = None
    if sliding:
        positions = np.arange(x.shape[1])
        f = config.get('rope_theta', 10000.0) ** (-2.0 * np.arange(head_dim // 2) / head_dim)
        q, k = rope_pairs_in_place(q, positions, f), rope_pairs_in_place(k, positions, f)
        mask = (positions[None, :] <= positions[:, None] - config.get('sliding_window', 4096))[None, None]
    o = attention(q, k, project('v_proj', kv_heads), head_dim ** -0.5, causal=True, mask=mask)
    return linear(merge_heads(o), w['o_proj.weight'], w['o_proj.bias'] if biased else None)


def gpt_oss_attention(config, w, x, layer):
    """§1 as gpt-oss's layer `layer` computes it (transformers' GptOssAttention, eager): layer_types
    (else layers alternate, the first sliding) says whether it slides over sliding_window keys
    (default 128); every layer rotates halves by rope_theta (default 150000) scaled as rope_scaling
    says (YaRN, untruncated, in the released configs); four biases per attention_bias (default
    true); scores by head_dim^-1/2. Each head's rows of scores get its sink (weight `sinks` [H])
    appended as one more column, the softmax runs over them all, and the sink's column is dropped
    before the values are weighted. Class defaults: 64 heads, 8 KV heads, head_dim 64."""
    heads = config.get('num_attention_heads', 64)
    kv_heads = config.get('num_key_value_heads', 8)
    head_dim = config.get('head_dim', 64)
    sliding = layer_slides(config, layer, 2)
    rope_config = dict(config, rope_theta=config.get('rope_theta', 150000.0))
    frequencies = llama_rope_frequencies(rope_config, head_dim)
    amplitude = yarn_attention_factor(rope_config)
    biased = config.get('attention_bias', True)

    def project(name, n_heads):
        return split_heads(linear(x, w[name + '.weight'], w[name + '.bias'] if biased else None), n_heads)

    positions = np.arange(x.shape[1])
    q = rope_rotate_half(project('q_proj', heads), positions, None, frequencies=frequencies) * amplitude
    k = rope_rotate_half(project('k_proj', kv_heads), positions, None, frequencies=frequencies) * amplitude
    v = project('v_proj', kv_heads)
    k, v = np.repeat(k, heads // kv_heads, axis=1), np.repeat(v, heads // kv_heads, axis=1)
    scores = np.einsum('bhqd,bhkd->bhqk', q, k) * head_dim ** -0.5
    hidden = positions[None, :] > positions[:, None]
    if sliding:
        hidden |= positions[None, :] <= positions[:, None] - config.get('sliding_window', 128)
    scores = np.where(hidden, -np.inf, scores)
    sinks = np.broadcast_to(w['sinks'].astype(np.float64).reshape(1, heads, 1, 1), scores.shape[:-1] + (1,))
    combined = np.concatenate([scores, sinks], axis=-1)
    probs = np.exp(combined - combined.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    o = np.einsum('bhqk,bhkd->bhqd', probs[..., :-1], v)
    return linear(merge_heads(o), w['o_proj.weight'], w['o_proj.bias'] if biased else None)


def gemma2_attention(config, w, x, layer):
    """§1 as Gemma 2's layer `layer` computes it (transformers' Gemma2Attention, eager): layer_types
    (else layers alternate, the first sliding) says whether it slides over sliding_window keys
    (default 4096); halves rotated by rope_theta (default 1e4); biases per attention_bias; scores
    scaled by query_pre_attn_scalar^-1/2 (default 256), then soft-capped before the mask: divided by
    attn_logit_softcapping (default 50; null: no capping), tanh, multiplied by it again. Class
    defaults: 8 heads, 4 KV heads, head_dim 256."""
    heads = config.get('num_attention_heads', 8)
    kv_heads = config.get('num_key_value_heads', 4)
    head_dim = config.get('head_dim', 256)
    sliding = layer_slides(config, layer, 2)
    frequencies = llama_rope_frequencies(dict(config, rope_theta=config.get('rope_theta', 10000.0)), head_dim)
    biased = config.get('attention_bias', False)

    def project(name, n_heads):
        return split_heads(linear(x, w[name + '.weight'], w[name + '.bias'] if biased else None), n_heads)

    positions = np.arange(x.shape[1])
    q = rope_rotate_half(project('q_proj', heads), positions, None, frequencies=frequencies)
    k = rope_rotate_half(project('k_proj', kv_heads), positions, None, frequencies=frequencies)
    v = project('v_proj', kv_heads)
    k, v = np.repeat(k, heads // kv_heads, axis=1), np.repeat(v, heads // kv_heads, axis=1)
    scores = np.einsum('bhqd,bhkd->bhqk', q, k) * config.get('query_pre_attn_scalar', 256) ** -0.5
    softcap = config.get('attn_logit_softcapping', 50.0)
    if softcap is not None:
        scores = np.tanh(scores / softcap) * softcap
    hidden = positions[None, :] > positions[:, None]
    if sliding:
        hidden |= positions[None, :] <= positions[:, None] - config.get('sliding_window', 4096)
    scores = np.where(hidden, -np.inf, scores)
    probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    o = np.einsum('bhqk,bhkd->bhqd', probs, v)
    return linear(merge_heads(o), w['o_proj.weight'], w['o_proj.bias'] if biased else None)


def llama4_attention(config, w, x, layer):
    """§1 as Llama 4's text layer `layer` computes it (transformers' Llama4TextAttention, eager, and
    its chunked causal mask). no_rope_layers[layer] (1: RoPE; a missing or empty list: all but
    every no_rope_layer_interval-th layer, default 4) says whether the layer rotates. A rotating
    layer turns pairs (2i, 2i+1) as complex numbers by pos * frequency_i (rope_theta default 5e5,
    scaled as llama_rope_frequencies says), then, with use_qk_norm (default true), scales each
    head of q and k by 1 / sqrt(mean(x^2) + rms_norm_eps) (default 1e-5; no weights); and its
    query p sees only the keys j <= p of its own chunk, j // C == p // C for attention_chunk_size C
    (default 8192). A layer without RoPE sees every earlier key; with attn_temperature_tuning
    (default on) its query at position p is scaled by log1p(floor((p + 1) / floor_scale)) *
    attn_scale + 1 (defaults 8192 and 0.1). Biases per attention_bias (default false); scores
    scaled by head_dim^-1/2. Class defaults: 40 heads, 8 KV heads, head_dim 128."""
    heads = config.get('num_attention_heads', 40)
    kv_heads = config.get('num_key_value_heads', 8)
    head_dim = config.get('head_dim', 128)
    if config.get('no_rope_layers'):
        rotates = bool(config['no_rope_layers'][layer])
    else:
        rotates = (layer + 1) % config.get('no_rope_layer_interval', 4) != 0
    biased = config.get('attention_bias', False)

    def project(name, n_heads):
        return split_heads(linear(x, w[name + '.weight'], w[name + '.bias'] if biased else None), n_heads)

    q, k, v = project('q_proj', heads), project('k_proj', kv_heads), project('v_proj', kv_heads)
    positions = np.arange(x.shape[1])
    hidden = positions[None, :] > positions[:, None]
    if rotates:
        frequencies = llama_rope_frequencies(dict(config, rope_theta=config.get('rope_theta', 500000.0)), head_dim)
        q, k = rope_pairs_in_place(q, positions, frequencies), rope_pairs_in_place(k, positions, frequencies)
        if config.get('use_qk_norm', True):
            eps = config.get('rms_norm_eps', 1e-5)
            q, k = rms_norm(q, 1.0, eps), rms_norm(k, 1.0, eps)
        chunk = config.get('attention_chunk_size', 8192)
        hidden |= positions[None, :] // chunk != positions[:, None] // chunk
    elif config.get('attn_temperature_tuning', True):
        scales = np.log1p(np.floor((positions + 1.0) / config.get('floor_scale', 8192))) * \
            config.get('attn_scale', 0.1) + 1.0
        q = q * scales[:, None]
    o = attention(q, k, v, head_dim ** -0.5, causal=False, mask=hidden[None, None])
    return linear(merge_heads(o), w['o_proj.weight'], w['o_proj.bias'] if biased else None)


# §2 CCA and CCGQA

def bitlinear(x, weight):
    """§2 BitLinear (BitNet b1.58) in float32, round half to even (np.round):
    a_w = 1 / max(mean |W|, 1e-5), Wq = clamp(round(W a_w), -1, 1); per row a_x = 127 / max(max |x|, 1e-5),
    xq = clamp(round(x a_x), -128, 127); y = (xq . Wq) / (a_x a_w), the dot product exact."""
    weight = np.asarray(weight, np.float32)
    a_w = np.float32(1) / np.maximum(np.float32(np.abs(weight).mean(dtype=np.float64)), np.float32(1e-5))
    w_q = np.clip(np.round(weight * a_w), -1, 1)
    x = np.asarray(x, np.float32)
    a_x = np.float32(127) / np.maximum(np.abs(x).max(axis=-1, keepdims=True), np.float32(1e-5))
    x_q = np.clip(np.round(x * a_x), -128, 127)
    dot = (x_q.astype(np.float64) @ w_q.astype(np.float64).T).astype(np.float32)  # exact integers
    return (dot / (a_x * a_w)).astype(np.float64)


def causal_depthwise_conv(x, weight):
    """§2 step 2, first conv: c0[c, t] = sum_{j<k} w[c, 0, j] x[c, t-(k-1)+j], zero before the sequence.
    x [B, T, C], weight [C, 1, k]."""
    k, length = weight.shape[-1], x.shape[1]
    padded = np.pad(x, ((0, 0), (k - 1, 0), (0, 0)))
    return sum(weight[:, 0, j] * padded[:, j:j + length] for j in range(k))


def causal_grouped_conv(x, weight, group_size):
    """§2 step 2, second conv: c1[o, t] = sum_{i<dh} sum_{j<k} w[o, i, j] x[(o/dh)*dh + i, t-(k-1)+j]
    with dh = group_size: each output channel mixes the channels of its own head. weight [C, dh, k]."""
    b, length, channels = x.shape
    groups, k = channels // group_size, weight.shape[-1]
    padded = np.pad(x, ((0, 0), (k - 1, 0), (0, 0))).reshape(b, length + k - 1, groups, group_size)
    w = np.asarray(weight, np.float64).reshape(groups, group_size, group_size, k)  # [group, out, in, tap]
    out = sum(np.einsum('btgi,goi->btgo', padded[:, j:j + length], w[..., j]) for j in range(k))
    return out.reshape(b, length, channels)


def compressed_attention(q_pre, k_pre, q_conv, k_conv, v, qk_mean, key_scale, eps, rope_base,
                         rotary_dim, causal):
    """§2 steps 3, 5, 6, 7 (with §3's eps, per-KV-head key factor and partial RoPE).
    q_pre, q_conv [B, H, S, dh]; k_pre, k_conv, v [B, Hkv, S, dh]; key_scale [Hkv].
    Returns the heads concatenated, [B, S, H*dh]."""
    b, heads, length, dh = q_pre.shape
    kv_heads = k_pre.shape[1]
    group = heads // kv_heads
    q, k = q_conv, k_conv
    if qk_mean:
        mean_q = (q_pre + k_pre[:, np.arange(heads) // group]) / 2
        mean_k = mean_q.reshape(b, kv_heads, group, length, dh).mean(axis=2)
        q, k = q + mean_q, k + mean_k
    q = q * np.sqrt(dh) / np.maximum(np.linalg.norm(q, axis=-1, keepdims=True), eps)
    k = k * np.sqrt(dh) / np.maximum(np.linalg.norm(k, axis=-1, keepdims=True), eps)
    k = k * np.asarray(key_scale, np.float64)[:, None, None]
    positions = np.arange(length)
    q = rope_rotate_half(q, positions, rope_base, rotary_dim)
    k = rope_rotate_half(k, positions, rope_base, rotary_dim)
    return merge_heads(attention(q, k, v, dh ** -0.5, causal))


def cca(config, w, x, grouped):
    """§2 CCA (grouped=False) or CCGQA (grouped=True), whole sequence."""
    e, heads = config['hidden_size'], config['num_heads']
    prefix = 'ccgqa_' if grouped else 'cca_'

    def option(key, default):
        return config.get(prefix + key, default)

    if grouped:   # the KV latent rank is what linear_qk holds beyond the query rank
        q_rank = option('query_latent_rank', max(1, e // 2))
        kv_heads = option('num_kv_heads', max(1, heads // 4))
    else:
        q_rank = option('latent_rank', max(1, e // 4))
        kv_heads = heads
    dh = q_rank // heads

    if config.get('use_bitnet', False):
        def project(inputs, name):
            return bitlinear(inputs, w[name])
    else:
        def project(inputs, name):
            return linear(inputs, w[name])

    qk = project(x, 'linear_qk.weight')                                      # step 1
    c = qk                                                                    # step 2
    if option('num_conv_layers', 2) >= 1:
        c = causal_depthwise_conv(qk, w['conv_qk0.weight'])
    if option('num_conv_layers', 2) >= 2:
        c = causal_grouped_conv(c, w['conv_qk1.weight'], dh)
    if option('value_shift', True):                                           # step 4
        v = np.concatenate([project(x, 'val_proj1.weight'), project(shift_right(x), 'val_proj2.weight')], -1)
    else:
        v = project(x, 'val_proj.weight')
    o = compressed_attention(
        split_heads(qk[..., :q_rank], heads), split_heads(qk[..., q_rank:], kv_heads),
        split_heads(c[..., :q_rank], heads), split_heads(c[..., q_rank:], kv_heads),
        split_heads(v, kv_heads), qk_mean=option('qk_mean', True),
        key_scale=np.full(kv_heads, np.exp(np.float64(w['temp'][0]))), eps=1e-6,
        rope_base=config.get('rope_base', 10000.0), rotary_dim=dh,
        causal=config.get('mode', 'encoder') == 'decoder')
    return project(o, 'out_proj.weight')


# §3 ZAYA CCA

def zaya_cca(config, w, x):
    """§3 ZAYA CCA, whole sequence (causal)."""
    heads = config.get('num_attention_heads', 8)
    kv_heads = config.get('num_key_value_heads', 2)
    head_dim = config.get('head_dim', 128)
    k0, k1 = config.get('cca_time0', 2), config.get('cca_time1', 2)
    rotary_dim = int(head_dim * config.get('partial_rotary_factor', 0.5))
    theta = config.get('rope_theta')
    if theta is None:
        theta = config.get('rope_parameters', {}).get('hybrid', {}).get('rope_theta', 5e6)
    has_bias = config.get('attention_bias', False)

    def project(inputs, name):
        return linear(inputs, w[name + '.weight'], w[name + '.bias'] if has_bias else None)

    qk = np.concatenate([project(x, 'qkv_proj.q_proj'), project(x, 'qkv_proj.k_proj')], -1)
    # Both convs (with bias) run over the qk rows preceded by (k0-1)+(k1-1) zero rows; the last S rows
    # of the grouped conv are the output. Those rows never reach the causal convs' own zero padding,
    # so they equal the spec's convs over the padded sequence.
    pad = (k0 - 1) + (k1 - 1)
    padded = np.pad(qk, ((0, 0), (pad, 0), (0, 0)))
    conv = 'qkv_proj.conv_qk_'
    c0 = causal_depthwise_conv(padded, w[conv + 'depthwise.weight']) + w[conv + 'depthwise.bias']
    c1 = causal_grouped_conv(c0, w[conv + 'grouped.weight'], head_dim) + w[conv + 'grouped.bias']
    c = c1[:, pad:]
    # One flat vector viewed as [Hkv, D]; token 0's delayed part is v_proj_delayed(0).
    v = np.concatenate([project(x, 'qkv_proj.v_proj_current'),
                        project(shift_right(x), 'qkv_proj.v_proj_delayed')], -1)
    q_dims = heads * head_dim
    o = compressed_attention(
        split_heads(qk[..., :q_dims], heads), split_heads(qk[..., q_dims:], kv_heads),
        split_heads(c[..., :q_dims], heads), split_heads(c[..., q_dims:], kv_heads),
        split_heads(v, kv_heads), qk_mean=True, key_scale=w['qk_norm.temp'],
        eps=float(np.finfo(np.float32).eps), rope_base=theta, rotary_dim=rotary_dim, causal=True)
    return project(o, 'o_proj')


# §4 GLM-5 sparse attention: MLA + DSA indexer

def rms_norm(x, weight, eps):
    """§4 RMSNorm(x) = w * x / sqrt(mean(x^2) + eps)."""
    return weight * x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)


def layer_norm(x, weight, bias, eps=1e-6):
    """§4 LayerNorm, eps 1e-6."""
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + eps) * weight + bias


def dsa_rope_theta(config):
    """§4 rope_theta; a (default-type) rope_parameters may carry it instead, as in §3."""
    return config['rope_theta'] if 'rope_theta' in config else config['rope_parameters']['rope_theta']


def dsa_q_resid(config, w, x):
    """§4 q_resid = RMSNorm(x W_qa^T (+ b)), eps rms_norm_eps (1e-6 when absent)."""
    bias = w['q_a_proj.bias'] if config.get('attention_bias', False) else None
    eps = config.get('rms_norm_eps', 1e-6)
    return rms_norm(linear(x, w['q_a_proj.weight'], bias), w['q_a_layernorm.weight'], eps)


def dsa_indexer_scores(config, w, x):
    """§4 indexer: score[b, s, t] = sum_h w[s, h] relu(iq[s, h] . ik[t] * ID^-0.5), -inf for t > s.
    Returns (score [B, S, S], the dot products iq . ik * ID^-0.5 before the relu [B, IH, S, S])."""
    index_heads, index_dim = config['index_n_heads'], config['index_head_dim']
    rope_dim, theta = config['qk_rope_head_dim'], dsa_rope_theta(config)
    positions = np.arange(x.shape[1])
    iq = split_heads(linear(dsa_q_resid(config, w, x), w['indexer.wq_b.weight']), index_heads)
    ik = layer_norm(linear(x, w['indexer.wk.weight']), w['indexer.k_norm.weight'], w['indexer.k_norm.bias'])
    iq = np.concatenate([rope_interleaved(iq[..., :rope_dim], positions, theta), iq[..., rope_dim:]], -1)
    ik = np.concatenate([rope_interleaved(ik[..., :rope_dim], positions, theta), ik[..., rope_dim:]], -1)
    head_weights = linear(x, w['indexer.weights_proj.weight']) * index_heads ** -0.5   # [B, S, IH]
    dots = np.einsum('bhsd,btd->bhst', iq, ik) * index_dim ** -0.5
    score = np.einsum('bsh,bhst->bst', head_weights, np.maximum(dots, 0.0))
    causal = np.tril(np.ones((x.shape[1], x.shape[1]), bool))
    return np.where(causal, score, -np.inf), dots


def dsa_selection(score, top_k):
    """§4 sel(s): the min(K, s+1) highest-scoring t <= s; among equal scores the larger t first.
    Returns allowed [B, S, S]."""
    allowed = np.zeros(score.shape, bool)
    for b, s in np.ndindex(score.shape[:2]):
        candidates = np.arange(s + 1)
        order = np.lexsort((-candidates, -score[b, s, :s + 1]))  # by score, then by t, both descending
        allowed[b, s, order[:top_k]] = True
    return allowed


def glm_dsa(config, w, x):
    """§4 GLM-5 MLA attention over the keys the DSA indexer selects, whole sequence (causal)."""
    heads, kv_rank = config['num_attention_heads'], config['kv_lora_rank']
    nope, rope_dim = config['qk_nope_head_dim'], config['qk_rope_head_dim']
    theta, eps = dsa_rope_theta(config), config.get('rms_norm_eps', 1e-6)
    has_bias = config.get('attention_bias', False)
    b, length, _ = x.shape
    positions = np.arange(length)

    q = split_heads(linear(dsa_q_resid(config, w, x), w['q_b_proj.weight']), heads)
    q = np.concatenate([q[..., :nope], rope_interleaved(q[..., nope:], positions, theta)], -1)
    ckv = linear(x, w['kv_a_proj_with_mqa.weight'], w['kv_a_proj_with_mqa.bias'] if has_bias else None)
    latent = rms_norm(ckv[..., :kv_rank], w['kv_a_layernorm.weight'], eps)
    k_rot = rope_interleaved(ckv[..., kv_rank:], positions, theta)           # one head shared by all
    kv = split_heads(linear(latent, w['kv_b_proj.weight']), heads)
    k = np.concatenate([kv[..., :nope], np.broadcast_to(k_rot[:, None], (b, heads, length, rope_dim))], -1)
    v = kv[..., nope:]                                                        # v_head_dim wide

    selected = dsa_selection(dsa_indexer_scores(config, w, x)[0], config['index_topk'])
    o = attention(q, k, v, (nope + rope_dim) ** -0.5, causal=True, mask=~selected[:, None])
    return linear(merge_heads(o), w['o_proj.weight'], w['o_proj.bias'] if has_bias else None)


def run_case(folder, prefill=None):
    """The expected output [B, S, E] (float64) of a case folder (spec/cases.md); `prefill` only
    matters where the calls' split does (LongRoPE, dynamic NTK), and is P of `hattn run --prefill P`."""
    def path(name):
        return os.path.join(folder, name)

    with open(path('config.json')) as f:
        case = json.load(f)
    kind, config = case['kind'], case['config']
    w = safetensors_io.load(path('weights.safetensors'))
    x = np.load(path('x.npy')).astype(np.float64)
    layer = None
    if 'prefix' in case:  # one layer of a whole model's checkpoint: its names under the layer's prefix
        prefix = case['prefix']
        w = {name[len(prefix):]: t for name, t in w.items() if name.startswith(prefix)}
        layer = int(prefix.split('layers.')[1].split('.')[0])
    if kind == 'cached_attention' and config.get('model_type') == 'gemma3_text':
        return gemma3_attention(config, w, x, layer)
    if kind == 'cached_attention' and config.get('model_type') == 'cohere2':
        return cohere2_attention(config, w, x, layer)
    if kind == 'cached_attention' and config.get('model_type') == 'gpt_oss':
        return gpt_oss_attention(config, w, x, layer)
    if kind == 'cached_attention' and config.get('model_type') == 'gemma2':
        return gemma2_attention(config, w, x, layer)
    if kind == 'cached_attention' and config.get('model_type') == 'olmo3':
        return olmo3_attention(config, w, x, layer)
    if kind == 'cached_attention' and config.get('model_type') == 'llama4_text':
        return llama4_attention(config, w, x, layer)
    if kind == 'cached_attention' and 'hidden_size' in config and 'embedding_dimension' not in config:
        return llama_attention(config, w, x, layer, prefill)
    if kind == 'cached_attention':
        context = np.load(path('context.npy')).astype(np.float64) if case.get('cross') else None
        mask = np.load(path('mask.npy')) if os.path.exists(path('mask.npy')) else None
        return cached_attention(config, w, x, context, mask)
    if kind in ('cca', 'ccgqa'):
        return cca(config, w, x, grouped=kind == 'ccgqa')
    if kind == 'zaya_cca':
        return zaya_cca(config, w, x)
    if kind == 'glm_dsa':
        return glm_dsa(config, w, x)
    raise ValueError(f'{folder}: unknown kind {kind}')
