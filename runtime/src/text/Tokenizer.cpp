//===- Tokenizer.cpp - The Kimi tokenizer (tiktoken byte-level BPE) -------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/text/Tokenizer.h"

#include "runtime/src/Status.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <queue>
#include <sstream>
#include <tuple>

namespace k3rt {

using k3::model::kReplacement;
using k3::model::utf8Step;

const char *const kKimiPattern =
    R"([\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*)"
    R"([\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+)"
    R"([\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
    R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

namespace {

// Kimi's encode() cuts the text into 400,000-code-point chunks first, then
// each into runs (tokenization_kimi.py: TIKTOKEN_MAX_ENCODE_CHARS,
// MAX_NO_WHITESPACES_CHARS).
constexpr size_t kMaxChunk = 400000;
constexpr size_t kMaxRun = 25000;

k3rt_status_t invalid(std::string message) {
  return makeStatus(K3RT_INVALID_ARGUMENT, std::move(message));
}

/// Python's str.isspace: bidirectional class WS, B or S, or category Zs.
bool pyIsSpace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

} // namespace

uint32_t Tokenizer::prefixKey(std::string_view s, size_t i) {
  // The first two bytes (one when that is all): every special token's
  // bucket, so that a '<' or '[' in text is checked against a few of them.
  uint32_t key = uint8_t(s[i]);
  if (i + 1 < s.size())
    key = key << 8 | uint8_t(s[i + 1]) | 0x10000;
  return key;
}

std::vector<std::pair<size_t, size_t>> splitRuns(std::string_view text, size_t maxRun) {
  // tokenization_kimi.py's _split_whitespaces_or_nonwhitespaces, over code
  // points (the text is valid UTF-8 here).
  std::vector<std::pair<size_t, size_t>> runs;
  size_t start = 0, len = 0;
  bool space = false;
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    int n = utf8Step(text, i, &cp);
    bool now = n > 0 && pyIsSpace(cp);
    if (i == 0)
      space = now;
    if (space != now) {
      len = 1;
      space = now;
    } else if (++len > maxRun) {
      runs.emplace_back(start, i);
      start = i;
      len = 1;
    }
    i += n > 0 ? size_t(n) : 1;
  }
  runs.emplace_back(start, text.size());
  return runs;
}

std::string kimiPatternForPcre2(std::string_view p, std::string &error) {
  // Copies `p`, rewriting each top-level class that holds `&&`. Escapes are
  // copied as they are; nested classes only occur inside an intersection.
  std::string out;
  size_t i = 0;
  auto classEnd = [&](size_t open) -> size_t {
    // The index of the `]` closing the class opened at `open`.
    int depth = 0;
    for (size_t k = open; k < p.size(); ++k) {
      if (p[k] == '\\') {
        ++k;
        continue;
      }
      if (p[k] == '[')
        ++depth;
      else if (p[k] == ']' && --depth == 0)
        return k;
    }
    return std::string_view::npos;
  };
  while (i < p.size()) {
    if (p[i] == '\\' && i + 1 < p.size()) {
      out.append(p.substr(i, 2));
      i += 2;
      continue;
    }
    if (p[i] != '[') {
      out += p[i++];
      continue;
    }
    size_t end = classEnd(i);
    if (end == std::string_view::npos) {
      error = "unbalanced '[' at offset " + std::to_string(i);
      return {};
    }
    std::string_view body = p.substr(i + 1, end - i - 1);
    size_t amp = body.find("&&");
    if (amp == std::string_view::npos) {
      out.append(p.substr(i, end - i + 1));
    } else {
      std::string_view left = body.substr(0, amp), right = body.substr(amp + 2);
      if (left.empty() || left[0] == '^' || right.size() < 4 || right.substr(0, 2) != "[^" ||
          right.back() != ']' || right.find("&&") != std::string_view::npos) {
        error = "class intersection at offset " + std::to_string(i) +
                " is not of the form [X&&[^Y]]";
        return {};
      }
      std::string_view minus = right.substr(2, right.size() - 3);
      out += "(?:(?![";
      out.append(minus);
      out += "])[";
      out.append(left);
      out += "])";
    }
    i = end + 1;
  }
  // PCRE2's bare \p{Han} is Script_Extensions; tiktoken's is the Script.
  // Its \s (with UCP) also takes U+180E, which Unicode's White_Space (Rust
  // regex's \s, and ICU's) does not: spell White_Space out.
  static const char kWhiteSpace[] = "\\t\\n\\x0B\\f\\r\\x20\\x85\\xA0\\x{1680}\\x{2000}-\\x{200A}"
                                    "\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";
  std::string fixed;
  int depth = 0; // inside a character class when > 0
  for (size_t k = 0; k < out.size();) {
    if (out.compare(k, 7, "\\p{Han}") == 0) {
      fixed += "\\p{sc:Han}";
      k += 7;
    } else if (out.compare(k, 2, "\\s") == 0) {
      fixed += depth ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      k += 2;
    } else if (out.compare(k, 2, "\\S") == 0) {
      if (depth) {
        error = "\\S inside a character class at offset " + std::to_string(k);
        return {};
      }
      fixed += "[^" + std::string(kWhiteSpace) + "]";
      k += 2;
    } else if (out[k] == '\\' && k + 1 < out.size()) {
      fixed.append(out, k, 2);
      k += 2;
    } else {
      if (out[k] == '[')
        ++depth;
      else if (out[k] == ']' && depth > 0)
        --depth;
      fixed += out[k++];
    }
  }
  return fixed;
}

struct Tokenizer::Regex {
  pcre2_code *code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

namespace {

int base64Value(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

bool decodeBase64(std::string_view in, std::string &out) {
  out.clear();
  if (in.empty() || in.size() % 4 != 0)
    return false;
  size_t pad = 0;
  while (pad < 2 && in[in.size() - 1 - pad] == '=')
    ++pad;
  uint32_t acc = 0;
  for (size_t i = 0; i < in.size() - pad; ++i) {
    int v = base64Value(in[i]);
    if (v < 0)
      return false;
    acc = (acc << 6) | uint32_t(v);
    if (i % 4 == 3) {
      out += char(acc >> 16);
      out += char(acc >> 8);
      out += char(acc);
      acc = 0;
    }
  }
  size_t rest = (in.size() - pad) % 4;
  if (rest == 1)
    return false;
  if (rest == 2)
    out += char(acc >> 4);
  if (rest == 3) {
    out += char(acc >> 10);
    out += char(acc >> 2);
  }
  return true;
}

std::string readFile(const std::string &path, bool &ok) {
  std::ifstream f(path, std::ios::binary);
  ok = bool(f);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// A token given as a string or as an HF AddedToken object.
std::string tokenText(const nlohmann::json &j) {
  if (j.is_string())
    return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string())
    return j["content"].get<std::string>();
  return {};
}

} // namespace

k3rt_status_t Tokenizer::load(const std::string &dir, std::unique_ptr<Tokenizer> &out) {
  bool ok = false;
  std::string ranks = readFile(dir + "/tiktoken.model", ok);
  if (!ok)
    return makeStatus(K3RT_NOT_FOUND, "cannot read " + dir + "/tiktoken.model");
  std::string config = readFile(dir + "/tokenizer_config.json", ok);
  if (!ok)
    return makeStatus(K3RT_NOT_FOUND, "cannot read " + dir + "/tokenizer_config.json");
  if (k3rt_status_t s = fromText(ranks, config, out)) {
    std::string m = dir + ": " + k3rt_status_message(s);
    k3rt_status_code_t code = k3rt_status_code(s);
    k3rt_status_free(s);
    return makeStatus(code, m);
  }
  // Newer checkpoints keep the template in a file of its own.
  if (out->templateText.empty()) {
    std::string jinja = readFile(dir + "/chat_template.jinja", ok);
    if (ok)
      out->templateText = jinja;
  }
  return nullptr;
}

k3rt_status_t Tokenizer::fromText(std::string_view rankText, std::string_view configJson,
                                  std::unique_ptr<Tokenizer> &out) {
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  // tiktoken.model: `base64 rank` per line; ranks 0..n-1, each once.
  std::vector<std::pair<int64_t, std::string>> entries;
  size_t line = 0;
  for (size_t pos = 0; pos < rankText.size();) {
    size_t nl = rankText.find('\n', pos);
    std::string_view l = rankText.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
    pos = nl == std::string_view::npos ? rankText.size() : nl + 1;
    ++line;
    if (!l.empty() && l.back() == '\r')
      l.remove_suffix(1);
    if (l.empty())
      continue;
    size_t sp = l.find(' ');
    std::string where = "tiktoken.model line " + std::to_string(line);
    if (sp == std::string_view::npos || l.find(' ', sp + 1) != std::string_view::npos)
      return makeStatus(K3RT_DATA_LOSS, where + ": expected 'base64 rank'");
    std::string b;
    if (!decodeBase64(l.substr(0, sp), b))
      return makeStatus(K3RT_DATA_LOSS, where + ": bad base64 '" + std::string(l.substr(0, sp)) + "'");
    std::string_view r = l.substr(sp + 1);
    int64_t rank = 0;
    if (r.empty() || r.size() > 9 || !std::all_of(r.begin(), r.end(), ::isdigit))
      return makeStatus(K3RT_DATA_LOSS, where + ": bad rank '" + std::string(r) + "'");
    for (char c : r)
      rank = rank * 10 + (c - '0');
    entries.emplace_back(rank, std::move(b));
  }
  if (entries.empty())
    return makeStatus(K3RT_DATA_LOSS, "tiktoken.model has no tokens");
  std::sort(entries.begin(), entries.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].first != int64_t(i))
      return makeStatus(K3RT_DATA_LOSS,
                        "tiktoken.model: " +
                            (entries[i].first < int64_t(i)
                                 ? "rank " + std::to_string(entries[i].first) + " appears twice"
                                 : "rank " + std::to_string(i) + " is missing") +
                            " (" + std::to_string(entries.size()) + " lines)");
    t->bytes.push_back(std::move(entries[i].second));
  }
  for (size_t i = 0; i < t->bytes.size(); ++i)
    if (!t->ranks.emplace(t->bytes[i], int32_t(i)).second)
      return makeStatus(K3RT_DATA_LOSS, "tiktoken.model: rank " + std::to_string(i) +
                                            " repeats the bytes of rank " +
                                            std::to_string(t->ranks[t->bytes[i]]));
  for (int c = 0; c < 256; ++c)
    if (char b = char(c); !t->ranks.count(std::string_view(&b, 1))) {
      char hex[8];
      snprintf(hex, sizeof hex, "0x%02X", c);
      return makeStatus(K3RT_DATA_LOSS,
                        std::string("tiktoken.model has no token for the byte ") + hex +
                            " (byte-level BPE needs all 256)");
    }

  // tokenizer_config.json: the special tokens and the chat template.
  nlohmann::json cfg = nlohmann::json::parse(configJson, nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object())
    return invalid("tokenizer_config.json is not a JSON object");
  const int32_t base = t->baseTokens();
  int64_t reserved = 256; // tokenization_kimi.py's num_reserved_special_tokens
  if (cfg.contains("num_reserved_special_tokens")) {
    const auto &n = cfg["num_reserved_special_tokens"];
    if (!n.is_number_integer() || n.get<int64_t>() < 0 || n.get<int64_t>() > (1 << 20))
      return invalid("tokenizer_config.json: num_reserved_special_tokens must be an integer "
                     "in [0, 1048576]");
    reserved = n.get<int64_t>();
  }
  t->numSpecial = int32_t(reserved);
  t->specialText.resize(size_t(reserved));
  for (int64_t k = 0; k < reserved; ++k)
    t->specialText[size_t(k)] = "<|reserved_token_" + std::to_string(base + k) + "|>";
  if (cfg.contains("added_tokens_decoder")) {
    const auto &added = cfg["added_tokens_decoder"];
    if (!added.is_object())
      return invalid("tokenizer_config.json: added_tokens_decoder must be an object");
    for (const auto &[key, value] : added.items()) {
      char *end = nullptr;
      errno = 0;
      long long id = strtoll(key.c_str(), &end, 10);
      std::string text = tokenText(value);
      if (key.empty() || errno || *end || text.empty())
        return invalid("tokenizer_config.json: added_tokens_decoder entry '" + printable(key) +
                       "' needs a numeric id and a content string");
      if (id < base || id >= base + reserved)
        return invalid("tokenizer_config.json: special token " + printable(text) + " has id " +
                       printable(key) +
                       ", outside the special range [" + std::to_string(base) + ", " +
                       std::to_string(base + reserved) + ")");
      t->specialText[size_t(id - base)] = text;
    }
  }
  for (int32_t k = 0; k < t->numSpecial; ++k)
    t->specialsByPrefix[prefixKey(t->specialText[size_t(k)], 0)].push_back(k);
  for (int32_t k = 0; k < t->numSpecial; ++k)
    if (!t->specialIds.emplace(t->specialText[size_t(k)], base + k).second)
      return invalid("tokenizer_config.json: special token " + printable(t->specialText[size_t(k)]) +
                     " is named twice");
  if (cfg.contains("bos_token"))
    t->bos = tokenText(cfg["bos_token"]);
  if (cfg.contains("eos_token"))
    t->eos = tokenText(cfg["eos_token"]);
  if (cfg.contains("chat_template")) {
    const auto &ct = cfg["chat_template"];
    if (ct.is_string()) {
      t->templateText = ct.get<std::string>();
    } else if (ct.is_array()) {
      // HF's list form: [{"name": ..., "template": ...}], "default" first.
      for (const auto &e : ct)
        if (e.is_object() && e.contains("template") && e["template"].is_string() &&
            (t->templateText.empty() || e.value("name", "") == "default"))
          t->templateText = e["template"].get<std::string>();
    }
  }

  std::string error;
  std::string pattern = kimiPatternForPcre2(kKimiPattern, error);
  int code = 0;
  PCRE2_SIZE offset = 0;
  t->regex = std::make_unique<Regex>();
  t->regex->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                 PCRE2_UTF | PCRE2_UCP, &code, &offset, nullptr);
  if (!t->regex->code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(code, msg, sizeof msg);
    return makeStatus(K3RT_INTERNAL, "the pre-tokenizer pattern does not compile at offset " +
                                         std::to_string(offset) + ": " +
                                         reinterpret_cast<char *>(msg));
  }
  // JIT is an optimisation: the interpreter gives the same matches.
  (void)pcre2_jit_compile(t->regex->code, PCRE2_JIT_COMPLETE);
  out = std::move(t);
  return nullptr;
}

std::optional<int32_t> Tokenizer::special(std::string_view text) const {
  auto it = specialIds.find(std::string(text));
  if (it == specialIds.end())
    return std::nullopt;
  return it->second;
}

std::string_view Tokenizer::piece(int32_t id) const {
  if (id >= 0 && id < baseTokens())
    return bytes[size_t(id)];
  if (id >= baseTokens() && id < size())
    return specialText[size_t(id - baseTokens())];
  return {};
}

void Tokenizer::bytePairMerge(std::string_view piece, std::vector<int32_t> &ids) const {
  auto rankOf = [&](size_t b, size_t e) -> int32_t {
    auto it = ranks.find(piece.substr(b, e - b));
    return it == ranks.end() ? INT32_MAX : it->second;
  };
  const size_t n = piece.size();
  if (int32_t r = rankOf(0, n); r != INT32_MAX) {
    ids.push_back(r);
    return;
  }
  // Parts are byte ranges [i, end[i]); `next`/`prev` link the live ones.
  // The lowest-ranked adjacent pair merges first, leftmost on ties, as in
  // tiktoken; a heap with stale entries skipped keeps long pieces (runs up
  // to 25,000 characters) O(n log n) where tiktoken's scan is O(n^2).
  std::vector<size_t> end(n), prev(n);
  for (size_t i = 0; i < n; ++i) {
    end[i] = i + 1;
    prev[i] = i - 1; // wraps for 0: never read
  }
  using Entry = std::tuple<int32_t, size_t, size_t>; // rank, start, end of the pair
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  for (size_t i = 0; i + 1 < n; ++i)
    if (int32_t r = rankOf(i, i + 2); r != INT32_MAX)
      heap.emplace(r, i, i + 2);
  std::vector<bool> live(n, true);
  while (!heap.empty()) {
    auto [r, i, pairEnd] = heap.top();
    heap.pop();
    if (!live[i] || end[i] >= n || end[end[i]] != pairEnd)
      continue;
    size_t j = end[i];
    live[j] = false;
    end[i] = pairEnd;
    if (pairEnd < n)
      prev[pairEnd] = i;
    if (i > 0) {
      size_t p = prev[i];
      if (int32_t q = rankOf(p, pairEnd); q != INT32_MAX)
        heap.emplace(q, p, pairEnd);
    }
    if (pairEnd < n)
      if (int32_t q = rankOf(i, end[pairEnd]); q != INT32_MAX)
        heap.emplace(q, i, end[pairEnd]);
  }
  for (size_t i = 0; i < n; i = end[i])
    ids.push_back(rankOf(i, end[i]));
}

/// What one thread needs to match: match data and a JIT stack. The letter
/// alternatives backtrack per character: a 25,000-character run needs about
/// 2 MiB of JIT stack (PCRE2's default is 32 KiB); mapped lazily. One per
/// encode call, so concurrent encodes never share one.
struct Tokenizer::MatchState {
  explicit MatchState(const pcre2_code *code)
      : md(pcre2_match_data_create_from_pattern(code, nullptr)),
        mc(pcre2_match_context_create(nullptr)),
        stack(pcre2_jit_stack_create(64 << 10, 32 << 20, nullptr)) {
    pcre2_jit_stack_assign(mc, nullptr, stack);
  }
  ~MatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(mc);
    pcre2_match_data_free(md);
  }
  pcre2_match_data *md;
  pcre2_match_context *mc;
  pcre2_jit_stack *stack;
};

template <typename F>
k3rt_status_t Tokenizer::split(std::string_view text, MatchState &st, F &&each) const {
  size_t at = 0;
  while (at < text.size()) {
    int rc = pcre2_match(regex->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), at,
                         PCRE2_NO_UTF_CHECK, st.md, st.mc);
    if (rc == PCRE2_ERROR_NOMATCH)
      break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      return makeStatus(K3RT_INTERNAL, std::string("pre-tokenizer match failed: ") +
                                           reinterpret_cast<char *>(msg));
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(st.md);
    size_t b = ov[0], e = ov[1];
    if (e == b) { // cannot happen with Kimi's pattern; step one character
      int n = utf8Step(text, b);
      at = b + size_t(n > 0 ? n : 1);
      continue;
    }
    each(b, e);
    at = e;
  }
  return nullptr;
}

k3rt_status_t Tokenizer::encodeOrdinary(std::string_view text, MatchState &st,
                                        std::vector<int32_t> &ids) const {
  return split(text, st, [&](size_t b, size_t e) { bytePairMerge(text.substr(b, e - b), ids); });
}

k3rt_status_t Tokenizer::pieces(std::string_view text,
                                std::vector<std::pair<size_t, size_t>> &out) const {
  size_t bad = 0;
  if (!validUtf8(text, bad))
    return invalid("the text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  out.clear();
  MatchState st(regex->code);
  return split(text, st, [&](size_t b, size_t e) { out.emplace_back(b, e); });
}

k3rt_status_t Tokenizer::encode(std::string_view text, bool specials,
                                std::vector<int32_t> &ids) const {
  size_t bad = 0;
  if (!validUtf8(text, bad))
    return invalid("the text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  MatchState st(regex->code);
  // 400,000-code-point chunks, then runs of one whitespace class.
  size_t chunkStart = 0;
  while (chunkStart < text.size() || (text.empty() && chunkStart == 0)) {
    size_t chunkEnd = chunkStart, count = 0;
    while (chunkEnd < text.size() && count < kMaxChunk) {
      chunkEnd += size_t(utf8Step(text, chunkEnd));
      ++count;
    }
    std::string_view chunk = text.substr(chunkStart, chunkEnd - chunkStart);
    for (auto [b, e] : splitRuns(chunk, kMaxRun)) {
      std::string_view run = chunk.substr(b, e - b);
      // Special-token strings split the run (the longest one at the
      // leftmost position); the text between is ordinary.
      size_t from = 0;
      for (size_t i = 0; specials && i < run.size(); ++i) {
        // Two-byte prefixes, and the one-byte specials (if any) on their own.
        size_t best = 0;
        int32_t bestId = -1;
        for (uint32_t key : {prefixKey(run, i), uint32_t(uint8_t(run[i]))}) {
          auto bucket = specialsByPrefix.find(key);
          if (bucket == specialsByPrefix.end())
            continue;
          for (int32_t k : bucket->second) {
            const std::string &s = specialText[size_t(k)];
            if (s.size() > best && run.compare(i, s.size(), s) == 0) {
              best = s.size();
              bestId = baseTokens() + k;
            }
          }
        }
        if (bestId < 0)
          continue;
        if (k3rt_status_t s = encodeOrdinary(run.substr(from, i - from), st, ids))
          return s;
        ids.push_back(bestId);
        from = i + best;
        i = from - 1;
      }
      if (k3rt_status_t s = encodeOrdinary(run.substr(from), st, ids))
        return s;
    }
    if (text.empty())
      break;
    chunkStart = chunkEnd;
  }
  return nullptr;
}

k3rt_status_t Tokenizer::decode(const std::vector<int32_t> &ids, std::string &out) const {
  out.clear();
  for (int32_t id : ids) {
    if (id < 0 || id >= size())
      return makeStatus(K3RT_OUT_OF_RANGE, "token id " + std::to_string(id) +
                                               " is outside the tokenizer's " +
                                               std::to_string(size()) + " ids");
    out.append(piece(id));
  }
  return nullptr;
}

std::string TextStream::push(int32_t id) {
  if (skip && id >= tok.baseTokens())
    return {};
  held.append(tok.piece(id));
  std::string out;
  size_t i = 0;
  while (i < held.size()) {
    int n = utf8Step(held, i);
    if (n == 0)
      break; // may still complete
    if (n > 0) {
      out.append(held, i, size_t(n));
      i += size_t(n);
    } else {
      out += kReplacement;
      i += size_t(-n);
    }
  }
  held.erase(0, i);
  return out;
}

std::string TextStream::flush() {
  std::string out = held.empty() ? std::string() : sanitizeUtf8(held);
  held.clear();
  return out;
}

} // namespace k3rt
