//===- BundleWriter.cpp - Write .k3b binaries -----------------------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "lib/Bundle/BundleWriter.h"

#include "dialects/K3/K3Ops.h"
#include "lib/Model/Numerics.h"
#include "runtime/include/k3rt/k3rt.h"
#include "runtime/schemas/k3_bundle_generated.h"
#include "runtime/src/Format.h"
#include "runtime/src/comm/Collectives.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>

using namespace mlir;
namespace fb = ::k3::bundle;
using ::k3::model::Checkpoint;
using ::k3::model::Config;
using ::k3::model::Mixer;
using ::k3::model::ScaleRule;
using ::k3::model::TensorView;

namespace {

/// Bundle dtype of an MLIR element type; false if it has none.
bool bundleDType(Type t, fb::DType &out) {
  if (t.isF32())
    out = fb::DType_F32;
  else if (t.isBF16())
    out = fb::DType_BF16;
  else if (t.isF16())
    out = fb::DType_F16;
  else if (isa<Float4E2M1FNType>(t))
    out = fb::DType_F4E2M1FN;
  else if (isa<Float8E8M0FNUType>(t))
    out = fb::DType_F8E8M0FNU;
  else if (t.isInteger(32))
    out = fb::DType_I32;
  else if (t.isInteger(64))
    out = fb::DType_I64;
  else if (t.isInteger(8))
    out = fb::DType_U8;
  else
    return false;
  return true;
}

/// One weight blob: the stored bytes of one tensor, or of the per-expert
/// tensors a `{e}` name stacks, in expert order.
struct Blob {
  std::string name;
  fb::DType dtype;
  std::vector<int64_t> shape;
  /// The bytes, in order: views into the checkpoint, or decoded copies.
  std::vector<std::pair<const uint8_t *, size_t>> parts;
  std::vector<std::vector<uint8_t>> decoded;
  uint64_t bytes = 0;
  uint64_t offset = 0;
  uint64_t checksum = 0;
  int64_t splitDim = -1, splitParts = 1, splitIndex = 0; ///< a rank's block
};

/// A rank's block of a split weight: block `index` of `parts` equal blocks
/// along `dim` of the stored tensor (dim < 0: the whole tensor).
struct WeightBlock {
  int64_t dim = -1, parts = 1, index = 0;
};

/// The block of `grid` rank `rank` for a weight split over `axes`: the
/// rank's linear index over those axes (row-major, as shard.grid).
WeightBlock blockOf(const std::vector<int64_t> &grid, int64_t rank, int64_t dim,
              ArrayRef<int64_t> axes) {
  std::vector<int64_t> coords = ::k3rt::comm::gridCoordinates(grid, rank);
  WeightBlock block{dim, 1, 0};
  for (int64_t a : axes) {
    block.parts *= grid[a];
    block.index = block.index * grid[a] + coords[a];
  }
  return block;
}

/// `v` cut to `block` into `bytes` (kept by the caller), or false with one
/// line when the stored extent does not split so.
bool cut(const TensorView &v, const WeightBlock &block, TensorView &out, std::vector<uint8_t> &bytes,
         std::string &error) {
  int64_t dim = block.dim;
  int64_t count = 1;
  for (int64_t d : v.shape)
    count *= d;
  if (dim >= int64_t(v.shape.size()) || count == 0 || v.shape[dim] % block.parts) {
    error = "weight '" + v.name + "' " + ::k3::model::formatShape(v.shape) +
            " does not split into " + std::to_string(block.parts) + " blocks along dimension " +
            std::to_string(dim);
    return false;
  }
  size_t element = v.bytes / size_t(count);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < dim; ++i)
    outer *= v.shape[i];
  for (size_t i = dim + 1; i < v.shape.size(); ++i)
    inner *= v.shape[i];
  int64_t local = v.shape[dim] / block.parts;
  size_t run = size_t(local * inner) * element, stride = size_t(v.shape[dim] * inner) * element;
  bytes.resize(size_t(outer) * run);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(bytes.data() + o * run, v.data + o * stride + block.index * run, run);
  out = v;
  out.shape[dim] = local;
  out.data = bytes.data();
  out.bytes = bytes.size();
  return true;
}

/// The blob of one outlined weight argument (`k3.weight = "<name>"`).
bool addWeight(std::string name, RankedTensorType type, const Checkpoint &ck,
               std::vector<Blob> &blobs, std::map<std::string, size_t> &seen,
               std::string &error, bool omitWeights, const WeightBlock &block) {
  if (seen.count(name))
    return true;
  Blob blob;
  blob.name = name;
  blob.shape.assign(type.getShape().begin(), type.getShape().end());
  blob.splitDim = block.dim;
  blob.splitParts = block.parts;
  blob.splitIndex = block.index;
  if (!bundleDType(type.getElementType(), blob.dtype)) {
    error = "weight '" + name + "' has an element type the bundle cannot hold";
    return false;
  }
  // Weights left out of a checkpoint that has none (config.json alone): the
  // table keeps each blob's size from its type, with no checksum to check.
  if (omitWeights && !ck.hasWeights()) {
    uint64_t bits = type.getNumElements() * type.getElementTypeBitWidth();
    blob.bytes = (bits + 7) / 8;
    seen[name] = blobs.size();
    blobs.push_back(std::move(blob));
    return true;
  }
  // Derived blobs, computed here from the checkpoint:
  //  - `X#bf16` (k3-dequantize-weights): MXFP4 `X` decoded to bf16, from its
  //    codes and the matching `weight_scale`; exact, E2M1 × 2^k fits bf16.
  //  - `X#mxfp4.<rule>.codes` / `.scales` (k3-quantize-mxfp4): float `X`
  //    quantized to MXFP4 along its rows (lib/Model/Numerics).
  //  - `X#panels<P>` (k3-pack-weight-panels): float `X` [N, K] laid out as
  //    [N/P, K, P], the CPU GEMM's panels; the same values.
  enum class Derive { None, Bf16, Codes, Scales, Panels } derive = Derive::None;
  int64_t panel = 0;
  ScaleRule rule = ScaleRule::Floor;
  std::string stored = name;
  size_t hash = name.find('#');
  if (hash != std::string::npos) {
    std::string suffix = name.substr(hash);
    stored = name.substr(0, hash);
    if (suffix == "#bf16")
      derive = Derive::Bf16;
    else if (suffix == "#mxfp4.floor.codes" || suffix == "#mxfp4.ceil.codes")
      derive = Derive::Codes;
    else if (suffix == "#mxfp4.floor.scales" || suffix == "#mxfp4.ceil.scales")
      derive = Derive::Scales;
    else if (suffix == "#panels16" || suffix == "#panels32") {
      derive = Derive::Panels;
      panel = suffix == "#panels16" ? 16 : 32;
    } else {
      error = "weight '" + name + "' names an unknown derived form '" + suffix + "'";
      return false;
    }
    if (suffix.find(".ceil.") != std::string::npos)
      rule = ScaleRule::Ceil;
  }
  size_t stack = stored.find("{e}");
  int64_t experts = stack == std::string::npos ? 1 : blob.shape.front();
  // Split experts: this rank's block of whole experts (the stacked
  // dimension 0); any other split cuts each stored tensor.
  int64_t firstExpert = 0;
  if (stack != std::string::npos && block.dim == 0)
    firstExpert = block.index * experts;
  bool cutEach = block.dim >= 0 && !(stack != std::string::npos && block.dim == 0);
  WeightBlock storedBlock = block;
  if (stack != std::string::npos)
    --storedBlock.dim; // the per-expert tensors have no expert dimension
  std::vector<TensorView> cutViews; // the blocks, when cut (kept for the loop)
  for (int64_t e = firstExpert; e < firstExpert + experts; ++e) {
    std::string part = stored;
    if (stack != std::string::npos)
      part.replace(stack, 3, std::to_string(e));
    const TensorView *v = ck.findFull(part);
    if (!v) {
      error = "weight '" + part + "' is not in the checkpoint";
      return false;
    }
    // Cut blocks are owned by blob.decoded: a view's bytes stay put.
    auto cutOf = [&](const TensorView *whole) -> const TensorView * {
      if (!cutEach)
        return whole;
      blob.decoded.emplace_back();
      cutViews.reserve(2 * experts);
      cutViews.emplace_back();
      if (!cut(*whole, storedBlock, cutViews.back(), blob.decoded.back(), error))
        return nullptr;
      return &cutViews.back();
    };
    v = cutOf(v);
    if (!v)
      return false;
    std::vector<uint8_t> out;
    if (derive == Derive::None) {
      blob.parts.push_back({v->data, v->bytes});
      blob.bytes += v->bytes;
      continue;
    } else if (derive == Derive::Bf16) {
      std::string scaleName = part;
      size_t at = scaleName.rfind("weight_packed");
      const TensorView *s =
          at == std::string::npos ? nullptr
                                  : ck.findFull(scaleName.replace(at, 13, "weight_scale"));
      if (s && !(s = cutOf(s)))
        return false;
      if (!s || v->shape.size() != 2) {
        error = "weight '" + part + "' has no MXFP4 scales to decode it with";
        return false;
      }
      int64_t rows = v->shape[0], cols = v->shape[1] * 2;
      std::vector<float> values = ::k3::model::unpackMxfp4(v->data, s->data, rows, cols);
      out.resize(values.size() * 2);
      for (size_t i = 0; i < values.size(); ++i) {
        uint16_t bits = ::k3::model::floatToBf16(values[i]);
        std::memcpy(&out[2 * i], &bits, 2);
      }
    } else if (derive == Derive::Panels) {
      // Byte moves only: the stored dtype is the weight's (the importer
      // types weights by it), so the values are unchanged.
      int64_t rows = v->shape.size() == 2 ? v->shape[0] : 0;
      if (rows == 0 || v->shape[1] <= 0 || rows % panel != 0 || v->dtype == ::k3::model::DType::U8 ||
          v->bytes % size_t(rows * v->shape[1]) != 0) {
        error = "weight '" + part + "' " + ::k3::model::formatShape(v->shape) +
                " is not a float matrix of whole " + std::to_string(panel) +
                "-row panels; it cannot be packed for the CPU GEMMs";
        return false;
      }
      out = ::k3::model::packPanels(v->data, rows, v->shape[1],
                                    v->bytes / size_t(rows * v->shape[1]), panel);
    } else {
      if (v->shape.size() != 2 || v->shape[1] % 32 != 0 || v->dtype == ::k3::model::DType::U8) {
        error = "weight '" + part + "' is not a float matrix with rows of a multiple of 32 "
                "values; it cannot be quantized to MXFP4";
        return false;
      }
      std::vector<float> values = ::k3::model::floatValues(*v);
      for (size_t i = 0; i < values.size(); ++i)
        if (!std::isfinite(values[i])) {
          error = "weight '" + part + "' holds a non-finite value at element " +
                  std::to_string(i) + "; it cannot be quantized to MXFP4";
          return false;
        }
      std::vector<uint8_t> codes, scales;
      ::k3::model::packMxfp4(values.data(), v->shape[0], v->shape[1], codes, scales, rule);
      out = derive == Derive::Codes ? std::move(codes) : std::move(scales);
    }
    blob.decoded.push_back(std::move(out));
    blob.parts.push_back({blob.decoded.back().data(), blob.decoded.back().size()});
    blob.bytes += blob.decoded.back().size();
  }
  ::k3rt::Hash64 sum; // over the parts in order
  for (auto [data, size] : blob.parts)
    sum.update(data, size);
  blob.checksum = sum.digest();
  seen[name] = blobs.size();
  blobs.push_back(std::move(blob));
  return true;
}

/// The name of a weight argument, or "" for an entry-point input.
std::string weightName(func::FuncOp fn, unsigned i) {
  if (auto attrs = fn.getArgAttrDict(i))
    if (auto n = attrs.getAs<StringAttr>("k3.weight"))
      return n.getValue().str();
  return "";
}

flatbuffers::Offset<fb::TensorInfo>
tensorInfo(flatbuffers::FlatBufferBuilder &b, Type type, StringRef name,
           bool appendsRows = false) {
  auto t = cast<RankedTensorType>(type);
  fb::DType dtype = fb::DType_F32;
  (void)bundleDType(t.getElementType(), dtype); // checked by writeBundle
  std::vector<int64_t> shape;
  for (int64_t d : t.getShape())
    shape.push_back(ShapedType::isDynamic(d) ? -1 : d);
  return fb::CreateTensorInfoDirect(b, name.str().c_str(), dtype, &shape, appendsRows);
}

/// The entry points: public definitions (the layer functions they call are
/// private, compiled into the same host object).
SmallVector<func::FuncOp> entryPoints(ModuleOp module) {
  SmallVector<func::FuncOp> fns;
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn.isPublic() && !fn.isExternal())
      fns.push_back(fn);
  return fns;
}

} // namespace

std::vector<int64_t> mlir::k3::moduleGrid(ModuleOp module) {
  // Before k3-lower-collectives the grid is upstream's op, after it the
  // module's attribute.
  if (auto grid = module->getAttrOfType<DenseI64ArrayAttr>("k3.grid"))
    return std::vector<int64_t>(grid.asArrayRef().begin(), grid.asArrayRef().end());
  for (auto grid : module.getOps<shard::GridOp>())
    return std::vector<int64_t>(grid.getShape().begin(), grid.getShape().end());
  return {};
}

bool mlir::k3::writeBundle(ModuleOp module, const Checkpoint *checkpoint,
                           const BundleCode &code, const std::string &path,
                           std::string &error, bool omitWeights, int64_t rank) {
  const std::vector<int64_t> grid = moduleGrid(module);
  int64_t ranks = 1;
  for (int64_t n : grid)
    ranks *= n;
  if (rank < 0 || rank >= ranks) {
    error = "rank " + std::to_string(rank) + " is not on the module's grid of " +
            std::to_string(ranks) + " ranks";
    return false;
  }
  fb::Target target = code.target == "sm_90a" ? fb::Target_SM90A
                      : code.target == "sm_80" ? fb::Target_SM80
                                               : fb::Target_CPU;
  // An op-level module (no checkpoint) takes every tensor as an argument;
  // it gets an empty layer schedule (num_layers = 0).
  static const Config none;
  if (checkpoint && !checkpoint->hasWeights() && !omitWeights) {
    error = "a .k3b needs the checkpoint's weights; this directory has only "
            "config.json (write a synthetic checkpoint with "
            "--write-synthetic)";
    return false;
  }
  const Config &c = checkpoint ? checkpoint->config() : none;
  std::vector<Blob> blobs;
  std::map<std::string, size_t> seen;
  // One stored weight: `attrs` are its argument's (k3.weight, the packed
  // and split markers), `type` the tensor the kernels read.
  auto addArgWeight = [&](const std::string &name, RankedTensorType type,
                          DictionaryAttr attrs) {
    if (!checkpoint) {
      error = "weight '" + name + "' needs a checkpoint; an op-level module "
              "takes its tensors as arguments";
      return false;
    }
    // Packed MXFP4 bytes (k3-outline-weights): the blob is the codes.
    if (attrs && attrs.get("k3.packed_e2m1")) {
      SmallVector<int64_t> shape(type.getShape());
      shape.back() *= 2;
      type = RankedTensorType::get(shape, Float4E2M1FNType::get(type.getContext()));
    }
    WeightBlock block;
    if (auto dim = attrs ? attrs.getAs<IntegerAttr>("k3.split_dim") : nullptr) {
      auto axes = attrs.getAs<DenseI64ArrayAttr>("k3.split_axes");
      if (grid.empty() || !axes ||
          llvm::any_of(axes.asArrayRef(), [&](int64_t a) { return a < 0 || a >= int64_t(grid.size()); })) {
        error = "weight '" + name + "' is split over axes of no grid (k3.split_axes)";
        return false;
      }
      block = blockOf(grid, rank, dim.getInt(), axes.asArrayRef());
    }
    return addWeight(name, type, *checkpoint, blobs, seen, error, omitWeights, block);
  };
  // Packs first (k3-pack-layer-weights), so that their members lie back to
  // back in the order and at the offsets the layer functions read: a
  // weight an entry point also takes by itself is then bound inside its
  // pack. A pack several entry points share is laid out once.
  for (auto fn : entryPoints(module))
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (auto members = fn.getArgAttrOfType<ArrayAttr>(i, "k3.pack"))
        for (auto member : members.getAsRange<DictionaryAttr>()) {
          auto name = member.getAs<StringAttr>("k3.weight");
          auto type = member.getAs<TypeAttr>("k3.type");
          if (!name || !type || !isa<RankedTensorType>(type.getValue())) {
            error = "entry point '" + fn.getName().str() + "' argument " + std::to_string(i) +
                    ": a k3.pack member needs k3.weight and a tensor k3.type";
            return false;
          }
          if (!addArgWeight(name.getValue().str(), cast<RankedTensorType>(type.getValue()),
                            member))
            return false;
        }
  for (auto fn : entryPoints(module))
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      std::string name = weightName(fn, i);
      if (!name.empty() &&
          !addArgWeight(name, cast<RankedTensorType>(fn.getArgumentTypes()[i]),
                        fn.getArgAttrDict(i)))
        return false;
    }

  for (auto fn : entryPoints(module))
    for (Type t : llvm::concat<const Type>(fn.getArgumentTypes(),
                                           fn.getResultTypes())) {
      fb::DType dtype;
      auto tensor = dyn_cast<RankedTensorType>(t);
      if (!tensor || !bundleDType(tensor.getElementType(), dtype)) {
        error = "entry point '" + fn.getName().str() + "' has a " +
                "signature type the bundle cannot describe";
        return false;
      }
    }

  flatbuffers::FlatBufferBuilder b(1 << 20);
  auto nameOf = [](DictionaryAttr attrs, unsigned i) {
    if (attrs)
      if (auto n = attrs.getAs<StringAttr>("k3.name"))
        return n.getValue().str();
    return "arg" + std::to_string(i);
  };

  // Weight offsets are absolute, but the weights start after the flatbuffer,
  // whose size does not depend on the offsets' values (fixed-width
  // scalars): build once to learn the size, then again with the base.
  uint64_t relative = 0;
  for (Blob &blob : blobs) {
    blob.offset = relative;
    relative = ::k3rt::alignUp(relative + blob.bytes);
  }
  // Each pack as its layer functions read it: member k at the offset the
  // pass recorded from the first member, within the pack's bytes.
  for (auto fn : entryPoints(module))
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (auto members = fn.getArgAttrOfType<ArrayAttr>(i, "k3.pack")) {
        auto packType = cast<RankedTensorType>(fn.getArgumentTypes()[i]);
        auto dicts = llvm::to_vector(members.getAsRange<DictionaryAttr>());
        if (dicts.empty()) {
          error = "entry point '" + fn.getName().str() + "' argument " + std::to_string(i) +
                  ": an empty k3.pack";
          return false;
        }
        const Blob &first = blobs[seen.at(dicts.front().getAs<StringAttr>("k3.weight").str())];
        const Blob &last = blobs[seen.at(dicts.back().getAs<StringAttr>("k3.weight").str())];
        // The binding's length is the pack's: exactly its members' bytes.
        if (last.offset - first.offset + last.bytes != uint64_t(packType.getDimSize(0))) {
          error = "internal: entry point '" + fn.getName().str() + "' argument " +
                  std::to_string(i) + " is a " + std::to_string(packType.getDimSize(0)) +
                  "-byte pack whose members take " +
                  std::to_string(last.offset - first.offset + last.bytes);
          return false;
        }
        for (DictionaryAttr member : dicts) {
          const Blob &blob = blobs[seen.at(member.getAs<StringAttr>("k3.weight").str())];
          auto at = member.getAs<IntegerAttr>("k3.offset");
          if (!at || blob.offset - first.offset != uint64_t(at.getInt()) ||
              blob.offset - first.offset + blob.bytes > uint64_t(packType.getDimSize(0))) {
            error = "internal: weight '" + blob.name + "' lies at byte " +
                    std::to_string(blob.offset - first.offset) + " of its pack in the binary, " +
                    "not where entry point '" + fn.getName().str() + "' reads it";
            return false;
          }
        }
      }
  // The MLA cache's element type, as the entry points declare it (bf16 by
  // default, f32 with --mla-cache-dtype=f32).
  fb::DType mlaCacheType = fb::DType_BF16;
  int64_t mlaCacheBytes = 2;
  for (auto fn : entryPoints(module))
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (auto name = fn.getArgAttrOfType<StringAttr>(i, "k3.name"))
        if (name.getValue().ends_with(".mla_cache") &&
            cast<RankedTensorType>(fn.getArgumentTypes()[i]).getElementType().isF32()) {
          mlaCacheType = fb::DType_F32;
          mlaCacheBytes = 4;
        }
  auto build = [&](uint64_t base) {
    b.Clear();
    // Written even when equal to their defaults, so that no field appears
    // or vanishes between the two builds.
    b.ForceDefaults(true);
    std::vector<flatbuffers::Offset<fb::Weight>> weights;
    for (const Blob &blob : blobs)
      weights.push_back(fb::CreateWeightDirect(b, blob.name.c_str(), blob.dtype,
                                               &blob.shape, base + blob.offset,
                                               blob.bytes, blob.checksum, int32_t(blob.splitDim),
                                               blob.splitParts, blob.splitIndex));
    auto cfg = fb::CreateModelConfigDirect(
        b, c.vocabSize, c.hiddenSize, c.numLayers, c.kdaHeads, c.kdaHeadDim,
        c.convKernelSize, c.mlaHeads, c.kvLoraRank, c.qkRopeHeadDim,
        c.numExperts, c.topK, c.attnResBlockSize.value_or(0),
        checkpoint ? checkpoint->configText().c_str() : "");
    std::vector<flatbuffers::Offset<fb::Layer>> ls;
    for (int64_t l = 0; l < c.numLayers; ++l)
      ls.push_back(fb::CreateLayer(
          b, c.mixer(l) == Mixer::KDA ? fb::Mixer_KDA : fb::Mixer_MLA,
          c.ffn(l) == ::k3::model::FFN::MoE ? fb::FFN_MoE : fb::FFN_Dense,
          c.seals(l)));
    // A rank holds its heads' KDA state (a tp-th); MLA rows whole.
    const int64_t tp = grid.empty() ? 1 : grid.back(); // ep x tp
    auto cg = fb::CreateCacheGeometry(
        b, int(c.numKda()), c.convKernelSize > 0 ? c.convKernelSize - 1 : 0,
        c.kdaProjWidth() / tp, c.kdaHeads / tp * c.kdaHeadDim * c.kdaHeadDim * 4,
        int(c.numMla()), c.numMla() ? c.mlaCacheWidth() : 0, mlaCacheType,
        c.numMla() * c.mlaCacheWidth() * mlaCacheBytes);
    // Entry points: inputs are the non-weight arguments; with a kernel, one
    // step binds every argument in order (inputs and weights by index).
    std::vector<flatbuffers::Offset<fb::EntryPoint>> eps;
    std::vector<flatbuffers::Offset<fb::Kernel>> kernels;
    // The host object's kernel-table index, once written. Shared by several
    // entries, it has no one arity (num_args 0: each step's own).
    std::optional<uint32_t> hostKernel;
    const bool shared = entryPoints(module).size() > 1;
    for (auto fn : entryPoints(module)) {
      std::vector<flatbuffers::Offset<fb::TensorInfo>> ins, outs;
      std::vector<flatbuffers::Offset<fb::Binding>> args;
      for (auto [i, t] : llvm::enumerate(fn.getArgumentTypes())) {
        if (auto members = fn.getArgAttrOfType<ArrayAttr>(i, "k3.pack")) {
          auto first = cast<DictionaryAttr>(members[0]).getAs<StringAttr>("k3.weight");
          args.push_back(fb::CreateBinding(
              b, fb::BindingKind_Pack, uint32_t(seen.at(first.str())), 0,
              uint64_t(cast<RankedTensorType>(t).getDimSize(0))));
          continue;
        }
        std::string w = weightName(fn, i);
        if (!w.empty()) {
          args.push_back(fb::CreateBinding(b, fb::BindingKind_Weight,
                                           uint32_t(seen.at(w)), 0, 0));
          continue;
        }
        args.push_back(fb::CreateBinding(b, fb::BindingKind_Input,
                                         uint32_t(ins.size()), 0, 0));
        ins.push_back(tensorInfo(b, t, nameOf(fn.getArgAttrDict(i), i),
                                 bool(fn.getArgAttr(i, "k3.appends_rows"))));
      }
      for (auto [i, t] : llvm::enumerate(fn.getResultTypes()))
        outs.push_back(tensorInfo(b, t, nameOf(fn.getResultAttrDict(i), i)));
      std::vector<flatbuffers::Offset<fb::Step>> steps;
      if (!code.hostObject.empty()) {
        // One host call per entry: the grid is a single program.
        if (!hostKernel) {
          hostKernel = uint32_t(kernels.size());
          kernels.push_back(fb::CreateKernelDirect(
              b, fn.getName().str().c_str(), target, &code.hostObject, nullptr, nullptr,
              nullptr, 0, shared ? 0 : uint32_t(args.size()), -1, -1, code.cpu.c_str(),
              ::k3rt::codeChecksum(code.hostObject.data(), code.hostObject.size(), nullptr, 0,
                                   nullptr, 0)));
        }
        std::vector<fb::GridDim> grid(3, fb::GridDim(1, 0, 1));
        steps.push_back(fb::CreateStepDirect(b, *hostKernel, &grid, &args));
      }
      eps.push_back(fb::CreateEntryPointDirect(b, fn.getName().str().c_str(), &ins, &outs,
                                               &steps, 0,
                                               code.graphCapturable.count(fn.getName().str())));
    }
    // Device kernels: launched by the host objects, never by a step.
    for (const DeviceKernel &k : code.deviceKernels) {
      uint64_t sum = ::k3rt::codeChecksum(nullptr, 0, k.ptx.data(), k.ptx.size(),
                                          k.cubin.data(), k.cubin.size());
      kernels.push_back(fb::CreateKernelDirect(
          b, k.name.c_str(), target, nullptr, k.ptx.c_str(),
          k.cubin.empty() ? nullptr : &k.cubin, &k.block, k.sharedMemoryBytes, 0,
          k.registers, k.spillBytes, nullptr, sum));
    }
    flatbuffers::Offset<fb::Grid> gridTable = 0;
    if (!grid.empty())
      gridTable = fb::CreateGridDirect(b, &grid, rank);
    auto root = fb::CreateBundleDirect(b, ::k3rt::kFormatVersion, "k3-compile",
                                       target, cfg, &ls, cg, &eps,
                                       &kernels, &weights, 0, gridTable);
    fb::FinishBundleBuffer(b, root);
  };
  build(0);
  uint64_t base = ::k3rt::alignUp(sizeof(::k3rt::FileHeader) + b.GetSize());
  build(base);
  if (::k3rt::alignUp(sizeof(::k3rt::FileHeader) + b.GetSize()) != base) {
    error = "internal: the flatbuffer's size changed with its offsets";
    return false;
  }

  ::k3rt::FileHeader h{};
  std::memcpy(h.magic, ::k3rt::kMagic, sizeof h.magic);
  h.formatVersion = ::k3rt::kFormatVersion;
  h.flatbufferOffset = sizeof h;
  h.flatbufferSize = b.GetSize();
  h.weightsOffset = base;
  h.weightsSize = relative;
  h.fileSize = omitWeights ? base : base + relative;
  h.flags = omitWeights ? ::k3rt::kFlagWeightsOmitted : 0;
  h.flatbufferChecksum = ::k3rt::hash64(b.GetBufferPointer(), b.GetSize());

  // Written beside the target and renamed once verified, so a failure never
  // leaves a half-written or unverified binary under the requested name.
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) {
    error = path + ": cannot write";
    return false;
  }
  const char zeros[::k3rt::kAlignment] = {};
  out.write(reinterpret_cast<const char *>(&h), sizeof h);
  out.write(reinterpret_cast<const char *>(b.GetBufferPointer()), b.GetSize());
  out.write(zeros, base - sizeof h - b.GetSize());
  if (!omitWeights) {
    uint64_t written = 0;
    for (const Blob &blob : blobs) {
      out.write(zeros, blob.offset - written);
      for (auto [data, size] : blob.parts)
        out.write(reinterpret_cast<const char *>(data), size);
      written = blob.offset + blob.bytes;
    }
    out.write(zeros, relative - written);
  }
  out.close();
  if (!out) {
    std::remove(tmp.c_str());
    error = path + ": write failed";
    return false;
  }

  // Verify after write, with the runtime's own checks.
  k3rt_bundle_t *bundle = nullptr;
  if (k3rt_status_t s = k3rt_bundle_open(tmp.c_str(), &bundle)) {
    error = std::string("internal: the written bundle fails verification: ") +
            k3rt_status_message(s);
    k3rt_status_free(s);
    std::remove(tmp.c_str());
    return false;
  }
  k3rt_bundle_release(bundle);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    error = path + ": cannot rename the written binary into place";
    return false;
  }
  return true;
}
