//===- RuntimeTest.cpp - .k3b verification in the runtime -----------------===//
//
// Part of k3. Builds small bundles directly with the flatbuffer builder and
// checks that the runtime accepts the good one and refuses every corrupt
// variant with the field named: truncations, bit flips, wrong magic and
// version, and each semantic rule. MLIR-free, like the runtime.
//
//===----------------------------------------------------------------------===//

#include "runtime/include/k3rt/k3rt.h"
#include "runtime/src/Bundle.h"
#include "runtime/src/Npy.h"
#include "runtime/src/Sampling.h"
#include "lib/Model/Synthetic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <functional>
#include <map>
#include <vector>

using namespace k3::bundle;

namespace {

/// Knobs for one synthetic bundle.
struct Spec {
  uint64_t weightOffsetShift = 0; // added to weights[0].offset
  uint64_t weightLength = 64;     // F32 [16]
  uint32_t stepKernel = 0;
  uint32_t smem = 1024;
  int blockX = 128;
  uint32_t version = k3rt::kFormatVersion;
  int64_t layers = 2;
  std::string kernelName = "k0";
  uint32_t numArgs = 3;
  int gridDims = 3;
  uint64_t scratchOffset = 0;
  size_t stepRefs = 1; // how many times the entry point lists the one step
  Target target = Target_SM90A;
  uint32_t flags = 0;
  std::vector<int64_t> idsShape = {-1};
  bool idsAppendsRows = false;
  uint64_t packBytes = 0; // > 0: args[0] is a weight pack of these bytes
  uint32_t packIndex = 0;
};

/// Header + flatbuffer + one 64-byte F32 weight, 64-byte aligned; the
/// buffer is over-allocated so that its start is aligned too.
struct Image {
  std::vector<uint8_t> storage;
  uint8_t *data = nullptr;
  size_t size = 0;
};

/// The one kernel's code (a GPU kernel's PTX).
constexpr const char *kPtx = "// ptx";

Image build(const Spec &s) {
  flatbuffers::FlatBufferBuilder b;
  b.ForceDefaults(true);
  auto config = CreateModelConfigDirect(b, 32, 16, s.layers, 1, 16, 4, 1, 8, 4,
                                        0, 0, 0, "{}");
  std::vector<flatbuffers::Offset<Layer>> layers = {
      CreateLayer(b, Mixer_KDA, FFN_Dense, true),
      CreateLayer(b, Mixer_MLA, FFN_Dense, false)};
  auto cache = CreateCacheGeometry(b, 1, 3, 16, 1024, 1, 12, DType_BF16, 24);
  std::vector<int32_t> block = {s.blockX, 1, 1};
  std::vector<flatbuffers::Offset<Kernel>> kernels = {
      CreateKernelDirect(b, s.kernelName.c_str(), s.target, nullptr, kPtx, nullptr, &block,
                         s.smem, s.numArgs, -1, -1, nullptr, k3rt::hash64(kPtx, 6))};
  std::vector<flatbuffers::Offset<Binding>> args = {
      s.packBytes ? CreateBinding(b, BindingKind_Pack, s.packIndex, 0, s.packBytes)
                  : CreateBinding(b, BindingKind_Weight, 0, 0, 0),
      CreateBinding(b, BindingKind_Input, 0, 0, 0),
      CreateBinding(b, BindingKind_Scratch, 0, s.scratchOffset, 128)};
  std::vector<GridDim> grid = {GridDim(0, 1, 16), GridDim(1, 0, 1),
                               GridDim(1, 0, 1)};
  grid.resize(s.gridDims, GridDim(1, 0, 1));
  // One step table, referenced `stepRefs` times (flatbuffers allow sharing).
  auto step = CreateStepDirect(b, s.stepKernel, &grid, &args);
  std::vector<flatbuffers::Offset<Step>> steps(s.stepRefs, step);
  std::vector<flatbuffers::Offset<TensorInfo>> ins = {
      CreateTensorInfoDirect(b, "ids", DType_I32, &s.idsShape, s.idsAppendsRows)};
  std::vector<flatbuffers::Offset<EntryPoint>> entries = {
      CreateEntryPointDirect(b, "prefill", &ins, nullptr, &steps, 256)};
  // The weight region starts after the flatbuffer, 64-byte aligned.
  const uint64_t weightsAt =
      s.stepRefs > 1 ? (s.stepRefs * 4 + 8192) / 64 * 64 : 4096;
  std::vector<int64_t> shape = {16};
  std::vector<flatbuffers::Offset<Weight>> weights = {CreateWeightDirect(
      b, "w", DType_F32, &shape, weightsAt + s.weightOffsetShift, s.weightLength,
      k3rt::hash64(std::vector<uint8_t>(64, 7).data(), 64))};
  auto root = CreateBundleDirect(b, s.version, "test", Target_CPU, config,
                                 &layers, cache, &entries, &kernels, &weights);
  FinishBundleBuffer(b, root);
  EXPECT_LT(64 + b.GetSize(), weightsAt);

  Image img;
  img.size = weightsAt + 64;
  img.storage.assign(img.size + 64, 0);
  img.data = img.storage.data() +
             (64 - reinterpret_cast<uintptr_t>(img.storage.data()) % 64) % 64;
  k3rt::FileHeader h{};
  std::memcpy(h.magic, k3rt::kMagic, 8);
  h.formatVersion = s.version;
  h.flags = s.flags;
  h.flatbufferOffset = 64;
  h.flatbufferSize = b.GetSize();
  h.weightsOffset = weightsAt;
  h.weightsSize = 64;
  h.fileSize = img.size;
  h.flatbufferChecksum = k3rt::hash64(b.GetBufferPointer(), b.GetSize());
  std::memcpy(img.data, &h, 64);
  std::memcpy(img.data + 64, b.GetBufferPointer(), b.GetSize());
  std::memset(img.data + weightsAt, 7, 64);
  return img;
}

/// Opens the image; returns "" on success, else the status message, and
/// checks the code is the expected one.
std::string openMessage(const Image &img, size_t size,
                        k3rt_status_code_t want = K3RT_DATA_LOSS) {
  k3rt_bundle_t *bundle = nullptr;
  k3rt_status_t s = k3rt_bundle_open_memory(img.data, size, &bundle);
  if (!s) {
    k3rt_bundle_release(bundle);
    return "";
  }
  EXPECT_EQ(k3rt_status_code(s), want) << k3rt_status_message(s);
  std::string msg = k3rt_status_message(s);
  k3rt_status_free(s);
  return msg;
}

TEST(Bundle, GoodBundleOpens) {
  Image img = build({});
  k3rt_bundle_t *bundle = nullptr;
  k3rt_status_t s = k3rt_bundle_open_memory(img.data, img.size, &bundle);
  ASSERT_EQ(s, nullptr) << k3rt_status_message(s);
  EXPECT_EQ(k3rt_bundle_format_version(bundle), k3rt_runtime_format_version());
  EXPECT_EQ(bundle->root->weights()->Get(0)->name()->str(), "w");
  k3rt_bundle_retain(bundle);
  k3rt_bundle_release(bundle);
  k3rt_bundle_release(bundle);
}

TEST(Bundle, HeaderChecks) {
  Image img = build({});
  EXPECT_EQ(openMessage(img, 10),
            "truncated: 10 bytes, a .k3b needs at least the 64-byte header");
  EXPECT_EQ(openMessage(img, img.size - 1),
            "truncated or padded: header.file_size=4160 but the file has "
            "4159 bytes");
  img.data[1] = 'X';
  EXPECT_EQ(openMessage(img, img.size), "not a .k3b file (bad magic)");
  Image v2 = build({});
  v2.data[8] = 1; // header.format_version: an older binary
  EXPECT_EQ(openMessage(v2, v2.size, K3RT_UNIMPLEMENTED),
            "header.format_version=1 but this runtime reads version 3");
}

/// Every truncation is refused, never read past the end.
TEST(Bundle, EveryTruncationIsRefused) {
  Image img = build({});
  for (size_t n = 0; n < img.size; n += (n < 256 ? 1 : 61))
    EXPECT_NE(openMessage(img, n), "") << "accepted " << n << " bytes";
}

/// Flipping any single bit of the header or the flatbuffer is refused with a
/// status (every header field is checked, and the flatbuffer's checksum
/// covers the rest); it never crashes or reads out of bounds (the ASan
/// build checks).
TEST(Bundle, EveryBitFlipIsRefused) {
  const Image good = build({});
  size_t fbEnd = 64 + reinterpret_cast<const k3rt::FileHeader *>(good.data)
                          ->flatbufferSize;
  int refused = 0, flips = 0;
  for (size_t byte = 0; byte < fbEnd; ++byte)
    for (int bit = 0; bit < 8; bit += 3) {
      Image img = build({});
      img.data[byte] ^= uint8_t(1 << bit);
      ++flips;
      k3rt_bundle_t *bundle = nullptr;
      k3rt_status_t s = k3rt_bundle_open_memory(img.data, img.size, &bundle);
      if (s) {
        ++refused;
        EXPECT_NE(std::string(k3rt_status_message(s)), "");
        k3rt_status_free(s);
      } else {
        k3rt_bundle_release(bundle);
      }
    }
  EXPECT_EQ(refused, flips);
}

/// A flipped byte of kernel code is refused naming the kernel, before any of
/// it is loaded; one in any other table by the flatbuffer's checksum.
TEST(Bundle, ChecksumsCoverCodeAndTables) {
  Image img = build({});
  const uint8_t *fb = img.data + 64;
  const Bundle *root = GetBundle(fb);
  size_t code = reinterpret_cast<const uint8_t *>(root->kernels()->Get(0)->ptx()->data()) -
                img.data;
  img.data[code + 3] ^= 1;
  EXPECT_EQ(openMessage(img, img.size).substr(0, 33), "kernels[0] 'k0': code checksum 0x");
  EXPECT_NE(openMessage(img, img.size).find("(corrupt code; nothing of it was loaded)"),
            std::string::npos);
  img.data[code + 3] ^= 1;
  // The producer "test" as "tesu": a value the semantic checks accept.
  size_t producer = reinterpret_cast<const uint8_t *>(root->producer()->data()) - img.data;
  img.data[producer + 3] = 'u';
  EXPECT_EQ(openMessage(img, img.size).substr(0, 23), "flatbuffer: checksum 0x");
  img.data[producer + 3] = 't';
  EXPECT_EQ(openMessage(img, img.size), "");
}

TEST(Bundle, SemanticChecksNameTheField) {
  EXPECT_EQ(openMessage(build({.weightOffsetShift = 8}), 4160),
            "weights[0].offset=4104 is not 64-byte aligned");
  EXPECT_EQ(openMessage(build({.weightOffsetShift = 64}), 4160),
            "weights[0].offset=4160 with length 64 exceeds the weight region "
            "[4096, 4160)");
  EXPECT_EQ(openMessage(build({.weightLength = 60}), 4160),
            "weights[0].length=60 but F32 of its shape needs 64");
  EXPECT_EQ(openMessage(build({.stepKernel = 3}), 4160),
            "entry_points[0].steps[0].kernel=3 but the binary has 1 kernels");
  EXPECT_EQ(openMessage(build({.smem = 300000}), 4160),
            "kernels[0].smem=300000 exceeds device limit 232448");
  EXPECT_EQ(openMessage(build({.blockX = 2048}), 4160),
            "kernels[0].block[0]=2048 is outside 1..1024");
  EXPECT_EQ(openMessage(build({.layers = 3}), 4160),
            "layers has 2 entries but config.num_layers=3");
  EXPECT_EQ(openMessage(build({.version = 7}), 4160, K3RT_UNIMPLEMENTED),
            "header.format_version=7 but this runtime reads version 3");
}

TEST(Bundle, MoreSemanticRules) {
  auto msg = [](Spec s) {
    Image img = build(s);
    return openMessage(img, img.size);
  };
  EXPECT_EQ(msg({.kernelName = "../escape"}),
            "kernels[0].name='../escape' is not a plain file name");
  EXPECT_EQ(msg({.kernelName = "a\nb"}), "kernels[0].name holds control characters");
  EXPECT_EQ(msg({.numArgs = 2}), "entry_points[0].steps[0] binds 3 arguments "
                                 "but kernels[0] takes 2");
  EXPECT_EQ(msg({.gridDims = 1}), "entry_points[0].steps[0].grid must have 3 "
                                  "dimensions");
  EXPECT_EQ(msg({.scratchOffset = 3}), "entry_points[0].steps[0].args[2] "
                                       "scratch offset 3 is not 64-byte aligned");
  EXPECT_EQ(msg({.smem = 200000, .target = Target_SM80}),
            "kernels[0].smem=200000 exceeds device limit 166912");
  EXPECT_EQ(msg({.flags = 2}), "header.flags=2 has unknown bits");
  // A weight pack: the bytes from a weight's offset, inside the weight section.
  EXPECT_EQ(msg({.packBytes = 64}), "");
  EXPECT_EQ(msg({.packBytes = 65}), "entry_points[0].steps[0].args[0] pack [4096, +65) "
                                    "is empty or ends past the last weight");
  EXPECT_EQ(msg({.packBytes = 64, .packIndex = 1}),
            "entry_points[0].steps[0].args[0].index=1 is out of range (1)");
  // The runtime grows an appended input's leading extent: it must be dynamic.
  EXPECT_EQ(msg({.idsShape = {4}, .idsAppendsRows = true}),
            "entry_points[0].inputs[0].appends_rows is set on a tensor whose leading extent is "
            "not dynamic");
  EXPECT_EQ(msg({.idsShape = {}, .idsAppendsRows = true}),
            "entry_points[0].inputs[0].appends_rows is set on a tensor whose leading extent is "
            "not dynamic");
  // Weights marked omitted, but their bytes are still there.
  Image full = build({.flags = 1});
  uint64_t weightsAt = reinterpret_cast<const k3rt::FileHeader *>(full.data)->weightsOffset;
  EXPECT_EQ(openMessage(full, full.size),
            "header.weights_offset=" + std::to_string(weightsAt) +
                " with size 64 is misaligned or overlaps the flatbuffer or the end (weights "
                "omitted: the file must end at weights_offset)");
}

/// A bundle without its weight bytes (k3-compile --omit-weights) opens for
/// inspection and says so; nothing may read its weights.
TEST(Bundle, OmittedWeightsOpenForInspection) {
  Image img = build({.flags = 1});
  auto *h = reinterpret_cast<k3rt::FileHeader *>(img.data);
  h->fileSize = h->weightsOffset;
  k3rt_bundle_t *bundle = nullptr;
  k3rt_status_t s = k3rt_bundle_open_memory(img.data, h->weightsOffset, &bundle);
  ASSERT_EQ(s, nullptr) << k3rt_status_message(s);
  EXPECT_EQ(k3rt_bundle_weights_omitted(bundle), 1);
  k3rt_bundle_release(bundle);
  const std::string where = "header.weights_offset=" + std::to_string(h->weightsOffset);
  const std::string omittedMsg =
      " is misaligned or overlaps the flatbuffer or the end (weights omitted: the file must "
      "end at weights_offset)";
  // One byte of weights left in is refused.
  h->fileSize = h->weightsOffset + 1;
  EXPECT_EQ(openMessage(img, h->weightsOffset + 1), where + " with size 64" + omittedMsg);
  // A weight region reaching the end of the address space (a crafted size
  // would wrap the synthetic buffer's size) is refused.
  h->fileSize = h->weightsOffset;
  h->weightsSize = UINT64_MAX - h->weightsOffset;
  EXPECT_EQ(openMessage(img, h->weightsOffset),
            where + " with size " + std::to_string(h->weightsSize) + omittedMsg);
  h->weightsSize = 64;

  Image whole = build({});
  ASSERT_EQ(k3rt_bundle_open_memory(whole.data, whole.size, &bundle), nullptr);
  EXPECT_EQ(k3rt_bundle_weights_omitted(bundle), 0);
  k3rt_bundle_release(bundle);
}

/// k3rt_bundle_open_synthetic fills an omitted bundle's weights with the
/// synthetic checkpoint's values (here the F32 weight `w` of [16]: a linear
/// layer's, for hidden size 16) and refuses a bundle that has its weights.
TEST(Bundle, SyntheticWeightsFillOmittedOnes) {
  char dirTemplate[] = "/tmp/k3-synthetic-XXXXXX";
  ASSERT_NE(mkdtemp(dirTemplate), nullptr);
  const std::string dir = dirTemplate;
  std::vector<std::string> written;
  auto write = [&](const Image &img, size_t size, const std::string &name) {
    std::string path = dir + "/" + name;
    written.push_back(path);
    FILE *f = std::fopen(path.c_str(), "wb");
    EXPECT_TRUE(f && std::fwrite(img.data, 1, size, f) == size);
    std::fclose(f);
    return path;
  };
  Image img = build({.flags = 1});
  auto *h = reinterpret_cast<k3rt::FileHeader *>(img.data);
  h->fileSize = h->weightsOffset;
  const uint64_t weightsAt = h->weightsOffset;
  std::string omitted = write(img, weightsAt, "omitted.k3b");
  k3rt_bundle_t *bundle = nullptr;
  k3rt_status_t s = k3rt_bundle_open_synthetic(omitted.c_str(), 42, &bundle);
  ASSERT_EQ(s, nullptr) << k3rt_status_message(s);
  EXPECT_EQ(k3rt_bundle_weights_omitted(bundle), 0);
  std::vector<uint8_t> want;
  std::string error;
  ASSERT_TRUE(k3::model::syntheticBundleWeight("w", k3::model::SyntheticForm::F32, {16},
                                               {16, 1}, 42, want, error))
      << error;
  ASSERT_EQ(want.size(), 64u);
  EXPECT_EQ(std::memcmp(bundle->data + weightsAt, want.data(), 64), 0);
  k3rt_bundle_release(bundle);

  std::string whole = write(build({}), build({}).size, "whole.k3b");
  s = k3rt_bundle_open_synthetic(whole.c_str(), 42, &bundle);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(std::string(k3rt_status_message(s)),
            whole + ": the binary has its weights; synthetic weights are for one compiled "
                    "with --omit-weights");
  k3rt_status_free(s);
  for (const std::string &path : written)
    std::remove(path.c_str());
  rmdir(dir.c_str());
}

/// One step table listed 100k times is a small file describing a huge plan:
/// refused quickly instead of walked (or printed) in full.
TEST(Bundle, SharedTablesCannotAmplify) {
  Spec s;
  s.stepRefs = 100000;
  Image img = build(s);
  EXPECT_EQ(openMessage(img, img.size),
            "flatbuffer: tables are shared far more often than the file's "
            "size allows (a crafted file?)");
}

TEST(Bundle, FileErrors) {
  k3rt_bundle_t *bundle = nullptr;
  k3rt_status_t s = k3rt_bundle_open("/nonexistent/x.k3b", &bundle);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(k3rt_status_code(s), K3RT_NOT_FOUND);
  EXPECT_EQ(std::string(k3rt_status_message(s)),
            "/nonexistent/x.k3b: cannot open: No such file or directory");
  k3rt_status_free(s);
  s = k3rt_bundle_open("/tmp", &bundle);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(std::string(k3rt_status_message(s)), "/tmp: not a regular file");
  k3rt_status_free(s);
  EXPECT_EQ(k3rt_status_code(nullptr), K3RT_OK);
  EXPECT_STREQ(k3rt_status_message(nullptr), "OK");
}

//===----------------------------------------------------------------------===//
// Sampling
//===----------------------------------------------------------------------===//

TEST(Sampling, GreedyIsArgmaxWithTiesToLowerIdAndNanSkipped) {
  const float logits[] = {0.5f, 2.0f, NAN, 2.0f, -1.0f};
  k3rt::Sampler greedy({});
  EXPECT_EQ(greedy.next(logits, 5), 1);
  const float nan[] = {NAN, NAN};
  EXPECT_EQ(greedy.next(nan, 2), -1);
}

/// The same seed gives the same sequence; another seed another one.
TEST(Sampling, SeededSamplingIsDeterministic) {
  std::vector<float> logits(50);
  for (size_t i = 0; i < logits.size(); ++i)
    logits[i] = std::sin(float(i));
  auto draw = [&](uint64_t seed) {
    k3rt::Sampler s({/*temperature=*/1.0f, 0, 1.0f, seed});
    std::vector<int32_t> out;
    for (int i = 0; i < 20; ++i)
      out.push_back(s.next(logits.data(), logits.size()));
    return out;
  };
  EXPECT_EQ(draw(42), draw(42));
  EXPECT_NE(draw(42), draw(43));
}

/// top-k and top-p only ever return kept tokens; frequencies follow the
/// renormalised softmax.
TEST(Sampling, TopKAndTopPRestrictTheCandidates) {
  const float logits[] = {3.0f, 2.0f, 1.0f, 0.0f, -1.0f};
  k3rt::Sampler topK({1.0f, 2, 1.0f, 7});
  std::map<int32_t, int> counts;
  for (int i = 0; i < 20000; ++i)
    ++counts[topK.next(logits, 5)];
  EXPECT_EQ(counts.size(), 2u);
  // p(0) / p(1) = e at temperature 1.
  double ratio = double(counts[0]) / counts[1];
  EXPECT_NEAR(ratio, std::exp(1.0), 0.15);
  // softmax of the logits: 0.636, 0.234, 0.086, ...: top-p 0.8 keeps two.
  k3rt::Sampler topP({1.0f, 0, 0.8f, 7});
  counts.clear();
  for (int i = 0; i < 5000; ++i)
    ++counts[topP.next(logits, 5)];
  EXPECT_EQ(counts.size(), 2u);
  // A tiny temperature is greedy in effect.
  k3rt::Sampler cold({1e-4f, 0, 1.0f, 3});
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(cold.next(logits, 5), 0);
}

/// Infinite logits have no softmax; they must not turn every probability
/// into NaN and pick the least likely token.
TEST(Sampling, InfiniteLogits) {
  const float plusInf[] = {INFINITY, 1.0f, 0.0f, -1.0f};
  const float allMinusInf[] = {-INFINITY, -INFINITY, -INFINITY};
  k3rt::Sampler s({1.0f, 0, 1.0f, 5});
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(s.next(plusInf, 4), 0);
  EXPECT_EQ(s.next(allMinusInf, 3), 0);
  k3rt::Sampler greedy({});
  EXPECT_EQ(greedy.next(allMinusInf, 3), 0);
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

TEST(Npy, RoundTripAndHeaderLayout) {
  const float values[6] = {1, 2, 3, 4, 5, -6.5f};
  std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                     "/k3-npy-test.npy";
  std::string error;
  ASSERT_TRUE(k3rt::writeNpy(path, k3rt::makeF32({2, 3}, values), error)) << error;
  k3rt::NpyArray back;
  ASSERT_TRUE(k3rt::readNpy(path, back, error)) << error;
  EXPECT_EQ(back.dtype, "<f4");
  EXPECT_EQ(back.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(back.data.data(), values, 24), 0);
  // The data starts on a 64-byte boundary, as NumPy writes it.
  FILE *f = std::fopen(path.c_str(), "rb");
  unsigned char pre[10];
  ASSERT_EQ(std::fread(pre, 1, 10, f), 10u);
  std::fclose(f);
  EXPECT_EQ((10 + (pre[8] | pre[9] << 8)) % 64, 0);
  ASSERT_TRUE(k3rt::writeNpy(path, k3rt::makeF32({3}, values), error));
  ASSERT_TRUE(k3rt::readNpy(path, back, error)) << error;
  EXPECT_EQ(back.shape, (std::vector<int64_t>{3}));
  std::remove(path.c_str());
}

TEST(Npy, BadFilesAreNamed) {
  std::string path = "/tmp/k3-npy-bad.npy", error;
  auto write = [&](const std::string &bytes) {
    FILE *f = std::fopen(path.c_str(), "wb");
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  };
  k3rt::NpyArray a;
  write("hello");
  EXPECT_FALSE(k3rt::readNpy(path, a, error));
  EXPECT_EQ(error, path + ": not a valid .npy file: missing the \\x93NUMPY magic");
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  std::string head = std::string("\x93NUMPY\x01\x00", 8) +
                     char(dict.size()) + char(0) + dict;
  write(head + std::string(12, '\0'));
  EXPECT_FALSE(k3rt::readNpy(path, a, error));
  EXPECT_EQ(error, path + ": not a valid .npy file: holds 12 data bytes, but "
                          "<f4 (2, 2) needs 16");
  auto header = [](const std::string &shape) {
    std::string d = "{'descr': '<f4', 'fortran_order': False , 'shape': " +
                    shape + ", }";
    return std::string("\x93NUMPY\x01\x00", 8) + char(d.size()) + char(0) + d;
  };
  write(header("(1099511627776, 16777216)"));
  EXPECT_FALSE(k3rt::readNpy(path, a, error));
  EXPECT_EQ(error, path + ": not a valid .npy file: shape (1099511627776, "
                          "16777216) is too large");
  write(header("(3 4)") + std::string(48, '\0'));
  EXPECT_FALSE(k3rt::readNpy(path, a, error));
  EXPECT_EQ(error, path + ": not a valid .npy file: shape (3 4) is not a "
                          "tuple of sizes");
  write(header("(,,)"));
  EXPECT_FALSE(k3rt::readNpy(path, a, error));
  write(header("(2,)") + std::string(8, '\0')); // "False ," parses as False
  EXPECT_TRUE(k3rt::readNpy(path, a, error)) << error;
  std::string c16 = "{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }";
  write(std::string("\x93NUMPY\x01\x00", 8) + char(c16.size()) + char(0) + c16 +
        std::string(16, '\0'));
  EXPECT_FALSE(k3rt::readNpy(path, a, error));
  EXPECT_EQ(error, path + ": not a valid .npy file: dtype '<c16' is not supported");
  std::remove(path.c_str());
}

} // namespace
