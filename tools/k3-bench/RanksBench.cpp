//===- RanksBench.cpp - Prefill on one rank against a TP grid -------------===//
//
// Part of k3. `k3-bench ranks MODEL_DIR [--tp=2] [--tokens=512]
// [--threads=1] [--repeat=3]`: compiles the model twice with the k3-compile
// beside k3-bench from a synthetic checkpoint of its config, for one
// process and for --tp ranks, then times a prefill of
// --tokens tokens with `k3-run` alone and with `mpirun -np TP k3-run`,
// --threads threads per rank, alternating, best of --repeat each; prints
// both prefill rates and their ratio (issue 28: TP 2 against one rank of
// one thread each, on 2 cores). Needs mpirun on PATH.
//
//===----------------------------------------------------------------------===//

#include "tools/k3-bench/BenchUtil.h"

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <regex>
#include <spawn.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

using k3bench::fail;

namespace {

/// Runs `args` with stderr into `errPath` (stdout discarded); true on exit 0.
bool spawnCapturing(const std::vector<std::string> &args,
                    const std::string &errPath) {
  std::vector<char *> argv;
  for (const std::string &a : args)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, errPath.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    return false;
  int status = 0;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

/// k3-run's "prefill: N tokens in S s (R tokens/s)" line: R, or -1.
double prefillRate(const std::string &errPath) {
  std::ifstream in(errPath);
  std::string line;
  static const std::regex re(
      R"(^prefill: \d+ tokens in [0-9.]+ s \(([0-9.]+) tokens/s\))");
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_search(line, m, re))
      return std::atof(m[1].str().c_str());
  return -1;
}

} // namespace

int runRanksBench(int argc, char **argv) {
  if (argc < 3)
    return fail(
        "usage: k3-bench ranks MODEL_DIR [--tp=2] [--tokens=512] [--threads=1] "
        "[--repeat=3]");
  std::string model = argv[2];
  int64_t tp = 2, tokens = 512, threads = 1, repeat = 3;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (!k3bench::positiveFlag(a, "--tp=", tp) &&
        !k3bench::positiveFlag(a, "--tokens=", tokens) &&
        !k3bench::positiveFlag(a, "--threads=", threads) &&
        !k3bench::positiveFlag(a, "--repeat=", repeat))
      return fail("ranks: unknown flag '" + a + "'");
  }
  if (tp < 2)
    return fail("ranks: --tp must be at least 2");
  char dirTemplate[] = "/tmp/k3-bench-ranks-XXXXXX";
  if (!mkdtemp(dirTemplate))
    return fail("ranks: cannot create a temporary directory");
  std::string tmp = dirTemplate;
  struct Cleanup {
    std::string dir;
    ~Cleanup() { k3bench::spawn({"/bin/rm", "-rf", dir}); }
  } cleanup{tmp};

  const std::string compiler = k3bench::selfDir() + "/k3-compile";
  const std::string runner = k3bench::selfDir() + "/k3-run";
  std::string grid = "--tp=" + std::to_string(tp);
  // A synthetic checkpoint of the config, then both binaries from it: the
  // runtime's synthetic fill is not made per rank block (k3-compile
  // refuses --omit-weights with --tp).
  const std::string ck = tmp + "/checkpoint";
  if (!k3bench::spawn(
          {compiler, model, "--write-synthetic=" + ck, "--seed=1"}) ||
      !k3bench::spawn({compiler, ck, "-o", tmp + "/one.k3b"}) ||
      !spawnCapturing({compiler, ck, grid, "-o", tmp + "/grid.k3b"},
                      tmp + "/compile.err"))
    return fail("ranks: k3-compile " + model + " failed (" + tmp +
                "/compile.err)");

  std::string ids;
  for (int64_t i = 0; i < tokens; ++i)
    ids += (i ? "," : "") + std::to_string((i * 7919 + 13) % 1000);
  std::vector<std::string> common{"--threads=" + std::to_string(threads),
                                  "--tokens=" + ids, "--generate=1"};
  std::vector<std::string> alone{runner, tmp + "/one.k3b"};
  alone.insert(alone.end(), common.begin(), common.end());
  // Ranks bound to cores (OpenMPI's default for a few ranks); root needs
  // --allow-run-as-root.
  std::vector<std::string> ranks{"mpirun", "--oversubscribe", "-np",
                                 std::to_string(tp)};
  if (geteuid() == 0)
    ranks.push_back("--allow-run-as-root");
  ranks.push_back(runner);
  ranks.push_back(tmp + "/grid.k3b");
  ranks.insert(ranks.end(), common.begin(), common.end());

  double best[2] = {0, 0};
  for (int64_t r = 0; r < repeat; ++r)
    for (int form = 0; form < 2; ++form) {
      std::string err = tmp + "/run" + std::to_string(form) + ".err";
      if (!spawnCapturing(form ? ranks : alone, err))
        return fail(std::string("ranks: ") +
                    (form ? "mpirun k3-run" : "k3-run") +
                    " failed (its error: " + err + ")");
      double rate = prefillRate(err);
      if (rate < 0)
        return fail("ranks: no prefill line from k3-run");
      best[form] = std::max(best[form], rate);
    }
  std::printf("prefill %lld tokens, %lld thread(s) per rank, best of %lld: 1 "
              "rank %.1f tokens/s, "
              "%lld ranks (TP %lld) %.1f tokens/s, ratio %.2f\n",
              (long long)tokens, (long long)threads, (long long)repeat, best[0],
              (long long)tp, (long long)tp, best[1], best[1] / best[0]);
  return 0;
}
