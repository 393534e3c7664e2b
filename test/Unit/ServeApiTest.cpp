//===- ServeApiTest.cpp - k3-serve's request parsing and stop strings -----===//
//
// Part of k3. The HTTP side is tested with the openai client (test/Serve);
// here the pure parts, case by case.
//
//===----------------------------------------------------------------------===//

#include "tools/k3-serve/Api.h"

#include <gtest/gtest.h>

using namespace k3serve;

namespace {

const std::string kDir = std::string(K3_SOURCE_DIR) + "/test/Tokenizer/Inputs/tok";

struct Fixture {
  std::unique_ptr<k3rt::Tokenizer> tok;
  k3rt::ChatFormat format{k3rt::ChatFormat::Kimi, "You are a helpful assistant"};
  ServeLimits limits{"m", 64, 33024};
  Fixture() {
    k3rt_status_t s = k3rt::Tokenizer::load(kDir, tok);
    EXPECT_EQ(s, nullptr) << k3rt_status_message(s);
  }
  /// The error message of `body`, or "" when it parses.
  std::string error(const std::string &body, bool chat = false, int *status = nullptr) {
    Generation g;
    ApiError e;
    bool ok = parseGeneration(body, chat, *tok, &format, limits, g, e);
    if (status)
      *status = ok ? 200 : e.status;
    return ok ? "" : e.message;
  }
};

} // namespace

TEST(ServeApi, Completions) {
  Fixture f;
  Generation g;
  ApiError e;
  ASSERT_TRUE(parseGeneration(R"({"model": "m", "prompt": "Hello", "max_tokens": 5,
      "temperature": 0.5, "top_p": 0.9, "top_k": 7, "seed": 3, "stop": ["a", "bc"],
      "stream": true, "stream_options": {"include_usage": true}})",
                              false, *f.tok, &f.format, f.limits, g, e))
      << e.message;
  EXPECT_EQ(g.prompt, (std::vector<int32_t>{13225}));
  EXPECT_EQ(g.maxTokens, 5);
  EXPECT_FLOAT_EQ(g.sampling.temperature, 0.5f);
  EXPECT_EQ(g.sampling.topK, 7);
  EXPECT_EQ(g.sampling.seed, 3u);
  EXPECT_EQ(g.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_TRUE(g.stream && g.includeUsage);
  EXPECT_EQ(g.stopIds, (std::vector<int32_t>{*f.tok->special("<|im_end|>")}));
  // Token ids as the prompt; the default max_tokens is 16.
  ASSERT_TRUE(parseGeneration(R"({"prompt": [1, 2, 3]})", false, *f.tok, &f.format, f.limits, g, e));
  EXPECT_EQ(g.prompt, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(g.maxTokens, 16);
}

TEST(ServeApi, ChatRendersTheKimiFormat) {
  Fixture f;
  Generation g;
  ApiError e;
  ASSERT_TRUE(parseGeneration(R"({"messages": [{"role": "user", "content": "hi"}]})", true,
                              *f.tok, &f.format, f.limits, g, e))
      << e.message;
  std::string text;
  ASSERT_EQ(f.tok->decode(g.prompt, text), nullptr);
  EXPECT_EQ(text, "<|im_system|>system<|im_middle|>You are a helpful assistant<|im_end|>"
                  "<|im_user|>user<|im_middle|>hi<|im_end|><|im_assistant|>assistant<|im_middle|>");
  // The context (64) bounds the default max_tokens (256).
  EXPECT_EQ(g.maxTokens, 64 - int64_t(g.prompt.size()));
}

TEST(ServeApi, TheTemplatesDefaultSystemPrompt) {
  Fixture f;
  k3rt::ChatFormat format;
  ASSERT_EQ(k3rt::chatFormatOf(*f.tok, format), nullptr);
  EXPECT_EQ(format.defaultSystem, "You are a helpful assistant"); // the fixture's template
  std::string text;
  ASSERT_EQ(k3rt::renderChat(format, {{"system", "S"}, {"user", "u"}}, false, text), nullptr);
  EXPECT_EQ(text, "<|im_system|>system<|im_middle|>S<|im_end|><|im_user|>user<|im_middle|>u<|im_end|>");
}

TEST(ServeApi, RefusedWithTheField) {
  Fixture f;
  int status = 0;
  EXPECT_EQ(f.error("{", false, &status), "the body is not valid JSON");
  EXPECT_EQ(status, 400);
  EXPECT_EQ(f.error("[]"), "the body must be a JSON object");
  EXPECT_EQ(f.error(R"({"prompt": "x", "n": 2})"), "only n = 1 is supported");
  EXPECT_EQ(f.error(R"({"prompt": "x", "frobnicate": 1})"), "unsupported field 'frobnicate'");
  // What a client wrote stays on one line (found by fuzz-serve-request).
  EXPECT_EQ(f.error(R"({"prompt": "x", "a\nb\u0001": 1})"), "unsupported field 'a\\nb\\x01'");
  EXPECT_EQ(f.error(R"({"messages": [{"role": "x\ny", "content": "c"}]})", true),
            "unsupported message role 'x\\ny' (system, user or assistant)");
  EXPECT_EQ(f.error(R"({"prompt": "x", "messages": []})"), "unsupported field 'messages'");
  EXPECT_EQ(f.error(R"({"prompt": "x", "logprobs": 2})"), "'logprobs' is not supported");
  EXPECT_EQ(f.error(R"({"prompt": "x", "model": "other"})", false, &status),
            "the model 'other' does not exist (this server has 'm')");
  EXPECT_EQ(status, 404);
  EXPECT_EQ(f.error(R"({"prompt": ""})"), "the prompt is empty");
  EXPECT_EQ(f.error(R"({"prompt": ["a", "b"]})"),
            "'prompt' must be a string or an array of token ids (one prompt: n > 1 prompts are "
            "not supported)");
  EXPECT_EQ(f.error(R"({"prompt": [1, 40000]})"), "token ids must be in the vocabulary [0, 33024); one is 40000");
  EXPECT_EQ(f.error(R"({"prompt": "x", "max_tokens": 9223372036854775807})"),
            "the prompt (1 tokens) plus max_tokens (9223372036854775807) exceeds this model's "
            "context (64)");
  EXPECT_EQ(f.error(R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": 3}})", true),
            "only the text response_format is supported");
  EXPECT_EQ(f.error(R"({"messages": [{"role": "user", "content": [{"type": 5, "text": "x"}]}]})",
                    true),
            "only text content parts are supported ({\"type\": \"text\", \"text\": ...})");
  // Deep nesting is refused before anything recurses over it.
  EXPECT_EQ(f.error(R"({"prompt": "x", "stop": )" + std::string(100000, '[') +
                    std::string(100000, ']') + "}"),
            "the body nests deeper than 64 levels");
  EXPECT_EQ(f.error(R"({"prompt": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["})"),
            "");
  EXPECT_EQ(f.error(R"({"prompt": "x", "max_tokens": 0})"),
            "'max_tokens' must be a positive integer");
  EXPECT_EQ(f.error(R"({"prompt": "x", "max_tokens": 64})"),
            "the prompt (1 tokens) plus max_tokens (64) exceeds this model's context (64)");
  EXPECT_EQ(f.error(R"({"prompt": "x", "temperature": 3})"),
            "'temperature' must be a number in [0, 2]");
  EXPECT_EQ(f.error(R"({"prompt": "x", "stop": [""]})"),
            "'stop' must be a non-empty string or an array of them");
  EXPECT_EQ(f.error(R"({"prompt": "x", "stream_options": {"include_usage": true}})"),
            "'stream_options' needs 'stream': true");
  EXPECT_EQ(f.error(R"({"messages": [{"role": "tool", "content": "x"}]})", true),
            "unsupported message role 'tool' (system, user or assistant)");
  EXPECT_EQ(f.error(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", true),
            "only text content parts are supported ({\"type\": \"text\", \"text\": ...})");
  std::string big;
  for (int i = 0; i < 80; ++i)
    big += " 1,";
  EXPECT_EQ(f.error(R"({"prompt": ")" + big + R"("})"),
            "the prompt has 240 tokens; this model's context is 64");
}

TEST(ServeApi, StopStringsAreNeverSentInPart) {
  StopMatcher m({"STOP", "ab"});
  bool stopped = false;
  EXPECT_EQ(m.feed("hello S", stopped), "hello ");
  EXPECT_FALSE(stopped);
  EXPECT_EQ(m.feed("T", stopped), "");
  EXPECT_EQ(m.feed("x", stopped), "STx"); // not a stop after all
  EXPECT_EQ(m.feed("yyS", stopped), "yy");
  EXPECT_EQ(m.feed("TOP and more", stopped), "");
  EXPECT_TRUE(stopped);
  StopMatcher n({"ab"});
  EXPECT_EQ(n.feed("xa", stopped), "x");
  EXPECT_EQ(n.flush(), "a");
  StopMatcher none({});
  EXPECT_EQ(none.feed("abc", stopped), "abc");
}
