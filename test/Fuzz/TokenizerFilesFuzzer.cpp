//===- TokenizerFilesFuzzer.cpp - tiktoken.model + tokenizer_config.json ---===//
//
// Part of k3. The input is a rank file and a config, split at the first
// "\n--\n". Invariants: loading never crashes; a refusal is one line; a
// tokenizer that loads encodes text and decodes it back.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/Fuzz.h"
#include "runtime/src/Status.h"
#include "runtime/src/text/Tokenizer.h"

#include <cstdio>
#include <cstdlib>
#include <string>

int k3fuzz::testOneInput(const uint8_t *data, size_t size) {
  std::string in(reinterpret_cast<const char *>(data), size);
  size_t cut = in.find("\n--\n");
  std::string ranks = in.substr(0, cut), config = cut == std::string::npos ? "{}" : in.substr(cut + 4);
  std::unique_ptr<k3rt::Tokenizer> tok;
  if (k3rt_status_t s = k3rt::Tokenizer::fromText(ranks, config, tok)) {
    k3fuzz::requireOneLine(k3rt::takeMessage(s));
    return 0;
  }
  for (const char *text : {"Hello, world! 你好 <|im_end|> 123", "", " \r\n\t x"}) {
    std::vector<int32_t> ids;
    std::string back;
    if (tok->encode(text, true, ids) || tok->decode(ids, back) || back != text)
      k3fuzz::broken("a loaded tokenizer round-trips text", text);
  }
  return 0;
}
