//===- Requests.cpp - k3-run --requests=FILE.jsonl ------------------------===//
//
// Part of k3. Many requests through one engine (runtime/src/Engine.h): one
// JSON object per input line (`id`, `tokens`, `max_new_tokens`, optional
// `cache_salt`, `stop` and `draft`), one JSON result per request on stdout in
// input order (`id`, `tokens`, `prefix_hit_tokens`, and `error` for a request
// that failed alone); cache and speculation statistics on stderr.
//
//===----------------------------------------------------------------------===//

#include "tools/k3-run/Requests.h"

#include "lib/Model/Text.h"
#include "runtime/src/Npy.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>

using json = nlohmann::json;

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "k3-run: error: %s\n", message.c_str());
  return 1;
}

} // namespace

/// One request line; false with `error` naming the field.
static bool parseRequest(const std::string &line, k3rt::RequestSpec &r,
                         std::string &error) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    error = "not a JSON object";
    return false;
  }
  auto id = j.find("id");
  if (id == j.end() || !(id->is_string() || id->is_number_integer())) {
    error = "needs an \"id\" (string or integer)";
    return false;
  }
  if (id->is_number_unsigned() && id->get<uint64_t>() > uint64_t(INT64_MAX)) {
    error = "\"id\" " + id->dump() + " is out of range";
    return false;
  }
  r.id = id->is_string() ? id->get<std::string>()
                         : std::to_string(id->get<long long>());
  // Ids name the --dump-logits-dir files: no separators, no "..".
  if (r.id.empty() ||
      r.id.find_first_of(std::string("/\\\0", 3)) != std::string::npos ||
      r.id == "." || r.id == "..") {
    error = "\"id\" " + id->dump() +
            " cannot name a file (empty, '/', '\\', NUL, '.' or '..')";
    return false;
  }
  const std::string shown =
      k3::model::printable(r.id); // for messages: one line
  auto tokens = j.find("tokens");
  if (tokens == j.end() || !tokens->is_array() || tokens->empty()) {
    error = "request '" + shown +
            "' needs \"tokens\", a non-empty array of token ids";
    return false;
  }
  for (const json &t : *tokens) {
    if (!t.is_number_integer() || t.get<long long>() < 0 ||
        t.get<long long>() > INT32_MAX) {
      error = "request '" + shown + "': \"tokens\" holds " + t.dump() +
              ", not a token id";
      return false;
    }
    r.prompt.push_back(int32_t(t.get<long long>()));
  }
  if (auto m = j.find("max_new_tokens"); m != j.end()) {
    if (!m->is_number_integer() || m->get<long long>() < 0 ||
        m->get<long long>() > (1 << 24)) {
      error = "request '" + shown +
              "': \"max_new_tokens\" must be an integer in [0, 2^24]";
      return false;
    }
    r.maxNewTokens = m->get<long long>();
  }
  if (auto s = j.find("cache_salt"); s != j.end()) {
    if (!s->is_string() && !s->is_number_integer()) {
      error = "request '" + shown +
              "': \"cache_salt\" must be a string or an integer";
      return false;
    }
    // Any distinct salt starts a distinct hash chain.
    r.salt = std::hash<std::string>()(s->dump()) | 1;
  }
  for (const char *field : {"stop", "draft"}) {
    auto s = j.find(field);
    if (s == j.end())
      continue;
    std::vector<int32_t> &list =
        std::string(field) == "stop" ? r.stop : r.draft;
    if (!s->is_array()) {
      error = "request '" + shown + "': \"" + field +
              "\" must be an array of token ids";
      return false;
    }
    for (const json &t : *s) {
      if (!t.is_number_integer() || t.get<long long>() < 0 ||
          t.get<long long>() > INT32_MAX) {
        error = "request '" + shown + "': \"" + field + "\" holds " + t.dump() +
                ", not a token id";
        return false;
      }
      list.push_back(int32_t(t.get<long long>()));
    }
  }
  return true;
}

bool parseRequests(std::istream &in, const std::string &path,
                   std::vector<k3rt::RequestSpec> &specs, std::string &error) {
  std::set<std::string> ids;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    k3rt::RequestSpec r;
    if (!parseRequest(line, r, error)) {
      error = path + ":" + std::to_string(n) + ": " + error;
      return false;
    }
    if (!ids.insert(r.id).second) {
      error = path + ":" + std::to_string(n) + ": the id '" +
              k3::model::printable(r.id) + "' repeats";
      return false;
    }
    specs.push_back(std::move(r));
  }
  if (specs.empty()) {
    error = "--requests: '" + path + "' holds no request";
    return false;
  }
  return true;
}

int runRequests(k3rt::CpuExecutable &exe, const RequestsOptions &o) {
  std::ifstream in(o.path);
  if (!in)
    return fail("--requests: cannot open '" + o.path + "'");
  std::vector<k3rt::RequestSpec> specs;
  std::string error;
  if (!parseRequests(in, o.path, specs, error))
    return fail(error);

  std::unique_ptr<k3rt::Engine> engine;
  if (k3rt_status_t s = k3rt::Engine::create(exe, o.engine, engine)) {
    int rc = fail(k3rt_status_message(s));
    k3rt_status_free(s);
    return rc;
  }
  std::vector<k3rt::RequestResult> results;
  auto t0 = std::chrono::steady_clock::now();
  if (k3rt_status_t s = engine->run(specs, results)) {
    int rc = fail(k3rt_status_message(s));
    k3rt_status_free(s);
    return rc;
  }
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();

  int failed = 0;
  int64_t generated = 0, hit = 0, prompt = 0;
  std::vector<std::string> writeErrors;
  for (size_t i = 0; i < results.size(); ++i) {
    const k3rt::RequestResult &r = results[i];
    json out = {{"id", r.id},
                {"tokens", r.tokens},
                {"prefix_hit_tokens", r.prefixHitTokens}};
    if (!r.error.empty()) {
      out["error"] = r.error;
      if (!o.follower)
        std::fprintf(stderr, "k3-run: error: request '%s': %s\n",
                     k3::model::printable(r.id).c_str(), r.error.c_str());
      ++failed;
    }
    std::printf("%s\n", out.dump().c_str());
    generated += int64_t(r.tokens.size());
    hit += r.prefixHitTokens;
    prompt += int64_t(specs[i].prompt.size());
    if (!o.dumpLogitsDir.empty() && !r.logits.empty() && !o.follower) {
      int64_t vocab = int64_t(r.logits.size() / r.tokens.size());
      // Reported after every result is out.
      if (!k3rt::writeNpy(
              o.dumpLogitsDir + "/" + r.id + ".npy",
              k3rt::makeF32({int64_t(r.tokens.size()), vocab}, r.logits.data()),
              error))
        writeErrors.push_back(error);
    }
  }
  if (o.follower) {
    // Rank 0 reports each request; a follower says once that it failed (it
    // may be the only one left to say so, if rank 0 is gone).
    for (const k3rt::RequestResult &r : results)
      if (!r.error.empty())
        return fail("request '" + k3::model::printable(r.id) + "': " + r.error);
    return 0;
  }
  k3rt::EngineStats s = engine->stats();
  std::fprintf(
      stderr,
      "requests: %zu in %.3f s, %lld prompt tokens (%lld from the prefix "
      "cache), "
      "%lld generated, %lld requests waited for memory to be admitted\n",
      results.size(), secs, (long long)prompt, (long long)hit,
      (long long)generated, (long long)s.waits);
  std::fprintf(stderr,
               "calls: %lld model calls, %lld bytes of MLA rows gathered, %lld bytes of "
               "state copied, %lld padding rows, %lld calls in decode groups\n",
               (long long)s.calls, (long long)s.mlaGatherBytes, (long long)s.stateCopyBytes,
               (long long)s.paddedRows, (long long)s.decodeGroupCalls);
  if (s.drafted)
    std::fprintf(stderr,
                 "speculation: %lld drafted, %lld accepted (acceptance %.3f)\n",
                 (long long)s.drafted, (long long)s.accepted,
                 double(s.accepted) / s.drafted);
  std::fprintf(
      stderr,
      "pool: %lld pages of %lld bytes, %lld free after the requests; cached "
      "%lld "
      "blocks and %lld snapshots; %lld evictions; %lld pages copied on write\n",
      (long long)s.pages, (long long)s.pageBytes, (long long)s.freePages,
      (long long)s.blocks, (long long)s.snapshots, (long long)s.evictions,
      (long long)s.copiedPages);
  engine->clearCache();
  s = engine->stats();
  std::fprintf(stderr,
               "pool after clearing the cache: %lld of %lld pages free\n",
               (long long)s.freePages, (long long)s.pages);
  for (const std::string &e : writeErrors)
    fail(e);
  return failed || !writeErrors.empty() ? 1 : 0;
}
