//===- FuzzMain.cpp - libFuzzer's entry point for every k3 target ---------===//
//
// Part of k3. libFuzzer finds crashes, memory leaks (LSan) and timeouts; a
// leaked file descriptor (a mapping or memfd not closed on an error path) it
// does not see: the count of open descriptors after each input must not
// exceed the count before it (libFuzzer opens files between inputs, never
// during one).
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/Fuzz.h"

#include <cstdio>
#include <cstdlib>
#include <dirent.h>

namespace {
int openFds() {
  DIR *d = opendir("/proc/self/fd");
  if (!d)
    return -1;
  int n = 0;
  while (readdir(d))
    ++n;
  closedir(d);
  return n;
}
} // namespace

void k3fuzz::broken(const char *what, const std::string &detail) {
  std::fprintf(stderr, "invariant broken: %s: '%s'\n", what, detail.c_str());
  std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
  int before = openFds();
  k3fuzz::testOneInput(bytes, size);
  if (int after = openFds(); after > before) {
    std::fprintf(stderr, "invariant broken: %d file descriptors open after the input, %d before\n",
                 after, before);
    std::abort();
  }
  return 0;
}
