//===- TokenizerTest.cpp - The Kimi tokenizer against tiktoken and ICU ----===//
//
// Part of k3. Goldens: test/Tokenizer/Inputs/goldens.jsonl, made offline by
// OpenAI's tiktoken (npm) from a real rank file with Kimi's pattern
// (test/Tokenizer/README.md). ICU takes Kimi's pattern verbatim and agrees
// with tiktoken; PCRE2 needs kimiPatternForPcre2's rewrite, so the pieces of
// the rewrite are checked against ICU's here.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/text/Tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unicode/uregex.h>
#include <unicode/utext.h>

#include <fstream>
#include <string>
#include <vector>

using namespace k3rt;

namespace {

const std::string kDir = std::string(K3_SOURCE_DIR) + "/test/Tokenizer/Inputs";

struct Golden {
  std::string name, text;
  std::vector<int32_t> ids;
};

std::vector<Golden> goldens() {
  std::vector<Golden> all;
  std::ifstream f(kDir + "/goldens.jsonl");
  std::string line;
  while (std::getline(f, line)) {
    auto j = nlohmann::json::parse(line);
    all.push_back({j["name"], j["text"], j["ids"].get<std::vector<int32_t>>()});
  }
  return all;
}

std::unique_ptr<Tokenizer> load() {
  std::unique_ptr<Tokenizer> t;
  k3rt_status_t s = Tokenizer::load(kDir + "/tok", t);
  EXPECT_EQ(s, nullptr) << k3rt_status_message(s);
  return t;
}

/// The error line of loading `ranks` with an empty config.
std::string loadError(const std::string &ranks, const std::string &config = "{}") {
  std::unique_ptr<Tokenizer> t;
  k3rt_status_t s = Tokenizer::fromText(ranks, config, t);
  std::string m = s ? k3rt_status_message(s) : "";
  k3rt_status_free(s);
  return m;
}

/// A rank file of the 256 single bytes plus `extra` lines.
std::string byteRanks(const std::string &extra = "") {
  static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (int c = 0; c < 256; ++c)
    out += std::string() + b64[c >> 2] + b64[(c & 3) << 4] + "== " + std::to_string(c) + "\n";
  return out + extra;
}

std::vector<std::pair<size_t, size_t>> icuPieces(const std::string &text) {
  UErrorCode status = U_ZERO_ERROR;
  UParseError pe;
  URegularExpression *re = uregex_openC(kKimiPattern, 0, &pe, &status);
  EXPECT_TRUE(U_SUCCESS(status)) << u_errorName(status);
  UText *ut = utext_openUTF8(nullptr, text.data(), int64_t(text.size()), &status);
  uregex_setUText(re, ut, &status);
  std::vector<std::pair<size_t, size_t>> out;
  while (uregex_findNext(re, &status))
    out.emplace_back(size_t(uregex_start64(re, 0, &status)), size_t(uregex_end64(re, 0, &status)));
  EXPECT_TRUE(U_SUCCESS(status)) << u_errorName(status);
  uregex_close(re);
  utext_close(ut);
  return out;
}

} // namespace

TEST(Tokenizer, MatchesTiktokenGoldens) {
  auto tok = load();
  ASSERT_TRUE(tok);
  auto all = goldens();
  ASSERT_GE(all.size(), 40u);
  for (const Golden &g : all) {
    std::vector<int32_t> ids;
    k3rt_status_t s = tok->encode(g.text, /*specials=*/true, ids);
    ASSERT_EQ(s, nullptr) << g.name << ": " << k3rt_status_message(s);
    EXPECT_EQ(ids, g.ids) << g.name;
    std::string back;
    ASSERT_EQ(tok->decode(ids, back), nullptr);
    EXPECT_EQ(back, g.text) << g.name;
  }
}

TEST(Tokenizer, Pcre2RewriteSplitsAsIcuDoesOnTheVerbatimPattern) {
  auto tok = load();
  ASSERT_TRUE(tok);
  std::vector<std::string> texts = {
      "、世界", "你好，世界！Hello、世界。", "日本語のテキスト、カタカナ", "ǅungla ǲ",
      "e\xCC\x81t\xC3\xA9 \xCC\x81x", "ﬁne ＡＢＣ ａｂｃ", "٣٤٥ १२३ ⅷ", "\u00a0 \u3000x\u2028y"};
  for (const Golden &g : goldens())
    texts.push_back(g.text);
  for (const std::string &t : texts) {
    std::vector<std::pair<size_t, size_t>> ours;
    ASSERT_EQ(tok->pieces(t, ours), nullptr);
    EXPECT_EQ(ours, icuPieces(t)) << t.substr(0, 80);
  }
}

TEST(Tokenizer, RewriteOfThePattern) {
  std::string e;
  EXPECT_EQ(kimiPatternForPcre2("[\\p{L}&&[^\\p{Han}]]+|[\\p{Han}]", e),
            "(?:(?![\\p{sc:Han}])[\\p{L}])+|[\\p{sc:Han}]");
  EXPECT_EQ(e, "");
  EXPECT_EQ(kimiPatternForPcre2("[a&&b]", e), "");
  EXPECT_EQ(e, "class intersection at offset 0 is not of the form [X&&[^Y]]");
  EXPECT_EQ(kimiPatternForPcre2("x[ab", e), "");
  EXPECT_EQ(e, "unbalanced '[' at offset 1");
}

TEST(Tokenizer, SpecialTokensCanBePlainText) {
  auto tok = load();
  ASSERT_TRUE(tok);
  const int32_t user = *tok->special("<|im_user|>");
  std::vector<int32_t> on, off;
  ASSERT_EQ(tok->encode("a<|im_user|>b", true, on), nullptr);
  ASSERT_EQ(tok->encode("a<|im_user|>b", false, off), nullptr);
  EXPECT_EQ(on.size(), 3u);
  EXPECT_EQ(on[1], user);
  EXPECT_EQ(std::count(off.begin(), off.end(), user), 0);
  EXPECT_GT(off.size(), 3u);
  // Unnamed ids in the reserved range are <|reserved_token_{id}|>.
  const int32_t last = tok->size() - 1;
  EXPECT_EQ(tok->special("<|reserved_token_" + std::to_string(last) + "|>"), last);
}

TEST(Tokenizer, TextStreamNeverSplitsACharacter) {
  auto tok = load();
  ASSERT_TRUE(tok);
  // "€" is three bytes; feed its single-byte tokens one at a time.
  std::string euro = "\xE2\x82\xAC";
  TextStream ts(*tok);
  std::string got;
  for (char c : "x" + euro + "y") {
    // The id of the single byte `c` (every byte has one).
    int32_t id = -1;
    for (int32_t k = 0; k < tok->baseTokens() && id < 0; ++k)
      if (tok->piece(k) == std::string(1, c))
        id = k;
    ASSERT_GE(id, 0);
    std::string part = ts.push(id);
    size_t bad = 0;
    EXPECT_TRUE(validUtf8(part, bad)) << "a half character was emitted";
    got += part;
  }
  got += ts.flush();
  EXPECT_EQ(got, "x" + euro + "y");
  // A byte that can never start a character becomes U+FFFD; so does a
  // truncated sequence at the end.
  EXPECT_EQ(sanitizeUtf8("a\xFF" "b\xE2\x82"), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  EXPECT_EQ(sanitizeUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"); // surrogate
}

TEST(Tokenizer, LongRunsAreSplitAsKimiDoes) {
  // 25,000 code points of one class per run; the class change resets.
  std::string a(60000, 'a');
  auto runs = splitRuns(a, 25000);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0], std::make_pair(size_t(0), size_t(25000)));
  EXPECT_EQ(runs[2], std::make_pair(size_t(50000), size_t(60000)));
  EXPECT_EQ(splitRuns("ab  cd", 2).size(), 1u);
  // Code points, not bytes: 3-byte characters.
  std::string han;
  for (int i = 0; i < 5; ++i)
    han += "\xE4\xB8\x96";
  EXPECT_EQ(splitRuns(han, 2).size(), 3u);
}

TEST(Tokenizer, BadRankFilesAreOneLine) {
  EXPECT_EQ(loadError(""), "tiktoken.model has no tokens");
  EXPECT_EQ(loadError(byteRanks("YWI* 256\n")),
            "tiktoken.model line 257: bad base64 'YWI*'");
  EXPECT_EQ(loadError(byteRanks("YWI= 255\n")),
            "tiktoken.model: rank 255 appears twice (257 lines)");
  EXPECT_EQ(loadError(byteRanks("YWI= 300\n")),
            "tiktoken.model: rank 256 is missing (257 lines)");
  EXPECT_EQ(loadError(byteRanks("YQ== 256\n")),
            "tiktoken.model: rank 256 repeats the bytes of rank 97");
  EXPECT_EQ(loadError(byteRanks("YWI=\n")), "tiktoken.model line 257: expected 'base64 rank'");
  EXPECT_EQ(loadError(byteRanks("YWI= x1\n")), "tiktoken.model line 257: bad rank 'x1'");
  EXPECT_EQ(loadError("YQ== 0\n"),
            "tiktoken.model has no token for the byte 0x00 (byte-level BPE needs all 256)");
  EXPECT_EQ(loadError(byteRanks(), "[1]"), "tokenizer_config.json is not a JSON object");
  EXPECT_EQ(loadError(byteRanks(), R"({"added_tokens_decoder": {"12": {"content": "[X]"}}})"),
            "tokenizer_config.json: special token [X] has id 12, outside the special range "
            "[256, 512)");
  EXPECT_EQ(loadError(byteRanks(), R"({"num_reserved_special_tokens": 2,
      "added_tokens_decoder": {"256": {"content": "[X]"}, "257": {"content": "[X]"}}})"),
            "tokenizer_config.json: special token [X] is named twice");
  EXPECT_EQ(loadError(byteRanks("YWI= 256\n"), "{}"), "");
}

TEST(Tokenizer, BadInputIsAnError) {
  auto tok = load();
  ASSERT_TRUE(tok);
  std::vector<int32_t> ids;
  k3rt_status_t s = tok->encode("ok\xC3(", true, ids);
  ASSERT_NE(s, nullptr);
  EXPECT_STREQ(k3rt_status_message(s), "the text is not valid UTF-8 (byte 2)");
  k3rt_status_free(s);
  std::string out;
  s = tok->decode({1, tok->size()}, out);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(k3rt_status_code(s), K3RT_OUT_OF_RANGE);
  k3rt_status_free(s);
}
