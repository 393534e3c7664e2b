"""Damages a file for the corrupt-binary tests.

usage: patch.py FILE OFFSET HEXBYTES   overwrite bytes at OFFSET
       patch.py FILE truncate N        keep the first N bytes
       patch.py FILE flip-last         invert the last byte (weight data)
       patch.py FILE flip-after HEX N  invert the byte N past the first HEX
"""
import sys

path, op = sys.argv[1], sys.argv[2]
data = bytearray(open(path, "rb").read())
if op == "truncate":
    data = data[:int(sys.argv[3])]
elif op == "flip-last":
    data[-1] ^= 0xFF
elif op == "flip-after":
    at = data.find(bytes.fromhex(sys.argv[3]))
    assert at >= 0, "pattern not found"
    data[at + int(sys.argv[4])] ^= 0xFF
else:
    at = int(op, 0)
    new = bytes.fromhex(sys.argv[3])
    data[at:at + len(new)] = new
open(path, "wb").write(bytes(data))
