//===- OutlineWeights.cpp - k3.weight ops to function arguments -----------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#define DEBUG_TYPE "k3-outline-weights"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3OUTLINEWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;
using namespace mlir::k3;

namespace {

struct K3OutlineWeightsPass
    : k3::impl::K3OutlineWeightsPassBase<K3OutlineWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      // One argument per distinct name, in order of first use; a name used
      // with two types is a bug in the producer, reported on the op.
      llvm::MapVector<StringRef, SmallVector<WeightOp>> byName;
      fn.walk([&](WeightOp op) { byName[op.getName()].push_back(op); });
      // All arguments are added at once: one at a time rebuilds the
      // signature and its attributes each time (K3's entry points take
      // about 1,500 weights).
      MLIRContext *ctx = &getContext();
      SmallVector<unsigned> indices;
      SmallVector<Type> argTypes;
      SmallVector<DictionaryAttr> argAttrs;
      SmallVector<Location> argLocs;
      SmallVector<bool> packedArgs;
      for (auto &[name, ops] : byName) {
        Type type = ops.front().getType();
        for (WeightOp op : ops)
          if (op.getType() != type) {
            op.emitOpError() << "weight '" << name << "' is used as both "
                             << type << " and " << op.getType();
            return signalPassFailure();
          }
        SmallVector<NamedAttribute> attrs{
            NamedAttribute(StringAttr::get(ctx, "k3.weight"), StringAttr::get(ctx, name))};
        // A rank's block of a split weight: the bundle writer slices it.
        for (WeightOp op : ops)
          if (op.getSplitDimAttr() != ops.front().getSplitDimAttr() ||
              op.getSplitAxesAttr() != ops.front().getSplitAxesAttr()) {
            op.emitOpError() << "weight '" << name << "' is used with two splits";
            return signalPassFailure();
          }
        if (auto dim = ops.front().getSplitDimAttr()) {
          attrs.push_back(NamedAttribute(StringAttr::get(ctx, "k3.split_dim"), dim));
          attrs.push_back(
              NamedAttribute(StringAttr::get(ctx, "k3.split_axes"), ops.front().getSplitAxesAttr()));
        }
        // MXFP4 codes travel as their packed bytes (a memref of f4E2M1FN
        // would take a byte per code).
        auto tensor = cast<RankedTensorType>(type);
        bool packed = isa<Float4E2M1FNType>(tensor.getElementType());
        Type argType = type;
        if (packed) {
          SmallVector<int64_t> shape(tensor.getShape());
          if (shape.empty() || ShapedType::isDynamic(shape.back()) || shape.back() % 2) {
            ops.front().emitOpError() << "MXFP4 weight '" << name
                                      << "' needs an even static last dimension";
            return signalPassFailure();
          }
          shape.back() /= 2;
          argType = RankedTensorType::get(shape, IntegerType::get(ctx, 8));
          attrs.push_back(NamedAttribute(StringAttr::get(ctx, "k3.packed_e2m1"), UnitAttr::get(ctx)));
        }
        indices.push_back(fn.getNumArguments());
        argTypes.push_back(argType);
        argAttrs.push_back(DictionaryAttr::get(ctx, attrs));
        argLocs.push_back(ops.front().getLoc());
        packedArgs.push_back(packed);
      }
      if (indices.empty())
        continue;
      unsigned first = fn.getNumArguments();
      if (failed(fn.insertArguments(indices, argTypes, argAttrs, argLocs))) {
        fn.emitOpError() << "cannot add arguments for its " << indices.size() << " weights";
        return signalPassFailure();
      }
      for (auto [i, entry] : llvm::enumerate(byName)) {
        auto &ops = entry.second;
        Value arg = fn.getArgument(first + i);
        // A builder of its own: the op it would insert before may be a
        // weight op erased below.
        if (packedArgs[i]) {
          OpBuilder b = OpBuilder::atBlockBegin(&fn.getBody().front());
          arg = UnpackE2m1Op::create(b, ops.front().getLoc(), ops.front().getType(), arg);
        }
        for (WeightOp op : ops) {
          op.getResult().replaceAllUsesWith(arg);
          op.erase();
        }
      }
    }
  }
};

} // namespace
