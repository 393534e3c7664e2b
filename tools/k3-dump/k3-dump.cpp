//===- k3-dump.cpp - Show what is inside a .k3b ---------------------------===//
//
// Part of k3. Opens a binary through the runtime (so it is verified first)
// and prints the header, metadata, layer schedule, cache geometry, entry
// points with their plans, kernels and the weights table. MLIR-free.
//
//   k3-dump FILE.k3b [--json] [--verify-weights] [--extract-kernels=DIR]
//
//===----------------------------------------------------------------------===//

#include "runtime/include/k3rt/k3rt.h"
#include "runtime/src/Bundle.h"
#include "runtime/src/comm/Collectives.h"
#include "runtime/src/Status.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <algorithm>
#include <map>
#include <string>
#include <sys/stat.h>

using json = nlohmann::ordered_json;
using namespace k3::bundle;

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "k3-dump: error: %s\n", message.c_str());
  return 1;
}

template <typename T> json list(const flatbuffers::Vector<T> *v) {
  json out = json::array();
  if (v)
    for (T x : *v)
      out.push_back(x);
  return out;
}

const char *targetName(Target t) {
  switch (t) {
  case Target_CPU:
    return "cpu";
  case Target_SM80:
    return "sm_80";
  case Target_SM90A:
    return "sm_90a";
  }
  return "?";
}

json tensors(const flatbuffers::Vector<flatbuffers::Offset<TensorInfo>> *v) {
  json out = json::array();
  if (v)
    for (const TensorInfo *t : *v) {
      json info = {{"name", t->name()->str()},
                   {"dtype", k3rt::dtypeName(t->dtype())},
                   {"shape", list(t->shape())}};
      if (t->appends_rows())
        info["appends_rows"] = true;
      out.push_back(std::move(info));
    }
  return out;
}

/// Everything in the bundle as JSON; the text form prints from this too.
json describe(const k3rt_bundle_s &b) {
  const Bundle &r = *b.root;
  const ModelConfig &c = *r.config();
  json j;
  j["header"] = {{"format_version", b.header.formatVersion},
                 {"file_size", b.header.fileSize},
                 {"flatbuffer_offset", b.header.flatbufferOffset},
                 {"flatbuffer_size", b.header.flatbufferSize},
                 {"flatbuffer_checksum", b.header.flatbufferChecksum},
                 {"weights_offset", b.header.weightsOffset},
                 {"weights_size", b.header.weightsSize},
                 {"weights_omitted", bool(b.header.flags & k3rt::kFlagWeightsOmitted)}};
  j["producer"] = r.producer() ? r.producer()->str() : "";
  j["target"] = targetName(r.target());
  // A rank's file of a grid-compiled binary (k3-compile --tp --ep): its
  // grid, rank and coordinates (row-major), and that its split weights are
  // its blocks only.
  if (const auto *g = r.grid()) {
    std::vector<int64_t> shape(g->shape()->begin(), g->shape()->end());
    j["grid"] = {{"shape", shape},
                 {"rank", g->rank()},
                 {"coordinates", k3rt::comm::gridCoordinates(shape, g->rank())}};
  }
  j["config"] = {{"vocab_size", c.vocab_size()},
                 {"hidden_size", c.hidden_size()},
                 {"num_layers", c.num_layers()},
                 {"kda_heads", c.kda_heads()},
                 {"kda_head_dim", c.kda_head_dim()},
                 {"conv_kernel_size", c.conv_kernel_size()},
                 {"mla_heads", c.mla_heads()},
                 {"kv_lora_rank", c.kv_lora_rank()},
                 {"qk_rope_head_dim", c.qk_rope_head_dim()},
                 {"num_experts", c.num_experts()},
                 {"top_k", c.top_k()},
                 {"attn_res_block_size", c.attn_res_block_size()}};
  json layers = json::array();
  for (const Layer *l : *r.layers())
    layers.push_back({{"mixer", EnumNameMixer(l->mixer())},
                      {"ffn", EnumNameFFN(l->ffn())},
                      {"seals", l->seals()}});
  j["layers"] = layers;
  const CacheGeometry &g = *r.cache();
  j["cache"] = {{"kda_layers", g.kda_layers()},
                {"conv_window_rows", g.conv_window_rows()},
                {"conv_channels", g.conv_channels()},
                {"kda_state_bytes_per_layer", g.kda_state_bytes()},
                {"mla_layers", g.mla_layers()},
                {"mla_row_width", g.mla_row_width()},
                {"mla_dtype", k3rt::dtypeName(g.mla_dtype())},
                {"mla_bytes_per_token", g.mla_bytes_per_token()}};
  json entries = json::array();
  if (r.entry_points())
    for (const EntryPoint *e : *r.entry_points()) {
      json steps = json::array();
      if (e->steps())
        for (const Step *s : *e->steps()) {
          json grid = json::array(), args = json::array();
          if (s->grid())
            for (const GridDim *d : *s->grid())
              grid.push_back({{"constant", d->constant()},
                              {"per_token", d->per_token()},
                              {"divisor", d->divisor()}});
          if (s->args())
            for (const Binding *a : *s->args())
              args.push_back({{"kind", EnumNameBindingKind(a->kind())},
                              {"index", a->index()},
                              {"offset", a->offset()},
                              {"bytes", a->bytes()}});
          steps.push_back({{"kernel", s->kernel()}, {"grid", grid}, {"args", args}});
        }
      entries.push_back({{"name", e->name()->str()},
                         {"inputs", tensors(e->inputs())},
                         {"outputs", tensors(e->outputs())},
                         {"steps", steps},
                         {"scratch_bytes", e->scratch_bytes()},
                         {"graph_capturable", e->graph_capturable()}});
    }
  j["entry_points"] = entries;
  json kernels = json::array();
  if (r.kernels())
    for (const Kernel *k : *r.kernels())
      kernels.push_back({{"name", k->name()->str()},
                         {"target", targetName(k->target())},
                         {"object_bytes", k->object() ? k->object()->size() : 0},
                         {"ptx_bytes", k->ptx() ? k->ptx()->size() : 0},
                         {"cubin_bytes", k->cubin() ? k->cubin()->size() : 0},
                         {"block", list(k->block())},
                         {"shared_memory_bytes", k->shared_memory_bytes()},
                         {"registers", k->registers()},
                         {"spill_bytes", k->spill_bytes()},
                         {"cpu", k->cpu() ? k->cpu()->str() : ""},
                         {"code_checksum", k->code_checksum()}});
  j["kernels"] = kernels;
  json weights = json::array();
  if (r.weights())
    for (const Weight *w : *r.weights())
      weights.push_back({{"name", w->name()->str()},
                         {"dtype", k3rt::dtypeName(w->dtype())},
                         {"shape", list(w->shape())},
                         {"offset", w->offset()},
                         {"bytes", w->length()},
                         {"checksum", w->checksum()}});
  j["weights"] = weights;
  return j;
}

std::string shape(const json &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    int64_t d = s[i].get<int64_t>();
    out += (i ? ", " : "") + (d < 0 ? std::string("?") : std::to_string(d));
  }
  return out + "]";
}

void printText(const json &j, const std::string &path) {
  const json &h = j["header"], &c = j["config"], &g = j["cache"];
  std::printf("%s: .k3b format %u, %llu bytes, producer %s, target %s\n",
              path.c_str(), h["format_version"].get<unsigned>(),
              (unsigned long long)h["file_size"].get<uint64_t>(),
              j["producer"].get<std::string>().c_str(),
              j["target"].get<std::string>().c_str());
  std::printf("sections: flatbuffer [%llu, +%llu), weights [%llu, +%llu)\n",
              (unsigned long long)h["flatbuffer_offset"].get<uint64_t>(),
              (unsigned long long)h["flatbuffer_size"].get<uint64_t>(),
              (unsigned long long)h["weights_offset"].get<uint64_t>(),
              (unsigned long long)h["weights_size"].get<uint64_t>());
  if (j.contains("grid")) {
    const json &grid = j["grid"];
    std::string shape, coords;
    for (const json &n : grid["shape"])
      shape += (shape.empty() ? "" : "x") + std::to_string(n.get<int64_t>());
    for (const json &n : grid["coordinates"])
      coords += (coords.empty() ? "" : ", ") + std::to_string(n.get<int64_t>());
    std::printf("grid: %s, rank %lld (coordinates %s): this file holds the rank's block of "
                "each split weight; run all ranks with mpirun\n",
                shape.c_str(), (long long)grid["rank"].get<int64_t>(), coords.c_str());
  }
  std::printf("config:");
  for (auto it = c.begin(); it != c.end(); ++it)
    std::printf(" %s=%lld", it.key().c_str(), (long long)it->get<int64_t>());
  std::printf("\nlayers:\n");
  for (size_t i = 0; i < j["layers"].size(); ++i) {
    const json &l = j["layers"][i];
    std::printf("  %zu: %s + %s%s\n", i, l["mixer"].get<std::string>().c_str(),
                l["ffn"].get<std::string>().c_str(),
                l["seals"].get<bool>() ? " (seals an AttnRes block)" : "");
  }
  std::printf("cache: %d KDA layers (conv windows 3 x [%lld, %lld] f32, state "
              "%lld bytes each); %d MLA layers (rows of %lld %s, %lld bytes "
              "per token)\n",
              g["kda_layers"].get<int>(), (long long)g["conv_window_rows"].get<int64_t>(),
              (long long)g["conv_channels"].get<int64_t>(),
              (long long)g["kda_state_bytes_per_layer"].get<int64_t>(),
              g["mla_layers"].get<int>(), (long long)g["mla_row_width"].get<int64_t>(),
              g["mla_dtype"].get<std::string>().c_str(),
              (long long)g["mla_bytes_per_token"].get<int64_t>());
  std::printf("entry points:\n");
  for (const json &e : j["entry_points"]) {
    std::printf("  %s: %zu inputs, %zu outputs, %zu steps, scratch %llu bytes%s\n",
                e["name"].get<std::string>().c_str(), e["inputs"].size(),
                e["outputs"].size(), e["steps"].size(),
                (unsigned long long)e["scratch_bytes"].get<uint64_t>(),
                e["graph_capturable"].get<bool>() ? "; a CUDA graph may capture it" : "");
    // What a model's entry points are for (the runtime picks one per call).
    const std::string name = e["name"].get<std::string>();
    if (name == "prefill")
      std::printf("    runs a prompt, returns every position's logits (dumped logits, "
                  "speculative verification) and the state\n");
    else if (name == "prefill_last")
      std::printf("    runs a prompt, returns the last position's logits (the default) and "
                  "the state\n");
    else if (name == "decode")
      std::printf("    runs one token after the first, returns its logits and the state\n");
    else if (name == "decode_batch")
      std::printf("    runs one token for each of B requests, reading the MLA rows through "
                  "block tables from the pool of pages; returns the logits, the KDA state "
                  "and the new MLA rows\n");
    for (const char *dir : {"inputs", "outputs"})
      for (const json &t : e[dir])
        std::printf("    %s %s %s%s%s\n", dir[0] == 'i' ? "in " : "out",
                    t["name"].get<std::string>().c_str(),
                    t["dtype"].get<std::string>().c_str(), shape(t["shape"]).c_str(),
                    t.value("appends_rows", false) ? " (cached rows, then room for the call's)"
                                                   : "");
    for (size_t s = 0; s < e["steps"].size(); ++s)
      std::printf("    step %zu: kernel %u, %zu args\n", s,
                  e["steps"][s]["kernel"].get<unsigned>(),
                  e["steps"][s]["args"].size());
  }
  std::printf("kernels: %zu\n", j["kernels"].size());
  // Device kernels (PTX) add their launch block; a summary of ptxas's
  // figures follows them.
  int devices = 0, cubins = 0, maxRegs = -1, maxSpill = -1;
  unsigned maxSmem = 0;
  for (const json &k : j["kernels"]) {
    std::string block;
    if (k["ptx_bytes"].get<uint64_t>() > 0) {
      const json &bl = k["block"];
      block = ", block ";
      for (size_t d = 0; d < bl.size(); ++d)
        block += (d ? "x" : "") + std::to_string(bl[d].get<int>());
      ++devices;
      cubins += k["cubin_bytes"].get<uint64_t>() > 0;
      maxRegs = std::max(maxRegs, k["registers"].get<int>());
      maxSpill = std::max(maxSpill, k["spill_bytes"].get<int>());
      maxSmem = std::max(maxSmem, k["shared_memory_bytes"].get<unsigned>());
    }
    std::printf("  %s (%s%s%s): object %llu B, ptx %llu B, cubin %llu B, smem %u B, "
                "regs %d, spills %d B%s\n",
                k["name"].get<std::string>().c_str(),
                k["target"].get<std::string>().c_str(),
                k["cpu"].get<std::string>().empty() ? "" : ", ",
                k["cpu"].get<std::string>().c_str(),
                (unsigned long long)k["object_bytes"].get<uint64_t>(),
                (unsigned long long)k["ptx_bytes"].get<uint64_t>(),
                (unsigned long long)k["cubin_bytes"].get<uint64_t>(),
                k["shared_memory_bytes"].get<unsigned>(),
                k["registers"].get<int>(), k["spill_bytes"].get<int>(), block.c_str());
  }
  if (devices)
    std::printf("device kernels: %d, %d with cubins; ptxas: at most %d registers, %d spill "
                "bytes, %u B shared memory per kernel\n",
                devices, cubins, maxRegs, maxSpill, maxSmem);
  uint64_t total = 0;
  for (const json &w : j["weights"])
    total += w["bytes"].get<uint64_t>();
  std::printf("weights: %zu, %llu bytes%s\n", j["weights"].size(), (unsigned long long)total,
              j["header"]["weights_omitted"].get<bool>()
                  ? " (omitted: the runtime fills them with --synthetic-weights=SEED)"
                  : "");
  for (const json &w : j["weights"])
    std::printf("  %10llu %10llu %-9s %-18s %016llx %s\n",
                (unsigned long long)w["offset"].get<uint64_t>(),
                (unsigned long long)w["bytes"].get<uint64_t>(),
                w["dtype"].get<std::string>().c_str(), shape(w["shape"]).c_str(),
                (unsigned long long)w["checksum"].get<uint64_t>(),
                w["name"].get<std::string>().c_str());
  // Bytes per storage format, over all weights and over the routed experts
  // (stacked `experts.{e}` tensors), which MXFP4 shrinks.
  std::map<std::string, uint64_t> all, experts;
  for (const json &w : j["weights"]) {
    std::string dtype = w["dtype"].get<std::string>();
    all[dtype] += w["bytes"].get<uint64_t>();
    if (w["name"].get<std::string>().find(".experts.{e}.") != std::string::npos)
      experts[dtype] += w["bytes"].get<uint64_t>();
  }
  for (auto [label, byFormat] : {std::pair{"weight bytes by format:", &all},
                                 std::pair{"routed expert bytes:", &experts}}) {
    uint64_t sum = 0;
    std::printf("%s", label);
    for (const auto &[dtype, bytes] : *byFormat) {
      std::printf(" %s %llu,", dtype.c_str(), (unsigned long long)bytes);
      sum += bytes;
    }
    std::printf(" total %llu\n", (unsigned long long)sum);
  }
}

/// Recomputes every weight's checksum; the first mismatch names the weight.
int verifyWeights(const k3rt_bundle_s &b) {
  if (!b.root->weights())
    return 0;
  if (k3rt::weightsMissing(b))
    return fail("--verify-weights: the binary's weights were omitted at compile time "
                "(--omit-weights); there is nothing to verify");
  if (k3rt_status_t s = k3rt::verifyWeights(b))
    return fail(k3rt::takeMessage(s));
  return 0;
}

int extractKernels(const k3rt_bundle_s &b, const std::string &dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return fail(dir + ": cannot create: " + std::strerror(errno));
  if (!b.root->kernels())
    return 0;
  for (const Kernel *k : *b.root->kernels()) {
    auto write = [&](const std::string &suffix, const void *data, size_t n) {
      std::ofstream out(dir + "/" + k->name()->str() + suffix, std::ios::binary);
      out.write(static_cast<const char *>(data), n);
      return bool(out);
    };
    if (k->object() && !write(".so", k->object()->data(), k->object()->size()))
      return fail(dir + ": cannot write " + k->name()->str() + ".so");
    if (k->ptx() && !write(".ptx", k->ptx()->c_str(), k->ptx()->size()))
      return fail(dir + ": cannot write " + k->name()->str() + ".ptx");
    if (k->cubin() && !write(".cubin", k->cubin()->data(), k->cubin()->size()))
      return fail(dir + ": cannot write " + k->name()->str() + ".cubin");
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string path, extractDir;
  bool asJson = false, checkWeights = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json")
      asJson = true;
    else if (a == "--verify-weights")
      checkWeights = true;
    else if (a.rfind("--extract-kernels=", 0) == 0)
      extractDir = a.substr(18);
    else if (a == "-h" || a == "--help") {
      std::printf("usage: k3-dump FILE.k3b [--json] [--verify-weights] [--extract-kernels=DIR]\n"
                  "What is inside a .k3b: the model, the cache geometry, the entry points and\n"
                  "what each returns, the kernels and the weights (MLIR-free).\n"
                  "  --json                 the same as one JSON object\n"
                  "  --verify-weights       check every weight blob's checksum\n"
                  "  --extract-kernels=DIR  write the kernel objects (CPU .so, GPU PTX and cubins)\n"
                  "  --help                 this text\n");
      return 0;
    } else if (a.size() > 1 && a[0] == '-')
      return fail("unknown flag '" + a + "' (see --help)");
    else if (path.empty())
      path = a;
    else
      return fail("more than one input file ('" + path + "', '" + a + "')");
  }
  if (path.empty())
    return fail("no input file (usage: k3-dump FILE.k3b [--json])");

  k3rt_bundle_t *bundle = nullptr;
  if (k3rt_status_t s = k3rt_bundle_open(path.c_str(), &bundle)) {
    int rc = fail(k3rt_status_message(s));
    k3rt_status_free(s);
    return rc;
  }
  int rc = 0;
  if (checkWeights)
    rc = verifyWeights(*bundle);
  if (!rc && !extractDir.empty())
    rc = extractKernels(*bundle, extractDir);
  if (!rc) {
    json j = describe(*bundle);
    if (asJson)
      // Strings are checked to be printable, not to be UTF-8: replace any
      // invalid sequence rather than abort.
      std::cout << j.dump(1, ' ', false, json::error_handler_t::replace)
                << "\n";
    else
      printText(j, path);
  }
  k3rt_bundle_release(bundle);
  return rc;
}
