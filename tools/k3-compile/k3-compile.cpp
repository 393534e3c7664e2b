//===- k3-compile.cpp - Compile a K3 model --------------------------------===//
//
// Part of k3. `k3-compile DIR_OR_MLIR` reads a Hugging Face-style checkpoint
// directory (config.json + *.safetensors) or a .mlir file and runs the phases
// of DESIGN.md §2: input, k3, tiles, then cpu (--target=cpu) or gpu, ptx,
// cubin (--target=sm_90a|sm_80), and the .k3b. Also: `--stats` (sizes from config.json alone) and `--write-synthetic=DIR`
// (a deterministic synthetic checkpoint for the config).
//
//===----------------------------------------------------------------------===//

#include "lib/Bundle/BundleWriter.h"
#include "lib/Import/Importer.h"
#include "lib/Model/Checkpoint.h"
#include "lib/Model/Placement.h"
#include "lib/Model/Synthetic.h"
#include "lib/Registration/RegisterAll.h"
#include "lib/Target/Cpu/CpuTarget.h"
#include "lib/Target/Gpu/GpuTarget.h"
#include "passes/Passes.h"
#include "runtime/src/comm/Collectives.h"
#include "runtime/src/text/Synthetic.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

namespace cl = llvm::cl;
using namespace mlir;
namespace model = ::k3::model;

static cl::OptionCategory k3Category("k3-compile options");

static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<checkpoint dir or .mlir>"),
                                      cl::cat(k3Category));
static cl::opt<std::string> outputPath("o", cl::desc("Output file"),
                                       cl::value_desc("path"), cl::init("-"),
                                       cl::cat(k3Category));
static cl::opt<std::string>
    compileTo("compile-to",
              cl::desc("Stop after this phase and print its IR: input, k3, "
                       "tiles, then cpu (--target=cpu) or gpu, ptx, cubin "
                       "(GPU targets); or bundle (a .k3b with metadata and "
                       "weights, no kernels). Without it, -o FILE.k3b gets "
                       "the target's kernels"),
              cl::value_desc("phase"), cl::cat(k3Category));
static cl::opt<std::string> writeSynthetic(
    "write-synthetic",
    cl::desc("Write a deterministic synthetic checkpoint for the config"),
    cl::value_desc("dir"), cl::cat(k3Category));
static cl::opt<std::string>
    target("target",
           cl::desc("Code for: cpu (default), sm_90a (Hopper) or sm_80 "
                    "(Ampere): NVPTX kernels and a host program"),
           cl::init("cpu"), cl::cat(k3Category));
static cl::opt<std::string> ptxasPath(
    "ptxas",
    cl::desc("GPU targets: the ptxas that makes cubins (default: "
             "/usr/local/cuda/bin/ptxas, else PATH; none: PTX only, compiled "
             "by the driver at load)"),
    cl::value_desc("path"), cl::cat(k3Category));
static cl::opt<bool> emulate(
    "emulate",
    cl::desc("GPU targets: run the target's kernels on this CPU instead (each launch's "
             "blocks in turn, a block one OpenMP team of its threads, mma.sync and wgmma "
             "emulated): a CPU binary for k3-run that checks the GPU build's kernels "
             "without a GPU, far slower than either; phases input, k3, tiles, gpu, cpu"),
    cl::cat(k3Category));
static cl::opt<int64_t> maxSpillBytes(
    "max-spill-bytes",
    cl::desc("GPU targets: fail when a kernel spills more than N bytes to "
             "local memory (ptxas's spill stores; default 64, -1: no limit)"),
    // The tensor-core kernels' 64-bit index arithmetic can push a register
    // or two to local memory (the tiny model's worst kernel: 8 bytes); more
    // than 64 bytes means a kernel's tile no longer fits its registers.
    cl::init(64), cl::cat(k3Category));
static cl::opt<std::string>
    dumpPhasesTo("dump-phases-to",
                 cl::desc("Write the IR of every phase (input.mlir, k3.mlir, "
                          "tiles.mlir, cpu.mlir) into this directory"),
                 cl::value_desc("dir"), cl::cat(k3Category));
static cl::opt<bool> lineTables(
    "line-tables",
    cl::desc("With --dump-phases-to: CPU kernels carry line tables that point "
             "into DIR/tiles.mlir (for profilers and addr2line on "
             "k3-dump --extract-kernels output)"),
    cl::cat(k3Category));
static cl::opt<std::string>
    mlaCache("mla-cache-dtype",
             cl::desc("Element type of the MLA latent cache: bf16 (default) "
                      "or f32"),
             cl::init("bf16"), cl::cat(k3Category));
static cl::opt<std::string>
    kdaForm("kda-form",
            cl::desc("Prefill KDA as: chunked (default; k3-kda-chunkwise) or "
                     "recurrent (the token recurrence)"),
            cl::init("chunked"), cl::cat(k3Category));
// 16-token chunks (one sub-chunk, FlashKDA's shape) are the fastest CPU
// form measured by `k3-bench kda` (64/16 runs about 1.7x slower there: the
// intra-chunk matrices and the solve grow with the chunk).
static cl::opt<int64_t> kdaChunk("kda-chunk",
                                 cl::desc("Tokens per KDA chunk (default 16)"),
                                 cl::init(16), cl::cat(k3Category));
static cl::opt<int64_t>
    kdaSubChunk("kda-sub-chunk",
                cl::desc("Tokens per KDA sub-chunk; divides --kda-chunk "
                         "(default 16)"),
                cl::init(16), cl::cat(k3Category));
static cl::opt<int64_t>
    kdaSegments("kda-segments",
                cl::desc("Compute prefill KDA as N independent segments composed "
                         "through their affine state maps (the context-parallel "
                         "form; default 1: one sequence)"),
                cl::init(1), cl::cat(k3Category));
static cl::opt<int64_t> kdaSnapshotInterval(
    "kda-snapshot-interval",
    cl::desc("Prefill also returns each KDA layer's state after every N tokens "
             "(layers.L.kda_snapshots; best a multiple of --kda-chunk; "
             "default 0: none)"),
    cl::init(0), cl::cat(k3Category));
static cl::opt<std::string>
    mlaForm("mla-form",
            cl::desc("Multi-token MLA: cost (default; absorbed or expanded by "
                     "k3-mla-absorb's rule at run time), absorbed or expanded. "
                     "Decode is always absorbed"),
            cl::init("cost"), cl::cat(k3Category));
static cl::opt<std::string>
    mlaDecodeForm("mla-decode-form",
                  cl::desc("One-token MLA: absorbed (default) or expanded (for "
                           "comparisons)"),
                  cl::init("absorbed"), cl::cat(k3Category));
static cl::opt<int64_t> mlaDecodeSplits(
    "mla-decode-splits",
    cl::desc("Key splits of an MLA decode step, merged by log-sum-exp (default 1)"),
    cl::init(1), cl::cat(k3Category));
static cl::opt<int64_t> mlaSplitKeys(
    "mla-split-keys",
    cl::desc("MLA decode's key parts: 0 (the CPU default: the --mla-decode-splits parts in "
             "turn) or a part length N (the GPU default 256: parts of N keys side by side, "
             "each a block of the same kernels, and one for the rest, merged by log-sum-exp)"),
    cl::init(-1), cl::cat(k3Category));
static cl::opt<int64_t> mlaPagedSplitKeys(
    "mla-paged-split-keys",
    cl::desc("GPU targets: keys per block of decode_batch's paged MLA attention (default "
             "1024: a request whose block table holds more keys runs as that many blocks "
             "per head, merged by log-sum-exp in a second kernel; 0: one block per head "
             "and request)"),
    cl::init(mlir::k3::kPagedSplitKeys), cl::cat(k3Category));
static cl::opt<std::string> mlaDecodeKernel(
    "mla-decode-kernel",
    cl::desc("GPU targets, with --mla-split-keys > 0: fused (the default: one split-K "
             "kernel on mma.sync that reads each cached row once, for its score and its "
             "value, k3-gpu-attend-parts) or parts (scores, softmax and values of every part "
             "as separate kernels, for comparisons)"),
    cl::init(""), cl::cat(k3Category));
static cl::opt<std::string> quantizeExperts(
    "quantize-experts",
    cl::desc("Routed experts: keep (default: the checkpoint's format), mxfp4 "
             "(quantize float experts, OCP MX v1.0) or none (decode MXFP4 "
             "experts to bf16)"),
    cl::init("keep"), cl::cat(k3Category));
static cl::opt<std::string> mxfp4ScaleRule(
    "mxfp4-scale-rule",
    cl::desc("Block scale rule of --quantize-experts=mxfp4: floor (default, "
             "OCP) or ceil (never clips)"),
    cl::init("floor"), cl::cat(k3Category));
static cl::opt<std::string> expertInputs(
    "expert-inputs",
    cl::desc("Expert GEMM inputs: f32 (default) or mxfp8 (rounded to E4M3 in "
             "blocks of 32: W4A8 numerics)"),
    cl::init("f32"), cl::cat(k3Category));
static cl::opt<std::string> contractionInputs(
    "contraction-inputs",
    cl::desc("CPU targets: f32 (default) or bf16 (every contraction's f32 operands rounded "
             "to bf16, as the GPU's tensor cores take them: k3-round-contraction-inputs, "
             "the GPU build's numerics on the CPU)"),
    cl::init("f32"), cl::cat(k3Category));
static cl::opt<std::string> linearForm(
    "linear",
    cl::desc("CPU targets: blocked (default; prompt projections as cache-blocked GEMMs of "
             "packed weight panels) or dot (one dot product per output, the GPU's form; "
             "the default with --contraction-inputs=bf16)"),
    cl::init("blocked"), cl::cat(k3Category));
static cl::opt<std::string> cpuLevelName(
    "cpu",
    cl::desc("Instruction-set level of the CPU code (kernels, and a GPU binary's host "
             "program): host (default; the best this machine runs: x86-64-v4 with AVX-512, "
             "else x86-64-v3 with AVX2 and FMA, else x86-64; a GPU target's host program "
             "at most x86-64-v3), x86-64, x86-64-v3 or x86-64-v4. The runtime refuses a "
             "binary above the level of the machine that loads it"),
    cl::init("host"), cl::cat(k3Category));
static cl::opt<std::string> moeDispatch(
    "moe-dispatch",
    cl::desc("Routed experts: grouped (the CPU default; one GEMM per expert over "
             "its tokens), slots (one GEMM over every routing slot, no "
             "data-dependent host loops), mma (the GPU default; MXFP4 experts "
             "sorted by expert on tensor cores, the rest as slots) or per-token (one "
             "matrix-vector product per token and expert, for comparisons)"),
    cl::init(""), cl::cat(k3Category));
static cl::opt<std::string> kdaDecodeForm(
    "kda-decode-form",
    cl::desc("The one-token KDA step: heads (the CPU default; the value heads on "
             "threads), per-head (a serial loop over value heads), batched (each step "
             "once for all heads) or kernel (the GPU default; the whole step as one "
             "kernel, a block per value head)"),
    cl::init(""), cl::cat(k3Category));
static cl::opt<std::string> kdaPrefillForm(
    "kda-prefill-form",
    cl::desc("KDA over many tokens (k3.kda, k3.kda_chunked): loops (the CPU default; a "
             "loop over chunks or tokens), scan (one loop nest over the state's columns, "
             "each scanning every token) or chunks (the GPU default; two kernels over "
             "16-token chunks on tensor cores, any gate; scan where they do not fit)"),
    cl::init(""), cl::cat(k3Category));
static cl::opt<std::string> routerForm(
    "router-form",
    cl::desc("The router's top-k: loops (the CPU default; a loop over tokens) or picks "
             "(the GPU default; one loop nest over (token, pick))"),
    cl::init(""), cl::cat(k3Category));
static cl::opt<bool> omitWeights(
    "omit-weights",
    cl::desc("Leave the weights out of the binary (their table stays): the runtime fills "
             "them with synthetic values (--synthetic-weights=SEED), for benchmarks of models "
             "whose weights do not travel"),
    cl::cat(k3Category));
static cl::opt<bool> unrollLayers(
    "unroll-layers",
    cl::desc("Inline every layer into the entry points instead of calling one function "
             "per layer kind (k3-outline-layers): code, kernels and compile time then "
             "grow with the depth; for comparisons"),
    cl::cat(k3Category));
static cl::opt<bool> panelExperts(
    "panel-experts",
    cl::desc("Store the float experts (routed, shared, latent projections) as the CPU "
             "GEMM's panels too (k3-pack-weight-panels experts=true); off by default "
             "(measured slower for decode); for comparisons"),
    cl::cat(k3Category));
static cl::opt<bool> noBatchedDecode(
    "no-batched-decode",
    cl::desc("Leave out the decode_batch entry point (B requests' decode steps in one "
             "call, over the paged MLA cache) that a binary of one rank has; the "
             "request engine then runs one decode call per request"),
    cl::cat(k3Category));
static cl::opt<uint64_t> seed("seed", cl::desc("Synthetic weights seed"),
                              cl::init(0), cl::cat(k3Category));
static cl::opt<std::string> syntheticExperts(
    "synthetic-experts",
    cl::desc("Synthetic expert storage: mxfp4, bf16 or f32 (default: what "
             "the config declares)"),
    cl::init(""), cl::cat(k3Category));
static cl::opt<int> shards("shards", cl::desc("Synthetic checkpoint shards"),
                           cl::init(1), cl::cat(k3Category));
static cl::opt<bool>
    flatPrefix("flat-prefix",
               cl::desc("Synthetic tensor names under `model.` instead of "
                        "`language_model.model.`"),
               cl::cat(k3Category));

static cl::opt<int64_t> tensorParallel(
    "tp", cl::desc("Tensor-parallel ranks per group: attention heads, the dense MLP and the "
                   "lm_head's vocabulary split this many ways (one .k3b per rank, "
                   "-o X.k3b writes X.rank<R>.k3b; with --stats: the placement plan)"),
    cl::init(1), cl::cat(k3Category));
static cl::opt<int64_t> expertParallel(
    "ep", cl::desc("Groups of --tp ranks; the routed experts split over all tp x ep ranks"),
    cl::init(1), cl::cat(k3Category));
static cl::opt<std::string> deviceMemory(
    "device-memory",
    cl::desc("With --stats --tp/--ep: memory per rank (e.g. 141GiB, 80GB), to print the "
             "requests x context that fit"),
    cl::cat(k3Category));

static cl::opt<bool> timePhases(
    "time-phases",
    cl::desc("Print each phase's wall-clock seconds on stderr when the compile ends"),
    cl::cat(k3Category));

static int fail(const llvm::Twine &message);

namespace {
/// "141GiB", "80GB", "1.5TiB" or a byte count; -1 when malformed.
int64_t parseBytes(llvm::StringRef text) {
  static const std::pair<const char *, double> units[] = {
      {"TiB", 1099511627776.0}, {"GiB", 1073741824.0}, {"MiB", 1048576.0},
      {"TB", 1e12},             {"GB", 1e9},           {"MB", 1e6}, {"B", 1}};
  double scale = 1;
  for (auto [suffix, factor] : units)
    if (text.consume_back(suffix)) {
      scale = factor;
      break;
    }
  double value;
  if (text.empty() || text.getAsDouble(value) || !(value > 0) || value * scale > 9e18)
    return -1;
  return int64_t(value * scale);
}

std::string gib(int64_t bytes) {
  return llvm::formatv("{0:F1} GiB", double(bytes) / 1073741824.0).str();
}

/// `--stats --tp=T --ep=E [--device-memory=M]`: what each rank holds.
int printPlacement(const model::Config &config) {
  model::Placement p;
  std::string error;
  if (!model::computePlacement(config, tensorParallel, expertParallel, p, error))
    return fail(error);
  llvm::outs() << "placement: --tp=" << p.tp << " --ep=" << p.ep << ", " << p.ranks
               << " ranks (attention, dense MLP and lm_head vocabulary split " << p.tp
               << " ways in each of " << p.ep << " groups; routed experts "
               << p.expertsPerRank << " per rank, shared experts split " << p.ranks
               << " ways)\n"
               << "  weight_bytes_per_rank: " << p.weightBytes << " (" << gib(p.weightBytes)
               << ": replicated " << gib(p.replicatedBytes) << ", split "
               << gib(p.splitBytes) << ", experts " << gib(p.expertBytes) << ")\n"
               << "  kda_state_bytes_per_request_per_rank: " << p.kdaStateBytesPerRequest
               << "\n"
               << "  mla_cache_bytes_per_token_per_rank: " << p.mlaBytesPerToken << "\n";
  if (deviceMemory.empty())
    return 0;
  int64_t device = parseBytes(deviceMemory);
  if (device < 0)
    return fail("--device-memory=" + deviceMemory + ": expected a size such as 141GiB or 80GB");
  constexpr double kReserve = 0.1; // activations, scratch, the runtime's own
  llvm::outs() << "  device_memory: " << gib(device) << " per rank, 10% reserved";
  if (p.weightBytes > device * (1 - kReserve)) {
    llvm::outs() << ": the weights do not fit (" << gib(p.weightBytes) << " per rank)\n";
    return 0;
  }
  llvm::outs() << ", " << gib(int64_t(device * (1 - kReserve)) - p.weightBytes)
               << " for requests\n  requests that fit (all " << p.ep << " groups):";
  for (int64_t context : {4096, 32768, 131072, 262144})
    llvm::outs() << " " << context / 1024 << "K tokens: "
                 << model::requestsThatFit(p, device, kReserve, context) << ";";
  llvm::outs() << "\n";
  return 0;
}

/// The phase under way: its wall-clock time for --time-phases, and a
/// progress line (the phase, and `kernel i/N` while ptxas runs) redrawn in
/// place when stderr is a terminal; nothing is drawn otherwise.
class Phases {
public:
  Phases() : tty(llvm::errs().is_displayed()), start(Clock::now()), began(start) {}
  void begin(const char *name) {
    end();
    current = name;
    began = Clock::now();
    draw(current);
  }
  void end() {
    if (!current.empty())
      times.push_back({current, seconds(began)});
    current.clear();
  }
  void kernels(size_t done, size_t total) {
    draw(current + ": kernel " + std::to_string(done) + "/" + std::to_string(total));
  }
  /// Clears the progress line (before any other output on stderr).
  void clear() {
    if (tty && drawn)
      llvm::errs() << "\r\033[K";
    drawn = false;
  }
  void report() {
    end();
    clear();
    llvm::errs() << "phase     seconds\n";
    for (auto &[name, t] : times)
      llvm::errs() << llvm::format("%-8s %8.3f\n", name.c_str(), t);
    llvm::errs() << llvm::format("%-8s %8.3f\n", "total", seconds(start));
  }

private:
  using Clock = std::chrono::steady_clock;
  static double seconds(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }
  void draw(const std::string &line) {
    if (!tty)
      return;
    llvm::errs() << "\r\033[Kk3-compile: " << line;
    llvm::errs().flush();
    drawn = true;
  }
  bool tty, drawn = false;
  Clock::time_point start, began;
  std::string current;
  std::vector<std::pair<std::string, double>> times;
};
Phases phases;
} // namespace

/// One line on stderr and a failing exit status (DESIGN.md §5).
static int fail(const llvm::Twine &message) {
  phases.clear();
  llvm::errs() << "k3-compile: error: " << message << "\n";
  return 1;
}

static int printModule(ModuleOp module, std::string &error);
static void exportEntryPoints(ModuleOp module);

/// `file:line:col: ` or `name: ` for the locations k3 creates.
static std::string describeLocation(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().str() + ":" + std::to_string(file.getLine()) +
            ":" + std::to_string(file.getColumn()) + ": ");
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str() + ": ";
  return "";
}

static int runWriteSynthetic() {
  std::string configText, error;
  auto config = model::loadConfig(inputPath, error, &configText);
  if (!config)
    return fail(error);
  model::SyntheticOptions options;
  options.seed = seed;
  options.shards = shards;
  options.flatPrefix = flatPrefix;
  options.experts = config->declaredExpertFormat;
  if (syntheticExperts == "mxfp4")
    options.experts = model::ExpertFormat::MXFP4;
  else if (syntheticExperts == "bf16")
    options.experts = model::ExpertFormat::BF16;
  else if (syntheticExperts == "f32")
    options.experts = model::ExpertFormat::F32;
  else if (!syntheticExperts.empty())
    return fail("--synthetic-experts=" + syntheticExperts +
                ": expected mxfp4, bf16 or f32");
  if (options.experts == model::ExpertFormat::MXFP4 &&
      (config->expertWidth() % 32 || config->moeIntermediateSize % 32))
    return fail("MXFP4 experts need expert widths that are multiples of 32");
  if (std::error_code ec = llvm::sys::fs::create_directories(writeSynthetic))
    return fail(writeSynthetic + ": " + ec.message());
  if (!model::writeSyntheticCheckpoint(*config, configText, writeSynthetic,
                                           options, error))
    return fail(error);
  // A tokenizer beside the weights; Kimi's layout puts the special range at
  // bos_token_id (top level, or in text_config for K3's wrapper).
  int64_t bos = -1;
  if (llvm::Expected<llvm::json::Value> j = llvm::json::parse(configText)) {
    if (const llvm::json::Object *o = j->getAsObject()) {
      std::optional<int64_t> id = o->getInteger("bos_token_id");
      if (const llvm::json::Object *t = o->getObject("text_config"); !id && t)
        id = t->getInteger("bos_token_id");
      bos = id.value_or(-1);
    }
  } else {
    llvm::consumeError(j.takeError()); // read fine above; never here
  }
  if (!k3rt::writeSyntheticTokenizer(writeSynthetic, config->vocabSize, bos, error))
    return fail(error);
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  mlir::k3::registerK3Passes(); // the phases run named k3 pipelines
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions(); // --mlir-timing: each pass's time
  // DESIGN.md §5 fixes `--stats`, which LLVM also registers (pass
  // statistics, unused here): drop LLVM's before declaring ours.
  cl::HideUnrelatedOptions(k3Category); // the rest: --help-hidden
  if (auto it = cl::getRegisteredOptions().find("stats");
      it != cl::getRegisteredOptions().end())
    it->second->removeArgument();
  cl::opt<bool> stats("stats",
                      cl::desc("Print parameter count, KDA state bytes per "
                               "request, MLA cache bytes per token"),
                      cl::cat(k3Category));
  cl::ParseCommandLineOptions(argc, argv, "k3 model compiler\n");

  if (!writeSynthetic.empty())
    return runWriteSynthetic();

  bool isDir = llvm::sys::fs::is_directory(inputPath);
  if (stats) {
    if (!isDir)
      return fail("--stats needs a checkpoint directory with config.json");
    std::string error;
    auto config = model::loadConfig(inputPath, error);
    if (!config)
      return fail(error);
    model::Stats s = model::computeStats(*config);
    llvm::outs() << "parameters: " << s.parameters << "\n"
                 << "kda_recurrent_state_bytes: " << s.kdaRecurrentStateBytes
                 << "\n"
                 << "mla_cache_bytes_per_token: " << s.mlaCacheBytesPerToken
                 << "\n"
                 << "layers: " << s.kdaLayers << " kda, " << s.mlaLayers
                 << " mla\n";
    if (tensorParallel == 1 && expertParallel == 1 && deviceMemory.empty())
      return 0;
    return printPlacement(*config);
  }
  if (!deviceMemory.empty())
    return fail("--device-memory prints the requests that fit with --stats --tp/--ep");
  const bool sharded = tensorParallel != 1 || expertParallel != 1;
  if (sharded) {
    if (!isDir)
      return fail("--tp/--ep need a checkpoint directory (the importer splits the model)");
    std::string why;
    auto config = model::loadConfig(inputPath, why);
    if (!config)
      return fail(why);
    model::Placement p;
    if (!model::computePlacement(*config, tensorParallel, expertParallel, p, why))
      return fail(why);
  }

  std::optional<mlir::k3::GpuChip> chip = mlir::k3::gpuChip(target);
  if (target != "cpu" && !chip)
    return fail("--target=" + target + ": expected cpu, sm_90a or sm_80");
  static const char *const cpuPhases[] = {"", "input", "k3", "tiles", "cpu", "bundle"};
  static const char *const gpuPhases[] = {"",    "input", "k3",    "tiles",
                                          "gpu", "ptx",   "cubin", "bundle"};
  if (!chip && llvm::find(cpuPhases, compileTo) == std::end(cpuPhases))
    return fail("--compile-to=" + compileTo +
                ": unknown phase for --target=cpu (available: input, k3, tiles, cpu, "
                "bundle)");
  static const char *const emulatedPhases[] = {"",    "input", "k3",    "tiles",
                                               "gpu", "cpu",   "bundle"};
  if (emulate && !chip)
    return fail("--emulate needs a GPU --target (sm_90a or sm_80): it runs that target's "
                "kernels on the CPU");
  if (emulate && (tensorParallel > 1 || expertParallel > 1))
    return fail("--emulate builds one rank (the GPU's collectives are NCCL calls); drop --tp "
                "and --ep");
  if (emulate && (ptxasPath.getNumOccurrences() || maxSpillBytes.getNumOccurrences()))
    return fail("--emulate runs the kernels on the CPU: --ptxas and --max-spill-bytes do not "
                "apply");
  if (emulate && llvm::find(emulatedPhases, compileTo) == std::end(emulatedPhases))
    return fail("--compile-to=" + compileTo + ": unknown phase for --target=" + target +
                " --emulate (available: input, k3, tiles, gpu, cpu, bundle)");
  if (chip && !emulate && llvm::find(gpuPhases, compileTo) == std::end(gpuPhases))
    return fail("--compile-to=" + compileTo + ": unknown phase for --target=" + target +
                " (available: input, k3, tiles, gpu, ptx, cubin, bundle)");
  if (maxSpillBytes < -1)
    return fail("--max-spill-bytes=" + Twine(maxSpillBytes.getValue()) +
                ": expected -1 (no limit) or a byte count");
  if (chip && lineTables)
    return fail("--line-tables applies to --target=cpu");
  std::string ptxas;
  if (chip && !emulate) {
    ptxas = mlir::k3::findPtxas(ptxasPath);
    if (!ptxasPath.empty() && ptxasPath != "none" &&
        !llvm::sys::fs::can_execute(ptxasPath))
      return fail("--ptxas=" + ptxasPath + ": not an executable file");
    // The ptx phase links libdevice; the phases before it, and a bundle
    // without kernels, need no CUDA.
    if (compileTo != "input" && compileTo != "k3" && compileTo != "tiles" &&
        compileTo != "gpu" && compileTo != "bundle") {
      std::string toolkitError;
      chip->toolkit = mlir::k3::findCudaToolkit(ptxas, toolkitError);
      if (chip->toolkit.empty())
        return fail(toolkitError);
    }
  }
  const bool binary = compileTo.empty() || compileTo == "bundle";
  if (binary && outputPath == "-")
    return fail("a .k3b needs -o FILE.k3b");
  if (compileTo == "bundle" && !isDir)
    return fail("--compile-to=bundle needs a checkpoint directory");
  if (mlaCache != "bf16" && mlaCache != "f32")
    return fail("--mla-cache-dtype=" + mlaCache + ": expected bf16 or f32");
  if (kdaForm != "chunked" && kdaForm != "recurrent")
    return fail("--kda-form=" + kdaForm + ": expected chunked or recurrent");
  if (kdaSnapshotInterval < 0)
    return fail("--kda-snapshot-interval=" + Twine(kdaSnapshotInterval.getValue()) +
                ": expected 0 (none) or a positive token count");
  if (mlaForm != "cost" && mlaForm != "absorbed" && mlaForm != "expanded")
    return fail("--mla-form=" + mlaForm + ": expected cost, absorbed or expanded");
  if (mlaDecodeForm != "absorbed" && mlaDecodeForm != "expanded")
    return fail("--mla-decode-form=" + mlaDecodeForm + ": expected absorbed or expanded");
  if (mlaDecodeSplits < 1 || mlaDecodeSplits > 256)
    return fail("--mla-decode-splits=" + Twine(mlaDecodeSplits.getValue()) +
                ": expected 1 to 256");
  if (quantizeExperts != "keep" && quantizeExperts != "mxfp4" && quantizeExperts != "none")
    return fail("--quantize-experts=" + quantizeExperts + ": expected keep, mxfp4 or none");
  if (mxfp4ScaleRule != "floor" && mxfp4ScaleRule != "ceil")
    return fail("--mxfp4-scale-rule=" + mxfp4ScaleRule + ": expected floor or ceil");
  if (expertInputs != "f32" && expertInputs != "mxfp8")
    return fail("--expert-inputs=" + expertInputs + ": expected f32 or mxfp8");
  if (contractionInputs != "f32" && contractionInputs != "bf16")
    return fail("--contraction-inputs=" + contractionInputs + ": expected f32 or bf16");
  if (linearForm != "blocked" && linearForm != "dot")
    return fail("--linear=" + linearForm + ": expected blocked or dot");
  if (linearForm.getNumOccurrences() && target != "cpu")
    return fail("--linear is a CPU target's choice (the GPU's contractions take the dot form)");
  if (contractionInputs == "bf16" && target != "cpu")
    return fail("--contraction-inputs=bf16 is for CPU builds (a GPU build rounds at its "
                "tensor cores already)");
  // The grouped form's per-expert host loops would launch a kernel per
  // register tile on a GPU (SlotMoePattern.cpp).
  if (moeDispatch.getNumOccurrences() == 0)
    moeDispatch = chip ? "mma" : "grouped";
  if (moeDispatch != "grouped" && moeDispatch != "slots" && moeDispatch != "mma" &&
      moeDispatch != "per-token")
    return fail("--moe-dispatch=" + moeDispatch + ": expected grouped, slots, mma or per-token");
  if (moeDispatch == "mma" && !chip)
    return fail("--moe-dispatch=mma needs a GPU --target (the expert kernels are GPU code)");
  if (kdaDecodeForm.getNumOccurrences() == 0)
    kdaDecodeForm = chip ? "kernel" : "heads";
  if (kdaDecodeForm != "per-head" && kdaDecodeForm != "heads" && kdaDecodeForm != "batched" &&
      kdaDecodeForm != "kernel")
    return fail("--kda-decode-form=" + kdaDecodeForm +
                ": expected heads, per-head, batched or kernel");
  if (kdaDecodeForm == "kernel" && !chip)
    return fail("--kda-decode-form=kernel needs a GPU --target (the step kernel is GPU code)");
  if (kdaPrefillForm.getNumOccurrences() == 0)
    kdaPrefillForm = chip ? "chunks" : "loops";
  if (kdaPrefillForm != "loops" && kdaPrefillForm != "scan" && kdaPrefillForm != "chunks")
    return fail("--kda-prefill-form=" + kdaPrefillForm + ": expected loops, scan or chunks");
  if (kdaPrefillForm == "chunks" && !chip)
    return fail("--kda-prefill-form=chunks needs a GPU --target (the chunk kernel is GPU code)");
  if (routerForm.getNumOccurrences() == 0)
    routerForm = chip ? "picks" : "loops";
  if (routerForm != "loops" && routerForm != "picks")
    return fail("--router-form=" + routerForm + ": expected loops or picks");
  // A GPU reads a long cache with one block group per part; a CPU core
  // gains nothing from more parts.
  if (mlaSplitKeys.getNumOccurrences() == 0)
    mlaSplitKeys = chip ? mlir::k3::LinalgForms::gpu().mlaSplitKeys : 0;
  if (mlaSplitKeys < 0 || mlaSplitKeys > (int64_t(1) << 20))
    return fail("--mla-split-keys=" + Twine(mlaSplitKeys.getValue()) +
                ": expected 0 or a part length up to 1048576");
  if (mlaPagedSplitKeys < 0 || mlaPagedSplitKeys > (int64_t(1) << 20))
    return fail("--mla-paged-split-keys=" + Twine(mlaPagedSplitKeys.getValue()) +
                ": expected 0 or a split length up to 1048576");
  if (mlaDecodeKernel.getNumOccurrences() == 0)
    mlaDecodeKernel = chip && mlaSplitKeys > 0 ? "fused" : "parts";
  if (mlaDecodeKernel != "parts" && mlaDecodeKernel != "fused")
    return fail("--mla-decode-kernel=" + mlaDecodeKernel + ": expected parts or fused");
  if (mlaDecodeKernel == "fused" && (!chip || mlaSplitKeys == 0))
    return fail("--mla-decode-kernel=fused needs a GPU --target and --mla-split-keys > 0");
  mlir::k3::LinalgForms forms{moeDispatch, kdaDecodeForm, kdaPrefillForm,
                              routerForm,  mlaSplitKeys,  mlaDecodeKernel,
                              contractionInputs == "bf16"};
  forms.attnRes = chip ? mlir::k3::LinalgForms::gpu().attnRes : "linalg";
  forms.mlaPaged = chip ? mlir::k3::LinalgForms::gpu().mlaPaged : "loops";
  forms.norm = chip ? mlir::k3::LinalgForms::gpu().norm : "linalg";
  // --contraction-inputs=bf16 imitates the GPU build's numerics, so its
  // projections take the GPU's dot form unless --linear says otherwise (the
  // blocked form's panel products would round x where the GPU's MXFP4
  // linear does not).
  std::string levelError;
  std::string level = mlir::k3::cpuLevel(cpuLevelName, levelError);
  if (level.empty())
    return fail(levelError);
  // A GPU binary's host program only sequences launches: AVX2 at most by
  // default, so that it loads on any GPU server's CPU.
  if (chip && !emulate && !cpuLevelName.getNumOccurrences() && level == "x86-64-v4")
    level = "x86-64-v3";
  // The CPU GEMMs' panels are two vector registers wide.
  forms.panelColumns = 2 * std::max<int64_t>(mlir::k3::cpuVectorLanes(level), 8);
  if (target == "cpu")
    forms.linear = contractionInputs == "bf16" && !linearForm.getNumOccurrences()
                       ? std::string("dot")
                       : linearForm.getValue();
  if (panelExperts && (target != "cpu" || forms.linear != "blocked"))
    return fail("--panel-experts applies to --target=cpu with --linear=blocked (the panels' "
                "GEMMs)");
  if (kdaSegments < 1 || kdaSegments > 1024)
    return fail("--kda-segments=" + Twine(kdaSegments.getValue()) + ": expected 1 to 1024");
  if (kdaChunk <= 0 || kdaSubChunk <= 0 || kdaChunk % kdaSubChunk != 0 || kdaChunk > 1024)
    return fail("--kda-chunk=" + Twine(kdaChunk.getValue()) +
                " must be a positive multiple of --kda-sub-chunk=" +
                Twine(kdaSubChunk.getValue()) + ", at most 1024");

  DialectRegistry registry;
  mlir::k3::registerK3Dialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  // Bad input is one line (DESIGN.md §5): keep the first error, with its
  // location, and report it once the phase has failed.
  std::string firstError;
  ScopedDiagnosticHandler diagHandler(&context, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error && firstError.empty())
      firstError = describeLocation(d.getLocation()) + d.str();
    return success();
  });
  llvm::SourceMgr sourceMgr;

  OwningOpRef<ModuleOp> module;
  std::unique_ptr<model::Checkpoint> checkpoint;
  phases.begin("input");
  if (isDir) {
    std::string error;
    checkpoint = model::Checkpoint::open(inputPath, error);
    if (!checkpoint)
      return fail(error);
    mlir::k3::ImportOptions options;
    options.f32MlaCache = mlaCache == "f32";
    options.kdaSnapshotInterval = kdaSnapshotInterval;
    options.tp = tensorParallel;
    options.ep = expertParallel;
    // A grid's collectives do not take its forms yet.
    options.batchedDecode = tensorParallel == 1 && expertParallel == 1 &&
                            !noBatchedDecode;
    module = mlir::k3::importCheckpoint(context, *checkpoint, options);
  } else {
    std::string error;
    auto buffer = openInputFile(inputPath, &error);
    if (!buffer)
      return fail(error);
    sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return fail(firstError);
  }
  if (failed(verify(*module)))
    return fail(firstError);

  std::string error;
  if (!dumpPhasesTo.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(dumpPhasesTo))
      return fail(dumpPhasesTo + ": " + ec.message());
  }
  // Writes a phase's IR to the dump directory (if any).
  auto dump = [&](ModuleOp m, const char *phase) -> bool {
    if (dumpPhasesTo.empty())
      return true;
    std::string path = dumpPhasesTo + "/" + phase + ".mlir";
    auto out = openOutputFile(path, &error);
    if (!out)
      return false;
    OpPrintingFlags flags;
    flags.elideLargeElementsAttrs(16);
    m->print(out->os(), flags);
    out->keep();
    return true;
  };
  // Runs one stage; stops with the first error at its op.
  auto stage = [&](ModuleOp m, llvm::function_ref<void(OpPassManager &)> build) {
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return false;
    applyDefaultTimingPassManagerCLOptions(pm);
    build(pm);
    return succeeded(pm.run(m));
  };

  if (!dump(*module, "input"))
    return fail(error);
  if (compileTo == "input")
    return printModule(*module, error);
  // Phase k3: weights become arguments (the bundle binds them, the kernels
  // read them); MXFP4 weights stay packed and the GEMMs decode them.
  phases.begin("k3");
  if (!stage(*module, [&](OpPassManager &pm) {
        mlir::k3::CpuK3Options options;
        options.partition = !module->getOps<shard::GridOp>().empty();
        options.dequantize = compileTo != "bundle";
        options.kdaChunked = kdaForm == "chunked";
        options.kdaChunk = kdaChunk;
        options.kdaSubChunk = kdaSubChunk;
        options.kdaSegments = kdaSegments;
        options.quantizeExperts = quantizeExperts;
        options.scaleRule = mxfp4ScaleRule;
        options.expertInputs = expertInputs == "mxfp8" ? "mxfp8" : "none";
        options.mlaPrefill = mlaForm;
        options.mlaDecodeSplits = mlaDecodeSplits;
        options.mlaDecode = mlaDecodeForm;
        options.layerFunctions = !unrollLayers;
        // The CPU's blocked GEMMs read their weights as packed panels.
        if (target == "cpu" && forms.linear == "blocked") {
          options.panelColumns = forms.panelColumns;
          options.panelExperts = panelExperts;
        }
        mlir::k3::buildCpuK3Stage(pm, options);
      }))
    return fail(firstError);
  if (!dump(*module, "k3"))
    return fail(error);
  if (compileTo == "k3")
    return printModule(*module, error);

  mlir::k3::BundleCode code;
  // An emulated GPU build is a CPU binary: the runtime runs it as one.
  code.target = emulate ? "cpu" : target.getValue();
  if (compileTo != "bundle" && chip) {
    OwningOpRef<ModuleOp> lowered = module->clone();
    exportEntryPoints(*lowered);
    // Each GPU phase: run its stage, dump it, stop there when asked.
    // Emulated, the gpu phase ends with the launches as OpenMP teams and
    // the cpu phase lowers them as a CPU build's.
    struct GpuPhase {
      const char *name;
      std::function<void(OpPassManager &)> build;
    };
    auto tilesPhase = [&](OpPassManager &pm) { mlir::k3::buildGpuTilesStage(pm, forms); };
    std::vector<GpuPhase> gpuPhases;
    if (emulate)
      gpuPhases = {
          {"tiles", tilesPhase},
          {"gpu",
           [&](OpPassManager &pm) {
             mlir::k3::buildGpuEmulationStage(pm, *chip, 128, mlaPagedSplitKeys);
           }},
          {"cpu", [&](OpPassManager &pm) { mlir::k3::buildEmulationLlvmStage(pm); }}};
    else
      gpuPhases = {{"tiles", tilesPhase},
                   {"gpu",
                    [&](OpPassManager &pm) {
                      mlir::k3::buildGpuStage(pm, *chip, 128, mlaPagedSplitKeys);
                    }},
                   {"ptx", [&](OpPassManager &pm) { mlir::k3::buildPtxStage(pm, *chip); }}};
    for (const GpuPhase &phase : gpuPhases) {
      phases.begin(phase.name);
      if (!stage(*lowered, phase.build))
        return fail(firstError.empty() ? std::string("the ") + phase.name + " phase failed"
                                       : firstError);
      if (!dump(*lowered, phase.name))
        return fail(error);
      if (compileTo == phase.name)
        return printModule(*lowered, error);
      if (phase.name == std::string("gpu") && !emulate)
        for (auto fn : lowered->getOps<func::FuncOp>())
          if (fn->hasAttr("k3.graph_capturable"))
            code.graphCapturable.insert(fn.getName().str());
    }
    code.cpu = level;
    if (emulate) {
      phases.begin("object");
      if (!mlir::k3::emitHostSharedObject(*lowered, code.hostObject, code.cpu, error))
        return fail(firstError.empty() ? error : error + ": " + firstError);
    } else {
      // Phase cubin: ptxas on each kernel, then the host program to LLVM.
      mlir::k3::GpuTargetOptions gpuOptions;
      gpuOptions.chip = chip->chip;
      gpuOptions.ptxas = ptxas;
      gpuOptions.maxSpillBytes = maxSpillBytes;
      gpuOptions.progress = [](size_t done, size_t total) { phases.kernels(done, total); };
      phases.begin("cubin");
      if (!mlir::k3::extractDeviceKernels(*lowered, gpuOptions, code.deviceKernels, error))
        return fail(error);
      phases.begin("host");
      if (ptxas.empty() && ptxasPath != "none") {
        phases.clear();
        llvm::errs() << "k3-compile: note: no ptxas found; the kernels are PTX only (the "
                        "driver compiles them at load)\n";
      }
      if (!stage(*lowered, [&](OpPassManager &pm) { mlir::k3::buildGpuHostStage(pm); }))
        return fail(firstError.empty() ? "the cubin phase failed" : firstError);
      if (!dump(*lowered, "cubin"))
        return fail(error);
      if (compileTo == "cubin")
        return printModule(*lowered, error);
      if (!mlir::k3::emitHostSharedObject(*lowered, code.hostObject, code.cpu, error,
                                          /*gpuHost=*/true))
        return fail(firstError.empty() ? error : error + ": " + firstError);
    }
  } else if (compileTo != "bundle") {
    OwningOpRef<ModuleOp> lowered = module->clone();
    exportEntryPoints(*lowered);
    phases.begin("tiles");
    if (!stage(*lowered, [&](OpPassManager &pm) {
          mlir::k3::buildCpuTilesStage(pm, forms);
        }))
      return fail(firstError.empty() ? "the tiles phase failed" : firstError);
    if (!dump(*lowered, "tiles"))
      return fail(error);
    if (lineTables) {
      // Re-read the dumped tiles phase: every op's location becomes its own
      // line in tiles.mlir, which the line tables then carry.
      if (dumpPhasesTo.empty())
        return fail("--line-tables needs --dump-phases-to=DIR");
      lowered = parseSourceFile<ModuleOp>(dumpPhasesTo + "/tiles.mlir", &context);
      if (!lowered)
        return fail(firstError);
    }
    if (compileTo == "tiles")
      return printModule(*lowered, error);
    phases.begin("cpu");
    if (!stage(*lowered, [&](OpPassManager &pm) {
          mlir::k3::buildCpuLlvmStage(pm);
          if (lineTables)
            pm.addPass(LLVM::createDIScopeForLLVMFuncOpPass());
        }))
      return fail(firstError.empty() ? "the cpu phase failed" : firstError);
    if (!dump(*lowered, "cpu"))
      return fail(error);
    if (compileTo == "cpu")
      return printModule(*lowered, error);
    phases.begin("object");
    code.cpu = level;
    if (!mlir::k3::emitHostSharedObject(*lowered, code.hostObject, code.cpu, error))
      return fail(firstError.empty() ? error : error + ": " + firstError);
  }
  phases.begin("bundle");
  if (!sharded) {
    if (!mlir::k3::writeBundle(*module, checkpoint.get(), code, outputPath, error, omitWeights))
      return fail(error);
  } else {
    // One file per rank, the same kernels in each (every rank runs the same
    // program), each with its own block of the split weights.
    int64_t ranks = tensorParallel * expertParallel;
    for (int64_t r = 0; r < ranks; ++r)
      if (!mlir::k3::writeBundle(*module, checkpoint.get(), code,
                                 k3rt::comm::rankFilePath(outputPath, r), error, omitWeights, r))
        return fail(error);
    StringRef stem = outputPath;
    stem.consume_back(".k3b");
    llvm::errs() << "k3-compile: wrote " << ranks << " ranks' binaries, " << stem
                 << ".rank{0.." << ranks - 1 << "}.k3b; run them with mpirun -np " << ranks
                 << " k3-run " << outputPath << "\n";
  }
  if (timePhases)
    phases.report();
  phases.clear();
  // MOE_MXFP4.md §2: 0x00 scales are legal but worth knowing about.
  if (checkpoint && checkpoint->zeroScaleBlocks())
    llvm::errs() << "k3-compile: note: " << checkpoint->zeroScaleBlocks()
                 << " MXFP4 blocks have scale byte 0x00 (2^-127); the kernels decode them "
                    "to 0\n";
  return 0;
}

/// Entry points (the public functions) export a C interface; the k3.*
/// argument names stay in the bundle's metadata, not in the object (LLVM IR
/// has no place for them). The layer functions they call stay private.
static void exportEntryPoints(ModuleOp module) {
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isPublic())
      fn->setAttr("llvm.emit_c_interface", UnitAttr::get(module.getContext()));
    fn.removeArgAttrsAttr();
    fn.removeResAttrsAttr();
  }
}

/// Prints `module` to -o (elided weights), or fails with one line.
static int printModule(ModuleOp module, std::string &error) {
  if (timePhases)
    phases.report();
  phases.clear();
  auto output = openOutputFile(outputPath, &error);
  if (!output)
    return fail(error);
  OpPrintingFlags flags;
  flags.elideLargeElementsAttrs(16);
  module->print(output->os(), flags);
  output->keep();
  return 0;
}
