#!/usr/bin/python3
"""Writes the fuzz harnesses' seed inputs and dictionaries.

Usage:
    fuzz/make_seeds.py SEED_DIR [--golden DIR]   seeds into SEED_DIR/<harness>/
    fuzz/make_seeds.py --dicts [--golden DIR]    rewrites fuzz/<harness>.dict

The seeds come from the golden cases (default ../shared/golden beside the checkout), made small
(safetensors files keep a few small tensors, so that libFuzzer's default -max_len stays a few KB)
plus hand-made ones for what the golden cases lack (every npy dtype and version, NaN and
infinity weights, sharded indexes, every Hugging Face model_type and RoPE scaling). The committed
corpus in fuzz/corpus/ is these and what a campaign found from them, minimised to the fewest files
that reach every coverage edge (-use_counters=0: edges, not hit counts, keep a file):

    fuzz/make_seeds.py /tmp/seeds
    scripts/fuzz-campaign --time 90 --work /tmp/campaign
    for h in safetensors npy config case_dir; do
        mkdir -p /tmp/merged/$h
        build-fuzz/bin/fuzz_$h -merge=1 -use_counters=0 /tmp/merged/$h fuzz/corpus/$h /tmp/seeds/$h \
            /tmp/campaign/$h/corpus
        rm -r fuzz/corpus/$h && mv /tmp/merged/$h fuzz/corpus/$h
    done

The dictionaries hold the keys and values of the formats: the JSON keys of spec/attention.md and
spec/cases.md and the string literals the runtime's config readers look up.
"""
import argparse
import glob
import hashlib
import io
import json
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HARNESSES = ("safetensors", "npy", "config", "case_dir")
# The shards fuzz_safetensors.cpp copies beside its indexes, by the names it gives them.
SHARDS = {"model-00001-of-00002.safetensors": "cca/cca_decoder_small_f16/weights.safetensors",
          "model-00002-of-00002.safetensors": "cached/mha_self_rope_bf16/weights.safetensors"}
# The case fuzz_case_dir.cpp copies weights.safetensors and x.npy from: batch 1, seq_len 9, hidden 64.
CASE_SHAPE = {"batch": 1, "seq_len": 9, "hidden": 64}


def save(out, harness, data):
    if isinstance(data, str):
        data = data.encode()
    folder = os.path.join(out, harness)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", None)
    tensors = [(name, e["dtype"], e["shape"], blob[8 + n + e["data_offsets"][0]:8 + n + e["data_offsets"][1]])
               for name, e in header.items()]
    return tensors, meta


def safetensors(tensors, meta=None, pad=True):
    header, data = {}, b""
    if meta is not None:
        header["__metadata__"] = meta
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:  # the writers pad the header with spaces to a multiple of 8
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds(out, golden):
    st = lambda data: save(out, "safetensors", b"\x00" + data)
    index = lambda text: save(out, "safetensors", b"\x01" + text.encode())
    for path in sorted(glob.glob(os.path.join(golden, "*/*/weights.safetensors"))):
        tensors, meta = read_safetensors(path)
        small = [t for t in tensors if len(t[3]) <= 1024][:4]
        st(safetensors(small, meta))
    f32 = lambda *v: struct.pack("<%df" % len(v), *v)
    nan, inf = float("nan"), float("inf")
    st(safetensors([("w", "F32", [2, 2], f32(1, -2, 0.5, 3e38))], {"format": "pt"}))
    st(safetensors([("w", "F32", [2], f32(1, nan))]))
    st(safetensors([("w", "F32", [2], f32(-inf, 1))], pad=False))
    st(safetensors([("s", "F32", [], f32(7)), ("e", "F32", [0, 3], b"")]))
    # F16: 1, the largest subnormal, -0, infinity; BF16: 1, a subnormal, NaN.
    st(safetensors([("h", "F16", [4], struct.pack("<4H", 0x3C00, 0x03FF, 0x8000, 0x7C00))]))
    st(safetensors([("b", "BF16", [3], struct.pack("<3H", 0x3F80, 0x0001, 0x7FC0))]))
    st(safetensors([("a", "F32", [1], f32(1)), ("b", "I8", [2], b"\x01\x02"), ("c", "F64", [1], b"\0" * 8)]))
    st(struct.pack("<Q", 2) + b"{}")

    shard_names = {shard: [t[0] for t in read_safetensors(os.path.join(golden, source))[0]]
                   for shard, source in SHARDS.items()}
    weight_map = {name: shard for shard, names in shard_names.items() for name in names}
    (first, second), names = list(SHARDS), list(weight_map)
    index(json.dumps({"metadata": {"total_size": 43770}, "weight_map": weight_map}, indent=2))
    index(json.dumps({"weight_map": {names[0]: first}}))
    index(json.dumps({"weight_map": {names[0]: second}}))  # mapped to a shard without it
    index(json.dumps({"weight_map": {"x": "missing.safetensors", names[0]: first}}))
    index(json.dumps({"weight_map": {"x": "../" + first}}))
    index(json.dumps({"weight_map": {"x": "/" + first}}))
    index(json.dumps({"weight_map": {"x": "sub/" + first}}))
    index(json.dumps({"weight_map": {"x": 3}}))
    index(json.dumps({"weight_map": []}))
    index(json.dumps({"metadata": {}}))
    index("[]")


def npy(array, version=None):
    import numpy as np
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, version=version, allow_pickle=False)
    return buffer.getvalue()


def npy_seeds(out, golden):
    import numpy as np
    for path in sorted(glob.glob(os.path.join(golden, "*/*/*.npy"))):
        if os.path.getsize(path) <= 4096:
            with open(path, "rb") as f:
                save(out, "npy", f.read())
    save(out, "npy", npy(np.arange(6, dtype="<f4").reshape(2, 3)))
    save(out, "npy", npy(np.array(1.5, dtype="<f4")))
    save(out, "npy", npy(np.zeros((0, 4), dtype="<f4")))
    save(out, "npy", npy(np.array([[[[True, False, True]]]])))
    save(out, "npy", npy(np.array([-1, 2, 2**31 - 1], dtype="<i4")))
    save(out, "npy", npy(np.array([-(2**63), 5], dtype="<i8")))
    save(out, "npy", npy(np.array([1, 2], dtype=">f4")))
    save(out, "npy", npy(np.array([1, 2], dtype="<f8")))
    save(out, "npy", npy(np.asfortranarray(np.ones((2, 2), dtype="<f4"))))
    save(out, "npy", npy(np.array([1, 2], dtype="<f4"), version=(2, 0)))
    save(out, "npy", npy(np.array([1, 2], dtype="<f4"), version=(3, 0)))
    save(out, "npy", npy(np.array([float("nan"), float("inf")], dtype="<f4")))


def golden_configs(golden):
    for path in sorted(glob.glob(os.path.join(golden, "*/*/config.json"))):
        with open(path) as f:
            yield json.load(f)


def config_seeds(out, golden):
    hf = None
    for case in golden_configs(golden):
        save(out, "config", json.dumps(case["config"], indent=1))
        if case["config"].get("model_type") == "qwen3":
            hf = case["config"]
    # Every model_type docs/models.md lists, on the golden Qwen3 config.
    types = ("llama arcee mistral mixtral qwen2 qwen2_moe qwen3 qwen3_moe olmo olmo2 olmoe olmo3 phi gpt_neox "
             "phi3 gemma gemma2 gemma3_text cohere cohere2 glm glm4 glm4_moe stablelm granite granitemoe "
             "granitemoeshared gpt_oss smollm3 llama4_text starcoder2 nemotron apertus helium exaone4 ernie4_5 "
             "ministral3 seed_oss falcon hunyuan_v1_dense bert").split()
    compact = lambda c: json.dumps(c, separators=(",", ":"))
    for model_type in types:
        save(out, "config", compact(dict(hf, model_type=model_type)))
    save(out, "config", compact({"model_type": "gemma3", "text_config": dict(hf, model_type="gemma3_text")}))
    save(out, "config", compact({"model_type": "mistral3", "text_config": dict(hf, model_type="ministral3")}))
    ropes = [{"rope_type": "linear", "factor": 2.0},
             {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 64},
             {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64, "beta_fast": 32,
              "beta_slow": 1, "attention_factor": None},
             {"rope_type": "longrope", "short_factor": [1.0] * 16, "long_factor": [2.0] * 16,
              "original_max_position_embeddings": 64},
             {"rope_type": "dynamic", "factor": 2.0}]
    for rope in ropes:
        save(out, "config", compact(dict(hf, rope_parameters=dict(rope, rope_theta=10000.0))))
        save(out, "config", compact(dict(hf, rope_theta=10000.0, rope_scaling=rope, rope_parameters=None)))
    save(out, "config", compact(dict(hf, model_type="gemma3_text", layer_types=None, sliding_window=8,
                                     rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
                                                      "full_attention": {"rope_type": "linear", "factor": 8.0,
                                                                         "rope_theta": 1e6}})))
    save(out, "config", compact(dict(hf, model_type="smollm3", no_rope_layers=[1, 1, 1, 0], num_hidden_layers=4)))
    save(out, "config", compact(dict(hf, layer_types=["sliding_attention", "full_attention"], sliding_window=4,
                                     use_sliding_window=True, num_hidden_layers=2)))


def case_dir_seeds(out, golden):
    for case in golden_configs(golden):
        save(out, "case_dir", json.dumps(case, indent=1))
        # The same on the fixed folder's shape, so that loading gets past x.npy to the layer's config.
        fitted = dict(case, batch=CASE_SHAPE["batch"], seq_len=CASE_SHAPE["seq_len"])
        fitted.pop("cross", None)
        config = dict(case["config"])
        for key in ("embedding_dimension", "hidden_size"):
            if key in config:
                config[key] = CASE_SHAPE["hidden"]
        fitted["config"] = config
        save(out, "case_dir", json.dumps(fitted, separators=(",", ":")))
        if "model_type" in config:
            save(out, "case_dir", json.dumps(dict(fitted, prefix="model.layers.3.self_attn."), separators=(",", ":")))


def dictionary_words(golden):
    words = set()
    for path in glob.glob(os.path.join(ROOT, "..", "shared", "spec", "*.md")):
        with open(path) as f:
            words.update(re.findall(r"`([a-z][a-z0-9_]*)`", f.read()))
    sources = ["runtime/src/layers/*.cpp", "runtime/src/hf_rope.cpp", "runtime/src/layer_case.cpp",
               "runtime/src/kinds.cpp"]
    for pattern in sources:
        for path in glob.glob(os.path.join(ROOT, pattern)):
            with open(path) as f:
                words.update(re.findall(r'"([a-z][a-z0-9_]*)"', f.read()))
    for case in golden_configs(golden):
        words.update(case)
        words.update(case["config"])
    return sorted(w for w in words if len(w) > 1)


def dict_line(text):
    escaped = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "\\x%02X" % ord(c) for c in text)
    return '"%s"\n' % escaped


def write_dicts(golden):
    json_tokens = ["{", "}", "[", "]", ":", ",", "null", "true", "false", "0", "-1", "1e400", "0.5",
                   "2147483648", "\\u0000", "\\ud800"]
    words = dictionary_words(golden)
    dictionaries = {
        "safetensors": json_tokens + ['"dtype"', '"shape"', '"data_offsets"', '"__metadata__"', '"weight_map"',
                                      '"metadata"', '"total_size"', '"F32"', '"F16"', '"BF16"', '"F64"', '"I8"',
                                      '"U8"', '"I64"', '"BOOL"', "..", "/", ".safetensors"] + list(SHARDS),
        "npy": ["\x93NUMPY", "\x01\x00", "\x02\x00", "\x03\x00", "'descr':", "'fortran_order':", "'shape':",
                "'<f4'", "'|b1'", "'<i4'", "'<i8'", "'>f4'", "'<f8'", "'|u1'", "True", "False", "(", ")", ",)",
                "{", "}", "\n"],
        "config": json_tokens + ['"%s"' % w for w in words],
        "case_dir": json_tokens + ['"%s"' % w for w in words] + ['"model.layers.3.self_attn."'],
    }
    for harness, tokens in dictionaries.items():
        with open(os.path.join(HERE, harness + ".dict"), "w") as f:
            f.write("# libFuzzer dictionary for fuzz_%s (written by fuzz/make_seeds.py --dicts)\n" % harness)
            f.writelines(dict_line(t) for t in tokens)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("seed_dir", nargs="?")
    parser.add_argument("--dicts", action="store_true", help="rewrite fuzz/<harness>.dict")
    parser.add_argument("--golden", default=os.path.join(ROOT, "..", "shared", "golden"))
    args = parser.parse_args()
    if not args.seed_dir and not args.dicts:
        parser.error("name a seed folder, or --dicts")
    if args.dicts:
        write_dicts(args.golden)
    if args.seed_dir:
        safetensors_seeds(args.seed_dir, args.golden)
        npy_seeds(args.seed_dir, args.golden)
        config_seeds(args.seed_dir, args.golden)
        case_dir_seeds(args.seed_dir, args.golden)
        for harness in HARNESSES:
            print(harness, len(os.listdir(os.path.join(args.seed_dir, harness))), "seeds")


if __name__ == "__main__":
    sys.exit(main())
