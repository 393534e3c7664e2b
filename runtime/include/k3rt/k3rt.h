/*===- k3rt.h - k3 runtime C API -----------------------------------------===*
 *
 * Part of k3. The runtime has no MLIR or LLVM dependency. Conventions
 * (STYLE.md §8): opaque handles with _retain/_release; every fallible call
 * returns a k3rt_status_t, NULL meaning success; outputs come last as out_*.
 *
 * Thread safety: a bundle is immutable once opened and may be shared by
 * threads; statuses belong to the caller.
 *
 *===---------------------------------------------------------------------===*/

#ifndef K3RT_K3RT_H
#define K3RT_K3RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===--- Status -----------------------------------------------------------===*/

typedef enum k3rt_status_code_e {
  K3RT_OK = 0,
  K3RT_INVALID_ARGUMENT = 1, /* a bad argument or input from the caller */
  K3RT_NOT_FOUND = 2,        /* a file or name that does not exist */
  K3RT_DATA_LOSS = 3,        /* a truncated or corrupt binary */
  K3RT_UNIMPLEMENTED = 4,    /* a valid binary this runtime cannot run */
  K3RT_UNAVAILABLE = 5,      /* a missing device or driver */
  K3RT_OUT_OF_RANGE = 6,     /* e.g. a token id outside the vocabulary */
  K3RT_INTERNAL = 7,
  K3RT_RESOURCE_EXHAUSTED = 8, /* the cache pool cannot hold what is asked */
  K3RT_DEADLINE_EXCEEDED = 9,  /* a collective whose peers did not arrive in time */
} k3rt_status_code_t;

/* NULL is success. A non-NULL status owns a one-line message. */
typedef struct k3rt_status_s *k3rt_status_t;

k3rt_status_code_t k3rt_status_code(k3rt_status_t status);
/* The message, valid until k3rt_status_free; "OK" for NULL. */
const char *k3rt_status_message(k3rt_status_t status);
void k3rt_status_free(k3rt_status_t status);

/*===--- Bundles (.k3b) ---------------------------------------------------===*/

typedef struct k3rt_bundle_s k3rt_bundle_t;

/* Maps and verifies a .k3b file: header, flatbuffer verifier, then every
 * index, offset and size. A bad file is refused with the field named
 * (`weights[3].offset=... exceeds ...`), never trusted. */
k3rt_status_t k3rt_bundle_open(const char *path, k3rt_bundle_t **out_bundle);

/* The same checks on bytes already in memory; `data` must stay valid and
 * 64-byte aligned for the bundle's lifetime (it is not copied). */
k3rt_status_t k3rt_bundle_open_memory(const void *data, size_t size,
                                      k3rt_bundle_t **out_bundle);

/* Opens a .k3b compiled without its weights (k3-compile --omit-weights) and
 * fills every weight with the values it would have had if compiled from the
 * synthetic checkpoint of `seed` (k3-compile --write-synthetic --seed).
 * For benchmarks of models whose weights do not travel. A binary that has
 * its weights is refused. */
k3rt_status_t k3rt_bundle_open_synthetic(const char *path, uint64_t seed,
                                         k3rt_bundle_t **out_bundle);

/* Nonzero when the bundle's weights were omitted and not filled in: it can
 * be inspected but not run. */
int k3rt_bundle_weights_omitted(const k3rt_bundle_t *bundle);

void k3rt_bundle_retain(k3rt_bundle_t *bundle);
void k3rt_bundle_release(k3rt_bundle_t *bundle);

/* The bundle's format version and the version this runtime reads. */
uint32_t k3rt_bundle_format_version(const k3rt_bundle_t *bundle);
uint32_t k3rt_runtime_format_version(void);

/*===--- Threads ----------------------------------------------------------===*/

/* The threads the CPU kernels' parallel loops run on, for the whole process:
 * one OpenMP pool (libomp), started on the first parallel loop and kept.
 * 0 (the default) means OMP_NUM_THREADS when set, else the cores this
 * process may run on (sched_getaffinity), read once. Takes effect from the next kernel call; returns the
 * count now in effect. */
int k3rt_set_threads(int threads);
int k3rt_threads(void);

/* The best CPU level this machine runs, as k3-compile --cpu names it:
 * "x86-64-v4" (AVX-512 F, BW, CD, DQ, VL on top of v3), "x86-64-v3" (AVX2,
 * FMA, BMI2), "x86-64", or "generic" off x86-64. The runtime refuses
 * kernels built for a level above it. */
const char *k3rt_cpu_level(void);

/*===--- Sessions: one request over a binary's CPU kernels -----------------===*/

typedef struct k3rt_session_s k3rt_session_t;

/* A fresh request on `bundle` (retained): zero KDA state, empty caches. The
 * bundle needs CPU kernels for its `prefill` and `decode` entry points. Not
 * thread-safe: one session per thread. */
k3rt_status_t k3rt_session_create(k3rt_bundle_t *bundle,
                                  k3rt_session_t **out_session);

/* Appends `n` token ids (prefill when n > 1 or first, else one decode step)
 * and writes the logits of the last one to `out_logits` (vocab floats).
 * An id outside the vocabulary is K3RT_OUT_OF_RANGE (the session is
 * unchanged). After any other failure the state may be partly updated, and
 * later appends fail with K3RT_INVALID_ARGUMENT. */
k3rt_status_t k3rt_session_append(k3rt_session_t *session, const int32_t *ids,
                                  size_t n, float *out_logits);

size_t k3rt_session_vocab_size(const k3rt_session_t *session);
void k3rt_session_release(k3rt_session_t *session);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* K3RT_K3RT_H */
