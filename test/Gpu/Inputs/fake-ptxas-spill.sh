#!/bin/sh
# A stand-in ptxas (tests only) that "assembles" any PTX into a tiny ELF
# image and reports a kernel that spills: k3-compile's parsing of ptxas -v
# and its spill budget are tested with it.
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out=$2; shift; fi
  shift
done
printf '\177ELF%060d' 0 > "$out"
echo "ptxas info    : Compiling entry function 'k' for 'sm_90a'" >&2
echo "ptxas info    : Function properties for k" >&2
echo "    24 bytes stack frame, 24 bytes spill stores, 16 bytes spill loads" >&2
echo "ptxas info    : Used 255 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]" >&2
