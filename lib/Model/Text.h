//===- Text.h - UTF-8 checks and one-line messages --------------*- C++ -*-===//
//
// Part of k3. Shared by the tokenizer (runtime/src/text) and by every reader
// that quotes what a file or a client wrote in a message (a tensor name, a
// config value, a request id): such text may hold a newline, and a refusal
// is one line.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_MODEL_TEXT_H
#define LIB_MODEL_TEXT_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace k3::model {

/// U+FFFD, which stands for bytes that are not UTF-8.
inline constexpr char kReplacement[] = "\xEF\xBF\xBD";

/// One UTF-8 step at `i`: the sequence's length (> 0) when valid; when
/// not, -(the length of its maximal valid prefix, at least 1), or 0 when
/// the text ends inside a sequence that could still complete. `cp`, if
/// given, receives the code point of a valid one.
int utf8Step(std::string_view s, size_t i, uint32_t *cp = nullptr);

/// Whether `text` is valid UTF-8; else `badOffset` is the first bad byte.
bool validUtf8(std::string_view text, size_t &badOffset);

/// `bytes` with every invalid UTF-8 sequence replaced by U+FFFD.
std::string sanitizeUtf8(std::string_view bytes);

/// `text` fit for a one-line message: valid UTF-8, control characters as
/// escapes (\n, \t, \xNN; U+0085, U+2028, U+2029 as \uXXXX), at most `max`
/// bytes then "...".
std::string printable(std::string_view text, size_t max = 80);

} // namespace k3::model

#endif // LIB_MODEL_TEXT_H
