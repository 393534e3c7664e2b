"""Lists a safetensors checkpoint as HF tools would read it (DESIGN §6).

usage: safetensors_table.py DIR
Reads DIR/model.safetensors.index.json and every shard it names; prints
`index: N tensors in S shards` and one `NAME DTYPE [SHAPE]` line per tensor,
sorted by name. Exits 1 if the index names a tensor its shard lacks, a shard
holds a tensor the index does not name, or a tensor's bytes do not match its
dtype and shape.
"""
import json
import os
import struct
import sys

BYTES = {"F32": 4, "BF16": 2, "F16": 2, "U8": 1}
root = sys.argv[1]
index = json.load(open(os.path.join(root, "model.safetensors.index.json")))
wmap = index["weight_map"]
rows = {}
for shard in sorted(set(wmap.values())):
    data = open(os.path.join(root, shard), "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    for name, t in header.items():
        if wmap.get(name) != shard:
            sys.exit("%s: %s is not in the index under this shard" % (shard, name))
        begin, end = t["data_offsets"]
        count = 1
        for d in t["shape"]:
            count *= d
        if end - begin != count * BYTES[t["dtype"]]:
            sys.exit("%s: %s holds %d bytes for %s %s" % (shard, name, end - begin, t["dtype"], t["shape"]))
        rows[name] = "%s %s %s" % (name, t["dtype"], t["shape"])
missing = set(wmap) - set(rows)
if missing:
    sys.exit("index names tensors no shard holds: %s" % sorted(missing)[:3])
print("index: %d tensors in %d shards" % (len(rows), len(set(wmap.values()))))
for name in sorted(rows):
    print(rows[name])
