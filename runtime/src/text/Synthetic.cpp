//===- Synthetic.cpp - Tokenizers for synthetic checkpoints ---------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/text/Synthetic.h"

#include "runtime/src/text/Chat.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>
#include <vector>

namespace k3rt {

namespace {

// What the merges are learnt from: English, code and numbers, so that
// common words are single tokens in a quick try.
const char kCorpus[] =
    "The quick brown fox jumps over the lazy dog. Hello, world! How are you today? "
    "I am fine, thank you. What is the capital of France? The capital of France is Paris. "
    "Once upon a time there was a little model that wanted to talk. It learnt words, then "
    "sentences, and then it answered questions about the weather, the time and the world. "
    "You are a helpful assistant. Please answer the question in one sentence. "
    "The user asked about the meaning of life and the assistant said that it is to learn. "
    "def main(): return 0\nint main() { return 0; }\nfor (int i = 0; i < n; ++i) sum += i;\n"
    "1, 2, 3, 4, 5, 10, 20, 100, 2026. The year is 2026 and the day is Friday. "
    "This is a test of the tokenizer. These are the things that we have and they are good. "
    "Where were we? We were there with them when they went home in the evening.";

// Kimi K2's named special tokens, by offset from the first special id.
const std::pair<int, const char *> kSpecials[] = {
    {0, "[BOS]"},          {1, "[EOS]"},          {2, "<|im_end|>"},
    {3, "<|im_user|>"},    {4, "<|im_assistant|>"}, {6, "<|start_header_id|>"},
    {7, "<|end_header_id|>"}, {9, "[EOT]"},       {10, "<|im_system|>"},
    {17, "<|im_middle|>"}};

std::string base64(const std::string &s) {
  static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < s.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(s[i])) << 16 | uint32_t(uint8_t(s[i + 1])) << 8 | uint8_t(s[i + 2]);
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], t[v & 63]};
  }
  if (s.size() - i == 1) {
    uint32_t v = uint32_t(uint8_t(s[i])) << 16;
    out += {t[v >> 18], t[(v >> 12) & 63], '=', '='};
  } else if (s.size() - i == 2) {
    uint32_t v = uint32_t(uint8_t(s[i])) << 16 | uint32_t(uint8_t(s[i + 1])) << 8;
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], '='};
  }
  return out;
}

/// Words with their leading space, digits and other bytes alone: roughly
/// the pieces Kimi's pattern makes of ASCII.
std::vector<std::vector<std::string>> words() {
  std::vector<std::vector<std::string>> out;
  std::string s = kCorpus;
  for (size_t i = 0; i < s.size();) {
    size_t j = i + (s[i] == ' ' && i + 1 < s.size() && isalpha(uint8_t(s[i + 1])) ? 1 : 0);
    if (isalpha(uint8_t(s[j]))) {
      while (j < s.size() && isalpha(uint8_t(s[j])))
        ++j;
    } else {
      j = i + 1;
    }
    std::vector<std::string> w;
    for (size_t k = i; k < j; ++k)
      w.push_back(std::string(1, s[k]));
    out.push_back(std::move(w));
    i = j;
  }
  return out;
}

} // namespace

bool writeSyntheticTokenizer(const std::string &dir, int64_t vocab, int64_t bosId,
                             std::string &error) {
  int64_t base = vocab - (vocab >= 4096 ? 256 : 32);
  if (bosId >= 256 && bosId < vocab)
    base = bosId;
  if (base < 256 || vocab - base < 18) {
    error = "a vocabulary of " + std::to_string(vocab) +
            " ids has no room for a byte-level tokenizer (256 bytes and 18 special ids)";
    return false;
  }
  std::vector<std::string> tokens;
  std::set<std::string> seen;
  for (int c = 0; c < 256; ++c) {
    tokens.push_back(std::string(1, char(c)));
    seen.insert(tokens.back());
  }
  // Byte-pair merges by frequency (ties: the smaller pair), while a pair
  // occurs twice.
  auto corpus = words();
  while (int64_t(tokens.size()) < base) {
    std::map<std::pair<std::string, std::string>, int> counts;
    for (const auto &w : corpus)
      for (size_t k = 0; k + 1 < w.size(); ++k)
        ++counts[{w[k], w[k + 1]}];
    std::pair<std::string, std::string> best;
    int bestCount = 1;
    for (const auto &[pair, n] : counts)
      if (n > bestCount && !seen.count(pair.first + pair.second)) {
        best = pair;
        bestCount = n;
      }
    if (bestCount < 2)
      break;
    std::string merged = best.first + best.second;
    tokens.push_back(merged);
    seen.insert(merged);
    for (auto &w : corpus) {
      std::vector<std::string> next;
      for (size_t k = 0; k < w.size(); ++k) {
        if (k + 1 < w.size() && w[k] == best.first && w[k + 1] == best.second) {
          next.push_back(merged);
          ++k;
        } else {
          next.push_back(w[k]);
        }
      }
      w = std::move(next);
    }
  }
  // Filler up to the base count: lower-case strings, with and without a
  // leading space, shortest first (each is reachable from a shorter one).
  const std::string letters = "etaoinshrdlucmfwypvbgkjqxz";
  std::vector<std::string> frontier(letters.size());
  for (size_t k = 0; k < letters.size(); ++k)
    frontier[k] = std::string(1, letters[k]);
  while (int64_t(tokens.size()) < base) {
    std::vector<std::string> longer;
    for (const std::string &f : frontier)
      for (char c : letters) {
        longer.push_back(f + c);
        for (const std::string &t : {longer.back(), " " + longer.back()})
          if (int64_t(tokens.size()) < base && seen.insert(t).second)
            tokens.push_back(t);
      }
    frontier = std::move(longer);
  }

  std::ofstream ranks(dir + "/tiktoken.model", std::ios::binary | std::ios::trunc);
  for (size_t id = 0; id < tokens.size(); ++id)
    ranks << base64(tokens[id]) << ' ' << id << '\n';
  nlohmann::json added = nlohmann::json::object();
  for (const auto &[offset, text] : kSpecials)
    added[std::to_string(base + offset)] = {{"content", text},  {"lstrip", false},
                                            {"normalized", false}, {"rstrip", false},
                                            {"single_word", false}, {"special", true}};
  nlohmann::json cfg = {{"added_tokens_decoder", added},
                        {"bos_token", "[BOS]"},
                        {"eos_token", "<|im_end|>"},
                        {"num_reserved_special_tokens", vocab - base},
                        {"chat_template", kKimiChatTemplate},
                        {"tokenizer_class", "TikTokenTokenizer"},
                        {"model_max_length", 1048576}};
  std::ofstream config(dir + "/tokenizer_config.json", std::ios::binary | std::ios::trunc);
  config << cfg.dump(2) << '\n';
  if (!ranks || !config) {
    error = "cannot write the tokenizer files in " + dir;
    return false;
  }
  return true;
}

} // namespace k3rt
