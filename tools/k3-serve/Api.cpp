//===- Api.cpp - The OpenAI-compatible request bodies ---------------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "tools/k3-serve/Api.h"

#include "runtime/src/Status.h"

#include <algorithm>
#include <cmath>
#include <set>

using json = nlohmann::json;

namespace k3serve {

json ApiError::body() const {
  json e = {{"message", message}, {"type", type}, {"code", status}};
  e["param"] = param.empty() ? json(nullptr) : json(param);
  return {{"error", e}};
}

namespace {

bool bad(ApiError &error, const std::string &message, const std::string &param = "",
         int status = 400) {
  error.status = status;
  error.message = message;
  error.param = param;
  return false;
}

/// A JSON number that is an integer (1 and 1.0 both are).
bool asInteger(const json &v, int64_t &out) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
      return false;
    out = v.get<int64_t>();
    return true;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) {
      out = int64_t(d);
      return true;
    }
  }
  return false;
}

/// Message content: a string, or an array of {"type": "text", "text"} parts.
bool contentText(const json &c, std::string &out, ApiError &error) {
  if (c.is_string()) {
    out = c.get<std::string>();
    return true;
  }
  if (c.is_null()) {
    out.clear();
    return true;
  }
  if (!c.is_array())
    return bad(error, "'content' must be a string or an array of text parts", "messages");
  out.clear();
  for (const json &part : c) {
    if (!part.is_object() || !part.contains("type") || part["type"] != "text" ||
        !part.contains("text") || !part["text"].is_string())
      return bad(error, "only text content parts are supported ({\"type\": \"text\", \"text\": ...})",
                 "messages");
    out += part["text"].get<std::string>();
  }
  return true;
}

} // namespace

std::string dumpJson(const json &j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool parseBody(const std::string &body, json &out, ApiError &error) {
  // The nesting depth outside strings, by a scan: no recursion.
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        return bad(error, "the body nests deeper than " + std::to_string(kMaxJsonDepth) +
                              " levels");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  out = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded())
    return bad(error, "the body is not valid JSON");
  return true;
}

bool parseMessages(const json &list, std::vector<k3rt::ChatMessage> &out, ApiError &error) {
  if (!list.is_array() || list.empty())
    return bad(error, "'messages' must be a non-empty array", "messages");
  out.clear();
  for (const json &m : list) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return bad(error, "each message needs a 'role' string", "messages");
    k3rt::ChatMessage msg;
    msg.role = m["role"].get<std::string>();
    if (msg.role == "developer")
      msg.role = "system"; // OpenAI's newer name for it
    static const json null;
    if (!contentText(m.contains("content") ? m["content"] : null, msg.content, error))
      return false;
    out.push_back(std::move(msg));
  }
  return true;
}

bool parseGeneration(const std::string &body, bool chat, const k3rt::Tokenizer &tok,
                     const k3rt::ChatFormat *format, const ServeLimits &limits, Generation &g,
                     ApiError &error) {
  json j;
  if (!parseBody(body, j, error))
    return false;
  if (!j.is_object())
    return bad(error, "the body must be a JSON object");
  g = Generation();
  g.chat = chat;
  g.sampling.temperature = 1.0f; // OpenAI's default
  // Fields that change nothing here (OpenAI's bookkeeping) are accepted;
  // the rest must be known.
  static const std::set<std::string> common = {
      "model", "max_tokens", "temperature", "top_p", "top_k", "seed", "stop", "stream",
      "stream_options", "n", "logprobs", "presence_penalty", "frequency_penalty", "logit_bias",
      "user", "metadata", "store", "service_tier"};
  static const std::set<std::string> chatOnly = {"messages", "max_completion_tokens",
                                                 "top_logprobs", "tools", "tool_choice",
                                                 "parallel_tool_calls", "response_format"};
  static const std::set<std::string> completionOnly = {"prompt", "echo", "best_of", "suffix"};
  for (const auto &[key, value] : j.items())
    if (!common.count(key) && !(chat ? chatOnly : completionOnly).count(key))
      return bad(error, "unsupported field '" + k3rt::printable(key) + "'", key);

  if (j.contains("model") && !j["model"].is_null()) {
    if (!j["model"].is_string())
      return bad(error, "'model' must be a string", "model");
    if (j["model"].get<std::string>() != limits.model)
      return bad(error, "the model '" + k3rt::printable(j["model"].get<std::string>()) +
                            "' does not exist (this server has '" + limits.model + "')",
                 "model", 404);
  }
  auto flag = [&](const char *key, bool &out) {
    if (!j.contains(key) || j[key].is_null())
      return true;
    if (!j[key].is_boolean())
      return bad(error, std::string("'") + key + "' must be a boolean", key);
    out = j[key].get<bool>();
    return true;
  };
  if (!flag("stream", g.stream))
    return false;
  if (j.contains("stream_options") && !j["stream_options"].is_null()) {
    const json &so = j["stream_options"];
    if (!so.is_object())
      return bad(error, "'stream_options' must be an object", "stream_options");
    if (!g.stream)
      return bad(error, "'stream_options' needs 'stream': true", "stream_options");
    for (const auto &[key, value] : so.items()) {
      if (key != "include_usage")
        return bad(error, "unsupported field 'stream_options." + k3rt::printable(key) + "'",
                   "stream_options");
      if (!value.is_boolean())
        return bad(error, "'stream_options.include_usage' must be a boolean", "stream_options");
      g.includeUsage = value.get<bool>();
    }
  }
  // Refused rather than ignored: they would change the answer.
  int64_t n = 1;
  if (j.contains("n") && !j["n"].is_null() && (!asInteger(j["n"], n) || n != 1))
    return bad(error, "only n = 1 is supported", "n");
  if (j.contains("best_of") && !j["best_of"].is_null() &&
      (!asInteger(j["best_of"], n) || n != 1))
    return bad(error, "only best_of = 1 is supported", "best_of");
  bool on = false;
  if (!flag("echo", on))
    return false;
  if (on)
    return bad(error, "'echo' is not supported", "echo");
  if (j.contains("logprobs") && !j["logprobs"].is_null() &&
      !(j["logprobs"].is_boolean() && !j["logprobs"].get<bool>()))
    return bad(error, "'logprobs' is not supported", "logprobs");
  if (j.contains("top_logprobs") && !j["top_logprobs"].is_null())
    return bad(error, "'top_logprobs' is not supported", "top_logprobs");
  for (const char *key : {"presence_penalty", "frequency_penalty"})
    if (j.contains(key) && !j[key].is_null() &&
        !(j[key].is_number() && j[key].get<double>() == 0))
      return bad(error, std::string("'") + key + "' is not supported (only 0)", key);
  if (j.contains("logit_bias") && !j["logit_bias"].is_null() &&
      !(j["logit_bias"].is_object() && j["logit_bias"].empty()))
    return bad(error, "'logit_bias' is not supported", "logit_bias");
  if (j.contains("suffix") && !j["suffix"].is_null())
    return bad(error, "'suffix' is not supported", "suffix");
  if (j.contains("tools") && !j["tools"].is_null() &&
      !(j["tools"].is_array() && j["tools"].empty()))
    return bad(error, "'tools' are not supported", "tools");
  if (j.contains("tool_choice") && !j["tool_choice"].is_null() && j["tool_choice"] != "none")
    return bad(error, "'tool_choice' is not supported", "tool_choice");
  if (j.contains("response_format") && !j["response_format"].is_null() &&
      !(j["response_format"].is_object() && j["response_format"].contains("type") &&
        j["response_format"]["type"] == "text"))
    return bad(error, "only the text response_format is supported", "response_format");

  // Sampling.
  if (j.contains("temperature") && !j["temperature"].is_null()) {
    const json &t = j["temperature"];
    if (!t.is_number() || !(t.get<double>() >= 0 && t.get<double>() <= 2))
      return bad(error, "'temperature' must be a number in [0, 2]", "temperature");
    g.sampling.temperature = float(t.get<double>());
  }
  if (j.contains("top_p") && !j["top_p"].is_null()) {
    const json &t = j["top_p"];
    if (!t.is_number() || !(t.get<double>() > 0 && t.get<double>() <= 1))
      return bad(error, "'top_p' must be a number in (0, 1]", "top_p");
    g.sampling.topP = float(t.get<double>());
  }
  if (j.contains("top_k") && !j["top_k"].is_null()) {
    int64_t k = 0;
    if (!asInteger(j["top_k"], k) || k < -1 || k > (1 << 30))
      return bad(error, "'top_k' must be an integer >= -1 (-1 or 0: all)", "top_k");
    g.sampling.topK = int32_t(std::max<int64_t>(k, 0));
  }
  if (j.contains("seed") && !j["seed"].is_null()) {
    int64_t s = 0;
    if (!asInteger(j["seed"], s))
      return bad(error, "'seed' must be an integer", "seed");
    g.sampling.seed = uint64_t(s);
    g.seeded = true;
  }

  // Stop strings.
  if (j.contains("stop") && !j["stop"].is_null()) {
    const json &s = j["stop"];
    std::vector<const json *> items;
    if (s.is_array())
      for (const json &item : s)
        items.push_back(&item);
    else
      items.push_back(&s);
    if (items.size() > 16)
      return bad(error, "at most 16 stop strings", "stop");
    for (const json *itemPtr : items) {
      const json &item = *itemPtr;
      if (!item.is_string() || item.get<std::string>().empty())
        return bad(error, "'stop' must be a non-empty string or an array of them", "stop");
      g.stop.push_back(item.get<std::string>());
    }
  }

  // The prompt.
  std::string text;
  if (chat) {
    if (!format)
      return bad(error, "this model's tokenizer has no chat template k3 knows; use "
                        "/v1/completions");
    std::vector<k3rt::ChatMessage> messages;
    if (!j.contains("messages"))
      return bad(error, "'messages' is required", "messages");
    if (!parseMessages(j["messages"], messages, error))
      return false;
    if (k3rt_status_t s = k3rt::renderChat(*format, messages, true, text)) {
      std::string m = k3rt::takeMessage(s);
      return bad(error, m, "messages");
    }
    if (k3rt_status_t s = tok.encode(text, /*specials=*/true, g.prompt)) {
      std::string m = k3rt::takeMessage(s);
      return bad(error, m, "messages");
    }
    g.stopIds = k3rt::chatStopIds(tok);
    g.maxTokens = 256;
  } else {
    if (!j.contains("prompt"))
      return bad(error, "'prompt' is required", "prompt");
    const json &p = j["prompt"];
    // A string, [string], or token ids ([int] or [[int]] with one row).
    const json *one = &p;
    if (p.is_array() && p.size() == 1 && (p[0].is_string() || p[0].is_array()))
      one = &p[0];
    if (one->is_string()) {
      if (k3rt_status_t s = tok.encode(one->get<std::string>(), /*specials=*/true, g.prompt)) {
        std::string m = k3rt::takeMessage(s);
        return bad(error, m, "prompt");
      }
    } else if (one->is_array() && std::all_of(one->begin(), one->end(), [](const json &t) {
                 return t.is_number_integer();
               })) {
      for (const json &t : *one) {
        int64_t id = 0;
        if (!asInteger(t, id) || id < 0 || id >= limits.vocab)
          return bad(error, "token ids must be in the vocabulary [0, " + std::to_string(limits.vocab) +
                                "); one is " + (asInteger(t, id) ? std::to_string(id) : "not"),
                     "prompt");
        g.prompt.push_back(int32_t(id));
      }
    } else {
      return bad(error, "'prompt' must be a string or an array of token ids (one prompt: "
                        "n > 1 prompts are not supported)",
                 "prompt");
    }
    if (auto eos = tok.special(tok.eosToken()))
      g.stopIds.push_back(*eos);
  }
  if (g.prompt.empty())
    return bad(error, "the prompt is empty", chat ? "messages" : "prompt");

  // Lengths.
  for (const char *key : {"max_tokens", "max_completion_tokens"}) {
    if (!j.contains(key) || j[key].is_null())
      continue;
    int64_t m = 0;
    if (!asInteger(j[key], m) || m < 1)
      return bad(error, std::string("'") + key + "' must be a positive integer", key);
    g.maxTokens = m;
  }
  const int64_t promptLen = int64_t(g.prompt.size());
  if (limits.context > 0) {
    if (promptLen >= limits.context)
      return bad(error, "the prompt has " + std::to_string(promptLen) +
                            " tokens; this model's context is " + std::to_string(limits.context),
                 chat ? "messages" : "prompt");
    if (g.maxTokens > limits.context - promptLen) { // no overflow near 2^63
      bool explicitMax = j.contains("max_tokens") || j.contains("max_completion_tokens");
      if (explicitMax)
        return bad(error, "the prompt (" + std::to_string(promptLen) + " tokens) plus max_tokens (" +
                              std::to_string(g.maxTokens) + ") exceeds this model's context (" +
                              std::to_string(limits.context) + ")",
                   "max_tokens");
      g.maxTokens = limits.context - promptLen;
    }
  }
  return true;
}

std::string StopMatcher::feed(const std::string &text, bool &stopped) {
  stopped = false;
  pending += text;
  if (stops.empty()) {
    std::string out;
    out.swap(pending);
    return out;
  }
  size_t first = std::string::npos;
  for (const std::string &s : stops)
    first = std::min(first, pending.find(s));
  if (first != std::string::npos) {
    stopped = true;
    std::string out = pending.substr(0, first);
    pending.clear();
    return out;
  }
  // Hold the longest suffix that begins a stop string.
  size_t hold = 0;
  for (const std::string &s : stops)
    for (size_t k = std::min(s.size() - 1, pending.size()); k > hold; --k)
      if (pending.compare(pending.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
  std::string out = pending.substr(0, pending.size() - hold);
  pending.erase(0, pending.size() - hold);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(pending);
  return out;
}

} // namespace k3serve
