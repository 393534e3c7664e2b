//===- Session.cpp - One request's state over a compiled model ------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Session.h"
#include "runtime/src/Status.h"

#include <algorithm>
#include <cstring>

using namespace k3::bundle;

namespace k3rt {

const char *entryFor(const CpuExecutable &exe, int64_t n, int64_t seen, bool allRows) {
  if (n == 1 && seen > 0)
    return "decode";
  return allRows || !exe.entry("prefill_last") ? "prefill" : "prefill_last";
}

k3rt_status_t checkPrefillLast(const CpuExecutable &exe) {
  const EntryPoint *last = exe.entry("prefill_last"), *all = exe.entry("prefill");
  if (!last)
    return nullptr;
  auto sameTensor = [](const TensorInfo *a, const TensorInfo *b) {
    return a->dtype() == b->dtype() && a->appends_rows() == b->appends_rows() &&
           a->shape()->size() == b->shape()->size() &&
           std::equal(a->shape()->begin(), a->shape()->end(), b->shape()->begin());
  };
  bool ok = all && last->inputs() && last->outputs() && all->inputs() && all->outputs() &&
            last->inputs()->size() == all->inputs()->size() &&
            last->outputs()->size() == all->outputs()->size() && last->outputs()->size() > 0;
  for (size_t i = 0; ok && i < all->inputs()->size(); ++i)
    ok = sameTensor(last->inputs()->Get(i), all->inputs()->Get(i));
  for (size_t i = 1; ok && i < all->outputs()->size(); ++i)
    ok = sameTensor(last->outputs()->Get(i), all->outputs()->Get(i));
  if (ok) {
    const auto *l = last->outputs()->Get(0)->shape(), *a = all->outputs()->Get(0)->shape();
    ok = l->size() == 2 && a->size() == 2 && l->Get(0) == 1 && l->Get(1) == a->Get(1);
  }
  if (!ok)
    return makeStatus(K3RT_INVALID_ARGUMENT,
                      "the prefill_last entry does not take and return the prefill entry's "
                      "state with one row of logits");
  return nullptr;
}

k3rt_status_t Session::create(CpuExecutable &exe, std::unique_ptr<Session> &out) {
  const EntryPoint *prefill = exe.entry("prefill");
  if (!prefill || !exe.entry("decode") || !prefill->inputs() ||
      prefill->inputs()->size() == 0 || !prefill->outputs() ||
      prefill->outputs()->size() == 0)
    return makeStatus(K3RT_INVALID_ARGUMENT,
                      "the binary is not a model: it needs prefill and decode "
                      "entry points");
  std::unique_ptr<Session> s(new Session(exe));
  for (size_t i = 1; i < prefill->inputs()->size(); ++i) {
    const TensorInfo *info = prefill->inputs()->Get(i);
    std::vector<int64_t> shape;
    for (int64_t d : *info->shape())
      shape.push_back(d < 0 ? 0 : d); // the dynamic extent: cached tokens
    s->state.push_back(exe.keptZeros(info->dtype(), shape));
  }
  // Outputs: logits, the state in input order, then any KDA snapshots.
  if (prefill->outputs()->size() < prefill->inputs()->size())
    return makeStatus(K3RT_INVALID_ARGUMENT,
                      "the prefill entry returns " +
                          std::to_string(prefill->outputs()->size()) +
                          " tensors, fewer than logits and its " +
                          std::to_string(prefill->inputs()->size() - 1) + " state tensors");
  const EntryPoint *decode = exe.entry("decode");
  if (!decode->outputs() || !decode->inputs() ||
      decode->inputs()->size() != prefill->inputs()->size() ||
      decode->outputs()->size() < decode->inputs()->size())
    return makeStatus(K3RT_INVALID_ARGUMENT,
                      "the decode entry does not take and return the prefill entry's state");
  if (k3rt_status_t st = checkPrefillLast(exe))
    return st;
  for (size_t i = 0; i < prefill->inputs()->size(); ++i)
    if (prefill->inputs()->Get(i)->appends_rows() != decode->inputs()->Get(i)->appends_rows())
      return makeStatus(K3RT_INVALID_ARGUMENT,
                        "the prefill and decode entries disagree on whether input " +
                            std::to_string(i) + " has room for the call's rows");
  for (size_t i = prefill->inputs()->size(); i < prefill->outputs()->size(); ++i)
    s->snapshotNamesList.push_back(prefill->outputs()->Get(i)->name()->str());
  const auto *logits = prefill->outputs()->Get(0)->shape();
  s->vocab = logits->size() == 2 ? logits->Get(1) : 0;
  out = std::move(s);
  return nullptr;
}

k3rt_status_t Session::append(const int32_t *ids, size_t n,
                              std::vector<float> &logits, bool allRows) {
  if (n == 0)
    return makeStatus(K3RT_INVALID_ARGUMENT, "no tokens to append");
  for (size_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      return makeStatus(K3RT_OUT_OF_RANGE,
                        "token id " + std::to_string(ids[i]) + " at position " +
                            std::to_string(i) + " is outside the vocabulary (" +
                            std::to_string(vocab) + " ids)");
  if (broken)
    return makeStatus(K3RT_INVALID_ARGUMENT,
                      "the session's state was lost in a failed call: start a new session");
  const char *name = entryFor(exe, int64_t(n), seen, allRows);
  // An MLA cache goes in with room for this call's rows, which it writes.
  const EntryPoint *ep = exe.entry(name);
  for (size_t i = 0; i < state.size(); ++i)
    if (ep->inputs()->Get(i + 1)->appends_rows())
      if (k3rt_status_t s = exe.growRows(state[i], int64_t(n))) {
        broken = true; // earlier caches have grown already
        return s;
      }
  HostTensor in = HostTensor::zeros(DType_I32, {int64_t(n)});
  std::memcpy(in.bytes.data(), ids, n * 4);
  std::vector<HostTensor *> args{&in};
  for (HostTensor &t : state)
    args.push_back(&t);
  std::vector<HostTensor> out;
  // The state stays where the kernels wrote it (on a CUDA device, in its
  // memory: no copy to the host and back per call); logits and snapshots
  // come to the host.
  std::vector<bool> keep(1 + state.size(), true);
  keep[0] = false;
  if (k3rt_status_t s = exe.run(name, args, out, keep)) {
    // The kernels may have updated the state in place before failing.
    broken = true;
    return s;
  }
  logits.assign(out[0].f32(), out[0].f32() + out[0].numElements());
  auto stateEnd = out.begin() + 1 + state.size();
  state.assign(std::make_move_iterator(out.begin() + 1), std::make_move_iterator(stateEnd));
  snapshots.assign(std::make_move_iterator(stateEnd), std::make_move_iterator(out.end()));
  seen += int64_t(n);
  return nullptr;
}

} // namespace k3rt

struct k3rt_session_s {
  k3rt_bundle_t *bundle;
  std::unique_ptr<k3rt::CpuExecutable> exe;
  std::unique_ptr<k3rt::Session> session;
};

extern "C" {

k3rt_status_t k3rt_session_create(k3rt_bundle_t *bundle,
                                  k3rt_session_t **out_session) {
  if (!bundle || !out_session)
    return k3rt::makeStatus(K3RT_INVALID_ARGUMENT, "k3rt_session_create: null argument");
  auto s = std::make_unique<k3rt_session_s>();
  s->bundle = bundle;
  if (k3rt_status_t st = k3rt::CpuExecutable::load(*bundle, s->exe))
    return st;
  if (k3rt_status_t st = k3rt::Session::create(*s->exe, s->session))
    return st;
  k3rt_bundle_retain(bundle);
  *out_session = s.release();
  return nullptr;
}

k3rt_status_t k3rt_session_append(k3rt_session_t *session, const int32_t *ids,
                                  size_t n, float *out_logits) {
  if (!session || (!ids && n) || !out_logits)
    return k3rt::makeStatus(K3RT_INVALID_ARGUMENT, "k3rt_session_append: null argument");
  std::vector<float> logits;
  if (k3rt_status_t st = session->session->append(ids, n, logits))
    return st;
  size_t vocab = size_t(session->session->vocabSize());
  std::memcpy(out_logits, logits.data() + logits.size() - vocab, vocab * 4);
  return nullptr;
}

size_t k3rt_session_vocab_size(const k3rt_session_t *session) {
  return session ? size_t(session->session->vocabSize()) : 0;
}

void k3rt_session_release(k3rt_session_t *session) {
  if (!session)
    return;
  k3rt_bundle_t *bundle = session->bundle;
  session->session.reset();
  session->exe.reset();
  delete session;
  k3rt_bundle_release(bundle);
}

} // extern "C"
