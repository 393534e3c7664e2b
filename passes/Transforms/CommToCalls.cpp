//===- CommToCalls.cpp - k3.collective on buffers to runtime calls --------===//
//
// Part of k3. Implements k3-comm-to-calls (Passes.td). The call takes
// addresses and counts, not memref descriptors: one C signature for every
// rank and element type (runtime/include/k3rt/k3rt_comm.h).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/K3/K3Ops.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3COMMTOCALLSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;
using namespace mlir::k3;

namespace {

constexpr const char *kCollectiveFn = "k3_comm_collective";

struct K3CommToCallsPass : k3::impl::K3CommToCallsPassBase<K3CommToCallsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<CollectiveOp> ops;
    module.walk([&](CollectiveOp op) { ops.push_back(op); });
    if (ops.empty())
      return;
    OpBuilder b(&getContext());
    b.setInsertionPointToEnd(module.getBody());
    Type i32 = b.getI32Type(), i64 = b.getI64Type();
    auto fn = func::FuncOp::create(
        b, module.getLoc(), kCollectiveFn,
        b.getFunctionType({i32, i64, i64, i64, i32, i64}, {}));
    fn.setPrivate();
    for (CollectiveOp op : ops) {
      if (!op.hasPureBufferSemantics()) {
        op.emitOpError() << "k3-comm-to-calls: runs after bufferization; this "
                            "op is on tensors";
        return signalPassFailure();
      }
      Location loc = op.getLoc();
      b.setInsertionPoint(op);
      auto dims = [&](Value v) {
        SmallVector<Value> d;
        auto type = cast<MemRefType>(v.getType());
        for (int64_t i = 0; i < type.getRank(); ++i)
          if (type.isDynamicDim(i))
            d.push_back(memref::DimOp::create(b, loc, v, i));
        return d;
      };
      // A dense buffer of `v`'s shape: `v` itself when its layout is the
      // identity, else a new one (filled from `v` when `copyIn`).
      SmallVector<Value> temporaries;
      auto dense = [&](Value v, bool copyIn) -> Value {
        auto type = cast<MemRefType>(v.getType());
        if (type.getLayout().isIdentity())
          return v;
        auto denseType =
            MemRefType::get(type.getShape(), type.getElementType());
        Value t = memref::AllocOp::create(b, loc, denseType, dims(v));
        if (copyIn)
          memref::CopyOp::create(b, loc, v, t);
        temporaries.push_back(t);
        return t;
      };
      auto address = [&](Value v) -> Value {
        Value index = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, v);
        return arith::IndexCastOp::create(b, loc, i64, index);
      };
      Value in = op.getInput(), out = op.getInit();
      bool reduce = op.getKind() == CollectiveKind::all_reduce;
      Value denseOut = dense(out, false);
      Value denseIn;
      if (reduce) {
        // In place on the output: the input copied there first.
        memref::CopyOp::create(b, loc, in, denseOut);
        denseIn = denseOut;
      } else {
        denseIn = dense(in, true);
      }
      Value count = arith::ConstantIndexOp::create(b, loc, 1);
      auto inType = cast<MemRefType>(in.getType());
      for (int64_t i = 0; i < inType.getRank(); ++i)
        count = arith::MulIOp::create(b, loc, count,
                                      memref::DimOp::create(b, loc, in, i));
      int64_t mask = 0;
      for (int64_t axis : op.getAxes())
        mask |= int64_t(1) << axis;
      Value args[] = {arith::ConstantIntOp::create(b, loc, i32, reduce ? 0 : 1),
                      address(denseIn),
                      address(denseOut),
                      arith::IndexCastOp::create(b, loc, i64, count),
                      arith::ConstantIntOp::create(
                          b, loc, i32, inType.getElementType().isF32() ? 0 : 1),
                      arith::ConstantIntOp::create(b, loc, i64, mask)};
      func::CallOp::create(b, loc, fn, args);
      if (denseOut != out)
        memref::CopyOp::create(b, loc, denseOut, out);
      for (Value t : temporaries)
        memref::DeallocOp::create(b, loc, t);
      op.erase();
    }
  }
};

} // namespace
