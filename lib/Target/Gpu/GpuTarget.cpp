//===- GpuTarget.cpp - PTX kernels to cubins and bundle kernels -----------===//
//
// Part of k3. ptxas runs once per kernel with -v (several at once, one per
// core): its report gives the
// registers, spill bytes and static shared memory the dump shows and the
// spill budget checks. The launch block comes from the host program's
// gpu.launch_func ops (k3-gpu-map-loops makes it constant).
//
//===----------------------------------------------------------------------===//

#include "lib/Target/Gpu/GpuTarget.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"

#include <cstdlib>
#include <fstream>
#include <mutex>

using namespace mlir;

std::string mlir::k3::findPtxas(const std::string &requested) {
  if (requested == "none")
    return "";
  if (!requested.empty())
    return requested;
  if (auto p = llvm::sys::findProgramByName("ptxas", {"/usr/local/cuda/bin"}))
    return *p;
  if (auto p = llvm::sys::findProgramByName("ptxas"))
    return *p;
  return "";
}

std::string mlir::k3::findCudaToolkit(const std::string &ptxas, std::string &error) {
  auto hasLibdevice = [](const std::string &dir) {
    return llvm::sys::fs::exists(dir + "/nvvm/libdevice/libdevice.10.bc");
  };
  // A variable that is set names the toolkit: a wrong one is an error, not
  // a reason to pick another.
  for (const char *var : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (const char *v = std::getenv(var); v && *v) {
      if (hasLibdevice(v))
        return v;
      error = std::string("no CUDA toolkit with libdevice (") + v +
              "/nvvm/libdevice/libdevice.10.bc, from " + var +
              "): the kernels' math functions link it";
      return "";
    }
  std::string fromPtxas =
      ptxas.empty() ? ""
                    : llvm::sys::path::parent_path(llvm::sys::path::parent_path(ptxas)).str();
  for (const std::string &dir : {fromPtxas, std::string("/usr/local/cuda")})
    if (!dir.empty() && hasLibdevice(dir))
      return dir;
  error = "no CUDA toolkit with libdevice (/usr/local/cuda/nvvm/libdevice/libdevice.10.bc): "
          "the kernels' math functions link it; set CUDA_HOME to the toolkit";
  return "";
}

namespace {

/// The first line of `text` that mentions an error (else its first line).
std::string firstErrorLine(StringRef text) {
  SmallVector<StringRef> lines;
  text.split(lines, '\n', -1, false);
  for (StringRef l : lines)
    if (l.contains("error"))
      return l.trim().str();
  return lines.empty() ? "" : lines.front().trim().str();
}

/// Runs ptxas on `ptx`: the cubin and its -v report, or an error line.
bool assemble(const std::string &ptxas, const std::string &chip, const std::string &name,
              StringRef ptx, mlir::k3::DeviceKernel &k, std::string &error) {
  SmallString<128> in, out, log;
  if (llvm::sys::fs::createTemporaryFile("k3-kernel", "ptx", in) ||
      llvm::sys::fs::createTemporaryFile("k3-kernel", "cubin", out) ||
      llvm::sys::fs::createTemporaryFile("k3-ptxas", "log", log)) {
    error = "cannot create temporary files for ptxas";
    return false;
  }
  auto cleanup = llvm::make_scope_exit([&] {
    llvm::sys::fs::remove(in);
    llvm::sys::fs::remove(out);
    llvm::sys::fs::remove(log);
  });
  {
    std::ofstream f(in.str().str(), std::ios::binary);
    f << ptx.str();
  }
  std::string arch = "-arch=" + chip;
  SmallVector<StringRef> argv{ptxas, arch, "-v", "-o", out, in};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log), StringRef(log)};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(ptxas, argv, std::nullopt, redirects, 0, 0, &execError);
  auto report = llvm::MemoryBuffer::getFile(log);
  StringRef text = report ? (*report)->getBuffer() : "";
  if (rc != 0) {
    error = "kernel '" + name + "': ptxas -arch=" + chip + " failed: " +
            (rc < 0 ? execError : firstErrorLine(text));
    return false;
  }
  auto cubin = llvm::MemoryBuffer::getFile(out, /*IsText=*/false);
  if (!cubin) {
    error = "kernel '" + name + "': ptxas wrote no cubin";
    return false;
  }
  k.cubin.assign((*cubin)->getBufferStart(), (*cubin)->getBufferEnd());
  // "Used 40 registers, used 1 barriers, 4096 bytes smem, 388 bytes cmem[0]"
  // and "0 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads".
  SmallVector<StringRef> m;
  if (llvm::Regex("Used ([0-9]+) registers").match(text, &m))
    k.registers = std::stoi(m[1].str());
  if (llvm::Regex("([0-9]+) bytes spill stores").match(text, &m))
    k.spillBytes = std::stoi(m[1].str());
  if (llvm::Regex("([0-9]+) bytes smem").match(text, &m))
    k.sharedMemoryBytes = std::stoul(m[1].str());
  return true;
}

} // namespace

bool mlir::k3::extractDeviceKernels(ModuleOp module, const GpuTargetOptions &options,
                                    std::vector<DeviceKernel> &kernels,
                                    std::string &error) {
  // Launch blocks by binary name; a kernel launched with two different
  // blocks records the first (both are legal at run time).
  llvm::StringMap<std::vector<int32_t>> blocks;
  llvm::StringMap<uint32_t> dynamicShared;
  module.walk([&](gpu::LaunchFuncOp launch) {
    std::vector<int32_t> block;
    for (Value v : {launch.getBlockSizeX(), launch.getBlockSizeY(), launch.getBlockSizeZ()}) {
      APInt c;
      block.push_back(matchPattern(v, m_ConstantInt(&c)) ? int32_t(c.getSExtValue()) : -1);
    }
    blocks.try_emplace(launch.getKernelModuleName().getValue(), block);
    APInt smem;
    if (Value s = launch.getDynamicSharedMemorySize();
        s && matchPattern(s, m_ConstantInt(&smem)))
      dynamicShared.try_emplace(launch.getKernelModuleName().getValue(), smem.getZExtValue());
  });

  // Every kernel's PTX first; then ptxas on each, as many at once as the
  // machine has cores (a process per kernel, nothing shared but the
  // progress count); then the checks, in kernel order, so that the error
  // reported is the first kernel's whatever finished first.
  MLIRContext *ctx = module.getContext();
  SmallVector<gpu::BinaryOp> binaries;
  for (auto binary : module.getOps<gpu::BinaryOp>()) {
    std::string name = binary.getName().str();
    auto objects = binary.getObjects();
    auto object = objects.size() == 1 ? dyn_cast<gpu::ObjectAttr>(objects[0]) : nullptr;
    if (!object || object.getFormat() != gpu::CompilationTarget::Assembly) {
      error = "kernel '" + name + "': expected one PTX object (gpu-module-to-binary format=isa)";
      return false;
    }
    DeviceKernel k;
    k.name = name;
    k.ptx = object.getObject().getValue().str();
    if (auto it = blocks.find(name); it != blocks.end())
      k.block = it->second;
    kernels.push_back(std::move(k));
    binaries.push_back(binary);
  }
  size_t first = kernels.size() - binaries.size();
  std::vector<std::string> errors(binaries.size());
  if (!options.ptxas.empty()) {
    std::mutex progressMutex;
    size_t done = 0;
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency());
    for (size_t i = 0; i < binaries.size(); ++i)
      pool.async([&, i] {
        DeviceKernel &k = kernels[first + i];
        (void)assemble(options.ptxas, options.chip, k.name, k.ptx, k, errors[i]);
        if (options.progress) {
          std::lock_guard<std::mutex> lock(progressMutex);
          options.progress(++done, binaries.size());
        }
      });
    pool.wait();
  }
  for (size_t i = 0; i < binaries.size(); ++i) {
    DeviceKernel &k = kernels[first + i];
    if (!errors[i].empty()) {
      error = errors[i];
      return false;
    }
    if (!options.ptxas.empty() && options.maxSpillBytes >= 0 &&
        k.spillBytes > options.maxSpillBytes) {
      error = "kernel '" + k.name + "' spills " + std::to_string(k.spillBytes) +
              " bytes to local memory (" + std::to_string(k.registers) +
              " registers), over the budget --max-spill-bytes=" +
              std::to_string(options.maxSpillBytes);
      return false;
    }
    if (auto it = dynamicShared.find(k.name); it != dynamicShared.end())
      k.sharedMemoryBytes += it->second;
    // The host program keeps a reference: mgpuModuleLoad receives these
    // bytes and the runtime loads the bundle's kernel of that name.
    auto object = cast<gpu::ObjectAttr>(binaries[i].getObjects()[0]);
    std::string reference = kKernelReferencePrefix + k.name;
    auto ref = gpu::ObjectAttr::get(ctx, object.getTarget(), gpu::CompilationTarget::Binary,
                                    StringAttr::get(ctx, reference), nullptr, nullptr);
    binaries[i].setObjectsAttr(ArrayAttr::get(ctx, {ref}));
  }
  return true;
}
