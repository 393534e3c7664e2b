//===- ConfigFuzzer.cpp - config.json with the config checks --------------===//
//
// Part of k3. Invariants: a refusal is one line; a config that parses has
// sizes that add up without overflow (UBSan), its tensor table is finite and
// its parameter count agrees with the table's.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/Fuzz.h"
#include "lib/Model/Config.h"
#include "lib/Model/TensorTable.h"

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <string>

namespace {
constexpr int64_t kMaxTableLayersTimesExperts = 4096;
} // namespace

int k3fuzz::testOneInput(const uint8_t *bytes, size_t size) {
  std::string text(reinterpret_cast<const char *>(bytes), size);
  std::string error;
  std::optional<k3::model::Config> c = k3::model::parseConfig(text, error);
  if (!c) {
    k3fuzz::requireOneLine(error);
    return 0;
  }
  k3::model::Stats stats = k3::model::computeStats(*c);
  (void)stats;
  // K3's own table (93 layers x 384 experts: ~200,000 tensors) takes over
  // 10 s to build under ASan: the table is checked on smaller models.
  if (c->numLayers * std::max<int64_t>(c->numExperts, 1) > kMaxTableLayersTimesExperts)
    return 0;
  for (auto experts : {k3::model::ExpertFormat::BF16, k3::model::ExpertFormat::MXFP4}) {
    int64_t total = 0;
    if (!k3::model::expectedParameters(*c, experts, total))
      continue; // refused as too large: nothing is built from it
    int64_t sum = 0;
    for (const k3::model::TensorSpec &t : k3::model::expectedTensors(*c, experts))
      sum += t.parameters;
    if (sum != total)
      k3fuzz::broken("the parameter count agrees with the table", std::to_string(sum) + " vs " +
                                                             std::to_string(total));
  }
  return 0;
}
