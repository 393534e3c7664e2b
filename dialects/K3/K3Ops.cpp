//===- K3Ops.cpp - Ops of the K3 dialect ----------------------------------===//
//
// Part of k3. Verifiers of the model-level ops. Every message names the
// operand, the dimension and both sizes, so a user can fix the IR from the
// message alone.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::k3;

#include "dialects/K3/K3Enums.cpp.inc"

Value mlir::k3::createGlu(OpBuilder &b, Location loc, Type type, Value gate, Value up,
                          GluActivation act, FloatAttr beta1, FloatAttr beta2) {
  if (act == GluActivation::silu)
    return SwiGluOp::create(b, loc, type, gate, up);
  return SituGluOp::create(b, loc, type, gate, up, beta1, beta2);
}

#define GET_OP_CLASSES
#include "dialects/K3/K3Ops.cpp.inc"

namespace {

/// Extent `i` of a ranked tensor (or, for k3.attend_parts, memref) value;
/// dynamic when `i` is out of range, so that a later rule never reads past a
/// rank an earlier rule rejected.
int64_t extent(Value v, int64_t i) {
  auto type = cast<ShapedType>(v.getType());
  return i >= 0 && i < type.getRank() ? type.getDimSize(i) : ShapedType::kDynamic;
}
int64_t rankOf(Value v) { return cast<ShapedType>(v.getType()).getRank(); }
Type elementOf(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}
bool isStatic(int64_t d) { return !ShapedType::isDynamic(d); }

/// Prints a shape as `[?, 4, 16]`.
std::string formatShape(Value v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << '[';
  llvm::interleaveComma(cast<ShapedType>(v.getType()).getShape(), os,
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

/// One dimension of one operand: `{q, "q", 0}` is q's token count.
struct DimRef {
  Value v;
  StringRef name;
  int64_t dim;
};

/// Fluent checker shared by the verifiers. The first violated rule emits one
/// error on the op; later rules are skipped so that one mistake gives one
/// line, not a cascade. Shapes are checked as far as they are known: a
/// dynamic T is the normal case at model level.
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

  /// Requires extent `i` of `v` to equal `expected` (from `source`) when
  /// both are static.
  Checker &dim(Value v, StringRef name, int64_t i, int64_t expected,
               const Twine &source) {
    int64_t actual = extent(v, i);
    if (failed || !isStatic(actual) || !isStatic(expected) || actual == expected)
      return *this;
    auto diag = fail();
    diag << name << " dim " << i;
    auto it = layouts.find(v.getAsOpaquePointer());
    if (it != layouts.end() && i < static_cast<int64_t>(it->second.size()))
      diag << " (" << it->second[i] << ")";
    diag << " is " << actual << ", expected " << expected << " from "
         << source;
    return *this;
  }

  /// Requires every listed extent to agree. The first static one is the
  /// reference, so a dynamic first operand never hides a mismatch between
  /// the others. Returns the common extent (dynamic if none is static).
  int64_t agree(ArrayRef<DimRef> refs) {
    const DimRef *ref = nullptr;
    for (const DimRef &r : refs)
      if (r.v && isStatic(extent(r.v, r.dim))) {
        ref = &r;
        break;
      }
    if (!ref)
      return ShapedType::kDynamic;
    int64_t expected = extent(ref->v, ref->dim);
    for (const DimRef &r : refs)
      if (r.v)
        dim(r.v, r.name, r.dim, expected, ref->name);
    return expected;
  }

  /// Requires all `values` to have one shape: equal ranks, and per dimension
  /// the first static extent as the reference.
  Checker &sameShape(ArrayRef<std::pair<Value, StringRef>> values) {
    if (failed || values.empty())
      return *this;
    auto [first, firstName] = values.front();
    for (int64_t i = 0; !failed && i < rankOf(first); ++i) {
      const std::pair<Value, StringRef> *ref = nullptr;
      for (const auto &v : values)
        if (rankOf(v.first) > i && isStatic(extent(v.first, i))) {
          ref = &v;
          break;
        }
      for (const auto &v : values)
        if (!failed && rankOf(v.first) != rankOf(first))
          shapeMismatch(v.first, v.second, first, firstName);
        else if (!failed && ref && isStatic(extent(v.first, i)) &&
                 extent(v.first, i) != extent(ref->first, i))
          shapeMismatch(v.first, v.second, ref->first, ref->second);
    }
    return *this;
  }
  Checker &sameShape(Value a, StringRef nameA, Value b, StringRef nameB) {
    return sameShape({{b, nameB}, {a, nameA}});
  }

  /// Requires a strictly positive, finite attribute value.
  Checker &positive(float value, StringRef name) {
    if (!failed && !(std::isfinite(value) && value > 0.0f))
      fail() << name << " must be positive and finite, got "
             << formatFloat(value);
    return *this;
  }

  /// Requires an optional attribute value to be finite where present.
  Checker &finite(std::optional<APFloat> value, StringRef name) {
    if (!failed && value && !std::isfinite(value->convertToFloat()))
      fail() << name << " must be finite, got " << formatFloat(value->convertToFloat());
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
    if (isStatic(k) && k % 32 != 0) {
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
      agree({{weight, weightName, i}, {scales, scalesName, i}});
    return dim(scales, scalesName, r - 1,
               isStatic(k) ? k / 32 : k, Twine(weightName) + " input dim / 32");
  }

  bool ok() const { return !failed; }
  operator LogicalResult() const { return success(!failed); }

private:
  InFlightDiagnostic fail() {
    failed = true;
    return op->emitOpError();
  }
  void shapeMismatch(Value v, StringRef name, Value ref, StringRef refName) {
    fail() << name << " shape " << formatShape(v) << " does not match "
           << refName << " shape " << formatShape(ref);
  }

  Operation *op;
  bool failed = false;
  llvm::DenseMap<void *, SmallVector<StringRef>> layouts;
};

/// SiTU-GLU parameters shared by situ_glu, mlp and moe.
static Checker &checkSitu(Checker &c, FloatAttr beta1, FloatAttr beta2) {
  c.positive(beta1.getValue().convertToFloat(), "beta1");
  if (beta2)
    c.positive(beta2.getValue().convertToFloat(), "beta2");
  return c;
}

/// The GLU of mlp, moe and moe_experts: SiTU-GLU needs its beta1 (beta2
/// optional); SwiGLU has no parameters, so betas on it are a mistake (they
/// would be silently ignored).
static Checker &checkGlu(Checker &c, GluActivation act, FloatAttr beta1, FloatAttr beta2) {
  if (act == GluActivation::silu)
    return c.require(!beta1 && !beta2, [](InFlightDiagnostic &d) {
      d << "activation silu (SwiGLU) takes no beta1/beta2";
    });
  c.require(static_cast<bool>(beta1), [](InFlightDiagnostic &d) {
    d << "activation situ (SiTU-GLU) needs beta1";
  });
  return beta1 ? checkSitu(c, beta1, beta2) : c;
}



/// Sum / product of extents, dynamic if either is.
int64_t add(int64_t a, int64_t b) {
  return isStatic(a) && isStatic(b) ? a + b : ShapedType::kDynamic;
}
int64_t mul(int64_t a, int64_t b) {
  return isStatic(a) && isStatic(b) ? a * b : ShapedType::kDynamic;
}
int64_t sub(int64_t a, int64_t b) {
  return isStatic(a) && isStatic(b) ? a - b : ShapedType::kDynamic;
}

} // namespace

//===----------------------------------------------------------------------===//
// Plumbing
//===----------------------------------------------------------------------===//

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError("weight name must not be empty");
  if (getSplitDim().has_value() != getSplitAxes().has_value())
    return emitOpError("split_dim and split_axes go together");
  if (auto dim = getSplitDim()) {
    int64_t rank = getType().getRank();
    if (*dim < 0 || *dim >= rank)
      return emitOpError() << "split_dim " << *dim << " is not a dimension of its rank-"
                           << rank << " type";
    if (getSplitAxes()->empty())
      return emitOpError("split_axes must name at least one grid axis");
  }
  return success();
}

/// The bytes of a static, byte-sized tensor type, or nullopt.
static std::optional<int64_t> denseBytes(RankedTensorType t) {
  if (!t.hasStaticShape() || !t.getElementType().isIntOrFloat() ||
      t.getElementType().getIntOrFloatBitWidth() % 8 != 0)
    return std::nullopt;
  int64_t bytes = t.getElementType().getIntOrFloatBitWidth() / 8;
  for (int64_t d : t.getShape())
    if (auto next = llvm::checkedMul(bytes, d))
      bytes = *next;
    else
      return std::nullopt;
  return bytes;
}

LogicalResult WeightViewOp::verify() {
  auto pack = cast<RankedTensorType>(getPack().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (pack.getRank() != 1 || pack.isDynamicDim(0))
    return emitOpError() << "pack must be a static 1-D tensor of bytes, got " << pack;
  std::optional<int64_t> bytes = denseBytes(out);
  if (!bytes)
    return emitOpError() << "result must have a static shape and whole-byte elements, got "
                         << out << (out.hasStaticShape() ? " (or more bytes than int64)" : "");
  const int64_t element = out.getElementType().getIntOrFloatBitWidth() / 8;
  const int64_t offset = getOffset();
  if (offset < 0 || offset % element != 0)
    return emitOpError() << "offset " << offset << " must be a non-negative multiple of the "
                         << element << "-byte element";
  if (*bytes > pack.getDimSize(0) || offset > pack.getDimSize(0) - *bytes)
    return emitOpError() << "its " << *bytes << " bytes at offset " << offset
                         << " lie outside the " << pack.getDimSize(0) << "-byte pack";
  return success();
}

// A view: it neither reads nor writes, and its buffer is part of the pack's.
bool WeightViewOp::bufferizesToMemoryRead(OpOperand &, const bufferization::AnalysisState &) {
  return false;
}

bool WeightViewOp::bufferizesToMemoryWrite(OpOperand &, const bufferization::AnalysisState &) {
  return false;
}

bufferization::AliasingValueList
WeightViewOp::getAliasingValues(OpOperand &, const bufferization::AnalysisState &) {
  return {{getResult(), bufferization::BufferRelation::Unknown}};
}

FailureOr<bufferization::BufferLikeType>
WeightViewOp::getBufferType(Value value, const bufferization::BufferizationOptions &options,
                            const bufferization::BufferizationState &state,
                            SmallVector<Value> &invocationStack) {
  // memref.view makes a dense, row-major buffer in the pack's memory space.
  FailureOr<bufferization::BufferLikeType> pack =
      bufferization::getBufferType(getPack(), options, state, invocationStack);
  if (failed(pack))
    return failure();
  auto t = cast<RankedTensorType>(value.getType());
  return cast<bufferization::BufferLikeType>(MemRefType::get(
      t.getShape(), t.getElementType(), MemRefLayoutAttrInterface(),
      cast<MemRefType>(*pack).getMemorySpace()));
}

LogicalResult WeightViewOp::bufferize(RewriterBase &rewriter,
                                      const bufferization::BufferizationOptions &options,
                                      bufferization::BufferizationState &state) {
  FailureOr<Value> pack = bufferization::getBuffer(rewriter, getPack(), options, state);
  if (failed(pack))
    return failure();
  auto packType = cast<MemRefType>(pack->getType());
  // memref.view takes a contiguous, zero-offset byte buffer: a function
  // argument bufferized with identity layouts is one.
  if (!packType.getLayout().isIdentity())
    return emitOpError() << "pack buffer must have the identity layout, got " << packType;
  rewriter.setInsertionPoint(*this);
  Value shift = arith::ConstantIndexOp::create(rewriter, getLoc(), getOffset());
  auto t = cast<RankedTensorType>(getResult().getType());
  Value view = memref::ViewOp::create(
      rewriter, getLoc(),
      MemRefType::get(t.getShape(), t.getElementType(), MemRefLayoutAttrInterface(),
                      packType.getMemorySpace()),
      *pack, shift, ValueRange{});
  bufferization::replaceOpWithBufferizedValues(rewriter, *this, view);
  return success();
}

LogicalResult UnpackE2m1Op::verify() {
  auto in = cast<RankedTensorType>(getBytes().getType());
  auto out = cast<RankedTensorType>(getCodes().getType());
  if (in.getRank() == 0 || in.getRank() != out.getRank())
    return emitOpError() << "bytes and codes must have the same non-zero rank, got "
                         << in.getRank() << " and " << out.getRank();
  for (int64_t i = 0; i < in.getRank(); ++i) {
    int64_t b = in.getDimSize(i), c = out.getDimSize(i);
    bool last = i + 1 == in.getRank();
    if (ShapedType::isDynamic(b) || ShapedType::isDynamic(c)) {
      if (last)
        return emitOpError() << "needs a static last dimension";
      continue;
    }
    if (c != (last ? 2 * b : b))
      return emitOpError() << "codes dimension " << i << " must be "
                           << (last ? 2 * b : b) << " for bytes of size " << b
                           << (last ? " (two codes per byte)" : "") << ", got " << c;
  }
  return success();
}

LogicalResult EmbedOp::verify() {
  Value ids = getIds(), table = getTable(), out = getOut();
  Checker c(*this);
  c.rank(ids, "ids", {"T"}).rank(table, "table", {"V", "D"}).rank(out, "out", {"T", "D"});
  if (!c.ok())
    return failure();
  c.agree({{ids, "ids", 0}, {out, "out", 0}});
  c.agree({{table, "table", 1}, {out, "out", 1}});
  return c;
}

LogicalResult RmsNormOp::verify() {
  Value x = getX(), w = getWeight();
  Checker c(*this);
  c.hasLastDim(x, "x").rank(w, "weight", {"D"});
  if (!c.ok())
    return failure();
  c.agree({{x, "x", rankOf(x) - 1}, {w, "weight", 0}});
  SmallVector<std::pair<Value, StringRef>> shaped{{x, "x"}, {getY(), "y"}};
  if (getGate())
    shaped.push_back({getGate(), "gate"});
  c.sameShape(shaped);
  return c.positive(getEps().convertToFloat(), "eps");
}

LogicalResult L2NormOp::verify() {
  return Checker(*this).hasLastDim(getX(), "x").positive(
      getEps().convertToFloat(), "eps");
}

LogicalResult LinearOp::verify() {
  Value x = getX(), w = getWeight(), y = getY();
  Checker c(*this);
  c.hasLastDim(x, "x").rank(w, "weight", {"N", "K"});
  if (!c.ok())
    return failure();
  int64_t r = rankOf(x);
  c.agree({{x, "x", r - 1}, {w, "weight", 1}});
  c.require(rankOf(y) == r, [&](InFlightDiagnostic &d) {
     d << "y must have rank " << r << " like x, got rank " << rankOf(y);
   }).mxScales(w, "weight", getScales(), "scales");
  if (!c.ok())
    return failure();
  for (int64_t i = 0; i + 1 < r; ++i)
    c.agree({{x, "x", i}, {y, "y", i}});
  c.agree({{w, "weight", 0}, {y, "y", r - 1}});
  return c;
}

LogicalResult LmHeadOp::verify() {
  Value x = getX(), w = getWeight(), l = getLogits();
  Checker c(*this);
  c.rank(x, "x", {"T", "D"}).rank(w, "weight", {"V", "D"}).rank(l, "logits", {"T", "V"});
  if (!c.ok())
    return failure();
  c.agree({{x, "x", 1}, {w, "weight", 1}});
  c.agree({{x, "x", 0}, {l, "logits", 0}});
  c.agree({{w, "weight", 0}, {l, "logits", 1}});
  return c;
}

//===----------------------------------------------------------------------===//
// Token mixing
//===----------------------------------------------------------------------===//

LogicalResult ShortConvOp::verify() {
  Value x = getX(), w = getWeight(), s = getState(), s1 = getNewState();
  Checker c(*this);
  c.rank(x, "x", {"T", "C"}).rank(w, "weight", {"C", "W"}).rank(s, "state", {"W-1", "C"});
  if (!c.ok())
    return failure();
  int64_t width = extent(w, 1);
  c.agree({{x, "x", 1}, {w, "weight", 0}, {s, "state", 1}});
  c.require(!isStatic(width) || width >= 1, [&](InFlightDiagnostic &d) {
     d << "kernel width " << width << " must be at least 1";
   }).dim(s, "state", 0, sub(width, 1), "weight width - 1");
  return c.sameShape({{x, "x"}, {getY(), "y"}})
      .sameShape({{s, "state"}, {s1, "new_state"}});
}

LogicalResult KdaGateOp::verify() {
  std::optional<float> lb;
  if (getLbAttr())
    lb = getLbAttr().getValue().convertToFloat();
  Value x = getX(), a = getALog(), dt = getDtBias();
  Checker c(*this);
  c.require(getForm() != KdaGateForm::lower_bound || lb.has_value(),
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
      .rank(a, "a_log", {"H"})
      .rank(dt, "dt_bias", {"H", "K"});
  if (!c.ok())
    return failure();
  c.agree({{x, "x", 1}, {a, "a_log", 0}, {dt, "dt_bias", 0}});
  c.agree({{x, "x", 2}, {dt, "dt_bias", 1}});
  return c.sameShape({{x, "x"}, {getG(), "g"}});
}

/// The operand and result rules shared by k3.kda and k3.kda_chunked.
template <typename OpTy> Checker &verifyKdaShapes(Checker &c, OpTy op) {
  Value q = op.getQ(), k = op.getK(), v = op.getV(), g = op.getG(),
        beta = op.getBeta(), s0 = op.getInitialState(), out = op.getOut();
  c.rank(q, "q", {"T", "H", "K"})
      .rank(k, "k", {"T", "H", "K"})
      .rank(v, "v", {"T", "HV", "V"})
      .rank(g, "g", {"T", "HV", "K"})
      .rank(beta, "beta", {"T", "HV"})
      .rank(s0, "initial_state", {"HV", "K", "V"})
      .rank(out, "out", {"T", "HV", "V"});
  if (!c.ok())
    return c;
  c.agree({{q, "q", 0}, {k, "k", 0}, {v, "v", 0}, {g, "g", 0},
           {beta, "beta", 0}, {out, "out", 0}});
  int64_t h = c.agree({{q, "q", 1}, {k, "k", 1}});
  c.agree({{q, "q", 2}, {k, "k", 2}, {g, "g", 2}, {s0, "initial_state", 1}});
  int64_t hv = c.agree({{v, "v", 1}, {g, "g", 1}, {beta, "beta", 1},
                        {s0, "initial_state", 0}, {out, "out", 1}});
  c.agree({{v, "v", 2}, {s0, "initial_state", 2}, {out, "out", 2}});
  return c
      .require(!isStatic(h) || h > 0,
               [&](InFlightDiagnostic &d) { d << "q has no heads"; })
      .require(!isStatic(h) || !isStatic(hv) || h <= 0 || hv % h == 0,
               [&](InFlightDiagnostic &d) {
                 d << "value heads " << hv
                   << " are not a multiple of the q/k heads " << h;
               })
      .sameShape({{s0, "initial_state"}, {op.getFinalState(), "final_state"}})
      .positive(op.getScale().convertToFloat(), "scale");
}

LogicalResult KdaOp::verify() {
  Checker c(*this);
  if (!verifyKdaShapes(c, *this).ok())
    return failure();
  std::optional<int64_t> every = getSnapshotInterval();
  Value snaps = getSnapshots();
  c.require(bool(every) == bool(snaps), [&](InFlightDiagnostic &d) {
    d << (every ? "snapshots every " + std::to_string(*every) + " need a snapshots result"
                : std::string("a snapshots result needs `snapshots every N`"));
  });
  if (!c.ok() || !every)
    return success(c.ok());
  c.require(*every > 0, [&](InFlightDiagnostic &d) {
     d << "snapshot interval " << *every << " must be positive";
   }).rank(snaps, "snapshots", {"floor(T/N)", "HV", "K", "V"});
  if (!c.ok())
    return failure();
  Value s0 = getInitialState();
  for (int64_t i = 0; i < 3; ++i)
    c.dim(snaps, "snapshots", i + 1, extent(s0, i), "initial_state");
  int64_t t = extent(getQ(), 0);
  if (isStatic(t))
    c.dim(snaps, "snapshots", 0, t / *every,
          "T = " + Twine(t) + " every " + Twine(*every) + " tokens");
  return success(c.ok());
}

LogicalResult KdaChunkedOp::verify() {
  Checker c(*this);
  if (!verifyKdaShapes(c, *this).ok())
    return failure();
  int64_t chunk = getChunk(), sub = getSubChunk();
  Value s0 = getInitialState(), states = getBoundaryStates();
  c.rank(states, "boundary_states", {"ceil(T/chunk)", "HV", "K", "V"});
  if (!c.ok())
    return failure();
  for (int64_t i = 0; i < 3; ++i)
    c.dim(states, "boundary_states", i + 1, extent(s0, i), "initial_state");
  int64_t t = extent(getQ(), 0);
  if (isStatic(t) && chunk > 0)
    c.dim(states, "boundary_states", 0, (t + chunk - 1) / chunk,
          "T = " + Twine(t) + " in chunks of " + Twine(chunk));
  return c
      .require(chunk > 0 && sub > 0 && chunk % sub == 0,
               [&](InFlightDiagnostic &d) {
                 d << "chunk " << chunk << " must be a positive multiple of sub_chunk "
                   << sub;
               });
}

/// The rules shared by k3.kda_decode and k3.kda_step: the step's shapes
/// and attributes, `out`, `newState` and the new windows its results or
/// destinations. `batched` (k3.kda_step over B requests) puts a request
/// dimension first: B tokens for the one, each window and the state [B, ...].
template <typename OpTy>
LogicalResult verifyKdaStep(OpTy op, Value out, Value newCq, Value newCk, Value newCv,
                            Value s, bool batched = false) {
  Checker c(op);
  Value xq = op.getXq(), xk = op.getXk(), xv = op.getXv(), wq = op.getWq(), wk = op.getWk(),
        wv = op.getWv(), cq = op.getCq(), ck = op.getCk(), cv = op.getCv(), f = op.getF(),
        a = op.getALog(), dt = op.getDtBias(), b = op.getBetaLogits(),
        w = op.getNormWeight(), og = op.getOutGate();
  // The token dimension's name, and where a window's or the state's own
  // dimensions start.
  const StringRef t = batched ? "B" : "1";
  const int64_t o = batched ? 1 : 0;
  auto lead = [&](std::initializer_list<StringRef> dims) {
    SmallVector<StringRef, 4> all;
    if (batched)
      all.push_back("B");
    all.append(dims.begin(), dims.end());
    return all;
  };
  c.rank(xq, "xq", {t, "H*K"}).rank(xk, "xk", {t, "H*K"}).rank(xv, "xv", {t, "HV*V"})
      .rank(wq, "wq", {"H*K", "W"}).rank(wk, "wk", {"H*K", "W"}).rank(wv, "wv", {"HV*V", "W"})
      .rank(cq, "cq", lead({"W-1", "H*K"})).rank(ck, "ck", lead({"W-1", "H*K"}))
      .rank(cv, "cv", lead({"W-1", "HV*V"})).rank(f, "f", {t, "HV", "K"})
      .rank(a, "a_log", {"HV"}).rank(dt, "dt_bias", {"HV", "K"})
      .rank(b, "beta_logits", {t, "HV"}).rank(s, "state", lead({"HV", "K", "V"}))
      .rank(w, "norm_weight", {"V"}).rank(og, "out_gate", {t, "HV", "V"})
      .rank(out, "out", {t, "HV", "V"});
  if (!c.ok())
    return failure();
  if (batched)
    c.agree({{xq, "xq", 0}, {xk, "xk", 0}, {xv, "xv", 0}, {f, "f", 0}, {b, "beta_logits", 0},
             {og, "out_gate", 0}, {out, "out", 0}, {cq, "cq", 0}, {ck, "ck", 0}, {cv, "cv", 0},
             {s, "state", 0}});
  else
    for (auto [v, name] : {std::pair{xq, "xq"}, {xk, "xk"}, {xv, "xv"}, {f, "f"},
                           {b, "beta_logits"}, {og, "out_gate"}, {out, "out"}})
      c.dim(v, name, 0, 1, "one decode token");
  int64_t hk = c.agree({{xq, "xq", 1}, {xk, "xk", 1}, {wq, "wq", 0}, {wk, "wk", 0},
                        {cq, "cq", 1 + o}, {ck, "ck", 1 + o}});
  c.agree({{xv, "xv", 1}, {wv, "wv", 0}, {cv, "cv", 1 + o}});
  int64_t width = c.agree({{wq, "wq", 1}, {wk, "wk", 1}, {wv, "wv", 1}});
  for (Value win : {cq, ck, cv})
    c.dim(win, win == cq ? "cq" : win == ck ? "ck" : "cv", o, sub(width, 1), "the filters");
  // With the filters' width dynamic the windows still share their rows.
  c.agree({{cq, "cq", o}, {ck, "ck", o}, {cv, "cv", o}});
  int64_t hv = c.agree({{f, "f", 1}, {a, "a_log", 0}, {dt, "dt_bias", 0}, {b, "beta_logits", 1},
                        {s, "state", o}, {og, "out_gate", 1}, {out, "out", 1}});
  int64_t dk = c.agree({{f, "f", 2}, {dt, "dt_bias", 1}, {s, "state", 1 + o}});
  int64_t dv = c.agree({{s, "state", 2 + o}, {w, "norm_weight", 0}, {og, "out_gate", 2},
                        {out, "out", 2}});
  // Each of the v stream's widths, whichever are static (a dynamic xv must
  // not leave the filters and the window unchecked).
  if (isStatic(hv) && isStatic(dv)) {
    c.dim(xv, "xv", 1, hv * dv, "HV·V of the state");
    c.dim(wv, "wv", 0, hv * dv, "HV·V of the state");
    c.dim(cv, "cv", 1 + o, hv * dv, "HV·V of the state");
  }
  c.require(!isStatic(dk) || dk > 0, [&](InFlightDiagnostic &d) { d << "the state has no key channels"; });
  if (isStatic(hk) && isStatic(dk) && dk > 0)
    c.require(hk % dk == 0 && hk / dk > 0 && (!isStatic(hv) || hv % (hk / dk) == 0),
              [&](InFlightDiagnostic &d) {
                d << "q/k width " << hk << " is not a whole number of " << dk
                  << "-channel heads dividing the " << hv << " value heads";
              });
  bool lowerBound = op.getForm() == KdaGateForm::lower_bound;
  std::optional<float> lb;
  if (op.getLbAttr())
    lb = op.getLbAttr().getValue().convertToFloat();
  c.require(lowerBound == lb.has_value(), [&](InFlightDiagnostic &d) {
     d << (lowerBound ? "the lower_bound gate needs lb" : "the softplus gate takes no lb");
   }).require(!lb || (std::isfinite(*lb) && *lb < 0.0f), [&](InFlightDiagnostic &d) {
    d << "lb must be negative and finite, got " << formatFloat(*lb);
  });
  c.sameShape({{cq, "cq"}, {newCq, "new_cq"}})
      .sameShape({{ck, "ck"}, {newCk, "new_ck"}})
      .sameShape({{cv, "cv"}, {newCv, "new_cv"}});
  // A new window holds the old one's rows: the same element type.
  for (auto [old, next, name] :
       {std::tuple{cq, newCq, "new_cq"}, {ck, newCk, "new_ck"}, {cv, newCv, "new_cv"}})
    c.require(elementOf(old) == elementOf(next), [&](InFlightDiagnostic &d) {
      d << name << " has elements " << elementOf(next) << ", expected its window's "
        << elementOf(old);
    });
  return c.positive(op.getScale().convertToFloat(), "scale")
      .positive(op.getEps().convertToFloat(), "eps");
}

LogicalResult KdaDecodeOp::verify() {
  if (failed(verifyKdaStep(*this, getOut(), getNewCq(), getNewCk(), getNewCv(), getState())))
    return failure();
  return Checker(*this).sameShape({{getState(), "state"}, {getNewState(), "new_state"}});
}

/// The rules shared by k3.mla and k3.mla_absorbed.
template <typename OpTy> LogicalResult verifyMla(OpTy op) {
  Value q = op.getQ(), lat = op.getLatent(), kr = op.getKRope(), kvb = op.getKvB(),
        cache = op.getCache(), out = op.getOut(), next = op.getNewCache(),
        gate = op.getGate();
  Checker c(op);
  c.rank(q, "q", {"T", "H", "P+R"})
      .rank(lat, "latent", {"T", "L"})
      .rank(kr, "k_rope", {"T", "R"})
      .rank(kvb, "kv_b", {"H*(P+Vd)", "L"})
      .rank(cache, "cache", {"S", "L+R"})
      .rank(out, "out", {"T", "H", "Vd"})
      .rank(next, "new_cache", {"S+T", "L+R"});
  if (gate)
    c.rank(gate, "gate", {"T", "H", "Vd"});
  if (!c.ok())
    return failure();
  int64_t t = c.agree({{q, "q", 0}, {lat, "latent", 0}, {kr, "k_rope", 0},
                       {out, "out", 0}, {gate, "gate", 0}});
  int64_t h = c.agree({{q, "q", 1}, {out, "out", 1}, {gate, "gate", 1}});
  int64_t vd = c.agree({{out, "out", 2}, {gate, "gate", 2}});
  int64_t l = c.agree({{lat, "latent", 1}, {kvb, "kv_b", 1}});
  int64_t r = extent(kr, 1), p = sub(extent(q, 2), r);
  int64_t rows = extent(kvb, 0), s = extent(cache, 0), st = extent(next, 0);
  c.require(!isStatic(p) || p > 0,
            [&](InFlightDiagnostic &d) {
              d << "q head dim " << extent(q, 2)
                << " must exceed the shared key dim " << r
                << " (q rows are [nope | rope])";
            })
      .require(!isStatic(rows) || !isStatic(h) || !isStatic(vd) ||
                   (h > 0 && rows % h == 0 && rows / h > vd),
               [&](InFlightDiagnostic &d) {
                 d << "kv_b has " << rows << " rows, which is not " << h
                   << " heads * (nope dim + value dim " << vd << ")";
               })
      .dim(kvb, "kv_b", 0, mul(h, add(p, vd)), "heads * (nope + value dims)")
      .dim(cache, "cache", 1, add(l, r), "latent + k_rope dims")
      .dim(next, "new_cache", 1, add(l, r), "latent + k_rope dims")
      .agree({{cache, "cache", 1}, {next, "new_cache", 1}});
  c.dim(next, "new_cache", 0, add(s, t), "cached + new tokens")
      .require(!isStatic(st) || ((!isStatic(s) || st >= s) &&
                                 (!isStatic(t) || st >= t)),
               [&](InFlightDiagnostic &d) {
                 d << "new_cache has " << st << " rows, fewer than the "
                   << (isStatic(s) && st < s ? s : t)
                   << (isStatic(s) && st < s ? " cached" : " new") << " tokens";
               });
  return c.positive(op.getScale().convertToFloat(), "scale");
}

LogicalResult MlaOp::verify() { return verifyMla(*this); }

LogicalResult MlaAbsorbedOp::verify() {
  if (failed(verifyMla(*this)))
    return failure();
  if (getSplits() < 1)
    return emitOpError() << "splits " << getSplits() << " must be at least 1";
  return success();
}

LogicalResult MlaPagedOp::verify() {
  Value q = getQ(), lat = getLatent(), kr = getKRope(), kvb = getKvB(), pages = getPages(),
        table = getBlockTable(), lengths = getLengths(), out = getOut(), rows = getRows(),
        gate = getGate();
  Checker c(*this);
  c.rank(q, "q", {"B", "H", "P+R"})
      .rank(lat, "latent", {"B", "L"})
      .rank(kr, "k_rope", {"B", "R"})
      .rank(kvb, "kv_b", {"H*(P+Vd)", "L"})
      .rank(pages, "pages", {"N", "PT", "L+R"})
      .rank(table, "block_table", {"B", "MB"})
      .rank(lengths, "lengths", {"B"})
      .rank(out, "out", {"B", "H", "Vd"})
      .rank(rows, "rows", {"B", "L+R"});
  if (gate)
    c.rank(gate, "gate", {"B", "H", "Vd"});
  if (!c.ok())
    return failure();
  c.agree({{q, "q", 0}, {lat, "latent", 0}, {kr, "k_rope", 0}, {table, "block_table", 0},
           {lengths, "lengths", 0}, {out, "out", 0}, {rows, "rows", 0}, {gate, "gate", 0}});
  int64_t h = c.agree({{q, "q", 1}, {out, "out", 1}, {gate, "gate", 1}});
  int64_t vd = c.agree({{out, "out", 2}, {gate, "gate", 2}});
  int64_t l = c.agree({{lat, "latent", 1}, {kvb, "kv_b", 1}});
  int64_t r = extent(kr, 1), p = sub(extent(q, 2), r), rowsKvb = extent(kvb, 0);
  // The lowering builds its per-head tiles from these: they must be known.
  for (auto [v, name] : {std::pair{q, "q"}, {lat, "latent"}, {kr, "k_rope"}, {out, "out"}})
    for (int64_t d = 1; d < rankOf(v); ++d)
      c.require(isStatic(extent(v, d)), [&](InFlightDiagnostic &diag) {
        diag << name << " dim " << d << " must be static";
      });
  c.require(isStatic(rowsKvb), [&](InFlightDiagnostic &d) { d << "kv_b dim 0 must be static"; })
      .require(!isStatic(extent(pages, 1)) || extent(pages, 1) > 0,
               [&](InFlightDiagnostic &d) { d << "pages hold no row (PT is 0)"; });
  c.require(!isStatic(p) || p > 0,
            [&](InFlightDiagnostic &d) {
              d << "q head dim " << extent(q, 2) << " must exceed the shared key dim " << r
                << " (q rows are [nope | rope])";
            })
      .dim(kvb, "kv_b", 0, mul(h, add(p, vd)), "heads * (nope + value dims)")
      .require(!isStatic(rowsKvb) || !isStatic(h) || !isStatic(vd) ||
                   (h > 0 && rowsKvb % h == 0 && rowsKvb / h > vd),
               [&](InFlightDiagnostic &d) {
                 d << "kv_b has " << rowsKvb << " rows, which is not " << h
                   << " heads * (nope dim + value dim " << vd << ")";
               })
      .dim(pages, "pages", 2, add(l, r), "latent + k_rope dims")
      .dim(rows, "rows", 1, add(l, r), "latent + k_rope dims");
  // The new rows are stored as the pages hold theirs.
  c.require(elementOf(rows) == elementOf(pages),
            [&](InFlightDiagnostic &d) {
              d << "rows are " << elementOf(rows) << ", the pages hold "
                << elementOf(pages);
            });
  if (!c.ok())
    return failure();
  return c.positive(getScale().convertToFloat(), "scale");
}

namespace {

/// Bufferizes a destination-style k3 op that writes its `outs`: the same op
/// on the operands' buffers, with no results, its attributes kept; the
/// results become the destinations' buffers (the trailing operands).
LogicalResult bufferizeOnBuffers(DestinationStyleOpInterface op, RewriterBase &rewriter,
                                 const bufferization::BufferizationOptions &options,
                                 bufferization::BufferizationState &state) {
  const unsigned firstInit = op->getNumOperands() - op.getNumDpsInits();
  SmallVector<Value> buffers;
  for (Value v : op->getOperands()) {
    FailureOr<Value> buffer = bufferization::getBuffer(rewriter, v, options, state);
    if (failed(buffer))
      return failure();
    buffers.push_back(*buffer);
  }
  rewriter.setInsertionPoint(op);
  OperationState next(op.getLoc(), op->getName(), buffers, TypeRange(), op->getAttrs());
  rewriter.create(next);
  bufferization::replaceOpWithBufferizedValues(rewriter, op,
                                               ArrayRef<Value>(buffers).drop_front(firstInit));
  return success();
}

/// On memrefs: reads of the inputs and of `readInit` (a destination also
/// read, or null), writes of every destination. On tensors: none.
void destinationEffects(DestinationStyleOpInterface op, OpOperand *readInit,
                        SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  if (!op.hasPureBufferSemantics())
    return;
  for (OpOperand *in : op.getDpsInputOperands())
    effects.emplace_back(MemoryEffects::Read::get(), in, SideEffects::DefaultResource::get());
  if (readInit)
    effects.emplace_back(MemoryEffects::Read::get(), readInit,
                         SideEffects::DefaultResource::get());
  for (OpOperand &out : op.getDpsInitsMutable())
    effects.emplace_back(MemoryEffects::Write::get(), &out, SideEffects::DefaultResource::get());
}

/// All operands ranked tensors (one result per destination, of its type)
/// or all memrefs (no results).
LogicalResult verifyDestinationForms(DestinationStyleOpInterface op) {
  bool tensors = isa<RankedTensorType>(op->getOperand(0).getType());
  for (Value x : op->getOperands())
    if (!cast<ShapedType>(x.getType()).hasRank() || isa<RankedTensorType>(x.getType()) != tensors)
      return op->emitOpError() << "operands must be all ranked tensors or all memrefs";
  const unsigned inits = op.getNumDpsInits();
  if (op->getNumResults() != (tensors ? inits : 0))
    return op->emitOpError() << "has " << op->getNumResults() << " results, expected "
                             << (tensors ? inits : 0) << " on "
                             << (tensors ? "tensors" : "memrefs");
  for (auto [i, r] : llvm::enumerate(op->getResults()))
    if (r.getType() != op.getDpsInits()[i].getType())
      return op->emitOpError() << "result " << i << " has type " << r.getType()
                               << ", expected its destination's " << op.getDpsInits()[i].getType();
  return success();
}

/// A destination is its tied result's buffer; an input aliases nothing.
bufferization::AliasingValueList destinationAliases(DestinationStyleOpInterface op,
                                                    OpOperand &operand) {
  if (!op.isDpsInit(&operand))
    return {};
  return {{op.getTiedOpResult(&operand), bufferization::BufferRelation::Equivalent}};
}

} // namespace

LogicalResult AttendPartsOp::verify() {
  Value q = getQ(), rows = getRows(), m = getMaxInit(), l = getSumInit(), u = getUInit();
  if (failed(verifyDestinationForms(*this)))
    return failure();
  Checker c(*this);
  c.rank(q, "q", {"M", "D"})
      .rank(rows, "rows", {"N", "D"})
      .rank(m, "max", {"M", "P"})
      .rank(l, "sum", {"M", "P"})
      .rank(u, "u", {"M", "P", "L"});
  if (!c.ok())
    return failure();
  int64_t d = c.agree({{q, "q", 1}, {rows, "rows", 1}});
  c.agree({{q, "q", 0}, {m, "max", 0}, {l, "sum", 0}, {u, "u", 0}});
  int64_t parts = c.agree({{m, "max", 1}, {l, "sum", 1}, {u, "u", 1}});
  int64_t n = getPartKeys(), keys = extent(rows, 0), values = extent(u, 2);
  return c
      .require(n >= 1,
               [&](InFlightDiagnostic &diag) {
                 diag << "part_keys must be at least 1, got " << n;
               })
      .require(n < 1 || !isStatic(keys) || !isStatic(parts) || parts == (keys + n - 1) / n,
               [&](InFlightDiagnostic &diag) {
                 diag << "has " << parts << " parts, expected " << (keys + n - 1) / n
                      << " for " << keys << " keys in parts of " << n;
               })
      .require(!isStatic(values) || !isStatic(d) || values <= d,
               [&](InFlightDiagnostic &diag) {
                 diag << "u has " << values << " value columns, more than the rows' " << d;
               })
      .require(elementOf(q).isF32() && elementOf(m).isF32() && elementOf(l).isF32() &&
                   elementOf(u).isF32() &&
                   isa<BFloat16Type, Float16Type, Float32Type>(elementOf(rows)),
               [&](InFlightDiagnostic &diag) {
                 diag << "q, max, sum and u must be f32 and rows bf16, f16 or f32, got rows of "
                      << elementOf(rows);
               })
      .finite(getQScale(), "q_scale")
      .ok()
      ? success()
      : failure();
}

void AttendPartsOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  // Its destinations are overwritten, never read.
  destinationEffects(*this, /*readInit=*/nullptr, effects);
}

bool AttendPartsOp::bufferizesToMemoryRead(OpOperand &operand,
                                           const bufferization::AnalysisState &) {
  // The destinations are only written: their tensors need no copy in.
  return !isDpsInit(&operand);
}

bool AttendPartsOp::bufferizesToMemoryWrite(OpOperand &operand,
                                            const bufferization::AnalysisState &) {
  return isDpsInit(&operand);
}

bufferization::AliasingValueList
AttendPartsOp::getAliasingValues(OpOperand &operand, const bufferization::AnalysisState &) {
  return destinationAliases(*this, operand);
}

LogicalResult AttendPartsOp::bufferize(RewriterBase &rewriter,
                                       const bufferization::BufferizationOptions &options,
                                       bufferization::BufferizationState &state) {
  return bufferizeOnBuffers(*this, rewriter, options, state);
}

LogicalResult KdaChunksOp::verify() {
  Value q = getQ(), k = getK(), v = getV(), g = getG(), beta = getBeta(), out = getOutInit(),
        s = getStateInit(), ws = getWorkspaceInit(), states = getBoundariesInit();
  if (failed(verifyDestinationForms(*this)))
    return failure();
  Checker c(*this);
  c.rank(q, "q", {"T", "H", "K"})
      .rank(k, "k", {"T", "H", "K"})
      .rank(v, "v", {"T", "HV", "V"})
      .rank(g, "g", {"T", "HV", "K"})
      .rank(beta, "beta", {"T", "HV"})
      .rank(out, "out", {"T", "HV", "V"})
      .rank(s, "state", {"HV", "K", "V"})
      .rank(ws, "workspace", {"ceil(T/16)", "HV", "R"});
  if (states)
    c.rank(states, "boundaries", {"ceil(T/every)", "HV", "K", "V"});
  if (!c.ok())
    return failure();
  int64_t t = c.agree({{q, "q", 0}, {k, "k", 0}, {v, "v", 0}, {g, "g", 0}, {beta, "beta", 0},
                       {out, "out", 0}});
  int64_t h = c.agree({{q, "q", 1}, {k, "k", 1}});
  c.agree({{q, "q", 2}, {k, "k", 2}, {g, "g", 2}, {s, "state", 1}, {states, "boundaries", 2}});
  int64_t hv = c.agree({{v, "v", 1}, {g, "g", 1}, {beta, "beta", 1}, {out, "out", 1},
                        {s, "state", 0}, {ws, "workspace", 1}, {states, "boundaries", 1}});
  if (isStatic(t))
    c.dim(ws, "workspace", 0, (t + 15) / 16, "T = " + Twine(t) + " in chunks of 16");
  c.agree({{v, "v", 2}, {out, "out", 2}, {s, "state", 2}, {states, "boundaries", 3}});
  const int64_t every = getEvery();
  if (states && isStatic(t) && every > 0)
    c.dim(states, "boundaries", 0, (t + every - 1) / every,
          "T = " + Twine(t) + " every " + Twine(every) + " tokens");
  return c
      .require(!isStatic(h) || !isStatic(hv) || (h > 0 && hv % h == 0),
               [&](InFlightDiagnostic &d) {
                 d << "value heads " << hv << " are not a multiple of the q/k heads " << h;
               })
      .require(!states || (every > 0 && every % 16 == 0),
               [&](InFlightDiagnostic &d) {
                 d << "boundaries every " << every << " tokens: expected a positive multiple of 16";
               })
      .require(elementOf(g).isF32() && elementOf(s).isF32() && elementOf(ws).isF32() &&
                   (!states || elementOf(states).isF32()),
               [&](InFlightDiagnostic &d) {
                 d << "g, state, workspace and boundaries must be f32";
               })
      .require(llvm::all_of(ValueRange{q, k, v, beta, out},
                            [&](Value x) {
                              return isa<BFloat16Type, Float16Type, Float32Type>(elementOf(x));
                            }),
               [&](InFlightDiagnostic &d) {
                 d << "q, k, v, beta and out must be bf16, f16 or f32";
               })
      .positive(getScale().convertToFloat(), "scale")
      .ok()
      ? success()
      : failure();
}

void KdaChunksOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  // The state destination is read (the initial state) as well.
  destinationEffects(*this, &getStateInitMutable(), effects);
}

bool KdaChunksOp::bufferizesToMemoryRead(OpOperand &operand,
                                         const bufferization::AnalysisState &) {
  // The state is updated in place; out, the workspace and the boundaries
  // are only written (the workspace before it is read).
  return !isDpsInit(&operand) ||
         operand.getOperandNumber() == getStateInitMutable().getOperandNumber();
}

bool KdaChunksOp::bufferizesToMemoryWrite(OpOperand &operand,
                                          const bufferization::AnalysisState &) {
  return isDpsInit(&operand);
}

bufferization::AliasingValueList
KdaChunksOp::getAliasingValues(OpOperand &operand, const bufferization::AnalysisState &) {
  return destinationAliases(*this, operand);
}

LogicalResult KdaChunksOp::bufferize(RewriterBase &rewriter,
                                     const bufferization::BufferizationOptions &options,
                                     bufferization::BufferizationState &state) {
  return bufferizeOnBuffers(*this, rewriter, options, state);
}

LogicalResult MoeExpertsOp::verify() {
  Value z = getZ(), ids = getIndices(), p = getWeights(), w1 = getW1(), w3 = getW3(),
        w2 = getW2(), s1 = getS1(), s3 = getS3(), s2 = getS2(), y = getYInit(),
        h = getHInit(), order = getOrderInit();
  if (failed(verifyDestinationForms(*this)))
    return failure();
  Checker c(*this);
  c.rank(z, "z", {"T", "Dl"})
      .rank(ids, "indices", {"T", "k"})
      .rank(p, "weights", {"T", "k"})
      .rank(w1, "w1", {"E", "Ie", "Dl/2"})
      .rank(w3, "w3", {"E", "Ie", "Dl/2"})
      .rank(w2, "w2", {"E", "Dl", "Ie/2"})
      .rank(s1, "s1", {"E", "Ie", "Dl/32"})
      .rank(s3, "s3", {"E", "Ie", "Dl/32"})
      .rank(s2, "s2", {"E", "Dl", "Ie/32"})
      .rank(y, "y", {"T·k", "Dl"})
      .rank(h, "h", {"T·k", "Ie"})
      .rank(order, "order", {"3E + T·k"});
  if (!c.ok())
    return failure();
  const int64_t t = c.agree({{z, "z", 0}, {ids, "indices", 0}, {p, "weights", 0}});
  const int64_t k = c.agree({{ids, "indices", 1}, {p, "weights", 1}});
  const int64_t e = c.agree({{w1, "w1", 0}, {w3, "w3", 0}, {w2, "w2", 0}, {s1, "s1", 0},
                             {s3, "s3", 0}, {s2, "s2", 0}});
  const int64_t ie = c.agree({{w1, "w1", 1}, {w3, "w3", 1}, {s1, "s1", 1}, {s3, "s3", 1},
                              {h, "h", 1}});
  const int64_t dl = c.agree({{z, "z", 1}, {w2, "w2", 1}, {s2, "s2", 1}, {y, "y", 1}});
  if (isStatic(t) && isStatic(k)) {
    c.dim(y, "y", 0, t * k, "T = " + Twine(t) + " tokens of k = " + Twine(k) + " slots");
    c.dim(h, "h", 0, t * k, "T = " + Twine(t) + " tokens of k = " + Twine(k) + " slots");
  }
  // The slot count, from y and h when T or k is dynamic.
  const int64_t slots = c.agree({{y, "y", 0}, {h, "h", 0}});
  if (isStatic(e) && isStatic(slots))
    c.dim(order, "order", 0, 3 * e + slots,
          "E = " + Twine(e) + " experts and " + Twine(slots) + " slots");
  if (isStatic(dl) && dl % 32 == 0) {
    for (auto [w, name] : {std::pair(w1, "w1"), std::pair(w3, "w3")})
      c.dim(w, name, 2, dl / 2, "Dl = " + Twine(dl) + " two codes a byte");
    for (auto [s, name] : {std::pair(s1, "s1"), std::pair(s3, "s3")})
      c.dim(s, name, 2, dl / 32, "Dl = " + Twine(dl) + " in blocks of 32");
  }
  if (isStatic(ie) && ie % 32 == 0) {
    c.dim(w2, "w2", 2, ie / 2, "Ie = " + Twine(ie) + " two codes a byte");
    c.dim(s2, "s2", 2, ie / 32, "Ie = " + Twine(ie) + " in blocks of 32");
  }
  auto isInt = [](Value v, unsigned width) { return elementOf(v).isSignlessInteger(width); };
  return c
      .require(!isStatic(e) || e >= 1,
               [&](InFlightDiagnostic &d) { d << "needs at least one expert, got E = " << e; })
      .require(!isStatic(dl) || (dl > 0 && dl % 32 == 0),
               [&](InFlightDiagnostic &d) {
                 d << "Dl = " << dl << " must be a positive multiple of the MXFP4 block of 32";
               })
      .require(!isStatic(ie) || (ie > 0 && ie % 32 == 0),
               [&](InFlightDiagnostic &d) {
                 d << "Ie = " << ie << " must be a positive multiple of the MXFP4 block of 32";
               })
      .require(isInt(w1, 8) && isInt(w3, 8) && isInt(w2, 8),
               [&](InFlightDiagnostic &d) {
                 d << "w1, w3 and w2 must be i8 (two E2M1 codes a byte), got " << elementOf(w1)
                   << ", " << elementOf(w3) << " and " << elementOf(w2);
               })
      .require(llvm::all_of(ValueRange{s1, s3, s2},
                            [](Value s) { return isa<Float8E8M0FNUType>(elementOf(s)); }),
               [&](InFlightDiagnostic &d) { d << "s1, s3 and s2 must be f8E8M0FNU"; })
      .require(isa<BFloat16Type, Float16Type, Float32Type>(elementOf(z)),
               [&](InFlightDiagnostic &d) { d << "z must be bf16, f16 or f32, got " << elementOf(z); })
      .require(isInt(ids, 32) || isInt(ids, 64),
               [&](InFlightDiagnostic &d) {
                 d << "indices must be i32 or i64, got " << elementOf(ids);
               })
      .require(elementOf(p).isF32() && elementOf(y).isF32() && elementOf(h).isF32() &&
                   isInt(order, 32),
               [&](InFlightDiagnostic &d) { d << "weights, y and h must be f32 and order i32"; })
      .ok()
      ? checkGlu(c, getGlu(), getBeta1Attr(), getBeta2Attr()).ok() ? success() : failure()
      : failure();
}

void MoeExpertsOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  destinationEffects(*this, /*readInit=*/nullptr, effects);
}

bool MoeExpertsOp::bufferizesToMemoryRead(OpOperand &operand,
                                          const bufferization::AnalysisState &) {
  // y, h and order are written before they are read: no copy in.
  return !isDpsInit(&operand);
}

bool MoeExpertsOp::bufferizesToMemoryWrite(OpOperand &operand,
                                           const bufferization::AnalysisState &) {
  return isDpsInit(&operand);
}

bufferization::AliasingValueList
MoeExpertsOp::getAliasingValues(OpOperand &operand, const bufferization::AnalysisState &) {
  return destinationAliases(*this, operand);
}

LogicalResult MoeExpertsOp::bufferize(RewriterBase &rewriter,
                                      const bufferization::BufferizationOptions &options,
                                      bufferization::BufferizationState &state) {
  return bufferizeOnBuffers(*this, rewriter, options, state);
}

LogicalResult KdaStepOp::verify() {
  if (failed(verifyDestinationForms(*this)) ||
      failed(verifyKdaStep(*this, getOutInit(), getNewCqInit(), getNewCkInit(),
                           getNewCvInit(), getStateInit(), /*batched=*/isBatched())))
    return failure();
  // The tensor form's ops constrain these; the memref form needs it here.
  auto isFloat = [](Value v) { return isa<BFloat16Type, Float16Type, Float32Type>(elementOf(v)); };
  return Checker(*this)
      .require(llvm::all_of(getOperands(), isFloat),
               [&](InFlightDiagnostic &d) { d << "operands must be bf16, f16 or f32"; })
      .require(elementOf(getALog()).isF32() && elementOf(getDtBias()).isF32() &&
                   elementOf(getStateInit()).isF32(),
               [&](InFlightDiagnostic &d) { d << "a_log, dt_bias and state must be f32"; });
}

void KdaStepOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  // The state destination is read (the state before the step) as well.
  destinationEffects(*this, &getStateInitMutable(), effects);
}

bool KdaStepOp::bufferizesToMemoryRead(OpOperand &operand, const bufferization::AnalysisState &) {
  // The state is updated in place; out and the new windows are only written.
  return !isDpsInit(&operand) ||
         operand.getOperandNumber() == getStateInitMutable().getOperandNumber();
}

bool KdaStepOp::bufferizesToMemoryWrite(OpOperand &operand, const bufferization::AnalysisState &) {
  return isDpsInit(&operand);
}

bufferization::AliasingValueList
KdaStepOp::getAliasingValues(OpOperand &operand, const bufferization::AnalysisState &) {
  return destinationAliases(*this, operand);
}

LogicalResult KdaStepOp::bufferize(RewriterBase &rewriter,
                                   const bufferization::BufferizationOptions &options,
                                   bufferization::BufferizationState &state) {
  return bufferizeOnBuffers(*this, rewriter, options, state);
}

//===----------------------------------------------------------------------===//
// Channel mixing
//===----------------------------------------------------------------------===//

LogicalResult RouterOp::verify() {
  Value x = getX(), w = getWeight(), idx = getIndices(), p = getWeights(),
        bias = getBias();
  Checker c(*this);
  c.rank(x, "x", {"T", "D"})
      .rank(w, "weight", {"E", "D"})
      .rank(idx, "indices", {"T", "k"})
      .rank(p, "weights", {"T", "k"});
  if (bias)
    c.rank(bias, "bias", {"E"});
  if (!c.ok())
    return failure();
  int64_t topK = getTopK();
  c.agree({{x, "x", 1}, {w, "weight", 1}});
  int64_t e = c.agree({{w, "weight", 0}, {bias, "bias", 0}});
  c.agree({{x, "x", 0}, {idx, "indices", 0}, {p, "weights", 0}});
  return c
      .require(topK >= 1,
               [&](InFlightDiagnostic &d) {
                 d << "top_k must be at least 1, got " << topK;
               })
      .require(!isStatic(e) || topK <= e,
               [&](InFlightDiagnostic &d) {
                 d << "top_k " << topK << " exceeds the " << e << " experts";
               })
      .dim(idx, "indices", 1, topK, "top_k")
      .dim(p, "weights", 1, topK, "top_k")
      .positive(getScaling().convertToFloat(), "scaling");
}

LogicalResult SituGluOp::verify() {
  Checker c(*this);
  return checkSitu(c, getBeta1Attr(), getBeta2Attr());
}

LogicalResult MlpOp::verify() {
  Value x = getX(), g = getGateProj(), u = getUpProj(), d = getDownProj();
  Checker c(*this);
  c.rank(x, "x", {"T", "D"})
      .rank(g, "gate_proj", {"I", "D"})
      .rank(u, "up_proj", {"I", "D"})
      .rank(d, "down_proj", {"D", "I"});
  if (!c.ok())
    return failure();
  c.agree({{x, "x", 1}, {g, "gate_proj", 1}, {u, "up_proj", 1}, {d, "down_proj", 0}});
  c.agree({{g, "gate_proj", 0}, {u, "up_proj", 0}, {d, "down_proj", 1}});
  c.sameShape({{x, "x"}, {getY(), "y"}});
  return checkGlu(c, getGlu(), getBeta1Attr(), getBeta2Attr());
}

LogicalResult MoeOp::verify() {
  Value x = getX(), idx = getIndices(), p = getWeights(), w1 = getW1(),
        w3 = getW3(), w2 = getW2();
  Value down = getLatentDown(), up = getLatentUp(), norm = getNorm();
  Value sg = getSharedGate(), su = getSharedUp(), sd = getSharedDown();
  Checker c(*this);
  c.rank(x, "x", {"T", "D"})
      .rank(idx, "indices", {"T", "k"})
      .rank(p, "weights", {"T", "k"})
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
  if (down)
    c.rank(down, "latent_down", {"Dl", "D"}).rank(up, "latent_up", {"D", "Dl"});
  if (norm)
    c.rank(norm, "norm", {"Dl"});
  if (sg)
    c.rank(sg, "shared_gate", {"Is", "D"})
        .rank(su, "shared_up", {"Is", "D"})
        .rank(sd, "shared_down", {"D", "Is"});
  if (!c.ok())
    return failure();

  c.agree({{x, "x", 0}, {idx, "indices", 0}, {p, "weights", 0}});
  int64_t k = c.agree({{idx, "indices", 1}, {p, "weights", 1}});
  c.agree({{x, "x", 1}, {down, "latent_down", 1}, {up, "latent_up", 0},
           {sg, "shared_gate", 1}, {su, "shared_up", 1}, {sd, "shared_down", 0}});
  // Experts read and write the latent, or x itself without one.
  SmallVector<DimRef> dl;
  if (down)
    dl = {{down, "latent_down", 0}, {up, "latent_up", 1}, {norm, "norm", 0}};
  else
    dl = {{x, "x", 1}};
  dl.append({{w1, "w1", 2}, {w3, "w3", 2}, {w2, "w2", 1}});
  c.agree(dl);
  int64_t e = c.agree({{w1, "w1", 0}, {w3, "w3", 0}, {w2, "w2", 0}});
  c.agree({{w1, "w1", 1}, {w3, "w3", 1}, {w2, "w2", 2}});
  c.agree({{sg, "shared_gate", 0}, {su, "shared_up", 0}, {sd, "shared_down", 1}});
  c.require(!isStatic(k) || !isStatic(e) || k <= e,
            [&](InFlightDiagnostic &diag) {
              diag << "top-k " << k << " exceeds the " << e << " experts";
            })
      .require(elementOf(w3) == elementOf(w1) && elementOf(w2) == elementOf(w1),
               [&](InFlightDiagnostic &diag) {
                 diag << "experts must share one element type, got w1 "
                      << elementOf(w1) << ", w3 " << elementOf(w3) << ", w2 "
                      << elementOf(w2);
               })
      .mxScales(w1, "w1", getW1Scale(), "w1_scale")
      .mxScales(w3, "w3", getW3Scale(), "w3_scale")
      .mxScales(w2, "w2", getW2Scale(), "w2_scale")
      .require(!getMxfp8Inputs() || ((!isStatic(extent(w1, 2)) || extent(w1, 2) % 32 == 0) &&
                                      (!isStatic(extent(w1, 1)) || extent(w1, 1) % 32 == 0)),
               [&](InFlightDiagnostic &diag) {
                 diag << "mxfp8_inputs rounds blocks of 32 along each expert input, got Dl "
                      << extent(w1, 2) << " and Ie " << extent(w1, 1);
               })
      .sameShape({{x, "x"}, {getY(), "y"}})
      .positive(getEps().convertToFloat(), "eps");
  return checkGlu(c, getGlu(), getBeta1Attr(), getBeta2Attr());
}

//===----------------------------------------------------------------------===//
// Depth mixing
//===----------------------------------------------------------------------===//

namespace {

/// The shapes k3.attn_res and k3.attn_res_mix share: candidates [T, D] (the
/// first may be a stack of blocks [N, T, D], N maybe dynamic), out [T, D],
/// norm and query [D]; false once `c` has failed.
bool checkAttnResShapes(Checker &c, ValueRange sources, Value out, Value norm, Value query) {
  c.require(!sources.empty(),
            [](InFlightDiagnostic &d) {
              d << "needs at least one source (the running sum)";
            })
      .rank(out, "out", {"T", "D"})
      .rank(norm, "norm", {"D"})
      .rank(query, "query", {"D"});
  if (!c.ok())
    return false;
  SmallVector<std::string> names;
  for (size_t i = 0; i < sources.size(); ++i)
    names.push_back("source " + std::to_string(i));
  ValueRange flat = sources;
  if (rankOf(flat.front()) == 3) {
    Value s = flat.front();
    c.rank(s, names.front(), {"N", "T", "D"});
    c.agree({{out, "out", 0}, {s, names.front(), 1}});
    c.agree({{out, "out", 1}, {s, names.front(), 2}});
    flat = flat.drop_front();
    names.erase(names.begin());
  }
  SmallVector<std::pair<Value, StringRef>> shapes{{out, "out"}};
  for (auto [src, name] : llvm::zip(flat, names))
    shapes.push_back({src, name});
  c.sameShape(shapes);
  c.agree({{out, "out", 1}, {norm, "norm", 0}, {query, "query", 0}});
  return c.ok();
}

} // namespace

LogicalResult AttnResOp::verify() {
  Checker c(*this);
  if (!checkAttnResShapes(c, getSources(), getOut(), getNormWeight(), getQuery()))
    return failure();
  return c.positive(getEps().convertToFloat(), "eps");
}

LogicalResult AttnResMixOp::verify() {
  if (failed(verifyDestinationForms(*this)))
    return failure();
  Checker c(*this);
  if (!checkAttnResShapes(c, getSources(), getOutInit(), getNormWeight(), getQuery()))
    return failure();
  auto isFloat = [](Value v) { return isa<BFloat16Type, Float16Type, Float32Type>(elementOf(v)); };
  c.require(llvm::all_of(getOperands(), isFloat),
            [&](InFlightDiagnostic &d) { d << "operands must be bf16, f16 or f32"; })
      .positive(getEps().convertToFloat(), "eps");
  Value thenNorm = getThenNorm();
  c.require(bool(thenNorm) == getThenEps().has_value(), [&](InFlightDiagnostic &d) {
    d << "then_norm and then_eps come together, got " << (thenNorm ? "then_norm" : "then_eps")
      << " alone";
  });
  if (!thenNorm || !c.ok())
    return success(c.ok());
  c.rank(thenNorm, "then_norm", {"D"});
  c.agree({{getOutInit(), "out", 1}, {thenNorm, "then_norm", 0}});
  return success(c.positive(getThenEps()->convertToFloat(), "then_eps").ok());
}

void AttnResMixOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  destinationEffects(*this, nullptr, effects);
}

bool AttnResMixOp::bufferizesToMemoryRead(OpOperand &operand,
                                          const bufferization::AnalysisState &) {
  return !isDpsInit(&operand);
}

bool AttnResMixOp::bufferizesToMemoryWrite(OpOperand &operand,
                                           const bufferization::AnalysisState &) {
  return isDpsInit(&operand);
}

bufferization::AliasingValueList
AttnResMixOp::getAliasingValues(OpOperand &operand, const bufferization::AnalysisState &) {
  return destinationAliases(*this, operand);
}

LogicalResult AttnResMixOp::bufferize(RewriterBase &rewriter,
                                      const bufferization::BufferizationOptions &options,
                                      bufferization::BufferizationState &state) {
  return bufferizeOnBuffers(*this, rewriter, options, state);
}

LogicalResult RowNormOp::verify() {
  if (failed(verifyDestinationForms(*this)))
    return failure();
  Value x = getX(), w = getWeight(), out = getOutInit();
  Checker c(*this);
  // A rank-3 x is summed over its middle dimension first (the MoE's picks).
  const bool picks = rankOf(x) == 3;
  c.require(rankOf(x) == 2 || picks, [&](InFlightDiagnostic &d) {
    d << "x must have rank 2 [R, D] or 3 [R, K, D] (summed over K), got rank " << rankOf(x);
  });
  if (picks)
    c.rank(x, "x", {"R", "K", "D"})
        .rank(out, "out", {"R", "D"})
        .require(!getGate(), [](InFlightDiagnostic &d) {
          d << "a gate needs rank-2 x [R, D], got x [R, K, D] summed over K";
        });
  else
    c.rank(x, "x", {"R", "D"});
  c.rank(w, "weight", {"D"});
  if (!c.ok())
    return failure();
  if (picks) {
    c.agree({{x, "x", 0}, {out, "out", 0}});
    c.agree({{x, "x", 2}, {w, "weight", 0}, {out, "out", 1}});
  } else {
    // One check over all of them: a dynamic x must not hide a mismatch
    // between out and gate, which the kernel indexes alike.
    SmallVector<std::pair<Value, StringRef>> rows{{x, "x"}, {out, "out"}};
    if (getGate())
      rows.push_back({getGate(), "gate"});
    c.sameShape(rows);
    c.agree({{x, "x", 1}, {w, "weight", 0}, {out, "out", 1}, {getGate(), "gate", 1}});
  }
  auto isFloat = [](Value v) { return isa<BFloat16Type, Float16Type, Float32Type>(elementOf(v)); };
  return c
      .require(llvm::all_of(getOperands(), isFloat),
               [&](InFlightDiagnostic &d) { d << "operands must be bf16, f16 or f32"; })
      .positive(getEps().convertToFloat(), "eps");
}

void RowNormOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  destinationEffects(*this, nullptr, effects);
}

bool RowNormOp::bufferizesToMemoryRead(OpOperand &operand, const bufferization::AnalysisState &) {
  return !isDpsInit(&operand);
}

bool RowNormOp::bufferizesToMemoryWrite(OpOperand &operand, const bufferization::AnalysisState &) {
  return isDpsInit(&operand);
}

bufferization::AliasingValueList RowNormOp::getAliasingValues(OpOperand &operand,
                                                              const bufferization::AnalysisState &) {
  return destinationAliases(*this, operand);
}

LogicalResult RowNormOp::bufferize(RewriterBase &rewriter,
                                   const bufferization::BufferizationOptions &options,
                                   bufferization::BufferizationState &state) {
  return bufferizeOnBuffers(*this, rewriter, options, state);
}

LogicalResult PagedAttendOp::verify() {
  if (failed(verifyDestinationForms(*this)))
    return failure();
  Value q = getQ(), pages = getPages(), table = getBlockTable(), lengths = getLengths(),
        rows = getRows(), out = getOutInit();
  Checker c(*this);
  c.rank(q, "q", {"B", "H", "L+R"})
      .rank(pages, "pages", {"N", "PT", "L+R"})
      .rank(table, "block_table", {"B", "MB"})
      .rank(lengths, "lengths", {"B"})
      .rank(rows, "rows", {"B", "L+R"})
      .rank(out, "out", {"B", "H", "L"});
  if (!c.ok())
    return failure();
  c.agree({{q, "q", 0}, {table, "block_table", 0}, {lengths, "lengths", 0}, {rows, "rows", 0},
           {out, "out", 0}});
  c.agree({{q, "q", 1}, {out, "out", 1}});
  int64_t width = c.agree({{q, "q", 2}, {pages, "pages", 2}, {rows, "rows", 1}});
  int64_t l = extent(out, 2);
  auto isFloat = [](Value v) { return isa<BFloat16Type, Float16Type, Float32Type>(elementOf(v)); };
  return c
      .require(!isStatic(width) || !isStatic(l) || l <= width,
               [&](InFlightDiagnostic &d) {
                 d << "out's latent width " << l << " is more than the rows' " << width;
               })
      .require(elementOf(q).isF32() && elementOf(out).isF32(),
               [&](InFlightDiagnostic &d) { d << "q and out must be f32"; })
      .require(isFloat(pages) && elementOf(rows) == elementOf(pages),
               [&](InFlightDiagnostic &d) {
                 d << "pages must be bf16, f16 or f32 and rows the same, got "
                   << elementOf(pages) << " and " << elementOf(rows);
               })
      .require(elementOf(table).isInteger(32) && elementOf(lengths).isInteger(32),
               [&](InFlightDiagnostic &d) { d << "block_table and lengths must be i32"; })
      .finite(getQScale(), "q_scale");
}

void PagedAttendOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  destinationEffects(*this, nullptr, effects);
}

bool PagedAttendOp::bufferizesToMemoryRead(OpOperand &operand,
                                           const bufferization::AnalysisState &) {
  return !isDpsInit(&operand);
}

bool PagedAttendOp::bufferizesToMemoryWrite(OpOperand &operand,
                                            const bufferization::AnalysisState &) {
  return isDpsInit(&operand);
}

bufferization::AliasingValueList
PagedAttendOp::getAliasingValues(OpOperand &operand, const bufferization::AnalysisState &) {
  return destinationAliases(*this, operand);
}

LogicalResult PagedAttendOp::bufferize(RewriterBase &rewriter,
                                       const bufferization::BufferizationOptions &options,
                                       bufferization::BufferizationState &state) {
  return bufferizeOnBuffers(*this, rewriter, options, state);
}

//===----------------------------------------------------------------------===//
// Communication
//===----------------------------------------------------------------------===//

int64_t CollectiveOp::getGroupSize() {
  int64_t size = 1;
  for (int64_t axis : getAxes())
    if (axis >= 0 && axis < int64_t(getGrid().size()))
      size *= getGrid()[axis];
  return size;
}

LogicalResult CollectiveOp::verify() {
  if (failed(verifyDestinationForms(*this)))
    return failure();
  ArrayRef<int64_t> grid = getGrid(), axes = getAxes();
  if (grid.empty() || llvm::any_of(grid, [](int64_t n) { return n < 1; }))
    return emitOpError() << "grid must be a non-empty list of positive extents";
  if (axes.empty())
    return emitOpError() << "axes must name at least one grid axis";
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] < 0 || axes[i] >= int64_t(grid.size()) || (i && axes[i] <= axes[i - 1]))
      return emitOpError() << "axes must be ascending axes of the rank-" << grid.size()
                           << " grid, got axis " << axes[i] << " at position " << i;
  auto in = cast<ShapedType>(getInput().getType());
  auto out = cast<ShapedType>(getInit().getType());
  if (!isa<Float32Type, BFloat16Type>(in.getElementType()) ||
      in.getElementType() != out.getElementType())
    return emitOpError() << "input and init must both be f32 or both bf16, got "
                         << in.getElementType() << " and " << out.getElementType();
  SmallVector<int64_t> expected(in.getShape());
  if (getKind() == CollectiveKind::all_gather)
    expected.insert(expected.begin(), getGroupSize());
  if (out.getRank() != int64_t(expected.size()))
    return emitOpError() << "init must have rank " << expected.size() << ", got "
                         << out.getRank();
  for (auto [i, e] : llvm::enumerate(expected))
    if (!ShapedType::isDynamic(e) && !out.isDynamicDim(i) && out.getDimSize(i) != e)
      return emitOpError() << "init extent " << i << " is " << out.getDimSize(i)
                           << ", expected " << e
                           << (getKind() == CollectiveKind::all_gather && i == 0
                                   ? " (the group's ranks)"
                                   : " (the input's)");
  return success();
}

void CollectiveOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  destinationEffects(*this, nullptr, effects);
}

bool CollectiveOp::bufferizesToMemoryRead(OpOperand &operand,
                                          const bufferization::AnalysisState &) {
  return !isDpsInit(&operand);
}

bool CollectiveOp::bufferizesToMemoryWrite(OpOperand &operand,
                                           const bufferization::AnalysisState &) {
  return isDpsInit(&operand);
}

bufferization::AliasingValueList
CollectiveOp::getAliasingValues(OpOperand &operand, const bufferization::AnalysisState &) {
  return destinationAliases(*this, operand);
}

LogicalResult CollectiveOp::bufferize(RewriterBase &rewriter,
                                      const bufferization::BufferizationOptions &options,
                                      bufferization::BufferizationState &state) {
  return bufferizeOnBuffers(*this, rewriter, options, state);
}
