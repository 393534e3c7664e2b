"""Small helpers of the sweep scripts beside this file (pure Python, no
numpy): f32 rounding and writing a float32 .npy."""
import struct


def write_npy(path, shape, values):
    """`values` (row-major) as a float32 array of `shape` in PATH."""
    d = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        ", ".join(map(str, shape)) + ("," if len(shape) == 1 else ""))
    d += " " * ((64 - (10 + len(d) + 1) % 64) % 64) + "\n"
    body = struct.pack("<%df" % len(values), *values)
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode() + body)


def f32(x):
    """`x` rounded to the nearest float32."""
    return struct.unpack("<f", struct.pack("<f", x))[0]
