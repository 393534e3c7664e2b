//===- Follow.cpp - k3-serve across the ranks of a grid -------------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "tools/k3-serve/Follow.h"

#include "runtime/src/Status.h"

#include <nlohmann/json.hpp>

namespace k3serve {

using json = nlohmann::json;
using k3rt::comm::DType;

std::string encodeStep(const StepMessage &m) {
  if (m.empty())
    return ""; // a heartbeat: only its length travels
  json j = json::object();
  if (m.stop)
    j["stop"] = true;
  if (m.step)
    j["step"] = true;
  if (!m.admitted.empty()) {
    json a = json::array();
    for (const auto &[handle, spec] : m.admitted)
      a.push_back({{"handle", handle},
                   {"id", spec.id},
                   {"prompt", spec.prompt},
                   {"max_new_tokens", spec.maxNewTokens},
                   {"salt", spec.salt},
                   {"stop", spec.stop},
                   {"draft", spec.draft},
                   // A float widened to double and back is exact.
                   {"temperature", spec.sampling.temperature},
                   {"top_k", spec.sampling.topK},
                   {"top_p", spec.sampling.topP},
                   {"seed", spec.sampling.seed}});
    j["admitted"] = std::move(a);
  }
  if (!m.cancelled.empty())
    j["cancelled"] = m.cancelled;
  // Request ids are the clients' text: a byte that is not UTF-8 is
  // replaced rather than refused (the id only names results).
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool decodeStep(const std::string &bytes, StepMessage &m, std::string &error) {
  m = StepMessage();
  if (bytes.empty())
    return true;
  json j = json::parse(bytes, nullptr, false);
  if (!j.is_object()) {
    error = "rank 0's engine step is not a JSON object";
    return false;
  }
  try {
    m.stop = j.value("stop", false);
    m.step = j.value("step", false);
    if (j.contains("admitted"))
      for (const json &a : j.at("admitted")) {
        k3rt::RequestSpec spec;
        spec.id = a.at("id").get<std::string>();
        spec.prompt = a.at("prompt").get<std::vector<int32_t>>();
        spec.maxNewTokens = a.at("max_new_tokens").get<int64_t>();
        spec.salt = a.at("salt").get<uint64_t>();
        spec.stop = a.at("stop").get<std::vector<int32_t>>();
        spec.draft = a.at("draft").get<std::vector<int32_t>>();
        spec.sampling.temperature = a.at("temperature").get<float>();
        spec.sampling.topK = a.at("top_k").get<int32_t>();
        spec.sampling.topP = a.at("top_p").get<float>();
        spec.sampling.seed = a.at("seed").get<uint64_t>();
        m.admitted.emplace_back(a.at("handle").get<k3rt::RequestHandle>(), std::move(spec));
      }
    if (j.contains("cancelled"))
      m.cancelled = j.at("cancelled").get<std::vector<k3rt::RequestHandle>>();
  } catch (const json::exception &e) {
    error = std::string("rank 0's engine step is malformed: ") + e.what();
    return false;
  }
  return true;
}

k3rt_status_t shareBytes(k3rt::comm::Communicator &world, std::string &bytes) {
  int64_t n = int64_t(bytes.size());
  if (k3rt_status_t s = world.broadcast(&n, 1, DType::I64, 0))
    return s;
  // A length past 1 GiB is not a message rank 0 sends (it caps each step's
  // admissions, Scheduler.cpp): refuse it rather than allocate it.
  if (n < 0 || n > (int64_t(1) << 30))
    return k3rt::makeStatus(K3RT_INTERNAL,
                            "rank 0 announced a message of " + std::to_string(n) + " bytes");
  bytes.resize(size_t(n));
  if (n == 0)
    return nullptr;
  return world.broadcast(bytes.data(), bytes.size(), DType::U8, 0);
}

k3rt_status_t sendStep(k3rt::comm::Communicator &world, const StepMessage &m) {
  std::string bytes = encodeStep(m);
  return shareBytes(world, bytes);
}

k3rt_status_t receiveStep(k3rt::comm::Communicator &world, StepMessage &m) {
  std::string bytes;
  if (k3rt_status_t s = shareBytes(world, bytes))
    return s;
  std::string error;
  if (!decodeStep(bytes, m, error))
    return k3rt::makeStatus(K3RT_INTERNAL, error);
  return nullptr;
}

uint64_t stepDigest(const std::vector<k3rt::RequestEvent> &events) {
  // FNV-1a over the events' outcomes (not handles: each rank has its own).
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 0x100000001b3ull;
    }
  };
  mix(events.size());
  for (const k3rt::RequestEvent &e : events) {
    mix(e.tokens.size());
    for (int32_t t : e.tokens)
      mix(uint32_t(t));
    mix(e.done);
    mix(e.result.error.empty());
    mix(uint64_t(e.prefixHitTokens));
  }
  return h;
}

k3rt_status_t sameDigest(k3rt::comm::Communicator &world, uint64_t digest, bool &same) {
  // max(d) == d and max(~d) == ~d on every rank iff all are equal.
  int64_t both[2] = {int64_t(digest), int64_t(~digest)};
  if (k3rt_status_t s = world.allReduce(both, 2, DType::I64, k3rt::comm::Reduce::Max))
    return s;
  same = both[0] == int64_t(digest) && both[1] == int64_t(~digest);
  return nullptr;
}

std::string divergedLine() {
  return "the ranks' engines diverged (a step's tokens differ between ranks; were they "
         "started with different flags or builds?)";
}

k3rt_status_t confirmStop(k3rt::comm::Communicator &world) {
  int32_t one = 1;
  return world.allReduce(&one, 1, DType::I32, k3rt::comm::Reduce::Sum);
}

std::string Follower::apply(const StepMessage &m) {
  for (const auto &[leader, spec] : m.admitted) {
    k3rt::RequestHandle mine = 0;
    if (k3rt_status_t s = engine.submit(spec, mine))
      return "rank 0 admitted request '" + spec.id + "' and this rank's engine refused it (" +
             k3rt::takeMessage(s) + ")";
    handles[leader] = mine;
  }
  for (k3rt::RequestHandle leader : m.cancelled) {
    auto it = handles.find(leader);
    if (it == handles.end())
      return "rank 0 cancelled request " + std::to_string(leader) +
             ", which this rank's engine does not run";
    engine.cancel(it->second);
    handles.erase(it);
  }
  if (m.step == engine.idle())
    return m.step ? "rank 0 stepped its engine and this rank's has nothing to run"
                  : "this rank's engine has requests that rank 0's finished";
  if (!m.step)
    return "";
  engine.step(events);
  for (const k3rt::RequestEvent &e : events)
    if (e.done)
      for (auto it = handles.begin(); it != handles.end(); ++it)
        if (it->second == e.handle) {
          handles.erase(it);
          break;
        }
  return "";
}

std::string follow(k3rt::Engine &engine, k3rt::comm::Communicator &world,
                   const std::function<std::string()> &failure) {
  Follower follower(engine);
  for (;;) {
    StepMessage m;
    if (k3rt_status_t s = receiveStep(world, m))
      return "waiting for rank 0's next engine step: " + k3rt::takeMessage(s);
    if (m.stop) {
      if (k3rt_status_t s = confirmStop(world))
        return "confirming rank 0's stop: " + k3rt::takeMessage(s);
      return "";
    }
    if (std::string e = follower.apply(m); !e.empty())
      return e;
    if (std::string e = failure(); !e.empty())
      return e;
    if (m.step) {
      bool same = false;
      if (k3rt_status_t s = sameDigest(world, stepDigest(follower.lastEvents()), same))
        return "comparing the step with rank 0's: " + k3rt::takeMessage(s);
      if (!same)
        return divergedLine();
    }
  }
}

} // namespace k3serve
