//===- Scheduler.cpp - k3-serve's engine thread ---------------------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "tools/k3-serve/Scheduler.h"

#include "runtime/src/Status.h"
#include "tools/k3-serve/Follow.h"

#include <cstdio>

namespace k3serve {

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds.size() && v > bounds[i])
    ++i;
  ++counts[i];
  sum += v;
  ++count;
}

void Histogram::write(std::string &out, const std::string &name, const std::string &help) const {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  uint64_t cumulative = 0;
  char buf[64];
  for (size_t i = 0; i < bounds.size(); ++i) {
    cumulative += counts[i];
    snprintf(buf, sizeof buf, "%g", bounds[i]);
    out += name + "_bucket{le=\"" + buf + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count) + "\n";
  snprintf(buf, sizeof buf, "%.6f", sum);
  out += name + "_sum " + buf + "\n" + name + "_count " + std::to_string(count) + "\n";
}

std::string Metrics::prometheus() {
  std::lock_guard<std::mutex> lock(m);
  std::string out;
  auto counter = [&](const char *name, const char *help, uint64_t v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name +
           " " + std::to_string(v) + "\n";
  };
  auto gauge = [&](const char *name, const char *help, int64_t v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n" + name +
           " " + std::to_string(v) + "\n";
  };
  out += "# HELP k3_requests_total HTTP requests answered, by status.\n"
         "# TYPE k3_requests_total counter\n";
  for (const auto &[status, n] : requestsByStatus)
    out += "k3_requests_total{status=\"" + std::to_string(status) + "\"} " + std::to_string(n) +
           "\n";
  counter("k3_prompt_tokens_total", "Prompt tokens of admitted requests.", promptTokens);
  counter("k3_generation_tokens_total", "Tokens generated.", generatedTokens);
  counter("k3_prefix_cache_hit_tokens_total", "Prompt tokens restored from the prefix cache.",
          prefixHitTokens);
  counter("k3_requests_cancelled_total",
          "Requests cancelled before they finished: the client went away.", cancelled);
  gauge("k3_requests_running", "Requests admitted to the engine.", running);
  gauge("k3_requests_waiting", "Requests queued for admission.", waiting);
  gauge("k3_pool_pages_used", "Cache pool pages in use (requests and the prefix cache).",
        pagesUsed);
  gauge("k3_pool_pages_free", "Cache pool pages free.", pagesFree);
  ttft.write(out, "k3_time_to_first_token_seconds",
             "From the request's arrival to its first generated token.");
  perToken.write(out, "k3_time_per_output_token_seconds",
                 "Between a request's consecutive generated tokens.");
  return out;
}

namespace {

void finishJob(Job &job, const std::string &error, bool refused) {
  {
    std::lock_guard<std::mutex> lock(job.m);
    job.done = true;
    job.error = error;
    job.refused = refused;
  }
  job.cv.notify_all();
}

} // namespace

void Scheduler::enqueue(const std::shared_ptr<Job> &job) {
  {
    std::lock_guard<std::mutex> lock(m);
    if (!stopping) {
      inbox.push_back(job);
      cv.notify_one();
      return;
    }
  }
  finishJob(*job, "the server is shutting down", false); // outside m: lock order
}

void Scheduler::poke() {
  {
    std::lock_guard<std::mutex> lock(m);
    poked = true;
  }
  cv.notify_one();
}

void Scheduler::stop() {
  {
    std::lock_guard<std::mutex> lock(m);
    stopping = true;
  }
  cv.notify_one();
}

void Scheduler::publishGauges() {
  k3rt::EngineStats s = engine.stats();
  std::lock_guard<std::mutex> lock(metrics.m);
  metrics.running = engine.runningCount();
  metrics.waiting = engine.waitingCount();
  metrics.pagesFree = s.freePages;
  metrics.pagesUsed = s.pages - s.freePages;
}

void Scheduler::lead(k3rt::comm::Communicator &w, double heartbeat,
                     std::function<std::string()> f) {
  world = &w;
  heartbeatSeconds = heartbeat;
  failure = std::move(f);
}

std::string Scheduler::run() {
  std::vector<k3rt::RequestEvent> events;
  std::string fatal; // on a grid: why the ranks cannot go on
  publishGauges();
  for (;;) {
    std::deque<std::shared_ptr<Job>> fresh;
    {
      std::unique_lock<std::mutex> lock(m);
      // Sleep only when nothing runs: a running engine steps on. On a grid
      // an idle wait ends after a heartbeat, which the followers hear.
      auto wake = [&] { return stopping || poked || !inbox.empty() || !engine.idle(); };
      if (world)
        cv.wait_for(lock, std::chrono::duration<double>(heartbeatSeconds), wake);
      else
        cv.wait(lock, wake);
      if (stopping)
        break;
      poked = false;
      fresh.swap(inbox);
    }
    StepMessage calls; // what the followers repeat (on a grid)
    // On a grid, a step's admissions travel to every rank in one message:
    // past kStepTokens prompt tokens, the rest wait for the next step (the
    // followers refuse a message over 1 GiB, Follow.cpp).
    constexpr size_t kStepTokens = size_t(16) << 20;
    size_t stepTokens = 0;
    for (size_t i = 0; i < fresh.size(); ++i) {
      const std::shared_ptr<Job> &job = fresh[i];
      if (world && stepTokens > kStepTokens) {
        std::lock_guard<std::mutex> lock(m);
        inbox.insert(inbox.begin(), fresh.begin() + i, fresh.end());
        break;
      }
      if (job->cancel) {
        finishJob(*job, "cancelled", false);
        continue;
      }
      k3rt::RequestHandle h = 0;
      if (k3rt_status_t s = engine.submit(job->spec, h)) {
        std::string why = k3rt::takeMessage(s);
        finishJob(*job, why, true);
        continue;
      }
      live[h] = job;
      if (world) {
        calls.admitted.emplace_back(h, job->spec);
        stepTokens += job->spec.prompt.size() + job->spec.draft.size() + job->spec.stop.size();
      }
      {
        std::lock_guard<std::mutex> lock(job->m);
        job->admitted = true;
      }
      job->cv.notify_all();
      std::lock_guard<std::mutex> lock(metrics.m);
      metrics.promptTokens += job->spec.prompt.size();
    }
    if (!fresh.empty())
      publishGauges(); // waiting / running before a long step
    // Cancellations: the client went away, or a stop string matched.
    for (auto it = live.begin(); it != live.end();) {
      if (it->second->cancel) {
        engine.cancel(it->first);
        if (world)
          calls.cancelled.push_back(it->first);
        finishJob(*it->second, "cancelled", false);
        lastToken.erase(it->first);
        hitCounted.erase(it->first);
        if (!it->second->stopString) {
          std::lock_guard<std::mutex> lock(metrics.m);
          ++metrics.cancelled;
        }
        it = live.erase(it);
      } else {
        ++it;
      }
    }
    if (world) {
      calls.step = !engine.idle();
      if (k3rt_status_t s = sendStep(*world, calls)) {
        fatal = "sending the engine step to the other ranks: " + k3rt::takeMessage(s);
        break;
      }
    }
    if (!engine.idle()) {
      engine.step(events);
      if (world) {
        // The same order as a follower's (Follow.cpp): a failed collective,
        // then the digest.
        if (fatal = failure(); !fatal.empty())
          break;
        bool same = false;
        if (k3rt_status_t s = sameDigest(*world, stepDigest(events), same)) {
          fatal = "comparing the step with the other ranks': " + k3rt::takeMessage(s);
          break;
        }
        if (!same) {
          fatal = divergedLine();
          break;
        }
      }
      const Clock::time_point now = Clock::now();
      for (k3rt::RequestEvent &e : events) {
        auto it = live.find(e.handle);
        if (it == live.end())
          continue;
        Job &job = *it->second;
        {
          std::lock_guard<std::mutex> lock(metrics.m);
          metrics.generatedTokens += e.tokens.size();
          if (!e.tokens.empty()) {
            auto last = lastToken.find(e.handle);
            if (last == lastToken.end())
              metrics.ttft.observe(std::chrono::duration<double>(now - job.submitted).count());
            else
              metrics.perToken.observe(std::chrono::duration<double>(now - last->second).count() /
                                       double(e.tokens.size()));
            lastToken[e.handle] = now;
          }
          // Known once admitted: counted at the first event, so that a
          // request a stop string ends early still counts its hit.
          if (hitCounted.insert(e.handle).second)
            metrics.prefixHitTokens += e.prefixHitTokens;
        }
        {
          std::lock_guard<std::mutex> lock(job.m);
          job.tokens.insert(job.tokens.end(), e.tokens.begin(), e.tokens.end());
          job.prefixHitTokens = e.prefixHitTokens;
          if (e.done) {
            job.done = true;
            job.error = e.result.error;
          }
        }
        job.cv.notify_all();
        if (e.done) {
          lastToken.erase(e.handle);
          hitCounted.erase(e.handle);
          live.erase(it);
        }
      }
    }
    publishGauges();
    if (world)
      if (fatal = failure(); !fatal.empty())
        break;
  }
  // The followers end with the leader (a failed grid cannot say it).
  if (world && fatal.empty()) {
    StepMessage stop;
    stop.stop = true;
    if (k3rt_status_t s = sendStep(*world, stop))
      fatal = "telling the other ranks to stop: " + k3rt::takeMessage(s);
    else if (k3rt_status_t s = confirmStop(*world))
      fatal = "waiting for the other ranks to stop: " + k3rt::takeMessage(s);
  }
  // Shutting down: nobody waits for an answer any more.
  const std::string why = fatal.empty() ? "the server is shutting down" : fatal;
  for (auto &[h, job] : live)
    finishJob(*job, why, false);
  // Jobs queued since: taken under m, finished outside it (an HTTP thread
  // takes a job's lock, then m, in poke(); never the other way round).
  std::deque<std::shared_ptr<Job>> left;
  {
    std::lock_guard<std::mutex> lock(m);
    stopping = true; // after a failed grid too: later jobs are refused
    left.swap(inbox);
  }
  for (const std::shared_ptr<Job> &job : left)
    finishJob(*job, why, false);
  return fatal;
}

} // namespace k3serve
