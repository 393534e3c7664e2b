//===- k3-reference.cpp - The reference forward as a command --------------===//
//
// Part of k3 (test-only). Runs the fp64 reference on a checkpoint with
// k3-run's interface, so the lit tests can compare the compiled binary with
// it: greedy ids on stdout, prompt and step logits as float32 .npy.
//
//   k3-reference DIR --tokens=1,2,3 [--generate=N] [--dump-logits=PATH.npy]
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Npy.h"
#include "runtime/src/Sampling.h"
#include "test/Reference/Reference.h"

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  std::string dir, dump;
  std::vector<int32_t> ids;
  long generate = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--tokens=", 0) == 0) {
      std::string list = a.substr(9);
      size_t pos = 0;
      while (pos <= list.size()) {
        size_t comma = list.find(',', pos);
        ids.push_back(std::stoi(list.substr(pos, comma - pos)));
        if (comma == std::string::npos)
          break;
        pos = comma + 1;
      }
    } else if (a.rfind("--generate=", 0) == 0) {
      generate = std::stol(a.substr(11));
    } else if (a.rfind("--dump-logits=", 0) == 0) {
      dump = a.substr(14);
    } else {
      dir = a;
    }
  }
  std::string error;
  auto ck = k3::model::Checkpoint::open(dir, error);
  if (!ck) {
    std::fprintf(stderr, "k3-reference: error: %s\n", error.c_str());
    return 1;
  }
  k3::ref::Model<double> model(*ck);
  auto state = model.initialState();
  const int64_t vocab = ck->config().vocabSize;
  std::vector<double> logits = model.forward(ids, state);
  std::vector<float> rows(logits.begin(), logits.end());
  std::vector<int32_t> out;
  std::vector<float> last(logits.end() - vocab, logits.end());
  for (long n = 0; n < generate; ++n) {
    int32_t next = k3rt::argmax(last.data(), last.size());
    out.push_back(next);
    if (n + 1 == generate)
      break;
    std::vector<double> step = model.forward({next}, state);
    last.assign(step.begin(), step.end());
    rows.insert(rows.end(), step.begin(), step.end());
  }
  for (size_t i = 0; i < out.size(); ++i)
    std::printf("%s%d", i ? "," : "", out[i]);
  std::printf("\n");
  if (!dump.empty() &&
      !k3rt::writeNpy(dump, k3rt::makeF32({int64_t(rows.size()) / vocab, vocab}, rows.data()),
                      error)) {
    std::fprintf(stderr, "k3-reference: error: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
