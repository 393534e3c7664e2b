//===- Requests.h - k3-run --requests=FILE.jsonl ----------------*- C++ -*-===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#ifndef TOOLS_K3_RUN_REQUESTS_H
#define TOOLS_K3_RUN_REQUESTS_H

#include "runtime/src/Engine.h"

#include <istream>
#include <string>
#include <vector>

struct RequestsOptions {
  std::string path;          ///< the .jsonl file
  std::string dumpLogitsDir; ///< per request `<id>.npy`, when set
  k3rt::EngineOptions engine;
  /// Under mpirun, every rank but 0: run the same engine steps, write and
  /// report nothing (stdout is silenced already; this covers the stderr
  /// summary and the logits files).
  bool follower = false;
};

/// Parses the request lines of `in` (`path` names it in messages): blank
/// lines skipped, ids unique. False with one line in `error` (`path:N: ...`).
bool parseRequests(std::istream &in, const std::string &path,
                   std::vector<k3rt::RequestSpec> &specs, std::string &error);

/// Runs every request of `o.path`; the exit status (1 if any failed).
int runRequests(k3rt::CpuExecutable &exe, const RequestsOptions &o);

#endif // TOOLS_K3_RUN_REQUESTS_H
