//===- OutlineLayers.cpp - One function per layer kind --------------------===//
//
// Part of k3. Implements k3-outline-layers: each part of each layer of an
// entry point (the ops the importer located at "layers.N.<part>") moves
// into a private function called in its place, and parts with identical
// functions share one. The later phases then compile a kind once, not once
// per layer: compile time, kernel count and code size follow the kinds,
// not the depth. The embedding and the output move into functions of their
// own too.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>

#define DEBUG_TYPE "k3-outline-layers"

namespace mlir::k3 {
#define GEN_PASS_DEF_K3OUTLINELAYERSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::k3

using namespace mlir;

namespace {

/// The parts of an entry point besides its layers, as group numbers that
/// keep the order of the model: the embedding before layer 0, the output
/// (last AttnRes read, final norm, lm_head) after the last layer.
constexpr int64_t kEmbedGroup = -1;
constexpr int64_t kOutputGroup = std::numeric_limits<int64_t>::max();

/// The parts of a layer, in the model's order: the importer locates a
/// layer's ops at "layers.L.<part>" and each part becomes a function of its
/// own, so that a layer sealing an AttnRes block (another first read, no
/// residual add) shares its feed-forward with the others. (The importer
/// puts the residual add with the mixer, for the GPU's epilogue; a module
/// may still locate it apart, as "residual".) Layer L's part p is group
/// 5·L + p; a bare "layers.L" is one group, the whole layer (5·L + 4).
constexpr StringLiteral kParts[] = {"attn_res", "mixer", "residual", "ffn"};
constexpr int64_t kPartsPerLayer = 5;
constexpr int64_t kWholeLayer = 4;
constexpr int64_t kAttnResPart = 0, kMixerPart = 1, kFfnPart = 3;

/// The group of a location: 5·L + part for "layers.L.<part>" (the
/// importer's NameLoc; "layers.L" the whole layer), kEmbedGroup for "embed",
/// kOutputGroup for "output", looking through the wrappers passes add (a
/// name over a call site or a fusion of locations of the same group).
std::optional<int64_t> layerOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    StringRef rest = name.getName().getValue();
    unsigned long long layer;
    if (rest.consume_front("layers.") && !rest.consumeInteger(10, layer) &&
        layer < uint64_t(std::numeric_limits<int64_t>::max() / kPartsPerLayer - 1)) {
      if (rest.empty())
        return int64_t(layer) * kPartsPerLayer + kWholeLayer;
      if (!rest.consume_front("."))
        return std::nullopt;
      for (auto [i, part] : llvm::enumerate(kParts))
        if (rest == part)
          return int64_t(layer) * kPartsPerLayer + int64_t(i);
      return std::nullopt;
    }
    if (rest == "embed")
      return kEmbedGroup;
    if (rest == "output")
      return kOutputGroup;
    return layerOf(name.getChildLoc());
  }
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    std::optional<int64_t> common;
    for (Location inner : fused.getLocations()) {
      std::optional<int64_t> l = layerOf(inner);
      if (!l || (common && *common != *l))
        return std::nullopt;
      common = l;
    }
    return common;
  }
  return std::nullopt;
}

/// The layer a group belongs to.
int64_t layerNumber(int64_t group) { return group / kPartsPerLayer; }

/// The location name of a group: "layers.L.<part>" ("layers.L" for a whole
/// layer), "embed" or "output".
std::string groupName(int64_t group) {
  if (group == kEmbedGroup)
    return "embed";
  if (group == kOutputGroup)
    return "output";
  std::string layer = "layers." + std::to_string(layerNumber(group));
  return group % kPartsPerLayer == kWholeLayer ? layer : layer + "." +
             kParts[group % kPartsPerLayer].str();
}

bool isConstant(Operation *op) {
  return op->getNumOperands() == 0 && op->getNumRegions() == 0 &&
         op->hasTrait<OpTrait::ConstantLike>();
}

/// A short name for what a layer part holds: its mixer (kda, mla; kda_seal
/// for a layer that seals a block, which has no residual add), its
/// feed-forward (moe, dense), its first AttnRes read and the mixer's input
/// norm (attn_res, and attn_res_seal for the read over the sealed blocks
/// alone; input_norm where the layer reads nothing), or the part's own
/// name (residual, where the importer locates the add apart). A whole layer joins its mixer and feed-forward and
/// says whether it seals a block (kda_moe_seal).
std::string kindName(func::FuncOp fn, int64_t group) {
  bool kda = false, mla = false, moe = false;
  fn.walk([&](Operation *op) {
    StringRef name = op->getName().getStringRef();
    kda |= name.starts_with("k3.kda");
    mla |= name.starts_with("k3.mla");
    moe |= name.starts_with("k3.moe") || name == "k3.router";
  });
  // A read over the blocks alone: the running sum was just sealed as the
  // last block.
  auto reads = fn.getOps<k3::AttnResOp>();
  bool seal = !reads.empty() && (*reads.begin()).getSources().size() == 1;
  const int64_t part = group % kPartsPerLayer;
  if (part == kWholeLayer) {
    std::string s = kda ? "kda" : mla ? "mla" : "layer";
    return s + (moe ? "_moe" : "_dense") + (seal ? "_seal" : "");
  }
  // By the part first: a feed-forward's MLP is linears by now
  // (k3-decompose-mlp), and it reads AttnRes too.
  if (part == kFfnPart)
    return moe ? "moe" : "dense";
  if (part == kMixerPart && (kda || mla)) {
    // The mixer of a layer that seals a block has no residual add: it does
    // not take the running sum beside the normed row, both of the hidden
    // type it returns last.
    FunctionType type = fn.getFunctionType();
    Type hidden = type.getNumResults() ? type.getResult(type.getNumResults() - 1) : Type();
    bool adds = llvm::count(type.getInputs(), hidden) > 1;
    return std::string(kda ? "kda" : "mla") + (adds ? "" : "_seal");
  }
  if (part == kAttnResPart)
    return reads.empty() ? "input_norm" : seal ? "attn_res_seal" : "attn_res";
  return kParts[part].str();
}

/// The text of `fn`'s signature and body without locations or its own
/// name: equal for two layers exactly when one function serves both.
std::string structuralKey(func::FuncOp fn) {
  StringAttr name = fn.getSymNameAttr();
  fn.setSymName("layer");
  OpPrintingFlags flags;
  // Local scope: value numbers start at 0 in each function.
  flags.assumeVerified().printGenericOpForm().useLocalScope();
  std::string key;
  llvm::raw_string_ostream os(key);
  fn->print(os, flags);
  fn.setSymNameAttr(name);
  return key;
}

struct K3OutlineLayersPass : k3::impl::K3OutlineLayersPassBase<K3OutlineLayersPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> entries;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn.isPublic() && !fn.isExternal())
        entries.push_back(fn);
    SymbolTable symbols(module);
    // Structural key → the function serving it, over all entry points:
    // prefill and prefill_last differ only in their output, and share
    // every layer function.
    std::map<std::string, func::FuncOp> byKey;
    llvm::StringMap<unsigned> nameUses; // names already taken
    for (func::FuncOp entry : entries)
      outlineEntry(entry, symbols, byKey, nameUses);
  }

  void outlineEntry(func::FuncOp entry, SymbolTable &symbols,
                    std::map<std::string, func::FuncOp> &byKey,
                    llvm::StringMap<unsigned> &nameUses) {
    Block &body = entry.getBody().front();
    // The top-level ops of each layer, in block order (nested ops move
    // with their parents).
    std::map<int64_t, SmallVector<Operation *>> layers; // by layer number
    // Constants stay where they are (the greedy folder hoists them to the
    // entry, located at their first user): each layer gets its own clone.
    for (Operation &op : body.without_terminator())
      if (std::optional<int64_t> l = layerOf(op.getLoc()))
        if (!isConstant(&op))
          layers[*l].push_back(&op);

    SmallVector<func::FuncOp> made; // in order of their first layer
    for (auto &[layer, ops] : layers) {
      auto [fn, call] = outlineLayer(entry, layer, ops);
      if (!fn)
        continue;
      const bool layerGroup = layer != kEmbedGroup && layer != kOutputGroup;
      std::string key = structuralKey(fn);
      auto [it, fresh] = byKey.try_emplace(key, fn);
      if (!fresh) {
        func::FuncOp shared = it->second;
        call.setCallee(shared.getName());
        auto list = shared->getAttrOfType<DenseI64ArrayAttr>("k3.layers");
        if (layerGroup && list) {
          SmallVector<int64_t> ids(list.asArrayRef());
          // Another entry point's layer of the same number lists once.
          if (!llvm::is_contained(ids, layerNumber(layer)))
            ids.push_back(layerNumber(layer));
          shared->setAttr("k3.layers", DenseI64ArrayAttr::get(&getContext(), ids));
        }
        fn.erase();
        continue;
      }
      // The embedding and the output are named for what they are (shared
      // only by another entry point's identical one).
      if (!layerGroup) {
        std::string name = entry.getName().str() + "_" + groupName(layer);
        for (unsigned n = 1; symbols.lookup(name); ++n)
          name = entry.getName().str() + "_" + groupName(layer) + "_" + std::to_string(n);
        fn.setSymName(name);
        call.setCallee(name);
        symbols.insert(fn);
        made.push_back(fn);
        continue;
      }
      // A name that says what the kind holds; `_N` where two kinds would
      // share one.
      std::string base = entry.getName().str() + "_" + kindName(fn, layer), name;
      do {
        unsigned n = nameUses[base]++;
        name = n ? base + "_" + std::to_string(n) : base;
      } while (symbols.lookup(name));
      fn.setSymName(name);
      call.setCallee(name);
      symbols.insert(fn);
      fn->setAttr("k3.layers", DenseI64ArrayAttr::get(&getContext(), {layerNumber(layer)}));
      made.push_back(fn);
    }
    // Printed before the entry point, in layer order.
    for (func::FuncOp fn : made)
      fn->moveBefore(entry);
  }

  /// Moves `ops` (layer `layer` of `entry`) into a new private function and
  /// calls it where the layer's last op was. Returns nulls, with a remark,
  /// when the layer cannot be one call.
  std::pair<func::FuncOp, func::CallOp> outlineLayer(func::FuncOp entry, int64_t layer,
                                                      ArrayRef<Operation *> ops) {
    llvm::SmallPtrSet<Operation *, 32> inLayer(ops.begin(), ops.end());
    auto inside = [&](Operation *op) {
      for (; op; op = op->getParentOp())
        if (inLayer.count(op))
          return true;
      return false;
    };
    Operation *last = ops.back();
    // Inputs: values the layer reads from outside, in order of first use;
    // operand-free constants are cloned in instead (their values then fold
    // inside the function as they did inline).
    llvm::SetVector<Value> inputs;
    llvm::SetVector<Operation *> constants;
    for (Operation *op : ops)
      op->walk([&](Operation *nested) {
        for (Value v : nested->getOperands()) {
          Operation *def = v.getDefiningOp();
          if (def ? inside(def) : inside(v.getParentBlock()->getParentOp()))
            continue;
          if (def && isConstant(def))
            constants.insert(def);
          else
            inputs.insert(v);
        }
      });
    // Outputs: the layer's results used after it. A use before the layer's
    // last op would precede the call.
    SmallVector<Value> outputs;
    for (Operation *op : ops)
      for (Value r : op->getResults()) {
        bool used = false;
        for (Operation *user : r.getUsers()) {
          if (inside(user))
            continue;
          Operation *top = entry.getBody().front().findAncestorOpInBlock(*user);
          if (!top || !last->isBeforeInBlock(top)) {
            emitRemark(op->getLoc()) << groupName(layer) << " stays inline: a value it "
                                     << "computes is used before its last op";
            return {};
          }
          used = true;
        }
        if (used)
          outputs.push_back(r);
      }

    OpBuilder b(entry);
    SmallVector<Type> inTypes, outTypes;
    for (Value v : inputs)
      inTypes.push_back(v.getType());
    for (Value v : outputs)
      outTypes.push_back(v.getType());
    Location loc = NameLoc::get(b.getStringAttr(groupName(layer)));
    auto fn = func::FuncOp::create(b, loc, "outlined_" + groupName(layer),
                                   b.getFunctionType(inTypes, outTypes));
    fn.setPrivate();
    Block *fnBody = fn.addEntryBlock();
    b.setInsertionPointToStart(fnBody);
    IRMapping map;
    for (Operation *c : constants)
      b.clone(*c, map);
    // The call goes where the last op was; then the ops move.
    OpBuilder at(last->getNextNode());
    auto call = func::CallOp::create(at, loc, fn, inputs.getArrayRef());
    for (Operation *op : ops)
      op->moveBefore(fnBody, fnBody->end());
    // Uses inside the new function read its arguments and clones; uses
    // outside read the call's results.
    auto inFn = [&](OpOperand &use) {
      return use.getOwner()->getParentOfType<func::FuncOp>() == fn;
    };
    for (auto [v, arg] : llvm::zip(inputs.getArrayRef(), fnBody->getArguments()))
      Value(v).replaceUsesWithIf(arg, inFn);
    for (Operation *c : constants)
      c->getResult(0).replaceUsesWithIf(map.lookup(c->getResult(0)), inFn);
    for (auto [v, r] : llvm::zip(outputs, call.getResults()))
      v.replaceUsesWithIf(r, [&](OpOperand &use) { return !inFn(use); });
    b.setInsertionPointToEnd(fnBody);
    func::ReturnOp::create(b, loc, outputs);
    return {fn, call};
  }
};

} // namespace
