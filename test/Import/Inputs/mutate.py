"""Breaks a checkpoint directory in one chosen way, for the bad-input tests.

usage: mutate.py DIR OP ARGS...
  drop NAME             remove tensor NAME from model.safetensors
  shape NAME D0,D1,...  relabel tensor NAME's shape (data untouched)
  dtype NAME DTYPE      relabel tensor NAME's dtype (data untouched)
  truncate BYTES        cut model.safetensors to BYTES bytes
  garble                replace the header JSON by non-JSON of the same size
  config KEY JSON       set text_config KEY (dotted path) to a JSON value
  unset KEY             delete text_config KEY (dotted path)
  tobf16 NAME           convert F32 tensor NAME to BF16 (values rounded)
  add NAME              add an F32 tensor NAME of shape [1]
  pack NAME             store BF16 linear NAME (X.weight) as an MXFP4 pair
                        X.weight_packed + X.weight_scale (OCP floor rule)
  pad NAME N            store F32 tensor NAME as [N], zero-padded or cut
A checkpoint with an index (model.safetensors.index.json, one shard) is
edited in its shard, and the index follows dropped and added tensors.
"""
import json
import math
import struct
import sys


def load(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n]), data[8 + n:]


def save(path, header, body):
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + body)


def edit_config(directory, key, value=None, delete=False):
    path = directory + "/config.json"
    cfg = json.load(open(path))
    node = cfg.get("text_config", cfg)
    *parents, last = key.split(".")
    for p in parents:
        node = node[p]
    if delete:
        del node[last]
    else:
        node[last] = json.loads(value)
    json.dump(cfg, open(path, "w"))


def bf16(v):
    """Round an f32 to bf16, nearest even; little-endian bytes."""
    (u,) = struct.unpack("<I", struct.pack("<f", v))
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFFFFFF
    return struct.pack("<H", u >> 16)


E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def e2m1(x):
    """Nearest E2M1 code, ties to the even code, saturating at 6."""
    a = min(abs(x), 6.0)
    best = min(range(8), key=lambda c: (abs(E2M1[c] - a), c % 2))
    return best | (8 if x < 0 else 0)


def pack(rows, cols, values):
    codes, scales = bytearray(rows * cols // 2), bytearray(rows * cols // 32)
    for r in range(rows):
        for b in range(cols // 32):
            block = values[r * cols + b * 32:r * cols + b * 32 + 32]
            amax = max(abs(v) for v in block)
            exp = (math.frexp(amax)[1] - 1 - 2) if amax > 0 else -127
            exp = max(-127, min(127, exp))
            scales[r * (cols // 32) + b] = exp + 127
            for i, v in enumerate(block):
                c = e2m1(math.ldexp(v, -exp))
                k = (r * cols + b * 32 + i)
                codes[k // 2] |= c << (4 * (k % 2))
    return bytes(codes), bytes(scales)


def shard(directory):
    """The one safetensors file of the checkpoint, and its index if any."""
    try:
        index = json.load(open(directory + "/model.safetensors.index.json"))
    except FileNotFoundError:
        return directory + "/model.safetensors", None
    files = sorted(set(index["weight_map"].values()))
    assert len(files) == 1, "mutate.py edits one-shard checkpoints"
    return directory + "/" + files[0], index


def save_index(directory, index, header, file):
    if index is not None:
        index["weight_map"] = {n: file for n in header if n != "__metadata__"}
        json.dump(index, open(directory + "/model.safetensors.index.json", "w"))


def main(directory, op, *args):
    st, index = shard(directory)
    file = st.rsplit("/", 1)[1]
    if op in ("config", "unset"):
        edit_config(directory, args[0], *(args[1:]), delete=op == "unset")
        return
    if op == "truncate":
        data = open(st, "rb").read()
        open(st, "wb").write(data[:int(args[0])])
        return
    if op == "garble":
        data = bytearray(open(st, "rb").read())
        (n,) = struct.unpack("<Q", data[:8])
        data[8:8 + n] = b"{" + b"x" * (n - 1)
        open(st, "wb").write(bytes(data))
        return
    header, body = load(st)
    if op in ("tobf16", "pack", "add", "pad"):
        tensors = {}
        for name, e in header.items():
            if name != "__metadata__":
                b, t = e["data_offsets"]
                tensors[name] = [e["dtype"], e["shape"], body[b:t]]
        if op == "add":
            tensors[args[0]] = ["F32", [1], struct.pack("<f", 1.0)]
        elif op == "pad":
            t = tensors[args[0]]
            assert t[0] == "F32"
            vals = list(struct.unpack("<%df" % (len(t[2]) // 4), t[2]))[:int(args[1])]
            vals += [0.0] * (int(args[1]) - len(vals))
            t[1] = [int(args[1])]
            t[2] = struct.pack("<%df" % len(vals), *vals)
        elif op == "tobf16":
            t = tensors[args[0]]
            vals = struct.unpack("<%df" % (len(t[2]) // 4), t[2])
            t[0] = "BF16"
            t[2] = b"".join(bf16(v) for v in vals)
        else:
            dtype, shape, raw = tensors.pop(args[0])
            assert dtype == "BF16" and args[0].endswith(".weight")
            vals = [struct.unpack("<f", b"\0\0" + raw[i:i + 2])[0] for i in range(0, len(raw), 2)]
            codes, scales = pack(shape[0], shape[1], vals)
            base = args[0][:-len(".weight")]
            tensors[base + ".weight_packed"] = ["U8", [shape[0], shape[1] // 2], codes]
            tensors[base + ".weight_scale"] = ["U8", [shape[0], shape[1] // 32], scales]
        header, offset, chunks = {}, 0, []
        for name, (dtype, shape, raw) in tensors.items():
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
            offset += len(raw)
            chunks.append(raw)
        save(st, header, b"".join(chunks))
        save_index(directory, index, header, file)
        return
    if op == "drop":
        del header[args[0]]
    elif op == "shape":
        header[args[0]]["shape"] = [int(d) for d in args[1].split(",")]
    elif op == "dtype":
        header[args[0]]["dtype"] = args[1]
    else:
        sys.exit("unknown op " + op)
    save(st, header, body)
    save_index(directory, index, header, file)


if __name__ == "__main__":
    main(*sys.argv[1:])
