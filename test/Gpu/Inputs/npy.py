"""Small helpers of the sweep scripts beside this file (pure Python, no
numpy): f32 rounding, writing a float32 .npy, and building and checking an
op-level module's CPU and emulated-GPU forms."""
import os
import struct
import subprocess
import sys


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


def compile_forms(work, compiler, name, module):
    """Writes `module` to WORK/NAME.mlir and compiles it for the CPU and,
    through --emulate, for sm_80; returns {form: binary}."""
    mod = os.path.join(work, name + ".mlir")
    with open(mod, "w") as f:
        f.write(module)
    binaries = {"cpu": os.path.join(work, "cpu.k3b"), "emulated": os.path.join(work, "emu.k3b")}
    subprocess.run([compiler, mod, "-o", binaries["cpu"]], check=True)
    subprocess.run([compiler, mod, "--target=sm_80", "--emulate", "-o", binaries["emulated"]],
                   check=True)
    return binaries


def check_forms(work, run, compare, binaries, fn, inputs, expected, label):
    """Runs `fn` of each binary on `inputs` ((shape, values) each) and
    compares its output with `expected` ((shape, values)) within 1e-5
    relative RMSE; prints a line per form and returns whether all passed."""
    args = []
    for i, (shape, values) in enumerate(inputs):
        path = os.path.join(work, f"in{i}.npy")
        write_npy(path, shape, values)
        args.append("--input=@" + path)
    ref = os.path.join(work, "ref.npy")
    write_npy(ref, *expected)
    ok = True
    for form, binary in binaries.items():
        out = os.path.join(work, f"{form}.npy")
        subprocess.run([run, binary, "--function=" + fn, *args, "--output=@" + out], check=True)
        r = subprocess.run([sys.executable, compare, ref, out, "1e-5"], capture_output=True,
                           text=True)
        print(f"{label} {form}: {r.stdout.strip()}")
        ok &= r.returncode == 0
    return ok
