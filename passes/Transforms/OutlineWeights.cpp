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
      for (auto &[name, ops] : byName) {
        Type type = ops.front().getType();
        for (WeightOp op : ops)
          if (op.getType() != type) {
            op.emitOpError() << "weight '" << name << "' is used as both "
                             << type << " and " << op.getType();
            return signalPassFailure();
          }
        unsigned index = fn.getNumArguments();
        auto attrs = DictionaryAttr::get(
            &getContext(), {NamedAttribute(StringAttr::get(&getContext(), "k3.weight"),
                                           StringAttr::get(&getContext(), name))});
        if (failed(fn.insertArgument(index, type, attrs, ops.front().getLoc()))) {
          fn.emitOpError() << "cannot add an argument for weight '" << name << "'";
          return signalPassFailure();
        }
        for (WeightOp op : ops) {
          op.getResult().replaceAllUsesWith(fn.getArgument(index));
          op.erase();
        }
      }
    }
  }
};

} // namespace
