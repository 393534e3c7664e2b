/*===- fake_nccl.c - A stand-in libnccl.so.2 for the collectives' tests --===*
 *
 * Part of k3 (tests only). Implements the NCCL entry points k3's NCCL
 * backend (runtime/src/comm/Nccl.cpp) uses, over MPI on host memory (the
 * stand-in CUDA device's memory is host memory), so that machines without
 * GPUs check the backend's plumbing: unique ids bootstrapped over MPI,
 * communicators per axis group, dtypes and reductions, the grouped
 * send/receive all-to-all with empty peers. Every call completes before it
 * returns (streams are ignored): timeouts are the MPI backend's to test.
 *
 * Communicators come from MPI_Comm_split over MPI_COMM_WORLD, keyed by the
 * unique id: every world rank creates its group's communicator at the same
 * time, as k3's grid does.
 *
 *===---------------------------------------------------------------------===*/

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../FakeCuda/fake_trace.h"

typedef struct {
  char internal[128];
} ncclUniqueId;

typedef struct {
  MPI_Comm comm;
  int rank, size;
} Comm;

enum { Uint8 = 1, Int32 = 2, Int64 = 4, Float32 = 7, Bfloat16 = 9 };
enum { Sum = 0, Max = 2 };
enum { Success = 0, InvalidArgument = 4 };

#define MAX_PENDING 1024
static struct {
  int send;      /* 1 send, 0 receive */
  const void *out; /* what a send reads */
  void *buf;       /* what a receive writes */
  size_t bytes;
  int peer;
  Comm *comm;
} pending[MAX_PENDING];
static int numPending = 0, grouped = 0;

static size_t bytesOf(int type) {
  switch (type) {
  case Uint8: return 1;
  case Bfloat16: return 2;
  case Int32: case Float32: return 4;
  case Int64: return 8;
  }
  return 0;
}

static float bf16(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint16_t toBf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7FFF + ((u >> 16) & 1)) >> 16); /* round to nearest even */
}

/* acc[i] op= x[i] */
static void reduce(void *acc, const void *x, size_t count, int type, int op) {
  for (size_t i = 0; i < count; ++i) {
    switch (type) {
    case Float32: {
      float *a = (float *)acc + i, b = ((const float *)x)[i];
      *a = op == Max ? (b > *a ? b : *a) : *a + b;
      break;
    }
    case Bfloat16: {
      uint16_t *a = (uint16_t *)acc + i;
      float fa = bf16(*a), fb = bf16(((const uint16_t *)x)[i]);
      *a = toBf16(op == Max ? (fb > fa ? fb : fa) : fa + fb);
      break;
    }
    case Int32: {
      int32_t *a = (int32_t *)acc + i, b = ((const int32_t *)x)[i];
      *a = op == Max ? (b > *a ? b : *a) : *a + b;
      break;
    }
    case Int64: {
      int64_t *a = (int64_t *)acc + i, b = ((const int64_t *)x)[i];
      *a = op == Max ? (b > *a ? b : *a) : *a + b;
      break;
    }
    case Uint8: {
      uint8_t *a = (uint8_t *)acc + i, b = ((const uint8_t *)x)[i];
      *a = op == Max ? (b > *a ? b : *a) : (uint8_t)(*a + b);
      break;
    }
    }
  }
}

const char *ncclGetErrorString(int result) {
  return result == Success ? "no error" : "fake NCCL error";
}

int ncclGetUniqueId(ncclUniqueId *id) {
  memset(id, 0, sizeof *id);
  uint32_t seed = (uint32_t)getpid() * 2654435761u ^ (uint32_t)time(NULL);
  for (int i = 0; i < 8; ++i)
    id->internal[i] = (char)((seed >> (4 * i)) * 31 + (uint32_t)i);
  return Success;
}

int ncclCommInitRank(void **out, int size, ncclUniqueId id, int rank) {
  uint32_t color = 0;
  for (int i = 0; i < 8; ++i)
    color = color * 131 + (uint8_t)id.internal[i];
  Comm *c = malloc(sizeof *c);
  MPI_Comm_split(MPI_COMM_WORLD, (int)(color & 0x3FFFFFFF), rank, &c->comm);
  MPI_Comm_rank(c->comm, &c->rank);
  MPI_Comm_size(c->comm, &c->size);
  if (c->size != size || c->rank != rank) {
    free(c);
    return InvalidArgument;
  }
  *out = c;
  return Success;
}

int ncclCommDestroy(void *comm) {
  Comm *c = comm;
  MPI_Comm_free(&c->comm);
  free(c);
  return Success;
}

int ncclCommAbort(void *comm) { return ncclCommDestroy(comm); }

int ncclCommGetAsyncError(void *comm, int *result) {
  (void)comm;
  *result = Success;
  return Success;
}

/* K3_FAKE_CUDA_TRACE (the stand-in driver's trace, "%r" the world rank):
 * one line per collective, in order with the launches. */
static void traceCall(const char *op, size_t count, int type, Comm *c) {
  FILE *f = fakeTrace();
  if (f)
    fprintf(f, "nccl %s %zu x %zu bytes over %d ranks\n", op, count, bytesOf(type), c->size),
        fflush(f);
}

int ncclAllGather(const void *send, void *recv, size_t count, int type, void *comm,
                  void *stream) {
  Comm *c = comm;
  (void)stream;
  traceCall("all_gather", count, type, c);
  MPI_Allgather(send, (int)(count * bytesOf(type)), MPI_BYTE, recv,
                (int)(count * bytesOf(type)), MPI_BYTE, c->comm);
  return Success;
}

/* Every rank's whole buffer, reduced in rank order into `out`. */
static void reduceAll(const void *send, void *out, size_t count, int type, int op, Comm *c) {
  size_t bytes = count * bytesOf(type);
  char *all = malloc(bytes * (size_t)c->size + 1);
  MPI_Allgather(send, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, c->comm);
  memcpy(out, all, bytes);
  for (int p = 1; p < c->size; ++p)
    reduce(out, all + bytes * (size_t)p, count, type, op);
  free(all);
}

int ncclAllReduce(const void *send, void *recv, size_t count, int type, int op, void *comm,
                  void *stream) {
  (void)stream;
  traceCall("all_reduce", count, type, comm);
  size_t bytes = count * bytesOf(type);
  char *copy = malloc(bytes + 1);
  memcpy(copy, send, bytes); /* send may be recv (in place) */
  reduceAll(copy, recv, count, type, op, comm);
  free(copy);
  return Success;
}

int ncclReduceScatter(const void *send, void *recv, size_t count, int type, int op,
                      void *comm, void *stream) {
  Comm *c = comm;
  (void)stream;
  size_t bytes = count * bytesOf(type);
  char *whole = malloc(bytes * (size_t)c->size + 1);
  reduceAll(send, whole, count * (size_t)c->size, type, op, c);
  memcpy(recv, whole + bytes * (size_t)c->rank, bytes);
  free(whole);
  return Success;
}

int ncclBroadcast(const void *send, void *recv, size_t count, int type, int root, void *comm,
                  void *stream) {
  Comm *c = comm;
  (void)stream;
  if (c->rank == root && send != recv)
    memcpy(recv, send, count * bytesOf(type));
  MPI_Bcast(recv, (int)(count * bytesOf(type)), MPI_BYTE, root, c->comm);
  return Success;
}

static int queue(int send, const void *out, void *buf, size_t count, int type, int peer,
                 void *comm) {
  if (!grouped || numPending == MAX_PENDING)
    return InvalidArgument; /* k3 only sends and receives inside a group */
  pending[numPending].send = send;
  pending[numPending].out = out;
  pending[numPending].buf = buf;
  pending[numPending].bytes = count * bytesOf(type);
  pending[numPending].peer = peer;
  pending[numPending].comm = comm;
  ++numPending;
  return Success;
}

int ncclSend(const void *buf, size_t count, int type, int peer, void *comm, void *stream) {
  (void)stream;
  return queue(1, buf, NULL, count, type, peer, comm);
}

int ncclRecv(void *buf, size_t count, int type, int peer, void *comm, void *stream) {
  (void)stream;
  return queue(0, NULL, buf, count, type, peer, comm);
}

int ncclGroupStart(void) {
  ++grouped;
  return Success;
}

int ncclGroupEnd(void) {
  if (--grouped > 0)
    return Success;
  MPI_Request requests[MAX_PENDING];
  for (int i = 0; i < numPending; ++i) {
    if (pending[i].send)
      MPI_Isend(pending[i].out, (int)pending[i].bytes, MPI_BYTE, pending[i].peer, 77,
                pending[i].comm->comm, &requests[i]);
    else
      MPI_Irecv(pending[i].buf, (int)pending[i].bytes, MPI_BYTE, pending[i].peer, 77,
                pending[i].comm->comm, &requests[i]);
  }
  MPI_Waitall(numPending, requests, MPI_STATUSES_IGNORE);
  numPending = 0;
  return Success;
}

int ncclGetVersion(int *version) {
  *version = 22105; /* as NCCL 2.21.5 reports itself */
  return Success;
}
