//===- PackLayerWeights.cpp - A layer function's weights as one buffer ----===//
//
// Part of k3. Implements k3-pack-layer-weights: a layer function (made by
// k3-outline-layers) that takes its weights one argument each takes them as
// one byte buffer instead, the "pack", and views each weight in it at a
// fixed offset (k3.weight_view). The entry point then passes one pack per
// call: K3's entry points go from about 3,000 weight arguments, each
// expanded into a memref descriptor at every call, to one per layer part,
// which is what made the host program's size and compile time grow with
// the depth.
//
// A pack's members are laid out back to back in the order of their names,
// each at the bundle's weight alignment, so that the prefill and decode
// functions of one layer share a pack (they read the same weights, in
// different argument orders) and the bundle stores each weight once. The
// entry point's pack argument lists its members (`k3.pack`: each member's
// argument attributes, its tensor type and offset); the bundle writer lays
// them out so and binds the argument to their bytes.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "k3-pack-layer-weights"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3PACKLAYERWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;
using namespace mlir::k3;

namespace {

/// The name of a weight argument of an entry point (`k3.weight`), or null.
StringAttr weightOf(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || !arg.getOwner()->isEntryBlock())
    return {};
  auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return fn ? fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "k3.weight") : StringAttr();
}

/// The bytes of a tensor a pack can hold: a static shape of whole-byte
/// elements.
std::optional<int64_t> bytesOf(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape() || !t.getElementType().isIntOrFloat() ||
      t.getElementType().getIntOrFloatBitWidth() % 8 != 0)
    return std::nullopt;
  return t.getNumElements() * (t.getElementType().getIntOrFloatBitWidth() / 8);
}

/// How one layer function takes its pack: the argument positions it packs,
/// in the members' (name) order, their offsets, and the pack's size.
struct Plan {
  SmallVector<unsigned> order;
  SmallVector<int64_t> offsets;
  int64_t bytes = 0;
};

/// The member names of a call's pack, in the plan's order.
SmallVector<StringAttr> membersOf(func::CallOp call, const Plan &plan) {
  SmallVector<StringAttr> names;
  for (unsigned p : plan.order)
    names.push_back(weightOf(call.getOperand(p)));
  return names;
}

/// A pack's identity: its member names joined.
std::string keyOf(ArrayRef<StringAttr> names) {
  std::string key;
  for (StringAttr n : names)
    (key += n.getValue()) += '\n';
  return key;
}

struct K3PackLayerWeightsPass
    : k3::impl::K3PackLayerWeightsPassBase<K3PackLayerWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (alignment < 1 || !llvm::isPowerOf2_64(alignment)) {
      emitError(module.getLoc()) << "k3-pack-layer-weights: alignment must be a power of two, got "
                                 << int64_t(alignment);
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> entries;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn.isPublic() && !fn.isExternal())
        entries.push_back(fn);

    // The layer functions and their calls, from entry points only.
    llvm::MapVector<func::FuncOp, SmallVector<func::CallOp>> callsOf;
    for (func::FuncOp entry : entries)
      entry.walk([&](func::CallOp call) {
        auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
        if (callee && callee.isPrivate() && !callee.isExternal())
          callsOf[callee].push_back(call);
      });

    llvm::MapVector<func::FuncOp, Plan> plans;
    for (auto &[fn, calls] : callsOf) {
      // A function referenced other than by these calls keeps its signature.
      std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(fn, module);
      if (!uses || size_t(llvm::range_size(*uses)) != calls.size())
        continue;
      // The positions where every call passes a weight of its entry point.
      SmallVector<unsigned> positions;
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        if (bytesOf(fn.getArgumentTypes()[i]) &&
            llvm::all_of(calls, [&](func::CallOp c) { return bool(weightOf(c.getOperand(i))); }))
          positions.push_back(i);
      // One weight gains nothing.
      if (positions.size() < 2)
        continue;
      // Name order, which must be the same permutation for every call
      // (names differ by their layer only): the offsets are the function's.
      auto byName = [&](func::CallOp call) {
        SmallVector<unsigned> order(positions);
        llvm::stable_sort(order, [&](unsigned a, unsigned b) {
          return weightOf(call.getOperand(a)).getValue() < weightOf(call.getOperand(b)).getValue();
        });
        return order;
      };
      Plan plan;
      plan.order = byName(calls.front());
      if (llvm::any_of(calls, [&](func::CallOp c) { return byName(c) != plan.order; }))
        continue;
      // A weight passed twice would need two places in one pack.
      if (llvm::any_of(calls, [&](func::CallOp c) {
            SmallVector<StringAttr> names = membersOf(c, plan);
            return llvm::SmallDenseSet<StringAttr>(names.begin(), names.end()).size() !=
                   names.size();
          }))
        continue;
      for (unsigned p : plan.order) {
        // At least the element's own alignment (k3.weight_view's rule).
        auto type = cast<RankedTensorType>(fn.getArgumentTypes()[p]);
        uint64_t align = std::max<uint64_t>(
            uint64_t(alignment), type.getElementType().getIntOrFloatBitWidth() / 8);
        plan.bytes = int64_t(llvm::alignTo(plan.bytes, align));
        plan.offsets.push_back(plan.bytes);
        plan.bytes += *bytesOf(type);
      }
      plans[fn] = std::move(plan);
    }

    // A weight lies in one pack: where two functions' calls would put it in
    // different packs (a tied embedding, a superset read by one entry),
    // both keep their weight arguments. Dropping a function can only
    // remove conflicts, so this ends.
    for (bool changed = true; changed;) {
      llvm::StringMap<std::pair<std::string, func::FuncOp>> packOf;
      llvm::SetVector<func::FuncOp> dropped;
      for (auto &[fn, plan] : plans)
        for (func::CallOp call : callsOf[fn]) {
          SmallVector<StringAttr> names = membersOf(call, plan);
          std::string key = keyOf(names);
          for (StringAttr n : names) {
            auto [it, inserted] = packOf.try_emplace(n.getValue(), key, fn);
            if (!inserted && it->second.first != key) {
              dropped.insert(fn);
              dropped.insert(it->second.second);
            }
          }
        }
      for (func::FuncOp fn : dropped)
        plans.erase(fn);
      changed = !dropped.empty();
    }
    if (plans.empty())
      return;

    MLIRContext *ctx = &getContext();
    auto i8 = IntegerType::get(ctx, 8);
    // Each entry point's packs, in order of first use: one argument each.
    struct EntryPacks {
      llvm::StringMap<unsigned> index; // key -> position among the new ones
      SmallVector<Type> types;
      SmallVector<DictionaryAttr> attrs;
      SmallVector<Location> locs;
    };
    llvm::MapVector<func::FuncOp, EntryPacks> packsOf;
    llvm::DenseMap<Operation *, unsigned> packOfCall;
    for (auto &[fn, plan] : plans)
      for (func::CallOp call : callsOf[fn]) {
        auto entry = call->getParentOfType<func::FuncOp>();
        EntryPacks &packs = packsOf[entry];
        SmallVector<StringAttr> names = membersOf(call, plan);
        auto [it, inserted] = packs.index.try_emplace(keyOf(names), packs.types.size());
        packOfCall[call] = it->second;
        if (!inserted)
          continue;
        SmallVector<Attribute> members;
        for (auto [k, p] : llvm::enumerate(plan.order)) {
          auto arg = cast<BlockArgument>(call.getOperand(p));
          NamedAttrList member(entry.getArgAttrDict(arg.getArgNumber()));
          member.set("k3.offset", IntegerAttr::get(IntegerType::get(ctx, 64), plan.offsets[k]));
          member.set("k3.type", TypeAttr::get(arg.getType()));
          members.push_back(member.getDictionary(ctx));
        }
        packs.types.push_back(RankedTensorType::get({plan.bytes}, i8));
        packs.attrs.push_back(DictionaryAttr::get(
            ctx, {NamedAttribute(StringAttr::get(ctx, "k3.pack"), ArrayAttr::get(ctx, members))}));
        packs.locs.push_back(entry.getLoc());
      }

    // The layer functions: one pack argument, last, viewed per weight.
    for (auto &[fn, plan] : plans) {
      unsigned packIndex = fn.getNumArguments();
      if (failed(fn.insertArgument(packIndex, RankedTensorType::get({plan.bytes}, i8),
                                   DictionaryAttr(), fn.getLoc()))) {
        fn.emitOpError() << "cannot add its weight pack argument";
        return signalPassFailure();
      }
      Value pack = fn.getArgument(packIndex);
      OpBuilder b = OpBuilder::atBlockBegin(&fn.getBody().front());
      llvm::BitVector erase(fn.getNumArguments());
      for (auto [k, p] : llvm::enumerate(plan.order)) {
        BlockArgument arg = fn.getArgument(p);
        Value view = WeightViewOp::create(b, arg.getLoc(), arg.getType(), pack,
                                          b.getI64IntegerAttr(plan.offsets[k]));
        arg.replaceAllUsesWith(view);
        erase.set(p);
      }
      if (failed(fn.eraseArguments(erase))) {
        fn.emitOpError() << "cannot drop its " << plan.order.size() << " weight arguments";
        return signalPassFailure();
      }
    }

    // The entry points: the packs added at once (one at a time rebuilds the
    // signature each time), the calls rewritten, the weights no call reads
    // any more dropped.
    for (auto &[entry, packs] : packsOf) {
      unsigned first = entry.getNumArguments();
      SmallVector<unsigned> at(packs.types.size(), first);
      if (failed(entry.insertArguments(at, packs.types, packs.attrs, packs.locs))) {
        entry.emitOpError() << "cannot add its " << packs.types.size() << " weight packs";
        return signalPassFailure();
      }
    }
    for (auto &[fn, plan] : plans)
      for (func::CallOp call : callsOf[fn]) {
        auto entry = call->getParentOfType<func::FuncOp>();
        llvm::BitVector packed(call.getNumOperands());
        for (unsigned p : plan.order)
          packed.set(p);
        SmallVector<Value> operands;
        for (auto [i, v] : llvm::enumerate(call.getOperands()))
          if (!packed.test(i))
            operands.push_back(v);
        unsigned first = entry.getNumArguments() - packsOf[entry].types.size();
        operands.push_back(entry.getArgument(first + packOfCall[call]));
        call->setOperands(operands);
      }
    for (auto &[entry, packs] : packsOf) {
      llvm::BitVector unused(entry.getNumArguments());
      for (BlockArgument arg : entry.getArguments())
        if (arg.use_empty() && entry.getArgAttr(arg.getArgNumber(), "k3.weight"))
          unused.set(arg.getArgNumber());
      if (failed(entry.eraseArguments(unused))) {
        entry.emitOpError() << "cannot drop the weights its packs hold";
        return signalPassFailure();
      }
    }
  }
};

} // namespace
