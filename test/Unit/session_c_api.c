/*===- session_c_api.c - The runtime's C API, from C ------------------------===*
 *
 * Part of k3 (test-only). Compiled as C to prove k3rt.h is a C header, and
 * run by test/Tools/c-api.test: opens a .k3b, appends a prompt, prints the
 * greedy next id, then checks that an out-of-range id is refused.
 *
 *   k3rt-c-api FILE.k3b [--also=OTHER.k3b] ID...
 *
 * With --also, OTHER is loaded first and kept open: two binaries in one
 * process must each run their own kernels.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/include/k3rt/k3rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: k3rt-c-api FILE.k3b [--also=OTHER.k3b] ID...\n");
    return 2;
  }
  int first = 2;
  k3rt_session_t *other = NULL;
  if (strncmp(argv[2], "--also=", 7) == 0) {
    k3rt_bundle_t *ob = NULL;
    k3rt_status_t s = k3rt_bundle_open(argv[2] + 7, &ob);
    if (!s)
      s = k3rt_session_create(ob, &other);
    k3rt_bundle_release(ob);
    if (s) {
      fprintf(stderr, "other: %s\n", k3rt_status_message(s));
      return 1;
    }
    first = 3;
  }
  k3rt_bundle_t *bundle = NULL;
  k3rt_status_t s = k3rt_bundle_open(argv[1], &bundle);
  if (s) {
    fprintf(stderr, "open: %s\n", k3rt_status_message(s));
    return 1;
  }
  k3rt_session_t *session = NULL;
  s = k3rt_session_create(bundle, &session);
  k3rt_bundle_release(bundle); /* the session retains it */
  if (s) {
    fprintf(stderr, "session: %s\n", k3rt_status_message(s));
    return 1;
  }
  size_t n = (size_t)(argc - first), vocab = k3rt_session_vocab_size(session);
  int32_t *ids = malloc(n * sizeof *ids);
  float *logits = malloc(vocab * sizeof *logits);
  for (size_t i = 0; i < n; ++i)
    ids[i] = atoi(argv[first + i]);
  s = k3rt_session_append(session, ids, n, logits);
  if (s) {
    fprintf(stderr, "append: %s\n", k3rt_status_message(s));
    return 1;
  }
  size_t best = 0;
  for (size_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best])
      best = i;
  printf("vocab %zu next %zu\n", vocab, best);
  int32_t bad = (int32_t)vocab;
  s = k3rt_session_append(session, &bad, 1, logits);
  printf("out-of-range: code %d, %s\n", (int)k3rt_status_code(s), k3rt_status_message(s));
  k3rt_status_free(s);
  k3rt_session_release(session);
  k3rt_session_release(other);
  free(ids);
  free(logits);
  return 0;
}
