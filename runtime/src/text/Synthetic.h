//===- Synthetic.h - Tokenizers for synthetic checkpoints -------*- C++ -*-===//
//
// Part of k3. `k3-compile --write-synthetic` writes a tokenizer beside the
// weights so that every model in models/ can be used in text: a valid
// tiktoken.model (the 256 single bytes first, then merges learnt by BPE from
// a small built-in text, then filler strings up to the base count) and a
// tokenizer_config.json with Kimi K2's special tokens at the top of the
// vocabulary and the Kimi chat template.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_TEXT_SYNTHETIC_H
#define RUNTIME_SRC_TEXT_SYNTHETIC_H

#include <cstdint>
#include <string>

namespace k3rt {

/// Writes `dir`/tiktoken.model and `dir`/tokenizer_config.json for a model
/// of `vocab` ids. The special range starts at `bosId` when the model's
/// config names one (Kimi's layout: bos is the first special id), else
/// 256 ids (32 below 4,096) before the end of the vocabulary.
bool writeSyntheticTokenizer(const std::string &dir, int64_t vocab, int64_t bosId,
                             std::string &error);

} // namespace k3rt

#endif // RUNTIME_SRC_TEXT_SYNTHETIC_H
