"""Writes a float32 .npy: write_npy.py PATH D0,D1,... v0,v1,..."""
import struct
import sys

path, shape, values = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
d = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
    ", ".join(shape) + ("," if len(shape) == 1 else ""))
d += " " * ((64 - (10 + len(d) + 1) % 64) % 64) + "\n"
body = struct.pack("<%df" % len(values), *map(float, values))
open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode() + body)
