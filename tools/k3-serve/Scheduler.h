//===- Scheduler.h - k3-serve's engine thread -------------------*- C++ -*-===//
//
// Part of k3. One thread owns the engine (runtime/src/Engine.h): it takes
// jobs from the HTTP threads, steps the engine while anything runs, and
// hands each job its tokens as they come. HTTP threads only parse, enqueue
// and stream; a job they mark cancelled (its client went away, or a stop
// string matched) is cancelled at the next step and its pages go back.
//
//===----------------------------------------------------------------------===//

#ifndef TOOLS_K3_SERVE_SCHEDULER_H
#define TOOLS_K3_SERVE_SCHEDULER_H

#include "runtime/src/Engine.h"
#include "runtime/src/comm/Collectives.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace k3serve {

using Clock = std::chrono::steady_clock;

/// One generation request between an HTTP thread and the engine thread.
struct Job {
  k3rt::RequestSpec spec;
  std::mutex m;
  std::condition_variable cv;
  std::vector<int32_t> tokens; ///< generated so far (the HTTP side reads on)
  bool admitted = false; ///< the engine took it (else refused when done)
  bool done = false;
  std::string error; ///< the engine refused or failed it
  bool refused = false; ///< never admitted: a client error (400)
  int64_t prefixHitTokens = 0;
  std::atomic<bool> cancel{false};
  /// Set with `cancel` when a stop string ended it: a normal end, not a
  /// cancellation in the metrics.
  std::atomic<bool> stopString{false};
  Clock::time_point submitted = Clock::now();
};

/// Prometheus histogram with fixed bucket bounds (seconds).
struct Histogram {
  std::vector<double> bounds;
  std::vector<uint64_t> counts; ///< per bound (not cumulative) + the +Inf one
  double sum = 0;
  uint64_t count = 0;
  explicit Histogram(std::vector<double> b) : bounds(std::move(b)), counts(bounds.size() + 1) {}
  void observe(double v);
  void write(std::string &out, const std::string &name, const std::string &help) const;
};

struct Metrics {
  std::mutex m;
  std::map<int, uint64_t> requestsByStatus;
  uint64_t promptTokens = 0, generatedTokens = 0, prefixHitTokens = 0, cancelled = 0;
  int64_t running = 0, waiting = 0, pagesUsed = 0, pagesFree = 0;
  Histogram ttft{{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}};
  Histogram perToken{{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}};
  std::string prometheus();
};

class Scheduler {
public:
  Scheduler(k3rt::Engine &engine, Metrics &metrics) : engine(engine), metrics(metrics) {}
  /// Queues `job` (the engine thread submits it).
  void enqueue(const std::shared_ptr<Job> &job);
  /// Wakes the engine thread to look at cancellations.
  void poke();
  /// On a grid (Follow.h): broadcasts each step's engine calls to the
  /// other ranks over `world`, an empty message after `heartbeat` idle
  /// seconds; `failure` says whether the executable's collectives failed.
  void lead(k3rt::comm::Communicator &world, double heartbeatSeconds,
            std::function<std::string()> failure);
  /// The engine thread's loop; returns after stop() (""), or on a grid
  /// when the ranks cannot go on (one line: every job got it as its error).
  std::string run();
  void stop();

private:
  void publishGauges();
  k3rt::Engine &engine;
  Metrics &metrics;
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::shared_ptr<Job>> inbox;
  bool stopping = false;
  bool poked = false;
  std::map<k3rt::RequestHandle, std::shared_ptr<Job>> live;
  std::map<k3rt::RequestHandle, Clock::time_point> lastToken;
  std::set<k3rt::RequestHandle> hitCounted; ///< prefix hits already in the metrics
  k3rt::comm::Communicator *world = nullptr; ///< set by lead()
  double heartbeatSeconds = 1;
  std::function<std::string()> failure;
};

} // namespace k3serve

#endif // TOOLS_K3_SERVE_SCHEDULER_H
