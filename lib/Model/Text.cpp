//===- Text.cpp - UTF-8 checks and one-line messages ----------------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "lib/Model/Text.h"

#include <cstdio>

namespace k3::model {

int utf8Step(std::string_view s, size_t i, uint32_t *cp) {
  const auto b = [&](size_t k) { return uint8_t(s[i + k]); };
  uint8_t c = b(0);
  if (c < 0x80) {
    if (cp)
      *cp = c;
    return 1;
  }
  int n;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0)
      lo = 0xA0;
    if (c == 0xED)
      hi = 0x9F; // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0)
      lo = 0x90;
    if (c == 0xF4)
      hi = 0x8F;
  } else {
    return -1;
  }
  uint32_t v = c & (0x7F >> n);
  for (int k = 1; k < n; ++k) {
    if (i + k >= s.size())
      return 0;
    uint8_t x = b(k);
    if (x < (k == 1 ? lo : 0x80) || x > (k == 1 ? hi : 0xBF))
      return -k;
    v = (v << 6) | (x & 0x3F);
  }
  if (cp)
    *cp = v;
  return n;
}

bool validUtf8(std::string_view text, size_t &badOffset) {
  for (size_t i = 0; i < text.size();) {
    int n = utf8Step(text, i);
    if (n <= 0) {
      badOffset = i;
      return false;
    }
    i += size_t(n);
  }
  return true;
}

std::string sanitizeUtf8(std::string_view bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size();) {
    int n = utf8Step(bytes, i);
    if (n > 0) {
      out.append(bytes.substr(i, size_t(n)));
      i += size_t(n);
    } else {
      out += kReplacement;
      i += n == 0 ? bytes.size() - i : size_t(-n);
    }
  }
  return out;
}

std::string printable(std::string_view text, size_t max) {
  std::string clean = sanitizeUtf8(text), out;
  for (size_t i = 0; i < clean.size(); ++i) {
    if (out.size() >= max) {
      // Whole characters only: back off to a lead byte.
      while (!out.empty() && (uint8_t(out.back()) & 0xC0) == 0x80)
        out.pop_back();
      if (!out.empty() && uint8_t(out.back()) >= 0xC0)
        out.pop_back();
      return out + "...";
    }
    uint8_t c = uint8_t(clean[i]);
    // Unicode's line breaks beyond ASCII (NEL, LS, PS) end a line for many
    // readers (Python's splitlines, editors): escaped too.
    std::string_view rest = std::string_view(clean).substr(i);
    if (rest.substr(0, 2) == "\xC2\x85" || rest.substr(0, 3) == "\xE2\x80\xA8" ||
        rest.substr(0, 3) == "\xE2\x80\xA9") {
      out += c == 0xC2 ? "\\u0085" : rest[2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += c == 0xC2 ? 1 : 2;
      continue;
    }
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out;
}

} // namespace k3::model
