//===- Sampling.cpp - Next-token selection --------------------------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace k3rt {

int32_t argmax(const float *logits, size_t n) {
  int32_t best = -1;
  for (size_t i = 0; i < n; ++i)
    if (!std::isnan(logits[i]) && (best < 0 || logits[i] > logits[best]))
      best = int32_t(i);
  return best;
}

double Sampler::uniform() {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) * (1.0 / 9007199254740992.0);
}

int32_t Sampler::next(const float *logits, size_t vocab) {
  if (opts.temperature <= 0.0f)
    return argmax(logits, vocab);
  // Candidates by descending logit (ties: lower id first), NaN dropped.
  std::vector<int32_t> order;
  order.reserve(vocab);
  for (size_t i = 0; i < vocab; ++i)
    if (!std::isnan(logits[i]))
      order.push_back(int32_t(i));
  if (order.empty())
    return -1;
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b];
  });
  // Infinite logits have no softmax: +inf wins outright (the lowest such
  // id), and if everything is -inf every candidate is equally impossible.
  if (std::isinf(logits[order[0]]))
    return order[0];
  if (opts.topK > 0 && size_t(opts.topK) < order.size())
    order.resize(opts.topK);
  // Softmax at the temperature, in double, from the largest logit.
  std::vector<double> p(order.size());
  const double top = logits[order[0]];
  double sum = 0;
  for (size_t i = 0; i < order.size(); ++i)
    sum += p[i] = std::exp((logits[order[i]] - top) / opts.temperature);
  if (!(sum > 0) || !std::isfinite(sum))
    return order[0];
  for (double &x : p)
    x /= sum;
  if (opts.topP < 1.0f) {
    double mass = 0;
    size_t keep = 0;
    while (keep < p.size() && mass < opts.topP)
      mass += p[keep++];
    keep = std::max<size_t>(keep, 1);
    p.resize(keep);
    order.resize(keep);
    for (double &x : p)
      x /= mass;
  }
  double u = uniform(), acc = 0;
  for (size_t i = 0; i < p.size(); ++i)
    if (u < (acc += p[i]))
      return order[i];
  return order.back(); // rounding left u just above the total
}

} // namespace k3rt
