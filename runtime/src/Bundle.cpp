//===- Bundle.cpp - Open and verify .k3b binaries -------------------------===//
//
// Part of k3. Verify before trusting (STYLE.md §9): header against the file
// size, the flatbuffer verifier, then semantic checks of every index, offset
// and size. Messages name the field path: `weights[3].offset=...`.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Bundle.h"
#include "runtime/src/Status.h"
#include "runtime/src/comm/Collectives.h"

#include "lib/Model/Synthetic.h"
#include "lib/Model/Text.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <algorithm>
#include <set>
#include <vector>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace k3::bundle;

namespace k3rt {
namespace {

/// Largest dynamic shared memory per block: sm_90 (227 KiB), sm_80 (163 KiB).
constexpr uint32_t kMaxSharedMemorySm90 = 232448;
constexpr uint32_t kMaxSharedMemorySm80 = 166912;
constexpr int kMaxThreadsPerBlock = 1024;

k3rt_status_t corrupt(const std::string &message) {
  return makeStatus(K3RT_DATA_LOSS, message);
}

std::string at(const std::string &field, size_t i) {
  return field + "[" + std::to_string(i) + "]";
}

/// `a + b <= limit` without overflow.
bool fits(uint64_t a, uint64_t b, uint64_t limit) {
  return a <= limit && b <= limit - a;
}

/// A name that can appear in a one-line message and, for kernels, as a file
/// name: printable, and no path separators.
bool isPrintable(const flatbuffers::String *s) {
  for (unsigned char c : s->string_view())
    if (c < 0x20 || c == 0x7f)
      return false;
  return true;
}

/// The verifier checks a vector's length field, not that its 8-byte
/// elements are aligned (flatbuffers 2.0): a crafted offset could misalign
/// them, and reading them so is undefined (fuzz-bundle's finding).
template <typename T> bool aligned(const flatbuffers::Vector<T> *v) {
  return reinterpret_cast<uintptr_t>(v->Data()) % alignof(T) == 0;
}

std::string hex(uint64_t v) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

/// Each kernel's code against its code_checksum. Tables may be shared, so
/// the bytes hashed are bounded by the flatbuffer's size (each byte once in
/// a file without sharing).
k3rt_status_t checkKernelCode(const Bundle &root, uint64_t flatbufferSize) {
  if (!root.kernels())
    return nullptr;
  uint64_t hashed = 0;
  for (size_t i = 0; i < root.kernels()->size(); ++i) {
    const Kernel *k = root.kernels()->Get(i);
    // In 64 bits: three 32-bit sizes of one shared vector would wrap.
    uint64_t bytes = uint64_t(k->object() ? k->object()->size() : 0) +
                     uint64_t(k->ptx() ? k->ptx()->size() : 0) +
                     uint64_t(k->cubin() ? k->cubin()->size() : 0);
    if ((hashed += bytes) > flatbufferSize)
      return corrupt("kernels: their code adds up to more than the flatbuffer's " +
                     std::to_string(flatbufferSize) + " bytes (tables shared)");
    uint64_t sum = kernelChecksum(*k);
    if (sum != k->code_checksum())
      return corrupt(at("kernels", i) +
                     " '" + k3::model::printable(k->name()->string_view()) + "'" +
                     ": code checksum " + hex(sum) + " != recorded " + hex(k->code_checksum()) +
                     " (corrupt code; nothing of it was loaded)");
  }
  return nullptr;
}

/// The semantic checks, run after the flatbuffer verifier. Flatbuffers may
/// share one table from many places, so a small file can describe a huge
/// tree: every element visited is charged to a budget proportional to the
/// file, which a file without sharing never exhausts.
class Checker {
public:
  Checker(const Bundle &b, const FileHeader &h)
      : b(b), h(h), budget(h.flatbufferSize / 4 + 1024) {}

  k3rt_status_t run() {
    if (k3rt_status_t s = model())
      return s;
    if (k3rt_status_t s = weights())
      return s;
    if (k3rt_status_t s = kernels())
      return s;
    if (k3rt_status_t s = grid())
      return s;
    return entryPoints();
  }

private:
  /// A grid-compiled binary's grid and rank (runtime/src/comm: at most
  /// kMaxGridRank axes, 4096 ranks a side).
  k3rt_status_t grid() {
    const Grid *g = b.grid();
    if (!g)
      return nullptr;
    const auto *shape = g->shape();
    if (shape->size() == 0 || shape->size() > comm::kMaxGridRank)
      return corrupt("grid.shape has " + std::to_string(shape->size()) +
                     " axes (expected 1 to " + std::to_string(comm::kMaxGridRank) + ")");
    int64_t ranks = 1;
    for (int64_t n : *shape) {
      if (n < 1 || n > 4096)
        return corrupt("grid.shape holds the extent " + std::to_string(n) +
                       " (expected 1 to 4096)");
      ranks *= n;
      if (ranks > 4096)
        return corrupt("grid.shape has more than 4096 ranks");
    }
    if (g->rank() < 0 || g->rank() >= ranks)
      return corrupt("grid.rank " + std::to_string(g->rank()) + " is not one of its " +
                     std::to_string(ranks) + " ranks");
    return nullptr;
  }

  /// Charges `n` visits; false once the budget is spent.
  bool spend(size_t n) {
    if (n > budget)
      return false;
    budget -= n;
    return true;
  }
  k3rt_status_t amplified() {
    return corrupt("flatbuffer: tables are shared far more often than the "
                   "file's size allows (a crafted file?)");
  }

  k3rt_status_t name(const flatbuffers::String *n, const std::string &field) {
    if (n->size() == 0)
      return corrupt(field + ".name is empty");
    if (!isPrintable(n))
      return corrupt(field + ".name holds control characters");
    return nullptr;
  }

  k3rt_status_t tensors(const flatbuffers::Vector<flatbuffers::Offset<TensorInfo>> *v,
                        const std::string &field) {
    if (!v)
      return nullptr;
    if (!spend(v->size()))
      return amplified();
    for (size_t i = 0; i < v->size(); ++i) {
      const TensorInfo *t = v->Get(i);
      std::string tf = at(field, i);
      if (k3rt_status_t s = name(t->name(), tf))
        return s;
      if (t->dtype() < DType_MIN || t->dtype() > DType_MAX)
        return corrupt(tf + ".dtype=" + std::to_string(int(t->dtype())) +
                       " is not a known dtype");
      if (!spend(t->shape()->size()))
        return amplified();
      if (!aligned(t->shape()))
        return corrupt(tf + ".shape is misaligned");
      for (size_t d = 0; d < t->shape()->size(); ++d)
        if (t->shape()->Get(d) < -1)
          return corrupt(tf + ".shape[" + std::to_string(d) + "]=" +
                         std::to_string(t->shape()->Get(d)) +
                         " (only -1 marks a dynamic extent)");
      // The runtime grows an appended input's leading extent by the call's
      // tokens: it must be the dynamic one.
      if (t->appends_rows() && (t->shape()->size() == 0 || t->shape()->Get(0) != -1))
        return corrupt(tf + ".appends_rows is set on a tensor whose leading extent is not dynamic");
    }
    return nullptr;
  }

  k3rt_status_t model() {
    if ((h.flags & ~kFlagWeightsOmitted) != 0)
      return corrupt("header.flags=" + std::to_string(h.flags) + " has unknown bits");
    if (b.producer() && !isPrintable(b.producer()))
      return corrupt("producer holds control characters");
    const ModelConfig *c = b.config();
    // num_layers = 0 marks an op-level module: functions, no model.
    if (c->num_layers() < 0 ||
        (c->num_layers() > 0 && (c->vocab_size() <= 0 || c->hidden_size() <= 0)))
      return corrupt("config: vocab_size and hidden_size must be positive "
                     "(num_layers=" + std::to_string(c->num_layers()) + ")");
    if (!spend(b.layers()->size()))
      return amplified();
    if (int64_t(b.layers()->size()) != c->num_layers())
      return corrupt("layers has " + std::to_string(b.layers()->size()) +
                     " entries but config.num_layers=" +
                     std::to_string(c->num_layers()));
    int kda = 0;
    for (size_t i = 0; i < b.layers()->size(); ++i) {
      const Layer *l = b.layers()->Get(i);
      if (l->mixer() < Mixer_MIN || l->mixer() > Mixer_MAX ||
          l->ffn() < FFN_MIN || l->ffn() > FFN_MAX)
        return corrupt(at("layers", i) + " has an unknown mixer or FFN kind");
      kda += l->mixer() == Mixer_KDA;
    }
    const CacheGeometry *g = b.cache();
    if (g->kda_layers() != kda || g->mla_layers() != int(b.layers()->size()) - kda)
      return corrupt("cache: kda_layers=" + std::to_string(g->kda_layers()) +
                     " and mla_layers=" + std::to_string(g->mla_layers()) +
                     " disagree with the layer schedule (" +
                     std::to_string(kda) + " KDA)");
    if (g->conv_window_rows() < 0 || g->conv_channels() < 0 ||
        g->kda_state_bytes() < 0 || g->mla_row_width() < 0 ||
        g->mla_bytes_per_token() < 0 || g->mla_dtype() < DType_MIN ||
        g->mla_dtype() > DType_MAX)
      return corrupt("cache: sizes must be non-negative and mla_dtype known");
    return nullptr;
  }

  k3rt_status_t weights() {
    if (!b.weights())
      return nullptr;
    if (!spend(b.weights()->size()))
      return amplified();
    std::set<std::string> names;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    const uint64_t begin = h.weightsOffset, end = h.weightsOffset + h.weightsSize;
    for (size_t i = 0; i < b.weights()->size(); ++i) {
      const Weight *w = b.weights()->Get(i);
      std::string field = at("weights", i);
      if (k3rt_status_t s = name(w->name(), field))
        return s;
      if (!names.insert(w->name()->str()).second)
        return corrupt(field + ".name='" + w->name()->str() + "' repeats");
      if (w->dtype() < DType_MIN || w->dtype() > DType_MAX)
        return corrupt(field + ".dtype=" + std::to_string(int(w->dtype())) +
                       " is not a known dtype");
      if (!spend(w->shape()->size()))
        return amplified();
      if (!aligned(w->shape()))
        return corrupt(field + ".shape is misaligned");
      int64_t want = weightBytes(w->dtype(), *w->shape());
      if (want < 0)
        return corrupt(field + ".shape is not a valid " +
                       dtypeName(w->dtype()) + " shape");
      if (w->length() != uint64_t(want))
        return corrupt(field + ".length=" + std::to_string(w->length()) +
                       " but " + dtypeName(w->dtype()) +
                       " of its shape needs " + std::to_string(want));
      // A split: a dimension of the shape, and a block of it (the whole
      // tensor's extent there must not overflow: the synthetic fill draws it).
      if (w->split_dim() < -1 || w->split_dim() >= int64_t(w->shape()->size()) ||
          w->split_parts() < 1 || w->split_parts() > 4096 || w->split_index() < 0 ||
          w->split_index() >= w->split_parts())
        return corrupt(field + " split: dimension " + std::to_string(w->split_dim()) +
                       ", block " + std::to_string(w->split_index()) + " of " +
                       std::to_string(w->split_parts()) + " is not one of its shape");
      if (w->offset() % kAlignment)
        return corrupt(field + ".offset=" + std::to_string(w->offset()) +
                       " is not 64-byte aligned");
      if (w->offset() < begin || !fits(w->offset(), w->length(), end))
        return corrupt(field + ".offset=" + std::to_string(w->offset()) +
                       " with length " + std::to_string(w->length()) +
                       " exceeds the weight region [" + std::to_string(begin) +
                       ", " + std::to_string(end) + ")");
      ranges.push_back({w->offset(), w->offset() + w->length()});
    }
    std::sort(ranges.begin(), ranges.end());
    // What a device copies (CpuExecutable::bindWeightsOnDevice): from the
    // first weight to the end of the last; a pack must lie within it.
    for (auto [first, last] : ranges)
      weightsEnd = std::max(weightsEnd, last);
    for (size_t i = 1; i < ranges.size(); ++i)
      if (ranges[i].first < ranges[i - 1].second)
        return corrupt("weights overlap at file offset " +
                       std::to_string(ranges[i].first));
    return nullptr;
  }

  k3rt_status_t kernels() {
    if (!b.kernels())
      return nullptr;
    if (!spend(b.kernels()->size()))
      return amplified();
    std::set<std::string> names;
    for (size_t i = 0; i < b.kernels()->size(); ++i) {
      const Kernel *k = b.kernels()->Get(i);
      std::string field = at("kernels", i);
      if (k3rt_status_t s = name(k->name(), field))
        return s;
      // Kernel names become file names (k3-dump --extract-kernels).
      std::string n = k->name()->str();
      if (n.find('/') != std::string::npos || n == "." || n == "..")
        return corrupt(field + ".name='" + n + "' is not a plain file name");
      if (!names.insert(n).second)
        return corrupt(field + ".name='" + n + "' repeats");
      if (k->target() < Target_MIN || k->target() > Target_MAX)
        return corrupt(field + ".target=" + std::to_string(int(k->target())) +
                       " is not a known target");
      if (k->target() == Target_CPU) {
        if (!k->object() || k->object()->size() == 0)
          return corrupt(field + ".object is empty for a CPU kernel");
        continue;
      }
      // A GPU target's host program (it launches the device kernels) has an
      // object and no PTX.
      if (k->object() && k->object()->size() > 0) {
        if (k->ptx() && k->ptx()->size() > 0)
          return corrupt(field + " has both a host object and PTX");
        continue;
      }
      // CUDA takes no length for a PTX image: the flatbuffer verifier has
      // checked that strings are NUL-terminated inside the buffer.
      if (!k->ptx() || k->ptx()->size() == 0)
        return corrupt(field + ".ptx is empty for a GPU kernel");
      if (k->cubin() && k->cubin()->size() > 0 &&
          (k->cubin()->size() < 64 ||
           std::memcmp(k->cubin()->data(), "\x7f" "ELF", 4) != 0))
        return corrupt(field + ".cubin is not an ELF image");
      uint32_t limit = k->target() == Target_SM80 ? kMaxSharedMemorySm80
                                                  : kMaxSharedMemorySm90;
      if (k->shared_memory_bytes() > limit)
        return corrupt(field + ".smem=" +
                       std::to_string(k->shared_memory_bytes()) +
                       " exceeds device limit " + std::to_string(limit));
      if (!k->block() || k->block()->size() != 3)
        return corrupt(field + ".block must have 3 dimensions");
      int64_t threads = 1;
      for (size_t d = 0; d < 3; ++d) {
        int32_t v = k->block()->Get(d);
        if (v < 1 || v > kMaxThreadsPerBlock)
          return corrupt(field + ".block[" + std::to_string(d) + "]=" +
                         std::to_string(v) + " is outside 1.." +
                         std::to_string(kMaxThreadsPerBlock));
        threads *= v;
      }
      if (threads > kMaxThreadsPerBlock)
        return corrupt(field + ".block has " + std::to_string(threads) +
                       " threads, more than " +
                       std::to_string(kMaxThreadsPerBlock));
    }
    return nullptr;
  }

  k3rt_status_t entryPoints() {
    if (!b.entry_points())
      return nullptr;
    if (!spend(b.entry_points()->size()))
      return amplified();
    size_t numKernels = b.kernels() ? b.kernels()->size() : 0;
    size_t numWeights = b.weights() ? b.weights()->size() : 0;
    std::set<std::string> names;
    for (size_t e = 0; e < b.entry_points()->size(); ++e) {
      const EntryPoint *ep = b.entry_points()->Get(e);
      std::string field = at("entry_points", e);
      if (k3rt_status_t s = name(ep->name(), field))
        return s;
      if (!names.insert(ep->name()->str()).second)
        return corrupt(field + ".name='" + ep->name()->str() + "' repeats");
      if (k3rt_status_t s = tensors(ep->inputs(), field + ".inputs"))
        return s;
      if (k3rt_status_t s = tensors(ep->outputs(), field + ".outputs"))
        return s;
      size_t numInputs = ep->inputs() ? ep->inputs()->size() : 0;
      size_t numOutputs = ep->outputs() ? ep->outputs()->size() : 0;
      if (!ep->steps())
        continue;
      if (!spend(ep->steps()->size()))
        return amplified();
      for (size_t s = 0; s < ep->steps()->size(); ++s) {
        const Step *step = ep->steps()->Get(s);
        std::string sf = field + "." + at("steps", s);
        if (step->kernel() >= numKernels)
          return corrupt(sf + ".kernel=" + std::to_string(step->kernel()) +
                         " but the binary has " + std::to_string(numKernels) +
                         " kernels");
        size_t numArgs = step->args() ? step->args()->size() : 0;
        uint32_t want = b.kernels()->Get(step->kernel())->num_args();
        // 0: a host object serving several entry points, each with its own
        // arity (`k3_entry_<name>`).
        if (want != 0 && numArgs != want)
          return corrupt(sf + " binds " + std::to_string(numArgs) +
                         " arguments but kernels[" +
                         std::to_string(step->kernel()) + "] takes " +
                         std::to_string(want));
        if (!step->grid() || step->grid()->size() != 3)
          return corrupt(sf + ".grid must have 3 dimensions");
        // The verifier checks a struct vector's length field, not that its
        // 8-byte elements are aligned; a corrupt offset could misalign them.
        if (reinterpret_cast<uintptr_t>(step->grid()->Data()) % alignof(GridDim))
          return corrupt(sf + ".grid is misaligned");
        for (size_t g = 0; g < 3; ++g) {
          const GridDim *d = step->grid()->Get(g);
          if (d->divisor() <= 0 || d->constant() < 0 || d->per_token() < 0 ||
              d->constant() > (int64_t(1) << 31) ||
              d->per_token() > (int64_t(1) << 31))
            return corrupt(sf + "." + at("grid", g) +
                           " needs a positive divisor and terms in 0..2^31");
        }
        if (!spend(numArgs))
          return amplified();
        for (size_t a = 0; a < numArgs; ++a) {
          const Binding *arg = step->args()->Get(a);
          std::string af = sf + "." + at("args", a);
          size_t limit = 0;
          switch (arg->kind()) {
          case BindingKind_Weight:
            limit = numWeights;
            break;
          case BindingKind_Input:
          case BindingKind_State: // state crosses the entry point as inputs
            limit = numInputs;
            break;
          case BindingKind_Output:
            limit = numOutputs;
            break;
          case BindingKind_Pack:
            limit = numWeights;
            if (arg->index() < numWeights &&
                (arg->bytes() == 0 ||
                 !fits(b.weights()->Get(arg->index())->offset(), arg->bytes(), weightsEnd)))
              return corrupt(af + " pack [" +
                             std::to_string(b.weights()->Get(arg->index())->offset()) + ", +" +
                             std::to_string(arg->bytes()) +
                             ") is empty or ends past the last weight");
            break;
          case BindingKind_Scratch:
            if (arg->offset() % kAlignment)
              return corrupt(af + " scratch offset " +
                             std::to_string(arg->offset()) +
                             " is not 64-byte aligned");
            if (!fits(arg->offset(), arg->bytes(), ep->scratch_bytes()))
              return corrupt(af + " scratch [" + std::to_string(arg->offset()) +
                             ", +" + std::to_string(arg->bytes()) +
                             ") exceeds the " +
                             std::to_string(ep->scratch_bytes()) +
                             "-byte arena");
            continue;
          default:
            return corrupt(af + ".kind=" + std::to_string(int(arg->kind())) +
                           " is not a known binding");
          }
          if (arg->index() >= limit)
            return corrupt(af + ".index=" + std::to_string(arg->index()) +
                           " is out of range (" + std::to_string(limit) + ")");
        }
      }
    }
    return nullptr;
  }

  const Bundle &b;
  const FileHeader &h;
  size_t budget;
  uint64_t weightsEnd = 0; ///< the end of the last weight (weights())
};

} // namespace

const char *dtypeName(DType dtype) {
  if (dtype < DType_MIN || dtype > DType_MAX)
    return "?";
  return EnumNameDType(dtype);
}

int64_t weightBytes(DType dtype, const flatbuffers::Vector<int64_t> &shape) {
  int64_t elements = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(elements, d, &elements))
      return -1;
  switch (dtype) {
  case DType_F32:
  case DType_I32:
    return __builtin_mul_overflow(elements, 4, &elements) ? -1 : elements;
  case DType_BF16:
  case DType_F16:
    return __builtin_mul_overflow(elements, 2, &elements) ? -1 : elements;
  case DType_I64:
    return __builtin_mul_overflow(elements, 8, &elements) ? -1 : elements;
  case DType_U8:
  case DType_F8E8M0FNU:
    return elements;
  case DType_F4E2M1FN:
    // Kernels read rows of packed bytes: the last dimension pairs up.
    return shape.size() == 0 || shape.Get(shape.size() - 1) % 2 ? -1 : elements / 2;
  }
  return -1;
}

/// Fills the weight region of a bundle compiled without it: a 64-byte
/// aligned copy of the file, extended by the region, each weight written
/// with the synthetic checkpoint's values for `seed`.
k3rt_status_t fillSyntheticWeights(k3rt_bundle_s &b, uint64_t seed) {
  // The file plus the weights the table places (verified to lie in the
  // header's region, which cannot wrap): not the header's size alone.
  uint64_t need = b.size;
  if (b.root->weights())
    for (const Weight *w : *b.root->weights())
      need = std::max<uint64_t>(need, w->offset() + w->length());
  uint64_t total = alignUp(need);
  auto *buffer = static_cast<uint8_t *>(std::aligned_alloc(kAlignment, total ? total : kAlignment));
  if (!buffer)
    return makeStatus(K3RT_RESOURCE_EXHAUSTED, "cannot allocate " + std::to_string(total) +
                                                   " bytes for synthetic weights");
  std::memcpy(buffer, b.data, b.size);
  std::memset(buffer + b.size, 0, total - b.size);
  const Bundle *root = GetBundle(buffer + b.header.flatbufferOffset);
  const ModelConfig *c = root->config();
  const k3::model::SyntheticSizes sizes{c->hidden_size(), c->kda_heads()};
  if (root->weights())
    for (size_t i = 0; i < root->weights()->size(); ++i) {
      const Weight *w = root->weights()->Get(i);
      k3::model::SyntheticForm form;
      switch (w->dtype()) {
      case DType_F32: form = k3::model::SyntheticForm::F32; break;
      case DType_BF16: form = k3::model::SyntheticForm::BF16; break;
      case DType_F4E2M1FN: form = k3::model::SyntheticForm::Mxfp4Codes; break;
      case DType_F8E8M0FNU: form = k3::model::SyntheticForm::Mxfp4Scales; break;
      default:
        std::free(buffer);
        return makeStatus(K3RT_UNIMPLEMENTED,
                          at("weights", i) + " '" + w->name()->str() + "': no synthetic " +
                              dtypeName(w->dtype()) + " values");
      }
      std::vector<int64_t> shape(w->shape()->begin(), w->shape()->end());
      std::vector<uint8_t> bytes;
      std::string error;
      // A rank's block of a split weight (a grid-compiled binary): its
      // experts, or its block of the whole tensor's values, so that every
      // grid runs the model one process runs.
      const bool split = w->split_dim() >= 0 && w->split_parts() > 1;
      const bool stacked = w->name()->str().find("{e}") != std::string::npos;
      int64_t firstExpert = 0;
      std::vector<int64_t> drawn = shape;
      if (split && stacked && w->split_dim() == 0)
        firstExpert = w->split_index() * shape[0];
      else if (split)
        drawn[w->split_dim()] *= w->split_parts();
      auto cutBlock = [&](std::vector<uint8_t> &whole) {
        if (!split || (stacked && w->split_dim() == 0))
          return;
        int64_t outer = 1;
        for (int64_t d = 0; d < w->split_dim(); ++d)
          outer *= shape[d];
        size_t block = whole.size() / size_t(outer * w->split_parts());
        std::vector<uint8_t> mine(size_t(outer) * block);
        for (int64_t o = 0; o < outer; ++o)
          std::memcpy(mine.data() + o * block,
                      whole.data() + (o * w->split_parts() + w->split_index()) * block, block);
        whole = std::move(mine);
      };
      bool made = k3::model::syntheticBundleWeight(w->name()->str(), form, drawn, sizes, seed,
                                                   bytes, error, firstExpert);
      cutBlock(bytes);
      // Experts quantized at compile time (`#mxfp4`) were quantized from the
      // checkpoint's f32 or bf16 values, which the bundle does not record:
      // the recorded checksum tells which (with the checkpoint's seed).
      if (made && w->name()->str().find("#mxfp4.") != std::string::npos &&
          hash64(bytes.data(), bytes.size()) != w->checksum()) {
        std::vector<uint8_t> fromBf16;
        k3::model::SyntheticSizes bf16Sizes = sizes;
        bf16Sizes.bf16Sources = true;
        bool remade = k3::model::syntheticBundleWeight(w->name()->str(), form, drawn, bf16Sizes,
                                                       seed, fromBf16, error, firstExpert);
        cutBlock(fromBf16);
        if (remade && hash64(fromBf16.data(), fromBf16.size()) == w->checksum())
          bytes = std::move(fromBf16);
      }
      if (!made || bytes.size() != w->length()) {
        std::free(buffer);
        return makeStatus(K3RT_UNIMPLEMENTED,
                          at("weights", i) + ": " +
                              (error.empty() ? "synthetic values of the wrong size" : error));
      }
      std::memcpy(buffer + w->offset(), bytes.data(), bytes.size());
    }
  if (b.mapped)
    munmap(const_cast<uint8_t *>(b.data), b.size);
  b.mapped = false;
  b.owned = buffer;
  b.data = buffer;
  b.size = total;
  b.root = root;
  return nullptr;
}

k3rt_status_t verifyBundle(const uint8_t *data, size_t size, FileHeader &h,
                           const Bundle *&root) {
  if (size < sizeof(FileHeader))
    return corrupt("truncated: " + std::to_string(size) +
                   " bytes, a .k3b needs at least the 64-byte header");
  std::memcpy(&h, data, sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0)
    return corrupt("not a .k3b file (bad magic)");
  if (h.formatVersion != kFormatVersion)
    return makeStatus(K3RT_UNIMPLEMENTED,
                      "header.format_version=" + std::to_string(h.formatVersion) +
                          " but this runtime reads version " +
                          std::to_string(kFormatVersion));
  if (h.fileSize != size)
    return corrupt("truncated or padded: header.file_size=" +
                   std::to_string(h.fileSize) + " but the file has " +
                   std::to_string(size) + " bytes");
  if (h.flatbufferOffset != sizeof(FileHeader) ||
      !fits(h.flatbufferOffset, h.flatbufferSize, size))
    return corrupt("header.flatbuffer_offset=" +
                   std::to_string(h.flatbufferOffset) + " with size " +
                   std::to_string(h.flatbufferSize) +
                   " does not fit the file");
  // Without its weights the file ends where they would begin.
  bool omitted = h.flags & kFlagWeightsOmitted;
  if (h.weightsOffset % kAlignment ||
      h.weightsOffset < h.flatbufferOffset + h.flatbufferSize ||
      (omitted ? h.weightsOffset != size ||
                     !fits(h.weightsOffset, h.weightsSize, UINT64_MAX - kAlignment)
               : !fits(h.weightsOffset, h.weightsSize, size)))
    return corrupt("header.weights_offset=" + std::to_string(h.weightsOffset) +
                   " with size " + std::to_string(h.weightsSize) +
                   " is misaligned or overlaps the flatbuffer or the end" +
                   (omitted ? " (weights omitted: the file must end at weights_offset)" : ""));

  const uint8_t *fb = data + h.flatbufferOffset;
  if (h.flatbufferSize < 8) // root offset and file identifier
    return corrupt("header.flatbuffer_size=" + std::to_string(h.flatbufferSize) +
                   " is too small for a flatbuffer");
  if (!flatbuffers::BufferHasIdentifier(fb, BundleIdentifier()))
    return corrupt("flatbuffer: missing file identifier 'K3B0'");
  flatbuffers::Verifier verifier(fb, h.flatbufferSize);
  if (!VerifyBundleBuffer(verifier))
    return corrupt("flatbuffer: failed verification (corrupt tables or "
                   "offsets)");
  root = GetBundle(fb);
  if (root->format_version() != h.formatVersion)
    return corrupt("flatbuffer format_version=" +
                   std::to_string(root->format_version()) +
                   " disagrees with header.format_version=" +
                   std::to_string(h.formatVersion));
  // Kernel code first, so that a corrupt byte of code is named by its
  // kernel; then the whole flatbuffer, which covers the code too.
  if (k3rt_status_t s = checkKernelCode(*root, h.flatbufferSize))
    return s;
  if (uint64_t sum = hash64(fb, h.flatbufferSize); sum != h.flatbufferChecksum)
    return corrupt("flatbuffer: checksum " + hex(sum) + " != header.flatbuffer_checksum " +
                   hex(h.flatbufferChecksum) + " (corrupt tables)");
  return Checker(*root, h).run();
}

uint64_t kernelChecksum(const Kernel &k) {
  return codeChecksum(k.object() ? k.object()->data() : nullptr, k.object() ? k.object()->size() : 0,
                      k.ptx() ? k.ptx()->data() : nullptr, k.ptx() ? k.ptx()->size() : 0,
                      k.cubin() ? k.cubin()->data() : nullptr, k.cubin() ? k.cubin()->size() : 0);
}

k3rt_status_t verifyWeights(const k3rt_bundle_s &b) {
  if (weightsMissing(b) || b.owned || !b.root->weights())
    return nullptr;
  auto &bundle = const_cast<k3rt_bundle_s &>(b); // the verdict is a cache
  std::call_once(bundle.weightsChecked, [&] {
    for (size_t i = 0; i < b.root->weights()->size(); ++i) {
      const Weight *w = b.root->weights()->Get(i);
      uint64_t sum = hash64(b.data + w->offset(), w->length());
      if (sum != w->checksum()) {
        bundle.weightsCode = K3RT_DATA_LOSS;
        bundle.weightsError = at("weights", i) + " '" + w->name()->str() + "': checksum " +
                              hex(sum) + " != recorded " + hex(w->checksum()) +
                              " (corrupt data)";
        return;
      }
    }
  });
  return b.weightsCode == K3RT_OK ? nullptr : makeStatus(b.weightsCode, b.weightsError);
}

} // namespace k3rt

using namespace k3rt;

extern "C" {

k3rt_status_t k3rt_bundle_open_memory(const void *data, size_t size,
                                      k3rt_bundle_t **out_bundle) {
  if (!out_bundle || (!data && size))
    return makeStatus(K3RT_INVALID_ARGUMENT, "k3rt_bundle_open_memory: null argument");
  auto *b = new k3rt_bundle_s();
  b->data = static_cast<const uint8_t *>(data);
  b->size = size;
  if (k3rt_status_t s = verifyBundle(b->data, size, b->header, b->root)) {
    delete b;
    return s;
  }
  *out_bundle = b;
  return nullptr;
}

k3rt_status_t k3rt_bundle_open(const char *path, k3rt_bundle_t **out_bundle) {
  if (!path || !out_bundle)
    return makeStatus(K3RT_INVALID_ARGUMENT, "k3rt_bundle_open: null argument");
  // Only regular files: a FIFO or device would block or stream forever.
  struct stat st;
  if (stat(path, &st) != 0)
    return makeStatus(K3RT_NOT_FOUND, std::string(path) + ": cannot open: " +
                                          std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return makeStatus(K3RT_INVALID_ARGUMENT,
                      std::string(path) + ": not a regular file");
  int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return makeStatus(K3RT_NOT_FOUND, std::string(path) + ": cannot open: " +
                                          std::strerror(errno));
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return makeStatus(K3RT_INVALID_ARGUMENT,
                      std::string(path) + ": not a regular file");
  }
  size_t size = size_t(st.st_size);
  void *p = size ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
  ::close(fd);
  if (p == MAP_FAILED)
    return makeStatus(K3RT_INTERNAL, std::string(path) + ": cannot map: " +
                                         std::strerror(errno));
  auto *b = new k3rt_bundle_s();
  b->data = static_cast<const uint8_t *>(p);
  b->size = size;
  b->mapped = size != 0;
  if (k3rt_status_t s = verifyBundle(b->data, size, b->header, b->root)) {
    s->message = std::string(path) + ": " + s->message;
    k3rt_bundle_release(b);
    return s;
  }
  *out_bundle = b;
  return nullptr;
}

k3rt_status_t k3rt_bundle_open_synthetic(const char *path, uint64_t seed,
                                         k3rt_bundle_t **out_bundle) {
  if (!path || !out_bundle)
    return makeStatus(K3RT_INVALID_ARGUMENT, "k3rt_bundle_open_synthetic: null argument");
  k3rt_bundle_t *b = nullptr;
  if (k3rt_status_t s = k3rt_bundle_open(path, &b))
    return s;
  k3rt_status_t s = nullptr;
  if (!(b->header.flags & kFlagWeightsOmitted))
    s = makeStatus(K3RT_INVALID_ARGUMENT,
                   "the binary has its weights; synthetic weights are for one compiled "
                   "with --omit-weights");
  else
    s = fillSyntheticWeights(*b, seed);
  if (s) {
    s->message = std::string(path) + ": " + s->message;
    k3rt_bundle_release(b);
    return s;
  }
  *out_bundle = b;
  return nullptr;
}

int k3rt_bundle_weights_omitted(const k3rt_bundle_t *bundle) {
  return bundle && weightsMissing(*bundle);
}

void k3rt_bundle_retain(k3rt_bundle_t *bundle) {
  if (bundle)
    bundle->refs.fetch_add(1, std::memory_order_relaxed);
}

void k3rt_bundle_release(k3rt_bundle_t *bundle) {
  if (!bundle || bundle->refs.fetch_sub(1, std::memory_order_acq_rel) != 1)
    return;
  if (bundle->mapped)
    munmap(const_cast<uint8_t *>(bundle->data), bundle->size);
  std::free(bundle->owned);
  delete bundle;
}

uint32_t k3rt_bundle_format_version(const k3rt_bundle_t *bundle) {
  return bundle ? bundle->header.formatVersion : 0;
}

uint32_t k3rt_runtime_format_version(void) { return kFormatVersion; }

} // extern "C"
