"""Breaks a checkpoint directory in one chosen way, for the bad-input tests.

usage: mutate.py DIR OP ARGS...
  drop NAME             remove tensor NAME from model.safetensors
  shape NAME D0,D1,...  relabel tensor NAME's shape (data untouched)
  dtype NAME DTYPE      relabel tensor NAME's dtype (data untouched)
  truncate BYTES        cut model.safetensors to BYTES bytes
  garble                replace the header JSON by non-JSON of the same size
  config KEY JSON       set text_config KEY (dotted path) to a JSON value
  unset KEY             delete text_config KEY (dotted path)
"""
import json
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


def main(directory, op, *args):
    st = directory + "/model.safetensors"
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
    if op == "drop":
        del header[args[0]]
    elif op == "shape":
        header[args[0]]["shape"] = [int(d) for d in args[1].split(",")]
    elif op == "dtype":
        header[args[0]]["dtype"] = args[1]
    else:
        sys.exit("unknown op " + op)
    save(st, header, body)


if __name__ == "__main__":
    main(*sys.argv[1:])
