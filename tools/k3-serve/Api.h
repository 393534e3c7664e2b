//===- Api.h - The OpenAI-compatible request bodies -------------*- C++ -*-===//
//
// Part of k3. Parses /v1/completions and /v1/chat/completions bodies into a
// generation (prompt ids, limits, sampling, stop strings, streaming), or an
// OpenAI-shaped error. Pure: no HTTP, no engine (fuzzable on its own).
// What is refused rather than ignored: n > 1, echo, best_of > 1, logprobs,
// penalties, logit_bias, tools, non-text response formats, and any field
// this server does not know (it might change the meaning of the request).
//
//===----------------------------------------------------------------------===//

#ifndef TOOLS_K3_SERVE_API_H
#define TOOLS_K3_SERVE_API_H

#include "runtime/src/Sampling.h"
#include "runtime/src/text/Chat.h"
#include "runtime/src/text/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace k3serve {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param; ///< the offending field, when there is one
  nlohmann::json body() const;
};

struct ServeLimits {
  std::string model;       ///< the served model's name
  int64_t context = 0;     ///< prompt + max_tokens at most (0: unbounded)
  int64_t vocab = 0;       ///< the model's ids
};

struct Generation {
  bool chat = false;
  bool stream = false;
  bool includeUsage = false;
  std::vector<int32_t> prompt;
  int64_t maxTokens = 16;
  k3rt::SamplingOptions sampling; ///< OpenAI's defaults: temperature 1
  bool seeded = false;            ///< the request gave a seed
  std::vector<std::string> stop;
  std::vector<int32_t> stopIds; ///< end-of-turn / eos ids
};

/// Bodies nested deeper than this are refused before parsing: nlohmann's
/// dump and copies recurse, and a hostile body must not exhaust a stack.
constexpr int kMaxJsonDepth = 64;

/// Parses `body` as JSON (a 400 for bad JSON or nesting past kMaxJsonDepth).
bool parseBody(const std::string &body, nlohmann::json &out, ApiError &error);

/// JSON text that never throws: invalid UTF-8 becomes U+FFFD.
std::string dumpJson(const nlohmann::json &j);

/// Parses a request body. `chat` selects /v1/chat/completions; `format` is
/// the tokenizer's chat format (null when it has none: chat is then a 400).
bool parseGeneration(const std::string &body, bool chat, const k3rt::Tokenizer &tokenizer,
                     const k3rt::ChatFormat *format, const ServeLimits &limits,
                     Generation &out, ApiError &error);

/// Chat messages: role (`developer` is `system`) and content (a string or
/// text parts).
bool parseMessages(const nlohmann::json &messages, std::vector<k3rt::ChatMessage> &out,
                   ApiError &error);

/// Holds back text that may be the start of a stop string, so that a stop
/// string is never streamed in part (it may span tokens).
class StopMatcher {
public:
  explicit StopMatcher(std::vector<std::string> stops) : stops(std::move(stops)) {}
  /// Adds `text`; returns what may be sent now. `stopped` once a stop string
  /// is complete (the text before it is returned, the rest dropped).
  std::string feed(const std::string &text, bool &stopped);
  /// The held-back text, at the end of generation.
  std::string flush();

private:
  std::vector<std::string> stops;
  std::string pending;
};

} // namespace k3serve

#endif // TOOLS_K3_SERVE_API_H
