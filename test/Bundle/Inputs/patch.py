"""Damages a file for the corrupt-binary tests.

usage: patch.py FILE OFFSET HEXBYTES   overwrite bytes at OFFSET
       patch.py FILE truncate N        keep the first N bytes
       patch.py FILE flip-last         invert the last byte (weight data)
"""
import sys

path, op = sys.argv[1], sys.argv[2]
data = bytearray(open(path, "rb").read())
if op == "truncate":
    data = data[:int(sys.argv[3])]
elif op == "flip-last":
    data[-1] ^= 0xFF
else:
    at = int(op, 0)
    new = bytes.fromhex(sys.argv[3])
    data[at:at + len(new)] = new
open(path, "wb").write(bytes(data))
