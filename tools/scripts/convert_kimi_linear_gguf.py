#!/usr/bin/env python3
"""Convert a tokenizer-less Kimi Linear checkpoint (HF layout) to GGUF.

Wraps llama.cpp's convert_hf_to_gguf.py without editing it, for synthetic
checkpoints such as the one `k3-compile CONFIG_DIR --write-synthetic=DIR`
writes (config.json + safetensors, no tokenizer files):

  * Vocabulary: when the checkpoint has no tokenizer (no tokenizer.json,
    tokenizer_config.json or tiktoken.model), a placeholder vocabulary of
    config.vocab_size tokens is written instead of calling transformers:
    token id N is the text "<tN>" for every N; the config's bos/eos/pad ids
    are CONTROL tokens, every other id a USER_DEFINED one. llama.cpp matches
    such tokens verbatim in prompt text before any other tokenization, so a
    prompt written as "<t100><t2000><t7>" tokenizes to exactly [100, 2000, 7]
    (CONTROL ids such as the BOS "<t31744>" only where the tool parses
    special tokens, which llama-simple and llama-completion do): any token id
    sequence can be fed to llama-simple/llama-completion, and generated
    tokens print as "<tN>". Text that is not a run of "<tN>" yields no tokens
    (the tokenizer is a byte-level BPE with no byte tokens and one inert
    merge, which llama.cpp requires). No BOS/EOS is added automatically
    (tokenizer.ggml.add_bos_token = add_eos_token = false).
  * num_shared_experts: when config.json lacks it, it is inferred from the
    shared expert's tensor shape (rows of shared_experts.gate_proj /
    moe_intermediate_size), 0 when there is no shared expert.

A checkpoint that has a real tokenizer is converted exactly as
convert_hf_to_gguf.py would convert it.

Usage:
  python3 convert_kimi_linear_gguf.py --llama-cpp LLAMA_CPP_SRC_DIR \\
      CHECKPOINT_DIR --outtype bf16 --outfile OUT.gguf [other convert_hf_to_gguf.py options]

Needs: torch and numpy (Debian: python3-torch python3-numpy python3-tqdm);
gguf-py is taken from the llama.cpp tree. No transformers, sentencepiece or
safetensors packages are needed for a tokenizer-less checkpoint.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
from pathlib import Path

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tiktoken.model", "tokenizer.model")


def safetensors_shapes(model_dir: Path) -> dict[str, list[int]]:
    """Tensor name -> shape, read from the safetensors headers only."""
    shapes: dict[str, list[int]] = {}
    for part in sorted(model_dir.glob("*.safetensors")):
        with open(part, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
        for name, info in header.items():
            if name != "__metadata__":
                shapes[name] = info["shape"]
    return shapes


def placeholder_vocab(hparams: dict) -> tuple[list[str], list[int], dict[str, int]]:
    import gguf

    vocab_size = int(hparams["vocab_size"])
    special: dict[str, int] = {}
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        tid = hparams.get(key)
        if isinstance(tid, list):
            tid = tid[0] if tid else None
        if isinstance(tid, int) and 0 <= tid < vocab_size:
            special[key] = tid
    tokens = [f"<t{i}>" for i in range(vocab_size)]
    types = [int(gguf.TokenType.USER_DEFINED)] * vocab_size
    for tid in special.values():
        types[tid] = int(gguf.TokenType.CONTROL)
    return tokens, types, special


def install_transformers_stub() -> bool:
    """conversion/base.py imports transformers.AutoConfig at module level but
    falls back to reading config.json when AutoConfig fails. Without
    transformers installed, stand in a module whose AutoConfig/AutoTokenizer
    always fail, so that fallback is taken. Returns whether the real
    transformers is there (the tokenizer's conversion needs it)."""
    try:
        import transformers  # noqa: F401
        return True
    except ImportError:
        pass
    import types

    class _Unavailable:
        @classmethod
        def from_pretrained(cls, *args, **kwargs):
            raise ImportError("transformers is not installed (stub from convert_kimi_linear_gguf.py)")

    stub = types.ModuleType("transformers")
    stub.AutoConfig = _Unavailable
    stub.AutoTokenizer = _Unavailable
    stub.__getattr__ = lambda name: _Unavailable  # any other name: fails on use
    sys.modules["transformers"] = stub
    return False


def patch_old_torch() -> None:
    """conversion/base.py names torch.float8_e4m3fn/float8_e5m2 in its dtype
    tables; older torch (Debian 12's python3-torch is 1.13) lacks them. Stand
    in unique placeholders: only a checkpoint with FP8 tensors would need
    them, and it then fails with a KeyError/TypeError instead of at import."""
    import torch
    for name in ("float8_e4m3fn", "float8_e5m2"):
        if not hasattr(torch, name):
            setattr(torch, name, f"<torch.{name} unavailable in torch {torch.__version__}>")


def main() -> None:
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--llama-cpp", default=os.environ.get("LLAMA_CPP_DIR"),
                    help="llama.cpp source tree (holds convert_hf_to_gguf.py and gguf-py); default $LLAMA_CPP_DIR")
    ours, rest = ap.parse_known_args()
    if not ours.llama_cpp:
        sys.exit("convert_kimi_linear_gguf.py: give --llama-cpp DIR (or set LLAMA_CPP_DIR)")
    src = Path(ours.llama_cpp).resolve()
    if not (src / "convert_hf_to_gguf.py").is_file():
        sys.exit(f"convert_kimi_linear_gguf.py: no convert_hf_to_gguf.py in {src}")
    sys.path.insert(0, str(src))
    sys.path.insert(1, str(src / "gguf-py"))
    have_transformers = install_transformers_stub()
    patch_old_torch()

    import convert_hf_to_gguf  # noqa: E402  (adds gguf-py itself too)
    from conversion.kimi_linear import KimiLinearModel  # noqa: E402
    from conversion.base import logger  # noqa: E402

    orig_set_vocab = KimiLinearModel.set_vocab
    orig_set_gguf_parameters = KimiLinearModel.set_gguf_parameters

    def set_vocab(self) -> None:
        has_tokenizer = any((self.dir_model / f).is_file() for f in TOKENIZER_FILES)
        if has_tokenizer and have_transformers:
            return orig_set_vocab(self)
        # llama.cpp converts a tokenizer through transformers; without it a
        # benchmark still runs on token ids alone.
        logger.warning("%s in %s: writing a placeholder vocabulary of %d tokens",
                       "tokenizer present but transformers not installed" if has_tokenizer
                       else "no tokenizer", self.dir_model, self.hparams["vocab_size"])
        tokens, types, special = placeholder_vocab(self.hparams)
        w = self.gguf_writer
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        w.add_token_types(types)
        # llama.cpp's BPE loader insists on a merges array (gguf-py drops an
        # empty one): one merge of two byte-level spaces, whose result is no
        # token, changes nothing.
        w.add_token_merges(["\u0120 \u0120"])
        if "bos_token_id" in special:
            w.add_bos_token_id(special["bos_token_id"])
        if "eos_token_id" in special:
            w.add_eos_token_id(special["eos_token_id"])
        if "pad_token_id" in special:
            w.add_pad_token_id(special["pad_token_id"])
        w.add_add_bos_token(False)
        w.add_add_eos_token(False)

    def set_gguf_parameters(self) -> None:
        if "num_shared_experts" not in self.hparams:
            shapes = safetensors_shapes(self.dir_model)
            rows = [s[0] for n, s in shapes.items() if n.endswith("shared_experts.gate_proj.weight")]
            n_shared = rows[0] // int(self.hparams["moe_intermediate_size"]) if rows else 0
            logger.warning("config.json has no num_shared_experts: using %d (from the tensor shapes)", n_shared)
            self.hparams["num_shared_experts"] = n_shared
        return orig_set_gguf_parameters(self)

    KimiLinearModel.set_vocab = set_vocab
    KimiLinearModel.set_gguf_parameters = set_gguf_parameters

    sys.argv = [str(src / "convert_hf_to_gguf.py")] + rest
    convert_hf_to_gguf.main()


if __name__ == "__main__":
    main()
