//===- k3-serve.cpp - An OpenAI-compatible server over the engine ---------===//
//
// Part of k3. MLIR-free.
//
//   k3-serve MODEL.k3b [--tokenizer=DIR] [--host=127.0.0.1] [--port=8000]
//            [--threads=N] [--max-batch=N] [--pool-kib=N] [--model-name=NAME] ...
//
// HTTP (Debian's cpp-httplib) on a pool of HTTP threads that parse, enqueue
// and stream; one engine thread (Scheduler.h) owns the engine. Routes:
// GET /health (503 until the model is loaded), /v1/models, /metrics
// (Prometheus); POST /v1/completions, /v1/chat/completions (SSE streaming
// or not), /tokenize, /detokenize. Errors are OpenAI-shaped JSON.
// ../../../shared/spec/SERVING.md has what peers do.
//
//===----------------------------------------------------------------------===//

#include "runtime/include/k3rt/k3rt.h"
#include "runtime/src/Bundle.h"
#include "runtime/src/CpuExecutable.h"
#include "runtime/src/Engine.h"
#include "runtime/src/Status.h"
#include "runtime/src/text/Chat.h"
#include "runtime/src/text/Tokenizer.h"
#include "tools/k3-run/Ranks.h"
#include "tools/k3-serve/Api.h"
#include "tools/k3-serve/Follow.h"
#include "tools/k3-serve/Scheduler.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>

using json = nlohmann::json;
using namespace k3serve;

namespace {

const char kUsage[] =
    "usage: k3-serve MODEL.k3b [flags]\n"
    "An OpenAI-compatible HTTP server: /v1/completions, /v1/chat/completions (streaming\n"
    "or not), /v1/models, /tokenize, /detokenize, /health, /metrics.\n"
    "\n"
    "Model:\n"
    "  --tokenizer=DIR        tiktoken.model + tokenizer_config.json (default: the binary's\n"
    "                         directory)\n"
    "  --model-name=NAME      the name clients use (default: the binary's file name)\n"
    "  --context=N            prompt + max_tokens at most (default: the config's\n"
    "                         max_position_embeddings / model_max_length, else the pool)\n"
    "  --synthetic-weights=S  fill an --omit-weights binary with seed S's weights\n"
    "HTTP:\n"
    "  --host=ADDR            default 127.0.0.1\n"
    "  --port=N               default 8000; 0 picks a free port (printed on stderr)\n"
    "  --http-threads=N       connections served at once (default 64)\n"
    "Engine:\n"
    "  --threads=N            CPU kernel threads (default: the cores this process may use)\n"
    "  --max-batch=N          requests in flight (default 8)\n"
    "  --decode-groups=N      a decode step's requests as N calls at once, a thread each\n"
    "                         (default 0: one per thread, 2+ requests each; 1: one call)\n"
    "  --pool-kib=N           cache pool size (default 262144)\n"
    "  --block-tokens=N       prefix-cache block (default 512)\n"
    "  --prefill-chunk=N      prompt tokens per step (default 2048)\n"
    "  --speculate=K          n-gram draft tokens per greedy step (default 0)\n"
    "  --no-prefix-cache      no prefix reuse\n"
    "Ranks (a binary compiled with k3-compile --tp/--ep, one file per rank):\n"
    "  mpirun -np N k3-serve X.k3b ...  rank 0 serves HTTP; the others follow its engine\n"
    "  --collective-timeout=S a collective that takes longer ends every rank (default 60;\n"
    "                         an idle rank 0 sends a heartbeat every second)\n"
    "  --help                 this text\n";

/// This process's rank under mpirun (-1 alone): prefixed to its errors.
int g_rank = -1;

/// Prints the process's error line: the first only. Every error ends the
/// process, and under mpirun a failure and the signal that mpirun then
/// sends (another rank has exited) race to report from two threads; the
/// second caller waits until the first line is out and prints nothing.
std::mutex g_failMutex;
bool g_failed = false;
int fail(const std::string &message) {
  std::lock_guard<std::mutex> lock(g_failMutex);
  if (g_failed)
    return 1;
  g_failed = true;
  if (g_rank >= 0)
    std::fprintf(stderr, "k3-serve: error: rank %d: %s\n", g_rank, message.c_str());
  else
    std::fprintf(stderr, "k3-serve: error: %s\n", message.c_str());
  std::fflush(stderr);
  return 1;
}

bool parseCount(const std::string &s, long long lo, long long hi, long long &out) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos)
    return false;
  out = std::strtoll(s.c_str(), nullptr, 10);
  return out >= lo && out <= hi;
}

struct Options {
  std::string path, tokenizer, modelName, host = "127.0.0.1";
  long long port = 8000, httpThreads = 64, threads = 0, context = 0;
  double collectiveTimeout = 60;
  std::optional<uint64_t> syntheticWeights;
  k3rt::EngineOptions engine;
};

bool parse(int argc, char **argv, Options &o, std::string &error) {
  o.engine.maxBatch = 8;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    size_t eq = a.find('=');
    std::string key = a.substr(0, eq), value = eq == std::string::npos ? "" : a.substr(eq + 1);
    long long n = 0;
    auto count = [&](long long lo, long long hi, auto &out) {
      if (!parseCount(value, lo, hi, n)) {
        error = key + ": '" + value + "' is not a count in [" + std::to_string(lo) + ", " +
                std::to_string(hi) + "]";
        return false;
      }
      out = n;
      return true;
    };
    long long v = 0;
    if (a == "--help" || a == "-h") {
      error = "help";
      return false;
    } else if (a == "--no-prefix-cache") {
      o.engine.prefixCache = false;
    } else if (a.rfind("--", 0) == 0 && eq == std::string::npos) {
      error = "unknown flag '" + a + "' or it needs =VALUE (see --help)";
      return false;
    } else if (key == "--tokenizer") {
      o.tokenizer = value;
    } else if (key == "--model-name") {
      o.modelName = value;
    } else if (key == "--host") {
      o.host = value;
    } else if (key == "--port") {
      if (!count(0, 65535, o.port))
        return false;
    } else if (key == "--http-threads") {
      if (!count(1, 4096, o.httpThreads))
        return false;
    } else if (key == "--threads") {
      if (!count(1, 4096, o.threads))
        return false;
    } else if (key == "--context") {
      if (!count(1, 1ll << 40, o.context))
        return false;
    } else if (key == "--synthetic-weights") {
      if (!count(0, INT64_MAX, v))
        return false;
      o.syntheticWeights = uint64_t(v);
    } else if (key == "--max-batch") {
      if (!count(1, 1 << 16, o.engine.maxBatch))
        return false;
    } else if (key == "--pool-kib") {
      if (!count(1, 1ll << 34, v))
        return false;
      o.engine.poolBytes = v << 10;
    } else if (key == "--block-tokens") {
      if (!count(1, 1 << 20, o.engine.blockTokens))
        return false;
    } else if (key == "--prefill-chunk") {
      if (!count(1, 1 << 20, o.engine.prefillChunk))
        return false;
    } else if (key == "--collective-timeout") {
      char *end = nullptr;
      double f = value.empty() ? 0 : std::strtod(value.c_str(), &end);
      if (value.empty() || *end || !(f > 0 && f <= 86400)) {
        error = "--collective-timeout: '" + value + "' is not a number of seconds in (0, 86400]";
        return false;
      }
      o.collectiveTimeout = f;
    } else if (key == "--speculate") {
      if (!count(0, 64, o.engine.speculate))
        return false;
    } else if (key == "--decode-groups") {
      if (!count(0, 4096, o.engine.decodeGroups))
        return false;
    } else if (a.rfind("-", 0) == 0) {
      error = "unknown flag '" + key + "' (see --help)";
      return false;
    } else if (o.path.empty()) {
      o.path = a;
    } else {
      error = "more than one binary ('" + o.path + "', '" + a + "')";
      return false;
    }
  }
  if (o.path.empty()) {
    error = "no binary (usage: k3-serve MODEL.k3b [--tokenizer=DIR] [--port=8000]; see --help)";
    return false;
  }
  error = k3rt::alignPrefillChunk(o.engine);
  if (!error.empty())
    return false;
  size_t slash = o.path.rfind('/');
  if (o.tokenizer.empty())
    o.tokenizer = slash == std::string::npos ? "." : o.path.substr(0, slash);
  if (o.modelName.empty()) {
    o.modelName = slash == std::string::npos ? o.path : o.path.substr(slash + 1);
    if (o.modelName.size() > 4 && o.modelName.compare(o.modelName.size() - 4, 4, ".k3b") == 0)
      o.modelName.resize(o.modelName.size() - 4);
  }
  // It goes into every response.
  size_t bad = 0;
  if (!k3rt::validUtf8(o.modelName, bad)) {
    error = "the model name '" + k3rt::sanitizeUtf8(o.modelName) +
            "' is not valid UTF-8 (byte " + std::to_string(bad) + "); give --model-name";
    return false;
  }
  return true;
}

/// The socket of the connection from `addr`:`port` (this process holds it
/// while its handler runs): httplib 0.11 does not tell a handler whether its
/// client is still there, so we look at the socket ourselves.
int socketOf(const std::string &addr, int port) {
  DIR *d = opendir("/proc/self/fd");
  if (!d)
    return -1;
  int found = -1;
  while (dirent *e = readdir(d)) {
    char *end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (*end || end == e->d_name)
      continue;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getpeername(int(fd), reinterpret_cast<sockaddr *>(&ss), &len) != 0)
      continue;
    char text[INET6_ADDRSTRLEN] = {};
    int p = -1;
    if (ss.ss_family == AF_INET) {
      auto *in = reinterpret_cast<sockaddr_in *>(&ss);
      inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
      p = ntohs(in->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      auto *in = reinterpret_cast<sockaddr_in6 *>(&ss);
      inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof text);
      p = ntohs(in->sin6_port);
    }
    if (p == port && addr == text) {
      found = int(fd);
      break;
    }
  }
  closedir(d);
  return found;
}

/// Whether the peer of `fd` has closed its side (or the socket failed).
bool peerGone(int fd) {
  if (fd < 0)
    return false;
  pollfd p{fd, POLLRDHUP, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

struct Server {
  Options opt;
  std::unique_ptr<k3rt::Tokenizer> tok;
  std::optional<k3rt::ChatFormat> format;
  std::string formatError;
  ServeLimits limits;
  Metrics metrics;
  std::unique_ptr<Scheduler> scheduler;
  std::atomic<bool> ready{false};
  std::atomic<uint64_t> ids{0};
};

void sendError(httplib::Response &res, const ApiError &e) {
  res.status = e.status;
  res.set_content(dumpJson(e.body()), "application/json");
}

void sendError(httplib::Response &res, int status, const std::string &message,
               const std::string &type = "invalid_request_error") {
  ApiError e;
  e.status = status;
  e.message = message;
  e.type = type;
  sendError(res, e);
}

/// The context limit, or null when only the pool bounds it.
json contextJson(const Server &s) {
  return s.limits.context ? json(s.limits.context) : json(nullptr);
}

bool notReady(Server &s, httplib::Response &res) {
  if (s.ready)
    return false;
  sendError(res, 503, "the model is loading", "unavailable_error");
  return true;
}

/// Turns a job's tokens into text: special tokens add none, stop strings
/// end it (never streamed in part), an end-of-turn id ends it.
struct Reader {
  Reader(const k3rt::Tokenizer &tok, const Generation &g)
      : stream(tok), matcher(g.stop), stopIds(g.stopIds), tok(tok) {}
  k3rt::TextStream stream;
  StopMatcher matcher;
  std::vector<int32_t> stopIds;
  const k3rt::Tokenizer &tok;
  size_t consumed = 0;      ///< job tokens read
  bool stopped = false;     ///< a stop string or stop id ended it
  /// The text of tokens[consumed..upTo); sets `stopped`. At a stop id the text
  /// held back (a possible stop string's start, a character's first bytes)
  /// is released, since nothing more will come.
  std::string read(const std::vector<int32_t> &tokens, size_t upTo = SIZE_MAX) {
    std::string text;
    while (consumed < std::min(tokens.size(), upTo) && !stopped) {
      int32_t t = tokens[consumed++];
      if (std::find(stopIds.begin(), stopIds.end(), t) != stopIds.end()) {
        text += tail();
        stopped = true;
        break;
      }
      if (t < tok.size())
        text += matcher.feed(stream.push(t), stopped);
    }
    return text;
  }
  /// At the end of generation (max_tokens): what is still held back.
  std::string finish() { return stopped ? std::string() : tail(); }

private:
  std::string tail() {
    bool s = false;
    std::string text = matcher.feed(stream.flush(), s);
    stopped = s;
    return s ? text : text + matcher.flush();
  }
};

json usage(const Generation &g, size_t completion, int64_t cached) {
  json u = {{"prompt_tokens", g.prompt.size()},
            {"completion_tokens", completion},
            {"total_tokens", g.prompt.size() + completion}};
  u["prompt_tokens_details"] = {{"cached_tokens", cached}};
  return u;
}

void handleGeneration(Server &s, const httplib::Request &req, httplib::Response &res, bool chat) {
  if (notReady(s, res))
    return;
  Generation g;
  ApiError err;
  if (!parseGeneration(req.body, chat, *s.tok, s.format ? &*s.format : nullptr, s.limits, g, err))
    return sendError(res, err);
  auto job = std::make_shared<Job>();
  const uint64_t n = ++s.ids;
  char idText[40];
  snprintf(idText, sizeof idText, "%s-%016llx", chat ? "chatcmpl" : "cmpl", (unsigned long long)n);
  const std::string id = idText;
  job->spec.id = id;
  job->spec.prompt = g.prompt;
  job->spec.maxNewTokens = g.maxTokens;
  job->spec.stop = g.stopIds;
  job->spec.sampling = g.sampling;
  if (!g.seeded) {
    // OpenAI: without a seed, each request samples differently.
    static std::atomic<uint64_t> salt{std::random_device{}()};
    job->spec.sampling.seed = salt.fetch_add(0x9E3779B97F4A7C15ull);
  }
  const int fd = socketOf(req.remote_addr, req.remote_port);
  s.scheduler->enqueue(job);
  // Wait for admission or refusal: a refusal is still a 400.
  {
    std::unique_lock<std::mutex> lock(job->m);
    while (!job->admitted && !job->done) {
      job->cv.wait_for(lock, std::chrono::milliseconds(100));
      if (!job->admitted && !job->done && peerGone(fd)) {
        job->cancel = true;
        lock.unlock(); // never hold a job's lock while taking the scheduler's
        s.scheduler->poke();
        return; // nobody to answer
      }
    }
    if (job->done && job->refused)
      return sendError(res, 400, job->error);
  }
  const long long created = (long long)std::time(nullptr);
  const std::string object = chat ? "chat.completion" : "text_completion";
  const std::string model = s.limits.model;
  auto reader = std::make_shared<Reader>(*s.tok, g);

  // Waits for tokens (or the end); false when the client went away.
  auto next = [&s, job, fd](std::vector<int32_t> &tokens, bool &done, std::string &error,
                            int64_t &hit) {
    std::unique_lock<std::mutex> lock(job->m);
    for (;;) {
      if (job->tokens.size() > tokens.size() || job->done) {
        tokens = job->tokens;
        done = job->done;
        error = job->error;
        hit = job->prefixHitTokens;
        return true;
      }
      job->cv.wait_for(lock, std::chrono::milliseconds(100));
      if (!job->done && peerGone(fd)) {
        job->cancel = true;
        lock.unlock(); // never hold a job's lock while taking the scheduler's
        s.scheduler->poke();
        return false;
      }
    }
  };
  // A stop string matched: the engine stops the request (its pages go back).
  auto stopEngine = [&s, job] {
    if (!job->cancel) {
      job->stopString = true;
      job->cancel = true;
      s.scheduler->poke();
    }
  };

  if (!g.stream) {
    std::vector<int32_t> tokens;
    bool done = false;
    int64_t hit = 0;
    std::string error, text;
    while (!done && !reader->stopped) {
      if (!next(tokens, done, error, hit))
        return;
      text += reader->read(tokens);
    }
    if (reader->stopped)
      stopEngine();
    else
      text += reader->finish();
    if (!error.empty() && error != "cancelled")
      return sendError(res, 500, "generation failed: " + error, "server_error");
    const char *finish = reader->stopped ? "stop" : "length";
    json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish}};
    if (chat)
      choice["message"] = {{"role", "assistant"}, {"content", text}};
    else
      choice["text"] = text;
    json body = {{"id", id},           {"object", object},
                 {"created", created}, {"model", model},
                 {"choices", {choice}}, {"usage", usage(g, reader->consumed, hit)}};
    res.set_content(dumpJson(body), "application/json");
    return;
  }

  // Streaming: one SSE event per step that produced text.
  const std::string chunkObject = chat ? "chat.completion.chunk" : "text_completion";
  auto event = [=](const std::string &text, const char *finish, bool first) {
    json choice = {{"index", 0}, {"logprobs", nullptr}};
    choice["finish_reason"] = finish ? json(finish) : json(nullptr);
    if (chat) {
      json delta = json::object();
      if (first)
        delta["role"] = "assistant";
      if (!text.empty() || first)
        delta["content"] = text;
      choice["delta"] = delta;
    } else {
      choice["text"] = text;
    }
    json chunk = {{"id", id},           {"object", chunkObject}, {"created", created},
                  {"model", model},     {"choices", {choice}}};
    if (g.includeUsage)
      chunk["usage"] = nullptr;
    return "data: " + dumpJson(chunk) + "\n\n";
  };
  // The stream: one SSE event per token that produced text, however many
  // tokens the engine made since the last read (a fast decode makes several
  // while a write waits): chunks follow tokens, not timing.
  auto provide = [=, &s](httplib::DataSink &sink) -> bool {
      auto write = [&](const std::string &data) { return sink.write(data.data(), data.size()); };
      auto gone = [&] {
        job->cancel = true;
        s.scheduler->poke();
        return false;
      };
      if (chat && !write(event("", nullptr, true)))
        return gone();
      std::vector<int32_t> tokens;
      bool done = false;
      int64_t hit = 0;
      std::string error;
      while (!done && !reader->stopped) {
        if (!next(tokens, done, error, hit))
          return false;
        while (reader->consumed < tokens.size() && !reader->stopped) {
          std::string text = reader->read(tokens, reader->consumed + 1);
          if (!text.empty() && !write(event(text, nullptr, false)))
            return gone();
        }
      }
      std::string tail;
      if (reader->stopped)
        stopEngine();
      else
        tail = reader->finish();
      if (!error.empty() && error != "cancelled") {
        // Headers are out: the error goes in the stream, as peers do.
        ApiError e;
        e.status = 500;
        e.type = "server_error";
        e.message = "generation failed: " + error;
        write("data: " + dumpJson(e.body()) + "\n\n");
        sink.done();
        return true;
      }
      if (!write(event(tail, reader->stopped ? "stop" : "length", false)))
        return gone();
      if (g.includeUsage) {
        json last = {{"id", id},          {"object", chunkObject},
                     {"created", created}, {"model", model},
                     {"choices", json::array()},
                     {"usage", usage(g, reader->consumed, hit)}};
        if (!write("data: " + dumpJson(last) + "\n\n"))
          return gone();
      }
      if (!write("data: [DONE]\n\n"))
        return gone();
      sink.done();
      return true;
  };
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [=, &s](size_t, httplib::DataSink &sink) {
        // httplib 0.11 does not catch what a content provider throws.
        try {
          return provide(sink);
        } catch (...) {
          job->cancel = true;
          s.scheduler->poke();
          return false;
        }
      },
      [job, &s](bool success) {
        // The client went away mid-stream, or the stream ended: either way
        // the engine may let go of the request.
        if (!success && !job->done) {
          job->cancel = true;
          s.scheduler->poke();
        }
      });
}

/// The JSON object of a request body, or a 400.
bool bodyObject(const httplib::Request &req, httplib::Response &res, json &j) {
  ApiError e;
  if (!parseBody(req.body, j, e)) {
    sendError(res, e);
    return false;
  }
  if (!j.is_object()) {
    sendError(res, 400, "the body must be a JSON object");
    return false;
  }
  return true;
}

void handleTokenize(Server &s, const httplib::Request &req, httplib::Response &res) {
  if (notReady(s, res))
    return;
  json j;
  if (!bodyObject(req, res, j))
    return;
  std::string text;
  if (j.contains("messages")) {
    if (!s.format)
      return sendError(res, 400, "this model's tokenizer has no chat template k3 knows");
    std::vector<k3rt::ChatMessage> messages;
    ApiError err;
    if (!parseMessages(j["messages"], messages, err))
      return sendError(res, err);
    bool genPrompt = true;
    if (j.contains("add_generation_prompt")) {
      if (!j["add_generation_prompt"].is_boolean())
        return sendError(res, 400, "'add_generation_prompt' must be a boolean");
      genPrompt = j["add_generation_prompt"].get<bool>();
    }
    if (k3rt_status_t st = k3rt::renderChat(*s.format, messages, genPrompt, text)) {
      std::string m = k3rt::takeMessage(st);
      return sendError(res, 400, m);
    }
  } else if (j.contains("prompt") && j["prompt"].is_string()) {
    text = j["prompt"].get<std::string>();
  } else {
    return sendError(res, 400, "give 'prompt' (a string) or 'messages'");
  }
  std::vector<int32_t> ids;
  if (k3rt_status_t st = s.tok->encode(text, true, ids)) {
    std::string m = k3rt::takeMessage(st);
    return sendError(res, 400, m);
  }
  json out = {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", contextJson(s)}};
  res.set_content(dumpJson(out), "application/json");
}

void handleDetokenize(Server &s, const httplib::Request &req, httplib::Response &res) {
  if (notReady(s, res))
    return;
  json j;
  if (!bodyObject(req, res, j))
    return;
  if (!j.contains("tokens") || !j["tokens"].is_array())
    return sendError(res, 400, "'tokens' must be an array of token ids");
  std::vector<int32_t> ids;
  for (const json &t : j["tokens"]) {
    if (!t.is_number_integer() || t.get<long long>() < 0 || t.get<long long>() >= s.tok->size())
      return sendError(res, 400, "'tokens' must be integers in [0, " +
                                     std::to_string(s.tok->size()) + ")");
    ids.push_back(int32_t(t.get<long long>()));
  }
  std::string bytes;
  if (k3rt_status_t st = s.tok->decode(ids, bytes)) {
    std::string m = k3rt::takeMessage(st);
    return sendError(res, 400, m);
  }
  res.set_content(dumpJson(json{{"prompt", k3rt::sanitizeUtf8(bytes)}}), "application/json");
}

/// `max_position_embeddings` or `model_max_length` of the binary's config.
int64_t configContext(const k3::bundle::Bundle &root) {
  if (!root.config() || !root.config()->config_json())
    return 0;
  json j = json::parse(root.config()->config_json()->str(), nullptr, false);
  if (!j.is_object())
    return 0;
  for (const json *o : {&j, j.contains("text_config") ? &j["text_config"] : nullptr}) {
    if (!o || !o->is_object())
      continue;
    for (const char *key : {"max_position_embeddings", "model_max_length"})
      if (o->contains(key) && (*o)[key].is_number_integer() && (*o)[key].get<int64_t>() > 0)
        return (*o)[key].get<int64_t>();
  }
  return 0;
}

/// Blocks until SIGINT or SIGTERM (blocked in every thread since main's
/// start, so only a sigwait takes them).
void waitForStopSignal() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  int sig = 0;
  sigwait(&stop, &sig);
}

/// The model a rank serves: its binary, kernels and engine.
struct Model {
  k3rt_bundle_t *bundle = nullptr;
  std::unique_ptr<k3rt::CpuExecutable> exe;
  std::unique_ptr<k3rt::Engine> engine;
  /// On a grid: every rank, for the leader's engine steps (Follow.h).
  k3rt::comm::Communicator *world = nullptr;
  ~Model() {
    engine.reset();
    exe.reset();
    k3rt_bundle_release(bundle);
  }
};

/// What every rank of a grid must agree on: the engine's options and the
/// synthetic weights' seed.
std::string engineFlags(const Options &o) {
  const k3rt::EngineOptions &e = o.engine;
  std::string out = "--pool-kib=" + std::to_string(e.poolBytes >> 10) +
                    " --block-tokens=" + std::to_string(e.blockTokens) +
                    " --max-batch=" + std::to_string(e.maxBatch) +
                    " --prefill-chunk=" + std::to_string(e.prefillChunk) +
                    " --speculate=" + std::to_string(e.speculate);
  if (!e.prefixCache)
    out += " --no-prefix-cache";
  if (o.syntheticWeights)
    out += " --synthetic-weights=" + std::to_string(*o.syntheticWeights);
  return out;
}

/// Opens `o.path` (this rank's file on a grid) and checks that k3-serve
/// runs it: "" or one line.
std::string openBinary(const Options &o, Model &m) {
  if (k3rt_status_t st = o.syntheticWeights
                             ? k3rt_bundle_open_synthetic(o.path.c_str(), *o.syntheticWeights,
                                                          &m.bundle)
                             : k3rt_bundle_open(o.path.c_str(), &m.bundle))
    return k3rt::takeMessage(st);
  if (m.bundle->root->target() != k3::bundle::Target_CPU)
    return o.path + " has GPU kernels; k3-serve runs CPU binaries (compile with --target=cpu)";
  return "";
}

/// Opens, loads and starts the engine. Under mpirun the ranks agree after
/// each phase that can fail on some of them only, so that all stop
/// together: `localError` is this rank's failure so far (the leader's
/// port or tokenizer), `check` the leader's last word on the engine.
/// Returns "" or this rank's line.
std::string startModel(const Options &o, k3run::Ranks &ranks, std::string localError, Model &m,
                       const std::function<std::string(Model &)> &check) {
  if (localError.empty())
    localError = ranks.missingFile;
  if (localError.empty())
    localError = openBinary(o, m);
  // mpirun started this process for X.rank<R>.k3b files (Ranks.h): they
  // must be a grid's, or the ranks would serve apart.
  if (localError.empty() && ranks.active && !m.bundle->root->grid())
    localError = o.path + " was compiled for one process (no grid): serve it without mpirun, "
                          "or compile with --tp/--ep";
  if (std::string e = k3run::agree(ranks, localError); !e.empty())
    return e;
  const k3::bundle::Bundle &root = *m.bundle->root;
  // A grid's file alone: CpuExecutable::load says how to start its ranks.
  std::string loadError;
  if (ranks.active) {
    std::vector<int64_t> shape(root.grid()->shape()->begin(), root.grid()->shape()->end());
    if (k3rt_status_t st = k3run::makeGrid(ranks, shape))
      loadError = k3rt::takeMessage(st);
  }
  if (loadError.empty())
    if (k3rt_status_t st =
            k3rt::CpuExecutable::load(*m.bundle, m.exe, nullptr, ranks.grid.get()))
      loadError = o.path + ": " + k3rt::takeMessage(st);
  if (std::string e = k3run::agree(ranks, loadError); !e.empty())
    return e;
  std::string engineError;
  if (ranks.grid) {
    // Rank 0's engine steps travel over the whole grid (the communicator
    // the kernels' whole-grid collectives use too, created here first on
    // every rank: Grid::axes is collective).
    std::vector<int> all(ranks.grid->shape().size());
    for (size_t i = 0; i < all.size(); ++i)
      all[i] = int(i);
    if (k3rt_status_t st = ranks.grid->axes(all, m.world))
      engineError = k3rt::takeMessage(st);
    // The engine is deterministic given its calls and its options: every
    // rank must run rank 0's (mpirun passes one command line, an MPMD
    // launch may not).
    std::string mine = engineFlags(o), theirs = mine;
    if (engineError.empty())
      if (k3rt_status_t st = shareBytes(*m.world, theirs))
        engineError = k3rt::takeMessage(st);
    if (engineError.empty() && theirs != mine)
      engineError = "this rank's engine flags (" + mine + ") differ from rank 0's (" + theirs +
                    "): start every rank with the same flags";
  }
  if (engineError.empty()) {
    if (k3rt_status_t st = k3rt::Engine::create(*m.exe, o.engine, m.engine))
      engineError = o.path + ": " + k3rt::takeMessage(st);
    else if (check)
      engineError = check(m);
  }
  return k3run::agree(ranks, engineError);
}

/// After a failed start under mpirun: every rank's line printed, out.
[[noreturn]] void endFailedStart(k3run::Ranks &ranks) {
  k3run::waitForLines(ranks);
  k3run::endRanks(ranks, 1);
}

/// A rank other than 0: the model and the leader's engine steps, no HTTP.
int followerMain(const Options &o, k3run::Ranks &ranks) {
  // Rank 0 prints; a follower's stdout goes nowhere (errors stay on stderr).
  if (!std::freopen("/dev/null", "w", stdout))
    return fail("cannot silence stdout");
  // mpirun passes SIGINT / SIGTERM to every rank: the leader then says stop
  // (Follow.h). A follower that hears nothing within a grace period (its
  // signal came alone, or the leader is stuck) goes anyway.
  std::mutex doneMutex;
  std::condition_variable doneCv;
  bool done = false;
  std::thread([&] {
    waitForStopSignal();
    std::unique_lock<std::mutex> lock(doneMutex);
    const double grace = std::min(o.collectiveTimeout, 10.0);
    if (!doneCv.wait_for(lock, std::chrono::duration<double>(grace), [&] { return done; })) {
      fail("stopped by a signal; rank 0 did not end the run within " +
           std::to_string(int(grace)) + " s");
      std::fflush(stderr);
      std::_Exit(1);
    }
  }).detach();
  Model m;
  if (std::string e = startModel(o, ranks, "", m, nullptr); !e.empty()) {
    fail(e);
    endFailedStart(ranks);
  }
  std::string e = follow(*m.engine, *m.world, [&] { return m.exe->commFailure(); });
  {
    std::lock_guard<std::mutex> lock(doneMutex);
    done = true;
  }
  doneCv.notify_all();
  if (!e.empty())
    fail(e);
  k3run::endRanks(ranks, e.empty() ? 0 : 1);
}

} // namespace

int main(int argc, char **argv) {
  Server s;
  std::string error;
  if (!parse(argc, argv, s.opt, error)) {
    if (error == "help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    return fail(error);
  }
  // Signals go to one thread (sigwait); a write to a closed connection is
  // an error return, not SIGPIPE. Blocked before any thread starts (MPI's
  // included), so that every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // A binary compiled for a grid, started by mpirun (tools/k3-run/Ranks.h):
  // rank 0 serves, the others follow (Follow.h).
  k3run::Ranks ranks;
  ranks.timeoutSeconds = s.opt.collectiveTimeout;
  if (k3run::launchedAsRank(s.opt.path)) {
    if (!k3run::startRanks(argc, argv, ranks, error))
      return fail(error);
    g_rank = ranks.rank;
  }
  s.opt.path = k3run::rankFile(s.opt.path, ranks);
  if (s.opt.threads)
    k3rt_set_threads(int(s.opt.threads));
  if (ranks.active && ranks.rank != 0)
    return followerMain(s.opt, ranks);
  const Options &o = s.opt;

  httplib::Server http;
  const long long httpThreads = o.httpThreads;
  http.new_task_queue = [httpThreads] { return new httplib::ThreadPool(size_t(httpThreads)); };
  http.set_payload_max_length(size_t(64) << 20); // a 64 MiB body at most (413 past it)
  http.set_logger([&s](const httplib::Request &, const httplib::Response &res) {
    std::lock_guard<std::mutex> lock(s.metrics.m);
    ++s.metrics.requestsByStatus[res.status];
  });
  http.set_error_handler([](const httplib::Request &req, httplib::Response &res) {
    if (res.status == 404 && res.body.empty())
      sendError(res, 404, "no route " + req.method + " " + req.path);
  });
  http.set_exception_handler([](const httplib::Request &, httplib::Response &res,
                                std::exception_ptr) {
    sendError(res, 500, "internal error", "server_error");
  });
  http.Get("/health", [&s](const httplib::Request &, httplib::Response &res) {
    if (!notReady(s, res))
      res.set_content(R"({"status":"ok"})", "application/json");
  });
  http.Get("/v1/models", [&s](const httplib::Request &, httplib::Response &res) {
    if (notReady(s, res))
      return;
    json m = {{"id", s.limits.model},
              {"object", "model"},
              {"created", 0},
              {"owned_by", "k3"},
              {"max_model_len", contextJson(s)}};
    res.set_content(dumpJson(json{{"object", "list"}, {"data", {m}}}), "application/json");
  });
  http.Get("/metrics", [&s](const httplib::Request &, httplib::Response &res) {
    res.set_content(s.metrics.prometheus(), "text/plain; version=0.0.4");
  });
  http.Post("/v1/completions", [&s](const httplib::Request &req, httplib::Response &res) {
    handleGeneration(s, req, res, false);
  });
  http.Post("/v1/chat/completions", [&s](const httplib::Request &req, httplib::Response &res) {
    handleGeneration(s, req, res, true);
  });
  http.Post("/tokenize", [&s](const httplib::Request &req, httplib::Response &res) {
    handleTokenize(s, req, res);
  });
  http.Post("/detokenize", [&s](const httplib::Request &req, httplib::Response &res) {
    handleDetokenize(s, req, res);
  });

  // Every failure from here on: under mpirun, after the other ranks heard.
  std::thread listener;
  std::atomic<bool> listenerDone{false}; // the listener writes it: lives as long
  auto quit = [&](const std::string &message) {
    http.stop();
    if (listener.joinable())
      listener.join();
    fail(message);
    if (ranks.active)
      endFailedStart(ranks);
    return 1;
  };
  int port = int(o.port);
  if (o.port == 0)
    port = http.bind_to_any_port(o.host.c_str());
  else if (!http.bind_to_port(o.host.c_str(), port))
    port = -1;
  std::string startError;
  if (port < 0) {
    startError = "cannot listen on " + o.host + ":" + std::to_string(o.port) + ": " +
                 std::strerror(errno);
  } else {
    std::fprintf(stderr, "k3-serve: listening on http://%s:%d\n", o.host.c_str(), port);
    listener = std::thread([&] {
      http.listen_after_bind();
      listenerDone = true;
    });
    // stop() does nothing until the loop runs: wait for it, so that an
    // early failure below cannot leave the listener running forever.
    while (!http.is_running() && !listenerDone)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::thread signalThread([&] {
    waitForStopSignal();
    if (!s.ready) {
      // Still loading: nothing to finish. A grid's rank 0 says so, and
      // mpirun ends the other ranks.
      if (!ranks.active)
        std::_Exit(0);
      fail("stopped by a signal while loading"); // silent if a failure came first
      std::fflush(stderr);
      std::_Exit(1);
    }
    http.stop();
    s.scheduler->stop();
    // A second signal does not wait for clients that hold on.
    waitForStopSignal();
    std::_Exit(1);
  });
  signalThread.detach();

  // Load: the tokenizer, the binary, the engine.
  if (startError.empty()) {
    if (k3rt_status_t st = k3rt::Tokenizer::load(o.tokenizer, s.tok))
      startError = "--tokenizer: " + k3rt::takeMessage(st);
  }
  if (startError.empty()) {
    k3rt::ChatFormat format;
    if (k3rt_status_t st = k3rt::chatFormatOf(*s.tok, format)) {
      // Completions still work; chat says why not.
      std::fprintf(stderr, "k3-serve: warning: no chat: %s\n", k3rt_status_message(st));
      k3rt_status_free(st);
    } else {
      s.format = format;
    }
  }
  Model m;
  auto checkVocab = [&](Model &m) -> std::string {
    if (s.tok->size() > m.engine->vocabSize())
      return "--tokenizer: " + o.tokenizer + " has " + std::to_string(s.tok->size()) +
             " ids, more than the model's vocabulary (" +
             std::to_string(m.engine->vocabSize()) + ")";
    return "";
  };
  if (std::string e = startModel(o, ranks, startError, m, checkVocab); !e.empty())
    return quit(e);
  s.limits.model = o.modelName;
  s.limits.vocab = m.engine->vocabSize();
  s.limits.context = o.context ? o.context : configContext(*m.bundle->root);
  s.scheduler = std::make_unique<Scheduler>(*m.engine, s.metrics);
  if (m.world)
    s.scheduler->lead(*m.world, std::min(1.0, o.collectiveTimeout / 4),
                      [&m] { return m.exe->commFailure(); });
  s.ready = true;
  std::string context = s.limits.context ? std::to_string(s.limits.context) + "-token context"
                                          : "context bounded by the pool";
  std::string grid;
  if (ranks.grid)
    grid = ", grid " + k3rt::comm::formatGrid(ranks.grid->shape()) + " (" +
           std::to_string(ranks.size) + " ranks)";
  std::fprintf(stderr, "k3-serve: ready: model '%s', %s, max batch %lld%s\n",
               o.modelName.c_str(), context.c_str(), (long long)o.engine.maxBatch, grid.c_str());
  // Until SIGINT / SIGTERM, or on a grid until the ranks cannot go on.
  std::string fatal = s.scheduler->run();
  http.stop();
  listener.join();
  if (!fatal.empty())
    fail(fatal);
  if (ranks.active)
    k3run::endRanks(ranks, fatal.empty() ? 0 : 1);
  return fatal.empty() ? 0 : 1;
}
