//===- ServeRequestFuzzer.cpp - k3-serve's request bodies -----------------===//
//
// Part of k3. The first byte picks the route (completions or chat), the
// rest is the body. Invariants: parsing never crashes; a refusal has a 4xx
// status and a one-line message; an accepted request has a non-empty
// prompt of ids in the vocabulary and max_tokens within the context.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/Fuzz.h"
#include "tools/k3-serve/Api.h"

#include <cstdio>
#include <cstdlib>

namespace {

void check(bool ok, const char *what) {
  if (!ok)
    k3fuzz::broken(what, "");
}

} // namespace

int k3fuzz::testOneInput(const uint8_t *data, size_t size) {
  static std::unique_ptr<k3rt::Tokenizer> tok = [] {
    std::unique_ptr<k3rt::Tokenizer> t;
    if (k3rt::Tokenizer::load(K3_SOURCE_DIR "/test/Tokenizer/Inputs/tok", t))
      std::abort();
    return t;
  }();
  static const k3rt::ChatFormat format{k3rt::ChatFormat::Kimi, "You are Kimi."};
  static const k3serve::ServeLimits limits{"m", 4096, tok->size()};
  if (size == 0)
    return 0;
  const bool chat = data[0] & 1;
  std::string body(reinterpret_cast<const char *>(data + 1), size - 1);
  k3serve::Generation g;
  k3serve::ApiError e;
  if (!k3serve::parseGeneration(body, chat, *tok, &format, limits, g, e)) {
    check(e.status >= 400 && e.status < 500, "a refusal is a 4xx");
    check(!e.message.empty() && e.message.find('\n') == std::string::npos,
          "a refusal is one line");
    (void)k3serve::dumpJson(e.body());
    return 0;
  }
  check(!g.prompt.empty(), "an accepted prompt is not empty");
  for (int32_t id : g.prompt)
    check(id >= 0 && id < tok->size(), "prompt ids in the vocabulary");
  check(g.maxTokens >= 1 && int64_t(g.prompt.size()) + g.maxTokens <= limits.context,
        "max_tokens within the context");
  return 0;
}
