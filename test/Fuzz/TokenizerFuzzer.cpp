//===- TokenizerFuzzer.cpp - encode/decode on arbitrary bytes -------------===//
//
// Part of k3. Invariants: valid UTF-8 encodes, and decoding the ids gives
// the input's bytes back (with special tokens on or off); invalid UTF-8 is
// refused with a message; streaming the ids never emits a half character
// and adds up to the decoded text.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/Fuzz.h"
#include "runtime/src/text/Tokenizer.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

const k3rt::Tokenizer &tokenizer() {
  static std::unique_ptr<k3rt::Tokenizer> tok = [] {
    std::unique_ptr<k3rt::Tokenizer> t;
    if (k3rt_status_t s =
            k3rt::Tokenizer::load(K3_SOURCE_DIR "/test/Tokenizer/Inputs/tok", t)) {
      std::fprintf(stderr, "%s\n", k3rt_status_message(s));
      std::abort();
    }
    return t;
  }();
  return *tok;
}

void check(bool ok, const char *what) {
  if (!ok)
    k3fuzz::broken(what, "");
}

} // namespace

int k3fuzz::testOneInput(const uint8_t *data, size_t size) {
  const k3rt::Tokenizer &tok = tokenizer();
  std::string text(reinterpret_cast<const char *>(data), size);
  size_t bad = 0;
  const bool valid = k3rt::validUtf8(text, bad);
  for (bool specials : {true, false}) {
    std::vector<int32_t> ids;
    k3rt_status_t s = tok.encode(text, specials, ids);
    check(valid == (s == nullptr), "encode succeeds exactly on valid UTF-8");
    if (s) {
      check(*k3rt_status_message(s) != 0, "a refusal has a message");
      k3rt_status_free(s);
      continue;
    }
    std::string back;
    check(tok.decode(ids, back) == nullptr, "decode of encode's ids");
    check(back == text, "decode(encode(text)) == text");
    k3rt::TextStream stream(tok, /*skipSpecial=*/false);
    std::string streamed;
    for (int32_t id : ids) {
      std::string part = stream.push(id);
      check(k3rt::validUtf8(part, bad), "a streamed part is whole characters");
      streamed += part;
    }
    streamed += stream.flush();
    check(streamed == text, "streamed text == text");
  }
  return 0;
}
