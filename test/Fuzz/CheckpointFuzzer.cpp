//===- CheckpointFuzzer.cpp - a checkpoint directory: config, index, shard -===//
//
// Part of k3. The input is `config.json`, `model.safetensors.index.json` and
// one shard, split at the line `--k3--` (an empty index part: no index
// file), written to a scratch directory and opened as Checkpoint::open does
// for k3-compile. Invariants: a refusal is one line; a checkpoint that opens
// describes tensors of its config's shapes whose bytes lie in the shard
// (each is read end to end) and decode to floats of the right count.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/Fuzz.h"
#include "lib/Model/Checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {

const std::string &scratch() {
  static const std::string dir = [] {
    char t[] = "/tmp/k3-fuzz-checkpoint-XXXXXX";
    if (!mkdtemp(t))
      k3fuzz::broken("scratch directory", t);
    return std::string(t);
  }();
  return dir;
}

void write(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

} // namespace

int k3fuzz::testOneInput(const uint8_t *bytes, size_t size) {
  std::string input(reinterpret_cast<const char *>(bytes), size), parts[3];
  const std::string cut = "\n--k3--\n";
  for (int i = 0; i < 2; ++i) {
    size_t at = input.find(cut);
    parts[i] = input.substr(0, at);
    input = at == std::string::npos ? std::string() : input.substr(at + cut.size());
  }
  parts[2] = input;
  const std::string &dir = scratch();
  write(dir + "/config.json", parts[0]);
  if (parts[1].empty())
    unlink((dir + "/model.safetensors.index.json").c_str());
  else
    write(dir + "/model.safetensors.index.json", parts[1]);
  if (parts[2].empty()) // a config-only directory
    unlink((dir + "/model-00001-of-00001.safetensors").c_str());
  else
    write(dir + "/model-00001-of-00001.safetensors", parts[2]);

  std::string error;
  // A config the size of K3's (93 layers x 384 experts) takes over 10 s to
  // tabulate under ASan: fuzz-config covers it; here the small ones.
  if (auto c = k3::model::parseConfig(parts[0], error);
      c && c->numLayers * std::max<int64_t>(c->numExperts, 1) > 4096)
    return 0;
  error.clear();
  std::unique_ptr<k3::model::Checkpoint> ck = k3::model::Checkpoint::open(dir, error);
  if (!ck) {
    k3fuzz::requireOneLine(error);
    return 0;
  }
  for (const k3::model::TensorSpec &spec : ck->specs()) {
    const k3::model::TensorView *v = ck->find(spec);
    if (!v)
      continue; // packed or absent forms are the loader's to vouch for
    if (v->shape != spec.shape)
      k3fuzz::broken("a tensor has its config's shape", v->name);
    if (int64_t(v->bytes) != k3::model::numElements(v->shape) * k3::model::dtypeBytes(v->dtype))
      k3fuzz::broken("a tensor holds its shape's bytes", v->name);
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < v->bytes; ++i)
      sink = sink ^ v->data[i];
    if (!spec.packed && !spec.scale &&
        int64_t(k3::model::floatValues(*v).size()) != k3::model::numElements(v->shape))
      k3fuzz::broken("a float tensor decodes to its element count", v->name);
  }
  return 0;
}
