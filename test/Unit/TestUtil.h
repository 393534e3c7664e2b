//===- TestUtil.h - Helpers shared by the k3 unit tests ---------*- C++ -*-===//
//
// Part of k3 (test-only).
//
//===----------------------------------------------------------------------===//

#ifndef TEST_UNIT_TESTUTIL_H
#define TEST_UNIT_TESTUTIL_H

#include "lib/Model/Config.h"
#include "lib/Model/Synthetic.h"
#include "lib/Model/TensorTable.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace k3::test {

/// A fresh directory under $TMPDIR, removed with its contents at scope end.
class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/k3-test-XXXXXX";
    dir = mkdtemp(tmpl.data()) ? tmpl : "";
  }
  ~TempDir() {
    if (!dir.empty())
      (void)std::system(("rm -rf '" + dir + "'").c_str());
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::string &path() const { return dir; }

private:
  std::string dir;
};

/// `models/<name>` in the source tree.
inline std::string sourceConfigDir(const std::string &name) {
  return std::string(K3_SOURCE_DIR) + "/models/" + name;
}

inline bool readText(const std::string &path, std::string &text) {
  std::string error;
  return model::readTextFile(path, text, error);
}

inline bool writeText(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  return bool(out << text);
}

/// Writes the synthetic checkpoint of `configDir/config.json` into `outDir`.
inline bool writeSynthetic(const std::string &configDir,
                           const std::string &outDir, uint64_t seed,
                           int shards, bool flat, std::string &error,
                           std::optional<model::ExpertFormat> experts = {}) {
  std::string text;
  auto config = model::loadConfig(configDir, error, &text);
  if (!config)
    return false;
  model::SyntheticOptions options;
  options.seed = seed;
  options.shards = shards;
  options.flatPrefix = flat;
  options.experts = experts.value_or(config->declaredExpertFormat);
  return model::writeSyntheticCheckpoint(*config, text, outDir, options, error);
}

} // namespace k3::test

#endif // TEST_UNIT_TESTUTIL_H
