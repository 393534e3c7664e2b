//===- TensorTable.cpp - Every text tensor of a K3 checkpoint -------------===//
//
// Part of k3. Mirrors K3_CHECKPOINT.md §3 table by table.
//
//===----------------------------------------------------------------------===//

#include "lib/Model/TensorTable.h"

#include <fstream>
#include <sstream>
#include <string_view>

namespace k3::model {

const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "F32";
  case DType::BF16:
    return "BF16";
  case DType::F16:
    return "F16";
  case DType::U8:
    return "U8";
  }
  return "?";
}

bool parseDType(const std::string &s, DType &out) {
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::U8})
    if (s == dtypeName(t)) {
      out = t;
      return true;
    }
  return false;
}

int64_t dtypeBytes(DType t) {
  switch (t) {
  case DType::F32:
    return 4;
  case DType::BF16:
  case DType::F16:
    return 2;
  case DType::U8:
    return 1;
  }
  return 0;
}

int64_t numElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t storedALogLength(const Config &c) {
  return (c.kdaHeads + 127) / 128 * 128;
}

bool readTextFile(const std::string &path, std::string &text,
                  std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open";
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  text = ss.str();
  return true;
}

bool isPackableLinear(const TensorSpec &s) {
  return !s.packed && !s.scale && s.shape.size() == 2 &&
         endsWith(s.name, ".weight") && s.name != "embed_tokens.weight";
}

namespace {

/// Appends the `weight_packed` / `weight_scale` pair of the linear
/// `<base>.weight` [rows, cols] to `out`, built in place (K3's table has
/// half a million of them).
void appendPackedPair(std::vector<TensorSpec> &out, std::string_view base, int64_t rows,
                      int64_t cols, int64_t parameters, bool isHead) {
  TensorSpec &packed = out.emplace_back();
  packed.name.append(base).append(".weight_packed");
  packed.shape = {rows, cols / 2};
  packed.dtype = DType::U8;
  packed.packed = true;
  packed.parameters = parameters;
  packed.isHead = isHead;
  TensorSpec &scale = out.emplace_back();
  scale.name.append(base).append(".weight_scale");
  scale.shape = {rows, cols / 32};
  scale.dtype = DType::U8;
  scale.scale = true;
  scale.isHead = isHead;
}

} // namespace

std::vector<TensorSpec> packedPair(const TensorSpec &linear) {
  std::vector<TensorSpec> pair;
  pair.reserve(2);
  appendPackedPair(pair, std::string_view(linear.name).substr(0, linear.name.size() - 7),
                   linear.shape[0], linear.shape[1], linear.parameters, linear.isHead);
  return pair;
}

namespace {

/// Appends tensors with release dtypes and parameter counts.
struct Builder {
  std::vector<TensorSpec> out;
  /// Counting only (expectedParameters): the sum, no table.
  bool keep = true;
  int64_t total = 0;
  bool overflow = false;

  void add(std::string name, std::vector<int64_t> shape,
           DType dtype = DType::BF16) {
    if (!keep) {
      overflow |= __builtin_add_overflow(total, numElements(shape), &total);
      return;
    }
    TensorSpec t;
    t.parameters = numElements(shape);
    t.name = std::move(name);
    t.shape = std::move(shape);
    t.dtype = dtype;
    out.push_back(std::move(t));
  }

  /// A linear weight `[rows, cols]` in the expert format: `.weight`, or
  /// `.weight_packed [rows, cols/2]` + `.weight_scale [rows, cols/32]`.
  void linear(const std::string &base, int64_t rows, int64_t cols,
              ExpertFormat fmt) {
    if (fmt != ExpertFormat::MXFP4) {
      add(base + ".weight", {rows, cols},
          fmt == ExpertFormat::F32 ? DType::F32 : DType::BF16);
      return;
    }
    if (!keep) {
      add(base, {rows, cols});
      return;
    }
    appendPackedPair(out, base, rows, cols, rows * cols, /*isHead=*/false);
  }
};

/// Every text tensor of `c` into `b`, in the table's order.
void build(Builder &b, const Config &c, ExpertFormat experts) {
  const int64_t d = c.hiddenSize;
  // The two releases store the small KDA and router tensors differently
  // (KIMI_LINEAR.md, K3_CHECKPOINT.md §3).
  const bool kimiLinear = c.layout == Layout::KimiLinear;
  const DType small = kimiLinear ? DType::BF16 : DType::F32;
  b.add("embed_tokens.weight", {c.vocabSize, d});
  b.add("norm.weight", {d});
  if (c.attnResBlockSize) {
    b.add("output_attn_res_norm.weight", {d});
    b.add("output_attn_res_proj.weight", {1, d});
  }
  if (!c.tieWordEmbeddings) {
    b.add("lm_head.weight", {c.vocabSize, d});
    if (b.keep)
      b.out.back().isHead = true;
  }

  for (int64_t l = 0; l < c.numLayers; ++l) {
    const std::string lp = "layers." + std::to_string(l) + ".";
    b.add(lp + "input_layernorm.weight", {d});
    b.add(lp + "post_attention_layernorm.weight", {d});
    if (c.attnResBlockSize) {
      b.add(lp + "self_attention_res_norm.weight", {d});
      b.add(lp + "self_attention_res_proj.weight", {1, d});
      b.add(lp + "mlp_res_norm.weight", {d});
      b.add(lp + "mlp_res_proj.weight", {1, d});
    }

    const std::string at = lp + "self_attn.";
    if (c.mixer(l) == Mixer::KDA) {
      const int64_t p = c.kdaProjWidth(), dk = c.kdaHeadDim;
      for (const char *x : {"q", "k", "v"})
        b.add(at + x + "_proj.weight", {p, d});
      for (const char *x : {"q", "k", "v"})
        b.add(at + x + "_conv1d.weight", {p, 1, c.convKernelSize}, small);
      b.add(at + "f_a_proj.weight", {dk, d});
      b.add(at + "f_b_proj.weight", {p, dk});
      b.add(at + "dt_bias", {p}, DType::F32);
      if (kimiLinear)
        b.add(at + "A_log", {1, 1, c.kdaHeads, 1}, DType::F32);
      else
        b.add(at + "A_log", {storedALogLength(c)}, DType::F32);
      b.add(at + "b_proj.weight", {c.kdaHeads, d});
      if (c.fullRankOutputGate) {
        b.add(at + "g_proj.weight", {p, d});
      } else {
        b.add(at + "g_a_proj.weight", {dk, d});
        b.add(at + "g_b_proj.weight", {p, dk});
      }
      b.add(at + "o_norm.weight", {dk}, small);
      b.add(at + "o_proj.weight", {d, p});
    } else {
      const int64_t h = c.mlaHeads;
      const int64_t qWidth = h * (c.qkNopeHeadDim + c.qkRopeHeadDim);
      if (c.qLoraRank) {
        b.add(at + "q_a_proj.weight", {*c.qLoraRank, d});
        b.add(at + "q_a_layernorm.weight", {*c.qLoraRank});
        b.add(at + "q_b_proj.weight", {qWidth, *c.qLoraRank});
      } else {
        b.add(at + "q_proj.weight", {qWidth, d});
      }
      b.add(at + "kv_a_proj_with_mqa.weight", {c.mlaCacheWidth(), d});
      b.add(at + "kv_a_layernorm.weight", {c.kvLoraRank});
      b.add(at + "kv_b_proj.weight",
            {h * (c.qkNopeHeadDim + c.vHeadDim), c.kvLoraRank});
      if (c.mlaOutputGate)
        b.add(at + "g_proj.weight", {h * c.vHeadDim, d});
      b.add(at + "o_proj.weight", {d, h * c.vHeadDim});
    }

    if (c.ffn(l) == FFN::Dense) {
      const std::string mp = lp + "mlp.";
      b.add(mp + "gate_proj.weight", {c.intermediateSize, d});
      b.add(mp + "up_proj.weight", {c.intermediateSize, d});
      b.add(mp + "down_proj.weight", {d, c.intermediateSize});
      continue;
    }
    const std::string mp = lp + "block_sparse_moe.";
    const int64_t dl = c.expertWidth(), ie = c.moeIntermediateSize;
    b.add(mp + "gate.weight", {c.numExperts, d});
    b.add(mp + "gate.e_score_correction_bias", {c.numExperts}, small);
    for (int64_t e = 0; e < c.numExperts; ++e) {
      const std::string ep = mp + "experts." + std::to_string(e) + ".";
      b.linear(ep + "w1", ie, dl, experts);
      b.linear(ep + "w3", ie, dl, experts);
      b.linear(ep + "w2", dl, ie, experts);
    }
    if (c.routedExpertHiddenSize) {
      b.add(mp + "routed_expert_down_proj.weight", {dl, d});
      b.add(mp + "routed_expert_up_proj.weight", {d, dl});
      if (c.latentMoeUseNorm)
        b.add(mp + "routed_expert_norm.weight", {dl});
    }
    if (c.numSharedExperts > 0) {
      const int64_t is = ie * c.numSharedExperts;
      b.add(mp + "shared_experts.gate_proj.weight", {is, d});
      b.add(mp + "shared_experts.up_proj.weight", {is, d});
      b.add(mp + "shared_experts.down_proj.weight", {d, is});
    }
  }
}

} // namespace

std::vector<TensorSpec> expectedTensors(const Config &c, ExpertFormat experts) {
  Builder b;
  b.out.reserve(16 + c.numLayers * (48 + 6 * std::max<int64_t>(c.numExperts, 0)));
  build(b, c, experts);
  return std::move(b.out);
}

bool expectedParameters(const Config &c, ExpertFormat experts, int64_t &total) {
  Builder b;
  b.keep = false;
  build(b, c, experts);
  total = b.total;
  return !b.overflow;
}

} // namespace k3::model
