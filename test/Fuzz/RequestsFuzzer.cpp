//===- RequestsFuzzer.cpp - k3-run --requests lines -----------------------===//
//
// Part of k3. Invariants: a refusal is one line; what is accepted is at
// least one request, each with a unique id that can name a file, a
// non-empty prompt of token ids, and token ids in stop and draft lists.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/Fuzz.h"
#include "tools/k3-run/Requests.h"

#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

int k3fuzz::testOneInput(const uint8_t *bytes, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char *>(bytes), size));
  std::vector<k3rt::RequestSpec> specs;
  std::string error;
  if (!parseRequests(in, "r.jsonl", specs, error)) {
    k3fuzz::requireOneLine(error);
    return 0;
  }
  if (specs.empty())
    k3fuzz::broken("an accepted file holds a request", "");
  std::set<std::string> ids;
  for (const k3rt::RequestSpec &r : specs) {
    if (!ids.insert(r.id).second || r.id.empty() || r.id == "." || r.id == ".." ||
        r.id.find_first_of(std::string("/\\\0", 3)) != std::string::npos)
      k3fuzz::broken("ids are unique file names", r.id);
    if (r.prompt.empty())
      k3fuzz::broken("a prompt is not empty", r.id);
    for (const std::vector<int32_t> *list : {&r.prompt, &r.stop, &r.draft})
      for (int32_t t : *list)
        if (t < 0)
          k3fuzz::broken("token ids are not negative", r.id);
  }
  return 0;
}
