//===- Fuzz.h - What every k3 fuzz target defines -------------------------===//
//
// Part of k3. Each target defines k3fuzz::testOneInput; FuzzMain.cpp wraps
// it as libFuzzer's entry point and checks what libFuzzer does not.
//
//===----------------------------------------------------------------------===//

#ifndef TEST_FUZZ_FUZZ_H
#define TEST_FUZZ_FUZZ_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace k3fuzz {
/// One input; returns 0 (libFuzzer's convention). Aborts on a broken
/// invariant, after one stderr line starting "invariant broken:".
int testOneInput(const uint8_t *bytes, size_t size);

/// Reports a broken invariant (one stderr line) and aborts: libFuzzer keeps
/// the input as a crash.
[[noreturn]] void broken(const char *what, const std::string &detail);

/// A refusal must be one non-empty line.
inline void requireOneLine(const std::string &message) {
  if (message.empty() || message.find('\n') != std::string::npos)
    broken("a refusal is one line", message);
}
} // namespace k3fuzz

#endif // TEST_FUZZ_FUZZ_H
