//===- Requests.h - k3-run --requests=FILE.jsonl ----------------*- C++ -*-===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#ifndef TOOLS_K3_RUN_REQUESTS_H
#define TOOLS_K3_RUN_REQUESTS_H

#include "runtime/src/Engine.h"

#include <string>

struct RequestsOptions {
  std::string path;          ///< the .jsonl file
  std::string dumpLogitsDir; ///< per request `<id>.npy`, when set
  k3rt::EngineOptions engine;
};

/// Runs every request of `o.path`; the exit status (1 if any failed).
int runRequests(k3rt::CpuExecutable &exe, const RequestsOptions &o);

#endif // TOOLS_K3_RUN_REQUESTS_H
