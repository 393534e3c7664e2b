//===- k3-run.cpp - Run a .k3b --------------------------------------------===//
//
// Part of k3. The command-line contract of DESIGN.md §5. MLIR-free.
//
//   k3-run FILE.k3b --tokens=1,2,3 [--generate=N] [--temperature=T]
//          [--top-k=K] [--top-p=P] [--seed=S] [--device=cpu|cuda|auto]
//          [--dump-logits=PATH.npy] [--synthetic-weights=SEED]
//   k3-run FILE.k3b --prompt=TEXT [--chat] [--tokenizer=DIR] [--generate=N]
//   k3-run FILE.k3b --function=NAME --input=@a.npy ... --output=@o.npy
//   k3-run FILE.k3b --requests=FILE.jsonl [--max-batch=N] [--no-prefix-cache]
//          [--speculate=K] [--block-tokens=512] [--page-blocks=1]
//          [--prefill-chunk=2048] [--pool-kib=262144] [--dump-logits-dir=DIR]
//
// Everything up to execution is here: flags, the verified binary, token ids
// against the vocabulary, .npy inputs, the device choice. Executing needs
// the binary's CPU kernels, which the CPU backend (issue 4) will emit; a
// binary without them is refused with one line.
//
//===----------------------------------------------------------------------===//

#include "runtime/include/k3rt/k3rt.h"
#include "runtime/src/Bundle.h"
#include "runtime/src/CpuExecutable.h"
#include "runtime/src/CudaDevice.h"
#include "runtime/src/Npy.h"
#include "runtime/src/Sampling.h"
#include "runtime/src/Session.h"
#include "runtime/src/Status.h"
#include "runtime/src/text/Chat.h"
#include "runtime/src/text/Tokenizer.h"
#include "runtime/src/comm/Nccl.h"
#include "tools/k3-run/Ranks.h"
#include "tools/k3-run/Requests.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <iostream>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

/// Under mpirun: this process's rank (its lines say which), and whether it
/// is rank 0, the one that prints and writes.
int g_rank = -1;
bool g_printer = true;

int fail(const std::string &message) {
  if (g_rank >= 0)
    std::fprintf(stderr, "k3-run: error: rank %d: %s\n", g_rank, message.c_str());
  else
    std::fprintf(stderr, "k3-run: error: %s\n", message.c_str());
  return 1;
}

/// Parses a plain decimal integer (digits only, an optional leading '-')
/// in [lo, hi].
bool parseInt(const std::string &s, long long lo, long long hi, long long &out) {
  size_t digits = s.size() > 0 && s[0] == '-' ? 1 : 0;
  if (s.size() == digits || s.size() > 19 ||
      s.find_first_not_of("0123456789", digits) != std::string::npos)
    return false;
  errno = 0;
  out = std::strtoll(s.c_str(), nullptr, 10);
  return errno == 0 && out >= lo && out <= hi;
}

bool parseSeed(const std::string &s, uint64_t &out) {
  if (s.empty() || s.size() > 20 ||
      s.find_first_not_of("0123456789") != std::string::npos)
    return false;
  errno = 0;
  out = std::strtoull(s.c_str(), nullptr, 10);
  return errno == 0;
}

bool parseFloat(const std::string &s, double &out) {
  if (s.empty())
    return false;
  char *end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return *end == '\0';
}

struct Options {
  std::string path, device = "cpu", dumpLogits, function;
  bool cudaGraphs = true; ///< --no-cuda-graphs turns them off
  std::vector<long long> tokens;
  bool haveTokens = false;
  bool sampled = false; ///< a sampling flag was given
  long long generate = 0;
  std::vector<std::string> inputs, outputs;
  k3rt::SamplingOptions sampling;
  RequestsOptions requests; ///< --requests mode when its path is set
  bool servingFlag = false; ///< a flag that only --requests takes
  /// --synthetic-weights=SEED: fill an --omit-weights binary's weights.
  std::optional<uint64_t> syntheticWeights;
  /// --threads=N: the CPU kernels' threads (default: the cores this process
  /// may use).
  int threads = 0;
  /// --collective-timeout=S: a collective that takes longer fails on every
  /// rank (default 60 s; the ranks' start-up agreement gets ten times it).
  double collectiveTimeout = 60;
  /// --test-stall-rank=R (tests only, not in --help): under mpirun, rank R
  /// stops before its first step and never returns, as a hung peer would.
  int stallRank = -1;
  /// --test-exit-rank=R (tests only): rank R exits at once after the start,
  /// as a rank that dies would.
  int exitRank = -1;
  /// Text mode: --prompt=TEXT and/or --chat, with --tokenizer=DIR (default:
  /// the binary's directory).
  std::string prompt, tokenizer;
  bool havePrompt = false, chat = false;
};

/// One line per problem, in the order the flags were given.
bool parse(int argc, char **argv, Options &o, std::string &error) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    size_t eq = a.find('=');
    std::string key = a.substr(0, eq), value = eq == std::string::npos ? "" : a.substr(eq + 1);
    // Also accept `--flag value`, but never take another flag as a value.
    bool took = false;
    auto take = [&]() {
      if (!took && eq == std::string::npos && i + 1 < argc &&
          std::string(argv[i + 1]).rfind("--", 0) != 0)
        value = argv[++i];
      took = true;
      return value;
    };
    double f;
    long long n;
    const bool flagWithValue =
        key == "--tokens" || key == "--generate" || key == "--temperature" ||
        key == "--top-k" || key == "--top-p" || key == "--seed" ||
        key == "--device" || key == "--dump-logits" || key == "--function" ||
        key == "--input" || key == "--output" || key == "--requests" ||
        key == "--max-batch" || key == "--speculate" || key == "--block-tokens" ||
        key == "--page-blocks" || key == "--prefill-chunk" || key == "--pool-kib" ||
        key == "--decode-groups" || key == "--dump-logits-dir" || key == "--synthetic-weights" ||
        key == "--threads" ||
        key == "--collective-timeout" || key == "--test-stall-rank" || key == "--test-exit-rank" ||
        key == "--tokenizer";
    if (flagWithValue && take().empty()) {
      error = key + " needs a value";
      return false;
    }
    if (key == "--prompt") {
      // The text may be empty or start with "--": only `--prompt=TEXT`.
      if (eq == std::string::npos) {
        error = "--prompt needs a value: --prompt=TEXT";
        return false;
      }
      o.prompt = value;
      o.havePrompt = true;
    } else if (key == "--chat") {
      if (eq != std::string::npos) {
        error = "--chat takes no value";
        return false;
      }
      o.chat = true;
    } else if (key == "--tokenizer") {
      o.tokenizer = take();
    } else if (key == "--tokens") {
      if (o.haveTokens) {
        error = "--tokens given twice";
        return false;
      }
      o.haveTokens = true;
      std::string list = take(), item;
      size_t start = 0;
      do {
        size_t comma = list.find(',', start);
        item = list.substr(start, comma == std::string::npos ? comma : comma - start);
        if (!parseInt(item, 0, (1ll << 31) - 1, n)) {
          error = "--tokens: '" + item + "' is not a token id";
          return false;
        }
        o.tokens.push_back(n);
        start = comma == std::string::npos ? list.size() + 1 : comma + 1;
      } while (start <= list.size());
    } else if (key == "--generate") {
      if (!parseInt(take(), 0, 1 << 24, o.generate)) {
        error = "--generate: '" + value + "' is not a count";
        return false;
      }
    } else if (key == "--temperature") {
      if (!parseFloat(take(), f) || !(f >= 0) || !std::isfinite(f)) {
        error = "--temperature: '" + value + "' is not a temperature >= 0";
        return false;
      }
      o.sampling.temperature = float(f);
      o.sampled = true;
    } else if (key == "--top-k") {
      if (!parseInt(take(), 0, 1 << 30, n)) {
        error = "--top-k: '" + value + "' is not a count";
        return false;
      }
      o.sampling.topK = int32_t(n);
      o.sampled = true;
    } else if (key == "--top-p") {
      if (!parseFloat(take(), f) || !(f > 0 && f <= 1)) {
        error = "--top-p: '" + value + "' is not in (0, 1]";
        return false;
      }
      o.sampling.topP = float(f);
      o.sampled = true;
    } else if (key == "--seed") {
      if (!parseSeed(take(), o.sampling.seed)) {
        error = "--seed: '" + value + "' is not a seed (0..2^64-1)";
        return false;
      }
      o.sampled = true;
    } else if (key == "--synthetic-weights") {
      uint64_t seed;
      if (!parseSeed(take(), seed)) {
        error = "--synthetic-weights: '" + value + "' is not a seed (0..2^64-1)";
        return false;
      }
      o.syntheticWeights = seed;
    } else if (key == "--test-exit-rank") {
      if (!parseInt(take(), 0, 4095, n)) {
        error = "--test-exit-rank: '" + value + "' is not a rank";
        return false;
      }
      o.exitRank = int(n);
    } else if (key == "--test-stall-rank") {
      if (!parseInt(take(), 0, 4095, n)) {
        error = "--test-stall-rank: '" + value + "' is not a rank";
        return false;
      }
      o.stallRank = int(n);
    } else if (key == "--collective-timeout") {
      double f;
      if (!parseFloat(take(), f) || !(f > 0 && f <= 86400)) {
        error = "--collective-timeout: '" + value + "' is not a number of seconds in (0, 86400]";
        return false;
      }
      o.collectiveTimeout = f;
    } else if (key == "--threads") {
      if (!parseInt(take(), 1, 4096, n)) {
        error = "--threads: '" + value + "' is not a thread count (1..4096)";
        return false;
      }
      o.threads = int(n);
    } else if (key == "--device") {
      o.device = take();
      if (o.device != "cpu" && o.device != "cuda" && o.device != "auto") {
        error = "--device: '" + o.device + "' is not cpu, cuda or auto";
        return false;
      }
    } else if (key == "--dump-logits") {
      o.dumpLogits = take();
    } else if (key == "--function") {
      o.function = take();
    } else if (key == "--input" || key == "--output") {
      std::string v = take();
      if (v.empty() || v[0] != '@') {
        error = key + ": expected @FILE.npy, got '" + v + "'";
        return false;
      }
      (key == "--input" ? o.inputs : o.outputs).push_back(v.substr(1));
    } else if (key == "--requests") {
      o.requests.path = take();
    } else if (key == "--no-cuda-graphs") {
      o.cudaGraphs = false;
    } else if (key == "--batch-buckets") {
      const std::string v = take();
      using B = k3rt::EngineOptions::Buckets;
      if (v != "auto" && v != "always" && v != "never") {
        error = "--batch-buckets: '" + v + "' is not auto, always or never";
        return false;
      }
      o.requests.engine.batchBuckets = v == "auto" ? B::Auto : v == "always" ? B::Always : B::Never;
      o.servingFlag = true;
    } else if (key == "--no-prefix-cache") {
      o.requests.engine.prefixCache = false;
      o.servingFlag = true;
    } else if (key == "--dump-logits-dir") {
      o.requests.dumpLogitsDir = take();
      o.requests.engine.keepLogits = true;
      o.servingFlag = true;
    } else if (key == "--max-batch" || key == "--speculate" || key == "--block-tokens" ||
               key == "--page-blocks" || key == "--prefill-chunk" || key == "--pool-kib" ||
               key == "--decode-groups") {
      const bool zeroOk = key == "--speculate" || key == "--decode-groups";
      const long long hi = key == "--pool-kib" ? 1ll << 34 : 1 << 20; // up to 16 TiB
      if (!parseInt(take(), zeroOk ? 0 : 1, hi, n)) {
        error = key + ": '" + value + "' is not a " + (zeroOk ? "count" : "positive count");
        return false;
      }
      k3rt::EngineOptions &e = o.requests.engine;
      (key == "--max-batch"       ? e.maxBatch
       : key == "--speculate"     ? e.speculate
       : key == "--block-tokens"  ? e.blockTokens
       : key == "--page-blocks"   ? e.pageBlocks
       : key == "--prefill-chunk" ? e.prefillChunk
       : key == "--decode-groups" ? e.decodeGroups
                                  : e.poolBytes) = key == "--pool-kib" ? n << 10 : n;
      o.servingFlag = true;
    } else if (a == "-h" || a == "--help") {
      error = "help";
      return false;
    } else if (a.size() > 1 && a[0] == '-') {
      error = "unknown flag '" + a + "' (see --help)";
      return false;
    } else if (o.path.empty()) {
      o.path = a;
    } else {
      error = "more than one binary ('" + o.path + "', '" + a + "')";
      return false;
    }
  }
  if (o.path.empty()) {
    error = "no binary (usage: k3-run FILE.k3b --tokens=1,2,3 [--generate=N])";
    return false;
  }
  if (!o.requests.path.empty()) {
    if (o.haveTokens || !o.function.empty() || o.generate || o.sampled || !o.dumpLogits.empty()) {
      error = "--requests runs the requests of its file (greedy); it takes no --tokens, "
              "--function, --generate, sampling flags or --dump-logits";
      return false;
    }
    error = k3rt::alignPrefillChunk(o.requests.engine);
    return error.empty();
  }
  if (o.servingFlag) {
    error = "--max-batch, --no-prefix-cache, --speculate, --block-tokens, --page-blocks, "
            "--prefill-chunk, --pool-kib, --batch-buckets, --decode-groups and "
            "--dump-logits-dir go with --requests=FILE.jsonl";
    return false;
  }
  if (o.havePrompt || o.chat) {
    if (o.haveTokens || !o.function.empty() || !o.dumpLogits.empty()) {
      error = "--prompt and --chat take text, not --tokens, --function or --dump-logits";
      return false;
    }
    if (o.generate == 0)
      o.generate = 128;
    if (o.tokenizer.empty()) {
      size_t slash = o.path.rfind('/');
      o.tokenizer = slash == std::string::npos ? "." : o.path.substr(0, slash);
    }
    return true;
  }
  if (!o.tokenizer.empty()) {
    error = "--tokenizer goes with --prompt=TEXT or --chat";
    return false;
  }
  if (o.function.empty() && !o.haveTokens) {
    error = "nothing to run: give --tokens=..., --prompt=TEXT, --chat or --function=NAME";
    return false;
  }
  if (o.sampled && o.generate == 0) {
    error = "--temperature, --top-k, --top-p and --seed choose generated "
            "tokens: add --generate=N";
    return false;
  }
  if (!o.function.empty() && o.haveTokens) {
    error = "--function runs one op-level function; it takes --input, not "
            "--tokens";
    return false;
  }
  return true;
}

double seconds(std::chrono::steady_clock::time_point a,
               std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// One op-level function on .npy inputs (f32 or i32), outputs to .npy.
int runFunction(k3rt::CpuExecutable &exe, const k3::bundle::EntryPoint &ep,
                const Options &o) {
  size_t numIn = ep.inputs() ? ep.inputs()->size() : 0;
  size_t numOut = ep.outputs() ? ep.outputs()->size() : 0;
  if (o.inputs.size() != numIn)
    return fail("--function=" + o.function + " takes " + std::to_string(numIn) +
                " inputs, got " + std::to_string(o.inputs.size()) + " --input");
  if (o.outputs.size() != numOut)
    return fail("--function=" + o.function + " has " + std::to_string(numOut) +
                " outputs, got " + std::to_string(o.outputs.size()) + " --output");
  std::vector<k3rt::HostTensor> tensors(numIn);
  std::vector<k3rt::HostTensor *> args;
  std::string error;
  for (size_t i = 0; i < numIn; ++i) {
    k3rt::NpyArray a;
    if (!k3rt::readNpy(o.inputs[i], a, error))
      return fail(error);
    if (a.dtype == "<f4")
      tensors[i].dtype = k3::bundle::DType_F32;
    else if (a.dtype == "<i4")
      tensors[i].dtype = k3::bundle::DType_I32;
    else if (a.dtype == "|u1")
      // Bytes: packed MXFP4 codes (i8) or E8M0 scales, as the input says.
      tensors[i].dtype = ep.inputs()->Get(i)->dtype() == k3::bundle::DType_F8E8M0FNU
                             ? k3::bundle::DType_F8E8M0FNU
                             : k3::bundle::DType_U8;
    else
      return fail(o.inputs[i] + ": dtype " + a.dtype + " (k3-run reads <f4, <i4 and |u1)");
    tensors[i].shape = a.shape;
    tensors[i].bytes = std::move(a.data);
    args.push_back(&tensors[i]);
  }
  std::vector<k3rt::HostTensor> out;
  if (k3rt_status_t s = exe.run(o.function, args, out)) {
    int rc = fail(k3rt_status_message(s));
    k3rt_status_free(s);
    return rc;
  }
  for (size_t i = 0; i < numOut; ++i) {
    k3rt::NpyArray a;
    if (out[i].dtype == k3::bundle::DType_F32)
      a.dtype = "<f4";
    else if (out[i].dtype == k3::bundle::DType_I32)
      a.dtype = "<i4";
    else
      return fail("output " + std::to_string(i) + " is " +
                  k3rt::dtypeName(out[i].dtype) + "; k3-run writes f32 and i32");
    a.shape = out[i].shape;
    a.data = std::move(out[i].bytes);
    if (!k3rt::writeNpy(o.outputs[i], a, error))
      return fail(error);
  }
  return 0;
}

/// Prefill the prompt, then generate with one decode step per token; the
/// ids go to stdout as one line, timings to stderr.
int generate(k3rt::CpuExecutable &exe, const Options &o) {
  std::unique_ptr<k3rt::Session> session;
  if (k3rt_status_t s = k3rt::Session::create(exe, session)) {
    int rc = fail(k3rt_status_message(s));
    k3rt_status_free(s);
    return rc;
  }
  // Every position's logits only when they are dumped.
  const bool keep = !o.dumpLogits.empty();
  auto append = [&](const std::vector<int32_t> &ids, std::vector<float> &logits) {
    if (k3rt_status_t s = session->append(ids.data(), ids.size(), logits, keep)) {
      fail(k3rt_status_message(s));
      k3rt_status_free(s);
      return false;
    }
    return true;
  };
  const int64_t vocab = session->vocabSize();
  std::vector<int32_t> prompt(o.tokens.begin(), o.tokens.end());
  std::vector<float> logits;
  auto t0 = std::chrono::steady_clock::now();
  if (!append(prompt, logits))
    return 1;
  auto t1 = std::chrono::steady_clock::now();
  // Kept only when asked for: a long generation would otherwise grow.
  std::vector<float> dumped;
  if (keep)
    dumped = logits;
  k3rt::Sampler sampler(o.sampling);
  std::vector<int32_t> generated;
  int64_t decodeSteps = 0;
  for (long long n = 0; n < o.generate; ++n) {
    const float *last = logits.data() + logits.size() - vocab;
    int32_t next = sampler.next(last, size_t(vocab));
    if (next < 0)
      return fail("every logit is NaN at generated token " + std::to_string(n));
    generated.push_back(next);
    if (n + 1 == o.generate)
      break;
    if (!append({next}, logits))
      return 1;
    ++decodeSteps;
    if (keep)
      dumped.insert(dumped.end(), logits.begin(), logits.end());
  }
  auto t2 = std::chrono::steady_clock::now();

  for (size_t i = 0; i < generated.size(); ++i)
    std::printf("%s%d", i ? "," : "", generated[i]);
  std::printf("\n");
  const double prefill = seconds(t0, t1), decode = seconds(t1, t2);
  if (g_printer)
    std::fprintf(stderr, "prefill: %zu tokens in %.3f s (%.1f tokens/s)\n",
                 prompt.size(), prefill, prompt.size() / std::max(prefill, 1e-9));
  if (decodeSteps && g_printer)
    std::fprintf(stderr, "decode: %lld steps in %.3f s (%.1f tokens/s)\n",
                 (long long)decodeSteps, decode,
                 decodeSteps / std::max(decode, 1e-9));
  if (!o.dumpLogits.empty() && g_printer) {
    std::string error;
    int64_t rows = int64_t(dumped.size()) / vocab;
    if (!k3rt::writeNpy(o.dumpLogits, k3rt::makeF32({rows, vocab}, dumped.data()),
                        error))
      return fail(error);
  }
  return 0;
}

/// Text mode: --prompt=TEXT (plain completion) or --chat (turns in the
/// checkpoint's chat format, the first from --prompt, then one per line of
/// stdin). Text goes to stdout as it is generated, never half a character.
int generateText(k3rt::CpuExecutable &exe, const Options &o) {
  std::unique_ptr<k3rt::Tokenizer> tok;
  if (k3rt_status_t s = k3rt::Tokenizer::load(o.tokenizer, tok)) {
    std::string m = k3rt::takeMessage(s);
    return fail("--tokenizer: " + m);
  }
  std::unique_ptr<k3rt::Session> session;
  if (k3rt_status_t s = k3rt::Session::create(exe, session)) {
    int rc = fail(k3rt_status_message(s));
    k3rt_status_free(s);
    return rc;
  }
  const int64_t vocab = session->vocabSize();
  if (tok->size() > vocab)
    return fail("--tokenizer: " + o.tokenizer + " has " + std::to_string(tok->size()) +
                " ids, more than the model's vocabulary (" + std::to_string(vocab) + ")");
  k3rt::ChatFormat format;
  std::vector<int32_t> stops;
  if (o.chat) {
    if (k3rt_status_t s = k3rt::chatFormatOf(*tok, format)) {
      std::string m = k3rt::takeMessage(s);
      return fail("--chat: " + o.tokenizer + ": " + m);
    }
    stops = k3rt::chatStopIds(*tok);
  } else if (auto eos = tok->special(tok->eosToken())) {
    stops.push_back(*eos);
  }
  k3rt::Sampler sampler(o.sampling);
  std::vector<float> logits;
  std::vector<k3rt::ChatMessage> messages;
  // Chat: what the next turn feeds first, closing the last reply as the
  // rendered conversation has it (its last token if --generate cut it,
  // then <|im_end|>).
  std::vector<int32_t> pending;
  int64_t promptTokens = 0, generatedTokens = 0;
  double prefillSeconds = 0, decodeSeconds = 0;
  // One turn: append `text`'s tokens, then generate up to --generate.
  auto turn = [&](const std::string &text) -> int {
    std::vector<int32_t> ids = pending;
    // Special-token strings are special, as in Kimi's encode and k3-serve.
    if (k3rt_status_t s = tok->encode(text, /*specials=*/true, ids)) {
      std::string m = k3rt::takeMessage(s);
      return fail("--prompt: " + m);
    }
    if (ids.empty())
      return fail("--prompt: the text has no tokens");
    pending.clear();
    auto t0 = std::chrono::steady_clock::now();
    if (k3rt_status_t s = session->append(ids.data(), ids.size(), logits, false)) {
      int rc = fail(k3rt_status_message(s));
      k3rt_status_free(s);
      return rc;
    }
    auto t1 = std::chrono::steady_clock::now();
    promptTokens += int64_t(ids.size());
    prefillSeconds += seconds(t0, t1);
    k3rt::TextStream stream(*tok);
    for (long long n = 0; n < o.generate; ++n) {
      int32_t next = sampler.next(logits.data() + logits.size() - vocab, size_t(vocab));
      if (next < 0)
        return fail("every logit is NaN at generated token " + std::to_string(n));
      if (std::find(stops.begin(), stops.end(), next) != stops.end())
        break;
      ++generatedTokens;
      // Ids past the tokenizer's (a model vocabulary padded beyond it) add
      // no text.
      std::string piece = next < tok->size() ? stream.push(next) : std::string();
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
      if (n + 1 == o.generate) {
        pending.push_back(next); // cut: fed with the next turn
        break;
      }
      if (k3rt_status_t s = session->append(&next, 1, logits, false)) {
        int rc = fail(k3rt_status_message(s));
        k3rt_status_free(s);
        return rc;
      }
    }
    decodeSeconds += seconds(t1, std::chrono::steady_clock::now());
    std::string rest = stream.flush();
    std::printf("%s\n", rest.c_str());
    std::fflush(stdout);
    if (o.chat)
      pending.push_back(*tok->special("<|im_end|>"));
    return 0;
  };
  if (!o.chat) {
    if (int rc = turn(o.prompt))
      return rc;
  } else {
    // Each turn's text starts at a special token, so encoding the turns one
    // by one gives the ids of the whole rendered conversation.
    std::string line = o.prompt;
    bool fromFlag = o.havePrompt;
    while (fromFlag || std::getline(std::cin, line)) {
      fromFlag = false;
      std::string text;
      std::vector<k3rt::ChatMessage> one{{"user", line}};
      if (k3rt_status_t s = k3rt::renderChat(format, one, true, text)) {
        std::string m = k3rt::takeMessage(s);
        return fail(m);
      }
      if (!messages.empty())
        text = text.substr(text.find("<|im_user|>")); // the system turn once
      messages.push_back(one[0]);
      if (int rc = turn(text))
        return rc;
    }
  }
  if (g_printer)
    std::fprintf(stderr, "prompt: %lld tokens in %.3f s; generated: %lld tokens in %.3f s (%.1f tokens/s)\n",
               (long long)promptTokens, prefillSeconds, (long long)generatedTokens,
               decodeSeconds, generatedTokens / std::max(decodeSeconds, 1e-9));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  std::string error;
  if (!parse(argc, argv, o, error)) {
    if (error == "help") {
      std::fputs(
          "usage: k3-run FILE.k3b --tokens=1,2,3 [--generate=N] [flags]   token ids in, ids out\n"
          "       k3-run FILE.k3b --prompt=TEXT | --chat [--tokenizer=DIR]  text in, text out\n"
          "       k3-run FILE.k3b --requests=FILE.jsonl [engine flags]      many requests\n"
          "       k3-run FILE.k3b --function=NAME --input=@a.npy ... --output=@o.npy\n"
          "\n"
          "Generation:\n"
          "  --generate=N            new tokens (text mode: 128 unless given)\n"
          "  --temperature=T --top-k=K --top-p=P --seed=S   sampling (default greedy)\n"
          "  --dump-logits=PATH.npy  every position's logits (token mode)\n"
          "Text:\n"
          "  --prompt=TEXT           a completion of TEXT, printed as it is generated\n"
          "  --chat                  the chat format; the first turn from --prompt, then one per\n"
          "                          line of stdin\n"
          "  --tokenizer=DIR         tiktoken.model + tokenizer_config.json (default: the\n"
          "                          binary's directory)\n"
          "Requests (--requests=FILE.jsonl: {id, tokens, max_new_tokens, stop, draft} a line):\n"
          "  --max-batch=N --no-prefix-cache --speculate=K --block-tokens=512 --page-blocks=1\n"
          "  --prefill-chunk=2048 --pool-kib=262144 --dump-logits-dir=DIR\n"
          "  --batch-buckets=auto|always|never  decode_batch padded to 1, 2, 4, ... requests\n"
          "                          and power-of-two block tables (auto: when CUDA graphs\n"
          "                          capture it, a graph per bucket)\n"
          "  --decode-groups=N       on the CPU, a decode step's requests as N calls at once,\n"
          "                          a thread each (default 0: one per thread, 2+ requests\n"
          "                          each; 1: one call a step)\n"
          "Machine:\n"
          "  --device=cpu|cuda|auto  where the kernels run (default cpu)\n"
          "  --no-cuda-graphs        on a GPU, launch decode_batch's kernels one by one\n"
          "                          (default: each batch shape captured once, then one\n"
          "                          graph launch a step)\n"
          "  --threads=N             CPU kernel threads (default: the cores this process may use)\n"
          "  --synthetic-weights=S   fill an --omit-weights binary with seed S's weights\n"
          "Ranks (a binary compiled with k3-compile --tp/--ep, one file per rank):\n"
          "  mpirun -np N k3-run X.k3b ...   each process runs X.rank<R>.k3b; rank 0 prints\n"
          "  --collective-timeout=S  a collective that takes longer fails on every rank\n"
          "                          (default 60; the ranks' start may take ten times as long)\n"
          "  --help                  this text\n",
          stdout);
      return 0;
    }
    return fail(error);
  }
  k3run::Ranks ranks;
  ranks.timeoutSeconds = o.collectiveTimeout;
  if (k3run::launchedAsRank(o.path)) {
    if (!k3run::startRanks(argc, argv, ranks, error))
      return fail(error);
    g_rank = ranks.rank;
    g_printer = ranks.rank == 0;
    o.requests.follower = !g_printer;
    if (!o.function.empty())
      return fail("--function runs one process's entry point on its own tensors; a rank's "
                  "are its blocks of the state: use --tokens, --prompt or --requests under "
                  "mpirun");

    // Rank 0 prints; the others' stdout goes nowhere (errors stay on stderr).
    if (!g_printer && !std::freopen("/dev/null", "w", stdout))
      return fail("cannot silence stdout");
  }
  // Every failure from here on under mpirun: MPI's way out, not a return.
  auto finish = [&](int rc) {
    if (ranks.active)
      k3run::endRanks(ranks, rc);
    return rc;
  };
  o.path = k3run::rankFile(o.path, ranks);
  if (o.threads)
    k3rt_set_threads(o.threads);

  // The CUDA driver is loaded at run time, never linked (DESIGN.md §4).
  std::unique_ptr<k3rt::CudaDevice> cuda;
  k3rt_status_t cudaStatus = nullptr;
  struct FreeStatus {
    k3rt_status_t &s;
    ~FreeStatus() { k3rt_status_free(s); }
  } freeCudaStatus{cudaStatus};
  k3rt_bundle_t *bundle = nullptr;
  struct Release {
    k3rt_bundle_t *b = nullptr;
    ~Release() { k3rt_bundle_release(b); }
  } release;
  const k3::bundle::EntryPoint *ep = nullptr;
  std::string entry = o.function.empty() ? "prefill" : o.function;
  // Opens and checks this process's binary: "" or one line. Under mpirun
  // every rank's result is agreed on before any of them waits for another.
  auto open = [&]() -> std::string {
    if (!ranks.missingFile.empty())
      return ranks.missingFile;
    // The CUDA driver is loaded at run time, never linked (DESIGN.md §4).
    // A GPU rank uses the GPU of its place on the node (one rank per GPU:
    // NCCL refuses two ranks of a communicator on one device).
    if (o.device != "cpu")
      cudaStatus = k3rt::CudaDevice::open(ranks.active ? ranks.localRank : 0, cuda);
    if (o.device == "cuda" && cudaStatus)
      return std::string("--device=cuda: ") + k3rt_status_message(cudaStatus);

    if (k3rt_status_t s =
            o.syntheticWeights
                ? k3rt_bundle_open_synthetic(o.path.c_str(),
                                             *o.syntheticWeights, &bundle)
                : k3rt_bundle_open(o.path.c_str(), &bundle)) {
      std::string message = k3rt_status_message(s);
      k3rt_status_free(s);
      return message;
    }
    release.b = bundle;
    const k3::bundle::Bundle &root = *bundle->root;
    const bool gpuBinary = root.target() != k3::bundle::Target_CPU;
    const char *targetName =
        root.target() == k3::bundle::Target_SM90A ? "sm_90a" : "sm_80";
    // auto: the binary's own kind of kernels, on CUDA only when a driver
    // loads; a GPU binary without one cannot run here.
    if (o.device == "auto") {
      if (gpuBinary && cudaStatus)
        return o.path + " has " + targetName +
               " kernels and CUDA is unavailable (" +
               k3rt_status_message(cudaStatus) + "); compile with --target=cpu";
      o.device = gpuBinary ? "cuda" : "cpu";
    }
    if (o.device == "cpu" && gpuBinary)
      return o.path + " has " + targetName +
             " kernels: run it with --device=cuda, or compile with "
             "--target=cpu";

    if (!o.requests.path.empty()) {
      // Checked per request by the engine.
    } else if (o.havePrompt || o.chat) {
      // Checked against the tokenizer in generateText.
    } else if (o.function.empty()) {
      const int64_t vocab = root.config()->vocab_size();
      if (o.tokens.empty())
        return "--tokens: the prompt is empty";
      for (size_t i = 0; i < o.tokens.size(); ++i)
        if (o.tokens[i] >= vocab)
          return "--tokens: token id " + std::to_string(o.tokens[i]) +
                 " at position " + std::to_string(i) +
                 " is outside the vocabulary (" + std::to_string(vocab) +
                 " ids)";
    } else {
      for (const std::string &in : o.inputs) {
        k3rt::NpyArray a;
        if (!k3rt::readNpy(in, a, error))
          return error;
      }
    }

    if (root.entry_points())
      for (const k3::bundle::EntryPoint *e : *root.entry_points())
        if (e->name()->str() == entry)
          ep = e;
    if (!ep)
      return o.path + " has no entry point '" + entry + "'";
    if (!ep->steps() || ep->steps()->size() == 0 || !root.kernels() ||
        root.kernels()->size() == 0)
      return o.path + " has no " + o.device + " kernels for '" + entry +
             "': it holds metadata and weights only (k3-compile "
             "--compile-to=bundle)";
    return "";
  };
  if (std::string e = k3run::agree(ranks, open()); !e.empty()) {
    fail(e);
    k3run::waitForLines(ranks);
    return finish(1);
  }
  const k3::bundle::Bundle &root = *bundle->root;
  k3rt::comm::Grid *grid = nullptr;
  if (ranks.active && root.grid()) {
    std::vector<int64_t> shape(root.grid()->shape()->begin(),
                               root.grid()->shape()->end());
    if (k3rt_status_t s = k3run::makeGrid(ranks, shape)) {
      int rc = fail(k3rt_status_message(s));
      k3rt_status_free(s);
      return finish(rc);
    }
    grid = ranks.grid.get();
  }
  k3rt::CudaDevice *device = o.device == "cuda" ? cuda.get() : nullptr;
  // GPU ranks: the collectives run over NCCL on the kernels' stream, its
  // communicators bootstrapped over the MPI grid (kept for the run).
  std::unique_ptr<k3rt::comm::Grid> ncclGrid;
  if (grid && device) {
    if (k3rt_status_t s = k3rt::comm::createNcclGrid(*grid, device->kernelStream(),
                                                     &k3rt::CudaDevice::queryStream,
                                                     o.collectiveTimeout, ncclGrid)) {
      int rc = fail(k3rt_status_message(s));
      k3rt_status_free(s);
      return finish(rc);
    }
    grid = ncclGrid.get();
  }
  std::unique_ptr<k3rt::CpuExecutable> exe;
  std::string loadError;
  if (k3rt_status_t s = k3rt::CpuExecutable::load(*bundle, exe, device, grid)) {
    loadError = o.path + ": " + k3rt_status_message(s);
    k3rt_status_free(s);
  }
  if (std::string e = k3run::agree(ranks, loadError); !e.empty()) {
    fail(e);
    k3run::waitForLines(ranks);
    return finish(1);
  }
  exe->setCudaGraphs(o.cudaGraphs);
  if (ranks.active && ranks.rank == o.exitRank)
    std::_Exit(3);
  if (ranks.active && ranks.rank == o.stallRank)
    for (;;)
      pause(); // until mpirun ends the job
  int rc = !o.function.empty()       ? runFunction(*exe, *ep, o)
           : !o.requests.path.empty() ? runRequests(*exe, o.requests)
           : o.havePrompt || o.chat   ? generateText(*exe, o)
                                      : generate(*exe, o);
  if (device && g_printer) { // rank 0's (every rank runs the same launches)
    const auto &c = device->counters;
    std::fprintf(stderr,
                 "device: %s; %llu kernel launches, %llu modules (%llu compiled from PTX), "
                 "%llu allocations (%llu reused), %llu synchronisations, "
                 "%llu bytes staged in, %llu bytes returned; %llu CUDA graphs captured, "
                 "%llu graph launches (%llu kernels)\n",
                 device->describe().c_str(), (unsigned long long)c.launches,
                 (unsigned long long)c.modules, (unsigned long long)c.jitModules,
                 (unsigned long long)c.allocations, (unsigned long long)c.poolHits,
                 (unsigned long long)c.synchronizations, (unsigned long long)c.stagedBytes,
                 (unsigned long long)c.returnedBytes, (unsigned long long)c.graphsCaptured,
                 (unsigned long long)c.graphLaunches, (unsigned long long)c.graphKernels);
  }
  exe.reset(); // detaches from the device before it closes
  ncclGrid.reset(); // its communicators before the MPI grid they came from
  return finish(rc);
}
