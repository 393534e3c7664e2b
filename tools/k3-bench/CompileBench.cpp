//===- CompileBench.cpp - Compile cost against depth ----------------------===//
//
// Part of k3. `k3-bench compile MODEL_DIR [--layers=4] [--targets=cpu,sm_90a]
// [--ptxas=PATH|none]`: compiles the model's config twice per target, cut
// to --layers layers and at its own depth (weights omitted: config.json is
// enough), with the k3-compile beside k3-bench, and prints each compile's
// seconds, kernels and code bytes (host objects, PTX and cubins: what the
// binary holds besides its weight table), then `depth_cost_ratio`, the
// full-depth time over the cut one. With one function per layer kind
// (k3-outline-layers) the ratio stays near 1 whatever the depth.
//
//===----------------------------------------------------------------------===//

#include "runtime/include/k3rt/k3rt.h"
#include "runtime/src/Bundle.h"
#include "tools/k3-bench/BenchUtil.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

using k3bench::fail;

namespace {

/// The object holding the text model's keys (`text_config` for K3).
nlohmann::json &textConfig(nlohmann::json &root) {
  if (root.contains("text_config") && root["text_config"].is_object())
    return root["text_config"];
  return root;
}

/// The config cut to its first `layers` layers: the layer count, and the
/// 1-indexed KDA/MLA lists keep the layers that remain. An AttnRes block
/// longer than the cut would leave out the layers that seal a block (K3's
/// 12, 24, ...), a kind of their own: the cut's blocks are then half its
/// depth, so that both compiles hold the same layer kinds and the ratio
/// measures depth alone. `note` says so.
nlohmann::json cut(nlohmann::json root, int64_t layers, std::string &note) {
  nlohmann::json &text = textConfig(root);
  const int64_t depth = text["num_hidden_layers"].get<int64_t>(); // checked by the caller
  text["num_hidden_layers"] = layers;
  if (text.contains("attn_res_block_size") && text["attn_res_block_size"].is_number_integer()) {
    // Layer l seals a block when l % block == 0 (Config::seals); layer 0
    // is the first read's, not a seal kind.
    int64_t block = text["attn_res_block_size"].get<int64_t>();
    if (block > 0 && block >= layers && block < depth) {
      int64_t shorter = std::max<int64_t>(1, layers / 2);
      text["attn_res_block_size"] = shorter;
      note = "the " + std::to_string(layers) + "-layer cut has AttnRes blocks of " +
             std::to_string(shorter) + " (the model's " + std::to_string(block) +
             "), so that it seals a block as the full depth does";
    }
  }
  if (text.contains("linear_attn_config"))
    for (const char *key : {"kda_layers", "full_attn_layers"}) {
      nlohmann::json &list = text["linear_attn_config"][key];
      if (!list.is_array())
        continue;
      nlohmann::json kept = nlohmann::json::array();
      for (const auto &v : list)
        if (v.is_number_integer() && v.get<int64_t>() <= layers)
          kept.push_back(v);
      list = kept;
    }
  return root;
}

struct Measured {
  double seconds = 0;
  size_t kernels = 0;   ///< device kernels (GPU) or host objects (CPU)
  uint64_t codeBytes = 0;
};

bool measure(const std::string &dir, const std::string &target, const std::string &ptxas,
             const std::string &out, Measured &m, std::string &error) {
  std::vector<std::string> args{k3bench::selfDir() + "/k3-compile", dir, "--target=" + target,
                                "--omit-weights", "-o", out};
  if (!ptxas.empty())
    args.push_back("--ptxas=" + ptxas);
  auto start = std::chrono::steady_clock::now();
  if (!k3bench::spawn(args)) {
    error = "k3-compile " + dir + " --target=" + target + " failed (its error is above)";
    return false;
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  k3rt_bundle_t *bundle = nullptr;
  if (k3rt_status_t s = k3rt_bundle_open(out.c_str(), &bundle)) {
    error = out + ": " + k3rt_status_message(s);
    k3rt_status_free(s);
    return false;
  }
  if (bundle->root->kernels())
    for (const k3::bundle::Kernel *k : *bundle->root->kernels()) {
      bool device = k->ptx() && k->ptx()->size() > 0;
      m.kernels += device || target == "cpu";
      for (const auto *bytes : {k->object(), k->cubin()})
        if (bytes)
          m.codeBytes += bytes->size();
      if (k->ptx())
        m.codeBytes += k->ptx()->size();
    }
  k3rt_bundle_release(bundle);
  std::remove(out.c_str());
  return true;
}

} // namespace

int runCompileBench(int argc, char **argv) {
  if (argc < 3 || argv[2][0] == '-')
    return fail("usage: k3-bench compile MODEL_DIR [--layers=4] [--targets=cpu,sm_90a] "
                "[--ptxas=PATH|none]");
  std::string dir = argv[2], ptxas;
  int64_t layers = 4;
  std::vector<std::string> targets{"cpu", "sm_90a"};
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (k3bench::positiveFlag(a, "--layers=", layers))
      continue;
    if (a.rfind("--targets=", 0) == 0) {
      targets.clear();
      std::stringstream list(a.substr(10));
      for (std::string t; std::getline(list, t, ',');)
        targets.push_back(t);
    } else if (a.rfind("--ptxas=", 0) == 0) {
      ptxas = a.substr(8);
    } else {
      return fail("unknown flag '" + a + "' (see k3-bench compile without arguments)");
    }
  }
  std::ifstream in(dir + "/config.json");
  if (!in)
    return fail(dir + "/config.json: cannot read");
  nlohmann::json config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object())
    return fail(dir + "/config.json: not a JSON object");
  const nlohmann::json &text = textConfig(config);
  if (!text.contains("num_hidden_layers") || !text["num_hidden_layers"].is_number_integer())
    return fail(dir + "/config.json: no integer num_hidden_layers");
  int64_t depth = text["num_hidden_layers"].get<int64_t>();
  if (layers >= depth)
    return fail("--layers=" + std::to_string(layers) + " must be below the model's " +
                std::to_string(depth) + " layers");

  char tmpl[] = "/tmp/k3-bench-compile-XXXXXX";
  if (!mkdtemp(tmpl))
    return fail("cannot create a temporary directory");
  std::string tmp = tmpl;
  auto writeConfig = [&](const std::string &sub, const nlohmann::json &j) {
    std::string d = tmp + "/" + sub;
    mkdir(d.c_str(), 0755);
    std::ofstream(d + "/config.json") << j.dump(1);
    return d;
  };
  std::string note;
  std::string shallow = writeConfig("cut", cut(config, layers, note));
  if (!note.empty())
    std::printf("note: %s\n", note.c_str());
  std::string deep = writeConfig("full", config);

  std::printf("target   layers  seconds  kernels  code_bytes\n");
  int status = 0;
  for (const std::string &target : targets) {
    Measured m[2];
    std::string error;
    if (!measure(shallow, target, ptxas, tmp + "/cut.k3b", m[0], error) ||
        !measure(deep, target, ptxas, tmp + "/full.k3b", m[1], error)) {
      status = fail(error);
      break;
    }
    for (int i = 0; i < 2; ++i)
      std::printf("%-8s %6lld %8.2f %8zu %11llu\n", target.c_str(),
                  static_cast<long long>(i ? depth : layers), m[i].seconds, m[i].kernels,
                  static_cast<unsigned long long>(m[i].codeBytes));
    std::printf("depth_cost_ratio %s: %.2f (%lld layers over %lld)\n", target.c_str(),
                m[1].seconds / m[0].seconds, static_cast<long long>(depth),
                static_cast<long long>(layers));
    std::fflush(stdout);
  }
  for (const char *f : {"/cut/config.json", "/full/config.json", "/cut", "/full", ""})
    std::remove((tmp + f).c_str());
  return status;
}
