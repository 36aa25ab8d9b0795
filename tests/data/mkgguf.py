#!/usr/bin/env python3
"""mkgguf.py — writes small GGUF files for the tests (python3 stdlib only).

    mkgguf.py OUTDIR [NAME...]

Each file is a GGUF version 3 head as llama.cpp's converter writes it
(ggml's docs/gguf.md): the magic, the version, the counts, typed
key-value pairs, tensor infos. No tensor data follows (vramtrace reads the
head only), so a file that describes an 8B model takes a few kilobytes.
The shapes and types are those of the published models the names recall;
the numbers the tests expect from them are worked out in test_gguf.c.

Also writes malformed files (bad-*.gguf) for the reader's error paths and
the fuzz corpus.
"""
import os
import struct
import sys

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i",
          F32: "<f", BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}

# ggml types (ggml.h) and llama.cpp file types (llama.h)
F32_T, F16_T, Q8_0, Q4_K, Q6_K, Q5_K = 0, 1, 8, 12, 14, 13
FT_Q4_K_M, FT_Q8_0, FT_F16 = 15, 7, 1


def s(x):
    b = x.encode()
    return struct.pack("<Q", len(b)) + b


def value(t, v):
    if t == STRING:
        return s(v)
    if t == ARRAY:
        et, items = v
        out = struct.pack("<IQ", et, len(items))
        for it in items:
            out += value(et, it)
        return out
    return struct.pack(SCALAR[t], v)


def gguf(kvs, tensors, version=3):
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for k, t, v in kvs:
        out += s(k) + struct.pack("<I", t) + value(t, v)
    off = 0
    for name, dims, typ in tensors:
        out += s(name) + struct.pack("<I", len(dims))
        out += b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", typ, off)
        off += 32
    return out


def block(i, embd, kv_dim, ffn, qtype=Q4_K, vtype=Q4_K, dtype=Q4_K):
    p = f"blk.{i}."
    return [
        (p + "attn_norm.weight", [embd], F32_T),
        (p + "attn_q.weight", [embd, embd], qtype),
        (p + "attn_k.weight", [embd, kv_dim], qtype),
        (p + "attn_v.weight", [embd, kv_dim], vtype),
        (p + "attn_output.weight", [embd, embd], qtype),
        (p + "ffn_norm.weight", [embd], F32_T),
        (p + "ffn_gate.weight", [embd, ffn], qtype),
        (p + "ffn_up.weight", [embd, ffn], qtype),
        (p + "ffn_down.weight", [ffn, embd], dtype),
    ]


def llama(name, layers, embd, heads, ffn, extra=()):
    """A Llama 3.1 at Q4_K_M: attn_v and ffn_down in Q6_K on half the
    layers, as llama-quantize's mix does; 8 KV heads of 128, a
    128256-token vocabulary, 131072 tokens of context."""
    kv, vocab = 1024, 128256
    t = [("token_embd.weight", [embd, vocab], Q4_K)]
    for i in range(layers):
        q6 = Q6_K if i % 2 == 0 else Q4_K
        t += block(i, embd, kv, ffn, vtype=q6, dtype=q6)
    t += [("output_norm.weight", [embd], F32_T),
          ("output.weight", [embd, vocab], Q6_K)]
    kvs = [
        ("general.architecture", STRING, "llama"),
        ("general.name", STRING, name),
        ("llama.block_count", U32, layers),
        ("llama.context_length", U32, 131072),
        ("llama.embedding_length", U32, embd),
        ("llama.feed_forward_length", U32, ffn),
        ("llama.attention.head_count", U32, heads),
        ("llama.attention.head_count_kv", U32, 8),
        ("general.file_type", U32, FT_Q4_K_M),
    ] + list(extra)
    return gguf(kvs, t)


def llama3_8b():
    """Llama 3.1 8B, with the keys a converter adds besides (floats,
    the tokenizer's string and integer arrays: skipped by the reader)."""
    return llama("Meta Llama 3.1 8B Instruct", 32, 4096, 32, 14336, [
        ("general.alignment", U32, 32),
        ("llama.rope.freq_base", F32, 500000.0),
        ("llama.attention.layer_norm_rms_epsilon", F32, 1e-5),
        ("tokenizer.ggml.model", STRING, "gpt2"),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, [f"t{i}" for i in
                                                   range(300)])),
        ("tokenizer.ggml.token_type", ARRAY, (I32, [1] * 300)),
        ("general.quantization_version", U32, 2),
    ])


def llama3_70b():
    """Llama 3.1 70B: 80 layers of 8192."""
    return llama("Meta Llama 3.1 70B Instruct", 80, 8192, 64, 28672)


def mixtral():
    """Mixtral 8x7B at Q8_0: 8 experts, 2 per token, the experts of a
    layer in one 3-D tensor each (ffn_*_exps)."""
    embd, kv, ffn, vocab, n = 4096, 1024, 14336, 32000, 32
    t = [("token_embd.weight", [embd, vocab], Q8_0)]
    for i in range(n):
        p = f"blk.{i}."
        t += [(p + "attn_norm.weight", [embd], F32_T),
              (p + "attn_q.weight", [embd, embd], Q8_0),
              (p + "attn_k.weight", [embd, kv], Q8_0),
              (p + "attn_v.weight", [embd, kv], Q8_0),
              (p + "attn_output.weight", [embd, embd], Q8_0),
              (p + "ffn_gate_inp.weight", [embd, 8], F32_T),
              (p + "ffn_gate_exps.weight", [embd, ffn, 8], Q8_0),
              (p + "ffn_up_exps.weight", [embd, ffn, 8], Q8_0),
              (p + "ffn_down_exps.weight", [ffn, embd, 8], Q8_0)]
    t += [("output_norm.weight", [embd], F32_T),
          ("output.weight", [embd, vocab], Q8_0)]
    kvs = [
        ("general.architecture", STRING, "llama"),
        ("llama.block_count", U64, n),
        ("llama.context_length", U64, 32768),
        ("llama.embedding_length", U64, embd),
        ("llama.feed_forward_length", U64, ffn),
        ("llama.attention.head_count", U64, 32),
        ("llama.attention.head_count_kv", U64, 8),
        ("llama.expert_count", U32, 8),
        ("llama.expert_used_count", U32, 2),
        ("general.file_type", U32, FT_Q8_0),
    ]
    return gguf(kvs, t)


def deepseek_mla():
    """DeepSeek-V2-Lite's attention: MLA with a 512-wide latent and 64
    rope dimensions; 27 layers; the architecture key comes last."""
    kvs = [
        ("deepseek2.block_count", U32, 27),
        ("deepseek2.context_length", U32, 163840),
        ("deepseek2.embedding_length", U32, 2048),
        ("deepseek2.attention.head_count", U32, 16),
        ("deepseek2.attention.head_count_kv", U32, 16),
        ("deepseek2.attention.key_length", U32, 192),
        ("deepseek2.attention.value_length", U32, 128),
        ("deepseek2.attention.kv_lora_rank", U32, 512),
        ("deepseek2.rope.dimension_count", U32, 64),
        ("deepseek2.expert_count", U32, 64),
        ("deepseek2.expert_used_count", U32, 6),
        ("general.file_type", U32, FT_F16),
        ("general.architecture", STRING, "deepseek2"),
    ]
    return gguf(kvs, [("token_embd.weight", [2048, 102400], F16_T)])


def gemma3():
    """Gemma 3 4B: 34 layers, a 1024-token window, no pattern key (the
    reader applies llama.cpp's rule: every 6th layer global)."""
    kvs = [
        ("general.architecture", STRING, "gemma3"),
        ("gemma3.block_count", U32, 34),
        ("gemma3.context_length", U32, 131072),
        ("gemma3.embedding_length", U32, 2560),
        ("gemma3.attention.head_count", U32, 8),
        ("gemma3.attention.head_count_kv", U32, 4),
        ("gemma3.attention.key_length", U32, 256),
        ("gemma3.attention.value_length", U32, 256),
        ("gemma3.attention.sliding_window", U32, 1024),
        ("general.file_type", U32, FT_Q8_0),
    ]
    return gguf(kvs, [])


def hybrid():
    """A Jamba-like hybrid: 8 layers, attention (8 KV heads) in layers 3
    and 7 only (head_count_kv per layer, 0 for the Mamba layers), the
    SSM keys for the rest; a nested array the reader must skip."""
    kvs = [
        ("general.architecture", STRING, "jamba"),
        ("jamba.block_count", U32, 8),
        ("jamba.context_length", U32, 262144),
        ("jamba.embedding_length", U32, 4096),
        ("jamba.attention.head_count", U32, 32),
        ("jamba.attention.head_count_kv", ARRAY,
         (U32, [0, 0, 0, 8, 0, 0, 0, 8])),
        ("jamba.ssm.conv_kernel", U32, 4),
        ("jamba.ssm.inner_size", U32, 8192),
        ("jamba.ssm.state_size", U32, 16),
        ("jamba.nested", ARRAY, (ARRAY, [(U8, [1, 2]), (STRING, ["a"])])),
    ]
    return gguf(kvs, [])


def bad_files():
    good = llama3_8b()
    return {
        "bad-magic.gguf": b"GGUX" + good[4:],
        "bad-version.gguf": good[:4] + struct.pack("<I", 1) + good[8:],
        "bad-truncated.gguf": good[:200],
        "bad-count.gguf": good[:8] + struct.pack("<QQ", 1, 1 << 60) +
        good[24:],
        "bad-noarch.gguf": gguf([("llama.block_count", U32, 2)], []),
        "bad-deep.gguf": gguf([("x", ARRAY, (ARRAY, [(ARRAY, [(ARRAY, [(
            ARRAY, [(U8, [1])])])])]))], []),
        "bad-type.gguf": gguf([("general.architecture", STRING, "llama"),
                               ("llama.block_count", U32, 2)],
                              [("t", [32], 99)]),
        "bad-negative.gguf": gguf([("general.architecture", STRING, "llama"),
                                   ("llama.block_count", I32, -4)], []),
    }


FILES = {
    "llama3-8b-q4_k_m.gguf": llama3_8b,
    "llama3-70b-q4_k_m.gguf": llama3_70b,
    "mixtral-8x7b-q8_0.gguf": mixtral,
    "deepseek-v2-lite-f16.gguf": deepseek_mla,
    "gemma3-4b-q8_0.gguf": gemma3,
    "hybrid.gguf": hybrid,
}


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    want = set(sys.argv[2:])
    os.makedirs(out, exist_ok=True)
    files = {k: f() for k, f in FILES.items()}
    files.update(bad_files())
    for name, data in files.items():
        if want and name not in want:
            continue
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
