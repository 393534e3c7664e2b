#!/bin/sh
# A stand-in ptxas (tests only) that rejects its input the way ptxas does.
echo "ptxas info    : 0 bytes gmem" >&2
echo "ptxas /tmp/k.ptx, line 12; error   : Unknown symbol '__nv_expf'" >&2
echo "ptxas fatal   : Ptx assembly aborted due to errors" >&2
exit 255
