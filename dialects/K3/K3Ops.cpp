//===- K3Ops.cpp - Ops of the K3 dialect ----------------------------------===//
//
// Part of k3. Verifiers of the model-level ops. Every message names the
// operand, the dimension and both sizes, so a user can fix the IR from the
// message alone.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::k3;

#include "dialects/K3/K3Enums.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/K3/K3Ops.cpp.inc"

namespace {

/// Extent `i` of a ranked tensor value.
int64_t extent(Value v, int64_t i) {
  return cast<RankedTensorType>(v.getType()).getDimSize(i);
}
int64_t rankOf(Value v) { return cast<RankedTensorType>(v.getType()).getRank(); }
Type elementOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

/// Extents agree unless both are static and differ: shapes are checked as far
/// as they are known, and a dynamic T is the normal case at model level.
bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// Prints a shape as `[?, 4, 16]`.
std::string formatShape(Value v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << '[';
  llvm::interleaveComma(cast<RankedTensorType>(v.getType()).getShape(), os,
                        [&](int64_t d) {
                          if (ShapedType::isDynamic(d))
                            os << '?';
                          else
                            os << d;
                        });
  os << ']';
  return s;
}

/// Prints an attribute value the way a user wrote it: `-25`, `1e-05`.
std::string formatFloat(float value) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%g", value);
  return s;
}

/// Fluent checker shared by the verifiers. The first violated rule emits one
/// error on the op; later rules are skipped so that one mistake gives one
/// line, not a cascade.
class Checker {
public:
  explicit Checker(Operation *op) : op(op) {}

  /// Requires `v` to have one dimension per entry of `layout`, whose names
  /// are then used in later messages about `v`.
  Checker &rank(Value v, StringRef name, ArrayRef<StringRef> layout) {
    if (failed)
      return *this;
    if (rankOf(v) != static_cast<int64_t>(layout.size())) {
      auto diag = fail();
      diag << name << " must have rank " << layout.size() << " [";
      llvm::interleaveComma(layout, diag);
      diag << "], got rank " << rankOf(v);
      return *this;
    }
    layouts[v.getAsOpaquePointer()].assign(layout.begin(), layout.end());
    return *this;
  }

  /// Requires rank >= 1; the last dimension is the normalised/contracted one.
  Checker &hasLastDim(Value v, StringRef name) {
    if (!failed && rankOf(v) < 1)
      fail() << name << " must have rank >= 1 [..., D], got rank 0";
    return *this;
  }

  /// Requires extent `i` of `v` to equal `expected`, taken from `source`.
  Checker &dim(Value v, StringRef name, int64_t i, int64_t expected,
               const Twine &source) {
    if (failed || compatible(extent(v, i), expected))
      return *this;
    auto diag = fail();
    diag << name << " dim " << i;
    auto it = layouts.find(v.getAsOpaquePointer());
    if (it != layouts.end())
      diag << " (" << it->second[i] << ")";
    diag << " is " << extent(v, i) << ", expected " << expected << " from "
         << source;
    return *this;
  }

  /// Requires `a` and `b` to have the same rank and compatible extents.
  Checker &sameShape(Value a, StringRef nameA, Value b, StringRef nameB) {
    if (failed)
      return *this;
    bool ok = rankOf(a) == rankOf(b);
    for (int64_t i = 0; ok && i < rankOf(a); ++i)
      ok = compatible(extent(a, i), extent(b, i));
    if (!ok)
      fail() << nameA << " shape " << formatShape(a) << " does not match "
             << nameB << " shape " << formatShape(b);
    return *this;
  }

  /// Requires a strictly positive, finite attribute value.
  Checker &positive(float value, StringRef name) {
    if (!failed && !(std::isfinite(value) && value > 0.0f))
      fail() << name << " must be positive and finite, got "
             << formatFloat(value);
    return *this;
  }

  /// Requires `ok`; otherwise `describe` writes the message.
  Checker &require(bool ok,
                   llvm::function_ref<void(InFlightDiagnostic &)> describe) {
    if (!failed && !ok) {
      auto diag = fail();
      describe(diag);
    }
    return *this;
  }

  /// Requires `scales` to be the MXFP4 block scales of `weight` when `weight`
  /// is f4E2M1FN, and absent otherwise. Blocks of 32 run along the last
  /// (input) dimension, as in the checkpoint's `weight_scale`.
  Checker &mxScales(Value weight, StringRef weightName, Value scales,
                    StringRef scalesName) {
    if (failed)
      return *this;
    bool quantized = isa<Float4E2M1FNType>(elementOf(weight));
    if (!quantized) {
      if (scales)
        fail() << scalesName << " given for " << weightName << " of type "
               << elementOf(weight) << "; only f4E2M1FN weights take scales";
      return *this;
    }
    if (!scales) {
      fail() << "f4E2M1FN " << weightName << " needs " << scalesName;
      return *this;
    }
    int64_t r = rankOf(weight);
    int64_t k = extent(weight, r - 1);
    if (!ShapedType::isDynamic(k) && k % 32 != 0) {
      fail() << weightName << " input dim " << k
             << " is not a multiple of the MXFP4 block size 32";
      return *this;
    }
    if (rankOf(scales) != r) {
      fail() << scalesName << " must have rank " << r << " like "
             << weightName << ", got rank " << rankOf(scales);
      return *this;
    }
    for (int64_t i = 0; i + 1 < r; ++i)
      dim(scales, scalesName, i, extent(weight, i), weightName);
    return dim(scales, scalesName, r - 1,
               ShapedType::isDynamic(k) ? k : k / 32,
               Twine(weightName) + " input dim / 32");
  }

  operator LogicalResult() const { return success(!failed); }

private:
  InFlightDiagnostic fail() {
    failed = true;
    return op->emitOpError();
  }

  Operation *op;
  bool failed = false;
  llvm::DenseMap<void *, SmallVector<StringRef>> layouts;
};

/// Product of two extents, dynamic if either is.
int64_t mul(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b)
             ? ShapedType::kDynamic
             : a * b;
}
int64_t add(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b)
             ? ShapedType::kDynamic
             : a + b;
}
int64_t sub(int64_t a, int64_t b) { return add(a, ShapedType::isDynamic(b) ? b : -b); }

} // namespace

//===----------------------------------------------------------------------===//
// Plumbing
//===----------------------------------------------------------------------===//

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError("weight name must not be empty");
  return success();
}

LogicalResult EmbedOp::verify() {
  return Checker(*this)
      .rank(getIds(), "ids", {"T"})
      .rank(getTable(), "table", {"V", "D"})
      .rank(getOut(), "out", {"T", "D"})
      .dim(getOut(), "out", 0, extent(getIds(), 0), "ids")
      .dim(getOut(), "out", 1, extent(getTable(), 1), "table");
}

LogicalResult RmsNormOp::verify() {
  Value x = getX();
  Checker c(*this);
  c.hasLastDim(x, "x")
      .rank(getWeight(), "weight", {"D"})
      .positive(getEps().convertToFloat(), "eps");
  if (rankOf(x) >= 1)
    c.dim(getWeight(), "weight", 0, extent(x, rankOf(x) - 1), "x");
  if (getGate())
    c.sameShape(getGate(), "gate", x, "x");
  return c.sameShape(getY(), "y", x, "x");
}

LogicalResult L2NormOp::verify() {
  return Checker(*this).hasLastDim(getX(), "x").positive(
      getEps().convertToFloat(), "eps");
}

LogicalResult LinearOp::verify() {
  Value x = getX(), w = getWeight(), y = getY();
  Checker c(*this);
  c.hasLastDim(x, "x").rank(w, "weight", {"N", "K"});
  if (failed(LogicalResult(c)))
    return failure();
  int64_t r = rankOf(x);
  c.dim(w, "weight", 1, extent(x, r - 1), "x")
      .require(rankOf(y) == r,
               [&](InFlightDiagnostic &d) {
                 d << "y must have rank " << r << " like x, got rank "
                   << rankOf(y);
               })
      .mxScales(w, "weight", getScales(), "scales");
  if (failed(LogicalResult(c)))
    return failure();
  for (int64_t i = 0; i + 1 < r; ++i)
    c.dim(y, "y", i, extent(x, i), "x");
  return c.dim(y, "y", r - 1, extent(w, 0), "weight");
}

LogicalResult LmHeadOp::verify() {
  return Checker(*this)
      .rank(getX(), "x", {"T", "D"})
      .rank(getWeight(), "weight", {"V", "D"})
      .rank(getLogits(), "logits", {"T", "V"})
      .dim(getWeight(), "weight", 1, extent(getX(), 1), "x")
      .dim(getLogits(), "logits", 0, extent(getX(), 0), "x")
      .dim(getLogits(), "logits", 1, extent(getWeight(), 0), "weight");
}

//===----------------------------------------------------------------------===//
// Token mixing
//===----------------------------------------------------------------------===//

LogicalResult ShortConvOp::verify() {
  Value x = getX(), w = getWeight(), s = getState();
  Checker c(*this);
  c.rank(x, "x", {"T", "C"})
      .rank(w, "weight", {"C", "W"})
      .rank(s, "state", {"W-1", "C"});
  if (failed(LogicalResult(c)))
    return failure();
  int64_t width = extent(w, 1);
  return c.dim(w, "weight", 0, extent(x, 1), "x")
      .require(ShapedType::isDynamic(width) || width >= 1,
               [&](InFlightDiagnostic &d) {
                 d << "kernel width " << width << " must be at least 1";
               })
      .dim(s, "state", 0, sub(width, 1), "weight width - 1")
      .dim(s, "state", 1, extent(x, 1), "x")
      .sameShape(getY(), "y", x, "x")
      .sameShape(getNewState(), "new_state", s, "state");
}

LogicalResult KdaGateOp::verify() {
  std::optional<float> lb;
  if (getLbAttr())
    lb = getLbAttr().getValue().convertToFloat();
  Value x = getX();
  return Checker(*this)
      .require(getForm() != KdaGateForm::lower_bound || lb.has_value(),
               [](InFlightDiagnostic &d) {
                 d << "lower_bound gate needs an lb attribute";
               })
      .require(!lb || getForm() != KdaGateForm::softplus,
               [&](InFlightDiagnostic &d) {
                 d << "softplus gate takes no lb, got " << formatFloat(*lb);
               })
      .require(!lb || (std::isfinite(*lb) && *lb < 0.0f),
               [&](InFlightDiagnostic &d) {
                 d << "lb must be negative and finite, got " << formatFloat(*lb);
               })
      .rank(x, "x", {"T", "H", "K"})
      .rank(getALog(), "a_log", {"H"})
      .rank(getDtBias(), "dt_bias", {"H", "K"})
      .dim(getALog(), "a_log", 0, extent(x, 1), "x")
      .dim(getDtBias(), "dt_bias", 0, extent(x, 1), "x")
      .dim(getDtBias(), "dt_bias", 1, extent(x, 2), "x")
      .sameShape(getG(), "g", x, "x");
}

LogicalResult KdaOp::verify() {
  Value q = getQ(), k = getK(), v = getV(), g = getG(), beta = getBeta(),
        s0 = getInitialState(), out = getOut();
  Checker c(*this);
  c.rank(q, "q", {"T", "H", "K"})
      .rank(k, "k", {"T", "H", "K"})
      .rank(v, "v", {"T", "HV", "V"})
      .rank(g, "g", {"T", "HV", "K"})
      .rank(beta, "beta", {"T", "HV"})
      .rank(s0, "initial_state", {"HV", "K", "V"})
      .rank(out, "out", {"T", "HV", "V"});
  if (failed(LogicalResult(c)))
    return failure();
  int64_t t = extent(q, 0), h = extent(q, 1), dk = extent(q, 2),
          hv = extent(v, 1), dv = extent(v, 2);
  return c.dim(k, "k", 0, t, "q")
      .dim(v, "v", 0, t, "q")
      .dim(g, "g", 0, t, "q")
      .dim(beta, "beta", 0, t, "q")
      .dim(out, "out", 0, t, "q")
      .dim(k, "k", 1, h, "q")
      .dim(k, "k", 2, dk, "q")
      .dim(g, "g", 2, dk, "q")
      .dim(s0, "initial_state", 1, dk, "q")
      .dim(g, "g", 1, hv, "v")
      .dim(beta, "beta", 1, hv, "v")
      .dim(s0, "initial_state", 0, hv, "v")
      .dim(out, "out", 1, hv, "v")
      .dim(s0, "initial_state", 2, dv, "v")
      .dim(out, "out", 2, dv, "v")
      .require(ShapedType::isDynamic(h) || ShapedType::isDynamic(hv) ||
                   (h > 0 && hv % h == 0),
               [&](InFlightDiagnostic &d) {
                 d << "value heads " << hv
                   << " are not a multiple of the q/k heads " << h;
               })
      .sameShape(getFinalState(), "final_state", s0, "initial_state")
      .positive(getScale().convertToFloat(), "scale");
}

LogicalResult MlaOp::verify() {
  Value q = getQ(), c = getLatent(), kr = getKRope(), kvb = getKvB(),
        cache = getCache(), out = getOut(), next = getNewCache();
  Checker ck(*this);
  ck.rank(q, "q", {"T", "H", "P+R"})
      .rank(c, "latent", {"T", "L"})
      .rank(kr, "k_rope", {"T", "R"})
      .rank(kvb, "kv_b", {"H*(P+Vd)", "L"})
      .rank(cache, "cache", {"S", "L+R"})
      .rank(out, "out", {"T", "H", "Vd"})
      .rank(next, "new_cache", {"S+T", "L+R"});
  if (failed(LogicalResult(ck)))
    return failure();
  int64_t t = extent(q, 0), h = extent(q, 1), l = extent(c, 1),
          r = extent(kr, 1), p = sub(extent(q, 2), r), vd = extent(out, 2);
  ck.dim(c, "latent", 0, t, "q")
      .dim(kr, "k_rope", 0, t, "q")
      .dim(out, "out", 0, t, "q")
      .dim(out, "out", 1, h, "q")
      .require(ShapedType::isDynamic(p) || p > 0,
               [&](InFlightDiagnostic &d) {
                 d << "q head dim " << extent(q, 2)
                   << " must exceed the shared key dim " << r
                   << " (q rows are [nope | rope])";
               })
      .dim(kvb, "kv_b", 1, l, "latent")
      .dim(kvb, "kv_b", 0, mul(h, add(p, vd)), "heads * (nope + value dims)")
      .dim(cache, "cache", 1, add(l, r), "latent + k_rope dims")
      .dim(next, "new_cache", 1, add(l, r), "latent + k_rope dims")
      .dim(next, "new_cache", 0, add(extent(cache, 0), t),
           "cached + new tokens");
  if (getGate())
    ck.sameShape(getGate(), "gate", out, "out");
  return ck.positive(getScale().convertToFloat(), "scale");
}

//===----------------------------------------------------------------------===//
// Channel mixing
//===----------------------------------------------------------------------===//

LogicalResult RouterOp::verify() {
  Value x = getX(), w = getWeight();
  Checker c(*this);
  c.rank(x, "x", {"T", "D"})
      .rank(w, "weight", {"E", "D"})
      .rank(getIndices(), "indices", {"T", "k"})
      .rank(getWeights(), "weights", {"T", "k"});
  if (failed(LogicalResult(c)))
    return failure();
  int64_t e = extent(w, 0), topK = getTopK();
  c.dim(w, "weight", 1, extent(x, 1), "x");
  if (getBias())
    c.rank(getBias(), "bias", {"E"}).dim(getBias(), "bias", 0, e, "weight");
  return c
      .require(topK >= 1,
               [&](InFlightDiagnostic &d) {
                 d << "top_k must be at least 1, got " << topK;
               })
      .require(ShapedType::isDynamic(e) || topK <= e,
               [&](InFlightDiagnostic &d) {
                 d << "top_k " << topK << " exceeds the " << e << " experts";
               })
      .dim(getIndices(), "indices", 0, extent(x, 0), "x")
      .dim(getIndices(), "indices", 1, topK, "top_k")
      .dim(getWeights(), "weights", 0, extent(x, 0), "x")
      .dim(getWeights(), "weights", 1, topK, "top_k")
      .positive(getScaling().convertToFloat(), "scaling");
}

/// SiTU-GLU parameters shared by situ_glu, mlp and moe.
static Checker &checkSitu(Checker &c, FloatAttr beta1, FloatAttr beta2) {
  c.positive(beta1.getValue().convertToFloat(), "beta1");
  if (beta2)
    c.positive(beta2.getValue().convertToFloat(), "beta2");
  return c;
}

LogicalResult SituGluOp::verify() {
  Checker c(*this);
  return checkSitu(c, getBeta1Attr(), getBeta2Attr());
}

LogicalResult MlpOp::verify() {
  Value x = getX();
  Checker c(*this);
  c.rank(x, "x", {"T", "D"})
      .rank(getGateProj(), "gate_proj", {"I", "D"})
      .rank(getUpProj(), "up_proj", {"I", "D"})
      .rank(getDownProj(), "down_proj", {"D", "I"});
  if (failed(LogicalResult(c)))
    return failure();
  int64_t d = extent(x, 1), i = extent(getGateProj(), 0);
  c.dim(getGateProj(), "gate_proj", 1, d, "x")
      .dim(getUpProj(), "up_proj", 0, i, "gate_proj")
      .dim(getUpProj(), "up_proj", 1, d, "x")
      .dim(getDownProj(), "down_proj", 0, d, "x")
      .dim(getDownProj(), "down_proj", 1, i, "gate_proj")
      .sameShape(getY(), "y", x, "x");
  return checkSitu(c, getBeta1Attr(), getBeta2Attr());
}

LogicalResult MoeOp::verify() {
  Value x = getX(), idx = getIndices(), w1 = getW1(), w3 = getW3(),
        w2 = getW2();
  Value down = getLatentDown(), up = getLatentUp(), norm = getNorm();
  Value sg = getSharedGate(), su = getSharedUp(), sd = getSharedDown();
  Checker c(*this);
  c.rank(x, "x", {"T", "D"})
      .rank(idx, "indices", {"T", "k"})
      .rank(getWeights(), "weights", {"T", "k"})
      .require(static_cast<bool>(down) == static_cast<bool>(up),
               [](InFlightDiagnostic &d) {
                 d << "latent needs both latent_down and latent_up";
               })
      .require(!norm || down, [](InFlightDiagnostic &d) {
        d << "norm applies to the latent combine and needs latent(...)";
      })
      .require(static_cast<bool>(sg) == static_cast<bool>(su) &&
                   static_cast<bool>(su) == static_cast<bool>(sd),
               [](InFlightDiagnostic &d) {
                 d << "shared experts need shared_gate, shared_up and "
                      "shared_down together";
               })
      .rank(w1, "w1", {"E", "Ie", "Dl"})
      .rank(w3, "w3", {"E", "Ie", "Dl"})
      .rank(w2, "w2", {"E", "Dl", "Ie"});
  if (failed(LogicalResult(c)))
    return failure();
  int64_t t = extent(x, 0), d = extent(x, 1);
  c.dim(idx, "indices", 0, t, "x")
      .dim(getWeights(), "weights", 0, t, "x")
      .dim(getWeights(), "weights", 1, extent(idx, 1), "indices");
  int64_t dl = d;
  StringRef dlSource = "x";
  if (down) {
    c.rank(down, "latent_down", {"Dl", "D"}).rank(up, "latent_up", {"D", "Dl"});
    if (failed(LogicalResult(c)))
      return failure();
    dl = extent(down, 0);
    dlSource = "latent_down";
    c.dim(down, "latent_down", 1, d, "x")
        .dim(up, "latent_up", 0, d, "x")
        .dim(up, "latent_up", 1, dl, "latent_down");
    if (norm)
      c.rank(norm, "norm", {"Dl"}).dim(norm, "norm", 0, dl, "latent_down");
  }
  int64_t e = extent(w1, 0), ie = extent(w1, 1), k = extent(idx, 1);
  c.dim(w1, "w1", 2, dl, dlSource)
      .sameShape(w3, "w3", w1, "w1")
      .dim(w2, "w2", 0, e, "w1")
      .dim(w2, "w2", 1, dl, dlSource)
      .dim(w2, "w2", 2, ie, "w1")
      .require(ShapedType::isDynamic(k) || ShapedType::isDynamic(e) || k <= e,
               [&](InFlightDiagnostic &diag) {
                 diag << "top-k " << k << " exceeds the " << e << " experts";
               })
      .require(elementOf(w3) == elementOf(w1) &&
                   elementOf(w2) == elementOf(w1),
               [&](InFlightDiagnostic &diag) {
                 diag << "experts must share one element type, got w1 "
                      << elementOf(w1) << ", w3 " << elementOf(w3) << ", w2 "
                      << elementOf(w2);
               })
      .mxScales(w1, "w1", getW1Scale(), "w1_scale")
      .mxScales(w3, "w3", getW3Scale(), "w3_scale")
      .mxScales(w2, "w2", getW2Scale(), "w2_scale");
  if (sg) {
    c.rank(sg, "shared_gate", {"Is", "D"})
        .rank(su, "shared_up", {"Is", "D"})
        .rank(sd, "shared_down", {"D", "Is"});
    if (failed(LogicalResult(c)))
      return failure();
    int64_t is = extent(sg, 0);
    c.dim(sg, "shared_gate", 1, d, "x")
        .dim(su, "shared_up", 0, is, "shared_gate")
        .dim(su, "shared_up", 1, d, "x")
        .dim(sd, "shared_down", 0, d, "x")
        .dim(sd, "shared_down", 1, is, "shared_gate");
  }
  c.sameShape(getY(), "y", x, "x").positive(getEps().convertToFloat(), "eps");
  return checkSitu(c, getBeta1Attr(), getBeta2Attr());
}

//===----------------------------------------------------------------------===//
// Depth mixing
//===----------------------------------------------------------------------===//

LogicalResult AttnResOp::verify() {
  Value out = getOut();
  Checker c(*this);
  c.require(!getSources().empty(),
            [](InFlightDiagnostic &d) {
              d << "needs at least one source (the running sum)";
            })
      .rank(out, "out", {"T", "D"})
      .rank(getNormWeight(), "norm", {"D"})
      .rank(getQuery(), "query", {"D"});
  if (failed(LogicalResult(c)))
    return failure();
  for (auto [i, src] : llvm::enumerate(getSources())) {
    SmallString<16> name;
    llvm::raw_svector_ostream(name) << "source " << i;
    c.sameShape(src, name, out, "out");
  }
  return c.dim(getNormWeight(), "norm", 0, extent(out, 1), "out")
      .dim(getQuery(), "query", 0, extent(out, 1), "out")
      .positive(getEps().convertToFloat(), "eps");
}
