//===- Tokenizer.h - The Kimi tokenizer (tiktoken byte-level BPE) -*- C++ -*-===//
//
// Part of k3. Loads a tokenizer directory as Kimi K2, Kimi Linear and K3
// ship it (`tiktoken.model`: `base64(bytes) rank` per line, the rank being
// the id and the merge priority; `tokenizer_config.json`: the special
// tokens, bos/eos, the chat template) and encodes and decodes text the way
// `tokenization_kimi.py` does:
//
//   1. the text is cut into runs of at most 25,000 whitespace or
//      non-whitespace code points (Python's str.isspace);
//   2. special-token strings in a run become their ids (unless turned off);
//   3. the rest is split by Kimi's pattern (PCRE2, rewritten: see
//      `kimiPatternForPcre2`), and each piece is merged by rank (tiktoken's
//      algorithm: the lowest-ranked adjacent pair first, leftmost on ties).
//
// See ../../../../shared/spec/SERVING.md. No MLIR: used by k3-run, k3-serve
// and k3-tokenize.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_TEXT_TOKENIZER_H
#define RUNTIME_SRC_TEXT_TOKENIZER_H

#include "runtime/include/k3rt/k3rt.h"
#include "lib/Model/Text.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace k3rt {

/// Kimi's pre-tokenizer pattern as `tokenization_kimi.py` has it (ICU and
/// Rust regex syntax: `&&` class intersection, `\p{Han}` the Script).
extern const char *const kKimiPattern;

/// `pattern` in PCRE2 10.42's dialect, which reads `&&` as two literal
/// characters and `\p{Han}` as Script_Extensions, silently: `\p{Han}` becomes
/// `\p{sc:Han}` and each `[X&&[^Y]]` becomes `(?:(?!Y)[X])`. Any other `&&`
/// is refused (empty result, `error` set) rather than misread.
std::string kimiPatternForPcre2(std::string_view pattern, std::string &error);

/// Splits UTF-8 `text` into the runs of step 1: at most `maxRun` code points
/// of the same whitespace class each. Returns byte ranges [begin, end).
std::vector<std::pair<size_t, size_t>> splitRuns(std::string_view text, size_t maxRun);

using k3::model::validUtf8;

class Tokenizer {
public:
  ~Tokenizer();
  /// Loads `dir`/tiktoken.model and `dir`/tokenizer_config.json.
  static k3rt_status_t load(const std::string &dir, std::unique_ptr<Tokenizer> &out);
  /// From the files' contents (tests, fuzzing).
  static k3rt_status_t fromText(std::string_view ranks, std::string_view configJson,
                                std::unique_ptr<Tokenizer> &out);

  /// Encodes UTF-8 `text` (invalid UTF-8 is an error naming the offset).
  /// `specials`: special-token strings in the text become their ids (the
  /// default of Kimi's encode); false treats them as plain text.
  k3rt_status_t encode(std::string_view text, bool specials, std::vector<int32_t> &ids) const;
  /// Step 3's pieces of ordinary (valid UTF-8) text, as byte ranges.
  k3rt_status_t pieces(std::string_view text, std::vector<std::pair<size_t, size_t>> &out) const;
  /// The bytes of `ids` (special tokens as their text); not necessarily
  /// valid UTF-8 (see TextStream). An id out of range is an error.
  k3rt_status_t decode(const std::vector<int32_t> &ids, std::string &bytes) const;

  /// Base (ranked) tokens; special ids follow them.
  int32_t baseTokens() const { return int32_t(bytes.size()); }
  /// All ids: base tokens and the reserved special range.
  int32_t size() const { return baseTokens() + numSpecial; }
  /// The id of a special token's text, if it is one.
  std::optional<int32_t> special(std::string_view text) const;
  /// The bytes of one id (an empty view when out of range).
  std::string_view piece(int32_t id) const;

  const std::string &chatTemplate() const { return templateText; }
  const std::string &bosToken() const { return bos; }
  const std::string &eosToken() const { return eos; }

private:
  Tokenizer();
  struct MatchState;
  k3rt_status_t encodeOrdinary(std::string_view text, MatchState &st,
                               std::vector<int32_t> &ids) const;
  /// Calls `each(begin, end)` for every pattern match in `text`.
  template <typename F>
  k3rt_status_t split(std::string_view text, MatchState &st, F &&each) const;
  static uint32_t prefixKey(std::string_view s, size_t i);
  void bytePairMerge(std::string_view piece, std::vector<int32_t> &ids) const;

  std::vector<std::string> bytes;                        ///< id -> bytes
  std::unordered_map<std::string_view, int32_t> ranks;   ///< bytes -> id (views into `bytes`)
  int32_t numSpecial = 0;
  std::vector<std::string> specialText;                  ///< id - base -> text
  std::unordered_map<std::string, int32_t> specialIds;
  /// Special tokens (id - base) by their first two bytes.
  std::unordered_map<uint32_t, std::vector<int32_t>> specialsByPrefix;
  std::string templateText, bos, eos;
  struct Regex;
  std::unique_ptr<Regex> regex;
};

/// Incremental decoding for streaming: push ids, get back the text that is
/// complete UTF-8 so far. A character split across tokens is held until its
/// last byte arrives; bytes that can never form a character become U+FFFD
/// (as Python's errors="replace"), so the output is always valid UTF-8.
class TextStream {
public:
  /// `skipSpecial`: special tokens add no text (as peers' default
  /// skip_special_tokens).
  explicit TextStream(const Tokenizer &tokenizer, bool skipSpecial = true)
      : tok(tokenizer), skip(skipSpecial) {}
  /// The text completed by `id` (possibly empty). `id` must be in range.
  std::string push(int32_t id);
  /// What is held back, as U+FFFD, and resets.
  std::string flush();

private:
  const Tokenizer &tok;
  bool skip;
  std::string held;
};

using k3::model::printable;
using k3::model::sanitizeUtf8;

} // namespace k3rt

#endif // RUNTIME_SRC_TEXT_TOKENIZER_H
