//===- k3-tokenize.cpp - Text to token ids and back -----------------------===//
//
// Part of k3. MLIR-free.
//
//   k3-tokenize DIR [--plain-specials]   UTF-8 on stdin -> ids, comma-separated
//   k3-tokenize DIR --decode              ids on stdin (commas or spaces) -> bytes
//
// DIR holds tiktoken.model and tokenizer_config.json (runtime/src/text).
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Status.h"
#include "runtime/src/text/Tokenizer.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace {

const char kUsage[] =
    "usage: k3-tokenize DIR [--decode] [--plain-specials]\n"
    "  DIR               a tokenizer directory: tiktoken.model, tokenizer_config.json\n"
    "  (default)         reads UTF-8 text on stdin, prints its token ids comma-separated\n"
    "  --decode          reads token ids (commas or whitespace) on stdin, prints the bytes\n"
    "  --plain-specials  special-token strings in the text are plain text, not special ids\n"
    "  --help            this text\n";

int fail(const std::string &message) {
  std::fprintf(stderr, "k3-tokenize: error: %s\n", message.c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  std::string dir;
  bool decode = false, specials = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--decode")
      decode = true;
    else if (a == "--plain-specials")
      specials = false;
    else if (a.rfind("-", 0) == 0)
      return fail("unknown flag " + a + " (see --help)");
    else if (dir.empty())
      dir = a;
    else
      return fail("one tokenizer directory expected, got '" + dir + "' and '" + a + "'");
  }
  if (dir.empty())
    return fail("no tokenizer directory (see --help)");
  std::unique_ptr<k3rt::Tokenizer> tok;
  if (k3rt_status_t s = k3rt::Tokenizer::load(dir, tok)) {
    std::string m = k3rt::takeMessage(s);
    return fail(m);
  }
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  if (decode) {
    std::vector<int32_t> ids;
    size_t i = 0;
    while (i < input.size()) {
      if (input[i] == ',' || std::isspace(uint8_t(input[i]))) {
        ++i;
        continue;
      }
      size_t j = input.find_first_of(", \t\r\n", i);
      std::string word = input.substr(i, j == std::string::npos ? std::string::npos : j - i);
      char *end = nullptr;
      errno = 0;
      long long v = std::strtoll(word.c_str(), &end, 10);
      if (word.empty() || *end || errno || v < INT32_MIN || v > INT32_MAX ||
          word.find_first_not_of("-0123456789") != std::string::npos)
        return fail("'" + word + "' is not a token id");
      ids.push_back(int32_t(v));
      i = j == std::string::npos ? input.size() : j;
    }
    std::string bytes;
    if (k3rt_status_t s = tok->decode(ids, bytes)) {
      std::string m = k3rt::takeMessage(s);
      return fail(m);
    }
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    return 0;
  }
  std::vector<int32_t> ids;
  if (k3rt_status_t s = tok->encode(input, specials, ids)) {
    std::string m = k3rt::takeMessage(s);
    return fail("stdin: " + m);
  }
  std::string line;
  for (size_t k = 0; k < ids.size(); ++k)
    line += (k ? "," : "") + std::to_string(ids[k]);
  std::printf("%s\n", line.c_str());
  return 0;
}
