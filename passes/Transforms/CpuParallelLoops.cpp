//===- CpuParallelLoops.cpp - Which loops run on the thread pool ----------===//
//
// Part of k3. Implements k3-cpu-parallel-loops: of the CPU's scf.parallel
// loops, the outermost of each nest that does enough work stays parallel
// (convert-scf-to-openmp then runs it on libomp's pool); every other one
// becomes scf.for loops.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3CPUPARALLELLOOPSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

/// A loop's trip count, or `dynamic` when it is not a constant.
int64_t tripCount(Value lb, Value ub, Value step, int64_t dynamic) {
  std::optional<int64_t> l = getConstantIntValue(lb), u = getConstantIntValue(ub),
                         s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0)
    return dynamic;
  return std::max<int64_t>(0, (*u - *l + *s - 1) / *s);
}

/// Saturating product: estimates only need to know "large".
int64_t mul(int64_t a, int64_t b) {
  constexpr int64_t kCap = int64_t(1) << 40;
  return (a > kCap / std::max<int64_t>(b, 1)) ? kCap : a * b;
}

/// The product of a parallel loop's own trip counts.
int64_t ownTrips(scf::ParallelOp loop, int64_t dynamic) {
  int64_t own = 1;
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep()))
    own = mul(own, tripCount(lb, ub, step, dynamic));
  return own;
}

/// The iterations of the chain of loops between `op` and `loop`.
int64_t chainTrips(Operation *op, scf::ParallelOp loop, int64_t dynamic) {
  int64_t chain = 1;
  for (Operation *p = op->getParentOp(); p && p != loop; p = p->getParentOp()) {
    if (auto f = dyn_cast<scf::ForOp>(p))
      chain = mul(chain, tripCount(f.getLowerBound(), f.getUpperBound(), f.getStep(), dynamic));
    else if (auto inner = dyn_cast<scf::ParallelOp>(p))
      chain = mul(chain, ownTrips(inner, dynamic));
  }
  return chain;
}

/// The op at the end of the deepest chain of loops inside `loop`'s body, and
/// that chain's iterations.
std::pair<Operation *, int64_t> deepestChain(scf::ParallelOp loop, int64_t dynamic) {
  std::pair<Operation *, int64_t> deepest{nullptr, 1};
  loop.getBody()->walk([&](Operation *op) {
    int64_t chain = chainTrips(op, loop, dynamic);
    if (!deepest.first || chain > deepest.second)
      deepest = {op, chain};
  });
  return deepest;
}

/// The iterations of the deepest chain of loops inside `loop`'s body.
int64_t innerWork(scf::ParallelOp loop, int64_t dynamic) {
  return deepestChain(loop, dynamic).second;
}

/// Replaces `loop` (no reductions) by one scf.for per dimension. The body's
/// ops move (not copies): loops nested in it stay the same ops.
void serialise(RewriterBase &rewriter, scf::ParallelOp loop) {
  rewriter.setInsertionPoint(loop);
  Location loc = loop.getLoc();
  SmallVector<Value> ivs;
  Block *innermost = nullptr;
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    auto f = scf::ForOp::create(rewriter, loc, lb, ub, step);
    ivs.push_back(f.getInductionVar());
    innermost = f.getBody();
    rewriter.setInsertionPointToStart(innermost);
  }
  Block *body = loop.getBody();
  rewriter.eraseOp(body->getTerminator()); // scf.reduce, empty
  rewriter.inlineBlockBefore(body, innermost->getTerminator(), ivs);
  rewriter.eraseOp(loop);
}

/// Moves the innermost dimension of a kept multi-dimensional `loop` into an
/// scf.for inside it (`peelWhereWide` decides when). convert-scf-to-openmp
/// collapses every
/// dimension of a work-shared loop into one flat index, whose division and
/// remainder per element keep LLVM's loop vectoriser off even a plain
/// elementwise nest (Kimi Linear's softplus decay gate ran scalar); a
/// serial innermost loop is a unit-stride loop it vectorises. Returns the
/// new outer loop.
scf::ParallelOp peelInnermost(RewriterBase &rewriter, scf::ParallelOp loop) {
  rewriter.setInsertionPoint(loop);
  Location loc = loop.getLoc();
  auto outerLoop = scf::ParallelOp::create(rewriter, loc, loop.getLowerBound().drop_back(),
                                           loop.getUpperBound().drop_back(),
                                           loop.getStep().drop_back());
  rewriter.setInsertionPointToStart(outerLoop.getBody());
  auto inner = scf::ForOp::create(rewriter, loc, loop.getLowerBound().back(),
                                  loop.getUpperBound().back(), loop.getStep().back());
  SmallVector<Value> ivs(outerLoop.getInductionVars());
  ivs.push_back(inner.getInductionVar());
  Block *body = loop.getBody();
  rewriter.eraseOp(body->getTerminator()); // scf.reduce, empty
  rewriter.inlineBlockBefore(body, inner.getBody()->getTerminator(), ivs);
  rewriter.eraseOp(loop);
  return outerLoop;
}

/// Outer iterations a loop needs before its innermost dimension goes serial
/// (`peelInnermost`): enough to share among the cores of a large machine.
/// Fewer (a decode step's single token, a short draft) keep the collapsed
/// loop, whose every element is work to share.
constexpr int64_t kPeelMinOuter = 64;

/// Serialises every parallel loop nested in `loop` (post-order).
void serialiseInside(RewriterBase &rewriter, Operation *loop) {
  SmallVector<scf::ParallelOp> inside;
  loop->walk([&](scf::ParallelOp p) {
    if (p != loop)
      inside.push_back(p);
  });
  for (scf::ParallelOp p : inside)
    serialise(rewriter, p);
}

/// A loop dimension's trip count at run time: max(ceil((ub - lb) / step), 0).
Value runTimeTrips(RewriterBase &rewriter, Location loc, Value lb, Value ub, Value step) {
  Value span = arith::SubIOp::create(rewriter, loc, ub, lb);
  Value trips = arith::CeilDivSIOp::create(rewriter, loc, span, step);
  return arith::MaxSIOp::create(rewriter, loc, trips,
                                arith::ConstantIndexOp::create(rewriter, loc, 0));
}

/// Puts `loop` in the then-branch of a new `scf.if cond` and a copy of it,
/// its nested parallel loops serial, in the else-branch; returns the copy.
scf::ParallelOp branchWithCopy(RewriterBase &rewriter, scf::ParallelOp loop, Value cond) {
  rewriter.setInsertionPoint(loop);
  auto branch = scf::IfOp::create(rewriter, loop.getLoc(), cond, /*withElseRegion=*/true);
  rewriter.setInsertionPointToStart(branch.elseBlock());
  auto copy = cast<scf::ParallelOp>(rewriter.clone(*loop));
  serialiseInside(rewriter, copy);
  rewriter.moveOpBefore(loop, branch.thenBlock()->getTerminator());
  return copy;
}

/// `peelInnermost` where the outer dimensions have kPeelMinOuter iterations:
/// decided here where their static part has that many (a dynamic extent
/// counting as 1) or they are all static, else at run time (`scf.if`
/// between the peeled loop and a copy of `loop`, its nested loops serial).
/// Adds the loops that stay parallel to `kept` (never one it erases: a
/// later op may take an erased one's address).
void peelWhereWide(RewriterBase &rewriter, scf::ParallelOp loop,
                   llvm::SmallPtrSetImpl<Operation *> &kept) {
  unsigned n = loop.getNumLoops();
  if (n < 2) {
    kept.insert(loop);
    return;
  }
  int64_t outer = 1;
  bool dynamic = false;
  for (unsigned d = 0; d + 1 < n; ++d) {
    int64_t trips = tripCount(loop.getLowerBound()[d], loop.getUpperBound()[d],
                              loop.getStep()[d], -1);
    dynamic |= trips < 0;
    outer = mul(outer, std::max<int64_t>(trips, 1));
  }
  if (outer >= kPeelMinOuter) {
    kept.insert(peelInnermost(rewriter, loop));
    return;
  }
  if (!dynamic) {
    kept.insert(loop);
    return;
  }
  Location loc = loop.getLoc();
  rewriter.setInsertionPoint(loop);
  Value count = arith::ConstantIndexOp::create(rewriter, loc, 1);
  for (unsigned d = 0; d + 1 < n; ++d)
    count = arith::MulIOp::create(
        rewriter, loc, count,
        runTimeTrips(rewriter, loc, loop.getLowerBound()[d], loop.getUpperBound()[d],
                     loop.getStep()[d]));
  Value wide = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge, count,
                                     arith::ConstantIndexOp::create(rewriter, loc, kPeelMinOuter));
  kept.insert(branchWithCopy(rewriter, loop, wide));
  kept.insert(peelInnermost(rewriter, loop));
}

/// The loops of the deepest chain inside `loop` whose trip count is dynamic
/// but known before `loop` starts (their bounds are defined outside it: a
/// GEMM's rows inside its panel loop, for a token count the call decides).
/// `version` uses their actual trips where the estimate counted `dynamic`.
SmallVector<std::tuple<Value, Value, Value>> knownInnerTrips(scf::ParallelOp loop,
                                                              int64_t dynamic) {
  Operation *leaf = deepestChain(loop, dynamic).first;
  auto outside = [&](Value v) { return !loop->isAncestor(v.getParentBlock()->getParentOp()); };
  SmallVector<std::tuple<Value, Value, Value>> known;
  auto take = [&](Value lb, Value ub, Value step) {
    if (tripCount(lb, ub, step, -1) < 0 && outside(lb) && outside(ub) && outside(step))
      known.push_back({lb, ub, step});
  };
  for (Operation *p = leaf ? leaf->getParentOp() : nullptr; p && p != loop; p = p->getParentOp()) {
    if (auto f = dyn_cast<scf::ForOp>(p))
      take(f.getLowerBound(), f.getUpperBound(), f.getStep());
    else if (auto inner = dyn_cast<scf::ParallelOp>(p))
      for (auto [lb, ub, step] :
           llvm::zip(inner.getLowerBound(), inner.getUpperBound(), inner.getStep()))
        take(lb, ub, step);
  }
  return known;
}

/// A loop with dynamic bounds (a grouped expert GEMM over the tokens routed
/// to one expert: none or one in a decode step; decode_batch's requests)
/// runs in parallel only when its actual iterations reach the threshold
/// and number at least two: `scf.if` between it and a serial copy. A
/// parallel loop of one iteration would run on one thread, the loops inside
/// it serial; in the copy they are candidates again (`candidates`), so a
/// batch of one request spreads its heads over the pool as the `decode`
/// entry does. (An OpenMP `if` clause would do it without the copy, but
/// Debian's libomp, LLVM 14, lacks the __kmpc_fork_call_if LLVM 22 emits,
/// and a team of one thread resizes the pool on every switch.)
void version(RewriterBase &rewriter, scf::ParallelOp loop, int64_t minWork, int64_t dynamic,
             ArrayRef<std::tuple<Value, Value, Value>> known,
             SmallVectorImpl<scf::ParallelOp> &candidates) {
  Location loc = loop.getLoc();
  rewriter.setInsertionPoint(loop);
  // Static inner work times the actual outer trips, and the actual trips
  // of the inner loops known before the loop starts.
  int64_t inner = innerWork(loop, dynamic), own = 1;
  Value dynamicTrips = arith::ConstantIndexOp::create(rewriter, loc, 1);
  SmallVector<Value> innerTrips;
  for (auto [lb, ub, step] : known) {
    inner = std::max<int64_t>(inner / std::max<int64_t>(dynamic, 1), 1);
    innerTrips.push_back(runTimeTrips(rewriter, loc, lb, ub, step));
  }
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    int64_t trips = tripCount(lb, ub, step, -1);
    if (trips < 0) {
      dynamicTrips = arith::MulIOp::create(rewriter, loc, dynamicTrips,
                                           runTimeTrips(rewriter, loc, lb, ub, step));
    } else {
      inner = mul(inner, trips);
      own = mul(own, trips);
    }
  }
  auto atLeast = [&](Value v, int64_t factor, int64_t n) {
    Value total =
        arith::MulIOp::create(rewriter, loc, arith::ConstantIndexOp::create(rewriter, loc, factor), v);
    return arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge, total,
                                 arith::ConstantIndexOp::create(rewriter, loc, n));
  };
  Value work = dynamicTrips;
  for (Value trips : innerTrips)
    work = arith::MulIOp::create(rewriter, loc, work, trips);
  // Sequenced: the IR's order must not depend on the compiler's order of
  // evaluating arguments.
  Value enough = atLeast(work, inner, minWork);
  Value several = atLeast(dynamicTrips, own, 2);
  Value fork = arith::AndIOp::create(rewriter, loc, enough, several);
  auto branch = scf::IfOp::create(rewriter, loc, fork, /*withElseRegion=*/true);
  rewriter.setInsertionPointToStart(branch.elseBlock());
  auto serial = cast<scf::ParallelOp>(rewriter.clone(*loop));
  rewriter.moveOpBefore(loop, branch.thenBlock()->getTerminator());
  serial.getBody()->walk<WalkOrder::PreOrder>(
      [&](scf::ParallelOp p) { candidates.push_back(p); });
  serialise(rewriter, serial);
}

struct K3CpuParallelLoopsPass : k3::impl::K3CpuParallelLoopsPassBase<K3CpuParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    // Outermost first: a loop kept parallel makes the ones inside it serial.
    SmallVector<scf::ParallelOp> loops;
    getOperation()->walk<WalkOrder::PreOrder>([&](scf::ParallelOp loop) {
      loops.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    llvm::SmallPtrSet<Operation *, 16> kept;
    // `version` appends the loops of its serial copies.
    for (size_t i = 0; i < loops.size(); ++i) {
      scf::ParallelOp loop = loops[i];
      if (loop.getNumReductions() != 0) {
        loop.emitOpError() << "has " << loop.getNumReductions()
                           << " reductions; the CPU lowering makes none";
        return signalPassFailure();
      }
      bool nested = false;
      for (Operation *p = loop->getParentOp(); p; p = p->getParentOp())
        nested |= kept.contains(p);
      // A loop of one iteration (a decode step's token) parallelises
      // nothing: serial, so that a parallel loop inside it is a candidate.
      int64_t own = ownTrips(loop, dynamicExtent);
      if (nested || own < 2 || mul(own, innerWork(loop, dynamicExtent)) < minWork) {
        serialise(rewriter, loop);
        continue;
      }
      auto known = knownInnerTrips(loop, dynamicExtent);
      // Any dynamic dimension (ownTrips(loop, -1) would multiply two of
      // them into a positive count: AttnRes over [blocks, tokens] forked
      // for a single decode token).
      bool dynamicOwn = llvm::any_of(
          llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep()), [](auto dim) {
            auto [lb, ub, step] = dim;
            return tripCount(lb, ub, step, -1) < 0;
          });
      if (dynamicOwn || !known.empty())
        version(rewriter, loop, minWork, dynamicExtent, known, loops);
      peelWhereWide(rewriter, loop, kept);
    }
  }
};

} // namespace
