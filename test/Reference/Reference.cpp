//===- Reference.cpp - Plain C++ reference forward of a K3 model ----------===//
//
// Part of k3 (test-only). Written for clarity, not speed: loops follow the
// equations of K3_CHECKPOINT.md §6, KDA.md §2, MLA.md §2, MOE_MXFP4.md §5-9.
//
//===----------------------------------------------------------------------===//

#include "test/Reference/Reference.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <numeric>

namespace k3::ref {

using model::Config;
using model::FFN;
using model::Mixer;

template <typename T> static T sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }
template <typename T> static T silu(T x) { return x * sigmoid(x); }
/// Softplus is the identity above 20 (FLA).
template <typename T> static T softplus(T x) {
  return x > T(20) ? x : std::log1p(std::exp(x));
}

template <typename T>
T situGlu(T g, T u, double beta1, std::optional<double> beta2) {
  T b1 = T(beta1);
  T gate = b1 * std::tanh(g / b1) * sigmoid(g);
  T up = beta2 ? T(*beta2) * std::tanh(u / T(*beta2)) : u;
  return gate * up;
}

/// The model's GLU: SwiGLU `silu(g)·u` for `hidden_act: silu`, else SiTU-GLU.
template <typename T> static T glu(const model::Config &cfg, T g, T u) {
  if (cfg.hiddenAct == model::Activation::SiLU)
    return silu(g) * u;
  return situGlu(g, u, cfg.situBeta1, cfg.situBeta2);
}

template <typename T>
void attnResRead(const std::vector<const T *> &sources, int64_t d,
                 const T *normWeight, const T *projWeight, double eps, T *out) {
  std::vector<T> score(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    T ss = 0;
    for (int64_t j = 0; j < d; ++j)
      ss += sources[i][j] * sources[i][j];
    T inv = T(1) / std::sqrt(ss / T(d) + T(eps));
    T s = 0;
    for (int64_t j = 0; j < d; ++j)
      s += sources[i][j] * inv * normWeight[j] * projWeight[j];
    score[i] = s;
  }
  T mx = *std::max_element(score.begin(), score.end());
  T sum = 0;
  for (T &s : score)
    sum += (s = std::exp(s - mx));
  for (int64_t j = 0; j < d; ++j) {
    T acc = 0;
    for (size_t i = 0; i < sources.size(); ++i)
      acc += score[i] / sum * sources[i][j];
    out[j] = acc;
  }
}

template <typename T>
void route(const T *logits, const T *bias, int64_t experts, int64_t topK,
           bool renormalize, double scaling, std::vector<int64_t> &indices,
           std::vector<T> &weights) {
  std::vector<T> score(experts), biased(experts);
  for (int64_t e = 0; e < experts; ++e) {
    score[e] = sigmoid(logits[e]);
    biased[e] = score[e] + (bias ? bias[e] : T(0));
  }
  std::vector<int64_t> order(experts);
  std::iota(order.begin(), order.end(), 0);
  // Stable: exact ties keep the lower expert id first.
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return biased[a] > biased[b]; });
  indices.assign(order.begin(), order.begin() + topK);
  weights.resize(topK);
  T sum = 0;
  for (int64_t j = 0; j < topK; ++j)
    sum += (weights[j] = score[indices[j]]);
  for (T &wt : weights) {
    if (renormalize)
      wt /= sum + T(1e-20);
    wt *= T(scaling);
  }
}

template <typename T>
void kdaStep(std::vector<T> &s, int64_t dk, int64_t dv, const T *q, const T *k,
             const T *v, const T *g, T beta, T scale, T *out) {
  for (int64_t i = 0; i < dk; ++i) { // decay each key row
    T a = std::exp(g[i]);
    for (int64_t j = 0; j < dv; ++j)
      s[i * dv + j] *= a;
  }
  for (int64_t j = 0; j < dv; ++j) {
    T p = 0; // predict with the decayed state
    for (int64_t i = 0; i < dk; ++i)
      p += s[i * dv + j] * k[i];
    T delta = beta * (v[j] - p);
    for (int64_t i = 0; i < dk; ++i) // update
      s[i * dv + j] += k[i] * delta;
  }
  for (int64_t j = 0; j < dv; ++j) { // read the updated state
    T o = 0;
    for (int64_t i = 0; i < dk; ++i)
      o += s[i * dv + j] * scale * q[i];
    out[j] = o;
  }
}

//===----------------------------------------------------------------------===//
// Model
//===----------------------------------------------------------------------===//

template <typename T>
Model<T>::Model(const model::Checkpoint &ck, std::optional<model::ScaleRule> quantizeExperts)
    : cfg(ck.config()) {
  if (!ck.hasWeights()) {
    std::fprintf(stderr, "reference: the checkpoint has no weights\n");
    std::abort();
  }
  for (const model::TensorSpec &s : ck.specs()) {
    if (s.scale)
      continue;
    std::string name = s.isHead ? "lm_head.weight" : s.name;
    std::vector<float> values;
    if (s.packed) {
      name = name.substr(0, name.size() - 14) + ".weight"; // "_packed" pair
      values = ck.readLinear(name.substr(0, name.size() - 7));
    } else {
      values = ck.readFloat(name);
      // A routed expert matrix (not a shared one) rounded through MXFP4.
      bool routed = name.find(".experts.") != std::string::npos &&
                    name.find("shared_experts") == std::string::npos;
      if (quantizeExperts && routed && s.shape.size() == 2) {
        std::vector<uint8_t> codes, scales;
        model::packMxfp4(values.data(), s.shape[0], s.shape[1], codes, scales,
                         *quantizeExperts);
        values = model::unpackMxfp4(codes.data(), scales.data(), s.shape[0], s.shape[1]);
      }
    }
    weights[name].assign(values.begin(), values.end());
  }
}

template <typename T>
const std::vector<T> &Model<T>::w(const std::string &name) const {
  auto it = weights.find(name);
  if (it == weights.end()) {
    std::fprintf(stderr, "reference: no weight '%s'\n", name.c_str());
    std::abort();
  }
  return it->second;
}

template <typename T>
typename Model<T>::State Model<T>::initialState() const {
  State st;
  st.layers.resize(cfg.numLayers);
  for (int64_t l = 0; l < cfg.numLayers; ++l) {
    if (cfg.mixer(l) != Mixer::KDA)
      continue;
    for (auto &c : st.layers[l].conv)
      c.assign((cfg.convKernelSize - 1) * cfg.kdaProjWidth(), T(0));
    st.layers[l].kda.assign(cfg.kdaHeads * cfg.kdaHeadDim * cfg.kdaHeadDim, T(0));
  }
  return st;
}

template <typename T>
typename Model<T>::Rows Model<T>::linear(const Rows &x, int64_t in,
                                         const std::string &name) const {
  const std::vector<T> &wt = w(name);
  int64_t out = wt.size() / in, n = x.size() / in;
  Rows y(n * out);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t o = 0; o < out; ++o) {
      T acc = 0;
      for (int64_t i = 0; i < in; ++i)
        acc += x[t * in + i] * wt[o * in + i];
      y[t * out + o] = acc;
    }
  return y;
}

template <typename T>
typename Model<T>::Rows Model<T>::rmsNorm(const Rows &x, int64_t d,
                                          const std::vector<T> &weight,
                                          double eps) const {
  Rows y(x.size());
  for (size_t r = 0; r < x.size() / d; ++r) {
    T ss = 0;
    for (int64_t i = 0; i < d; ++i)
      ss += x[r * d + i] * x[r * d + i];
    T inv = T(1) / std::sqrt(ss / T(d) + T(eps));
    for (int64_t i = 0; i < d; ++i)
      y[r * d + i] = weight[i] * x[r * d + i] * inv;
  }
  return y;
}

template <typename T>
typename Model<T>::Rows
Model<T>::read(const std::vector<const Rows *> &sources, const std::string &norm,
               const std::string &proj) const {
  const int64_t d = cfg.hiddenSize, n = sources.front()->size() / d;
  Rows out(n * d);
  std::vector<const T *> rows(sources.size());
  for (int64_t t = 0; t < n; ++t) {
    for (size_t i = 0; i < sources.size(); ++i)
      rows[i] = sources[i]->data() + t * d;
    attnResRead(rows, d, w(norm).data(), w(proj).data(), cfg.rmsNormEps,
                out.data() + t * d);
  }
  return out;
}

template <typename T>
typename Model<T>::Rows Model<T>::kda(const Rows &x, int64_t layer,
                                      LayerState &st) const {
  const std::string at = "layers." + std::to_string(layer) + ".self_attn.";
  const int64_t d = cfg.hiddenSize, h = cfg.kdaHeads, dk = cfg.kdaHeadDim,
                p = cfg.kdaProjWidth(), kw = cfg.convKernelSize,
                n = x.size() / d;
  // q, k, v: projection, then the causal depthwise conv over the window
  // (the W−1 previous pre-conv inputs) followed by the new rows, then SiLU.
  Rows qkv[3];
  const char *names[3] = {"q", "k", "v"};
  for (int c = 0; c < 3; ++c) {
    Rows proj = linear(x, d, at + names[c] + "_proj.weight");
    const std::vector<T> &filter = w(at + names[c] + "_conv1d.weight"); // [P][W]
    Rows hat = st.conv[c];
    hat.insert(hat.end(), proj.begin(), proj.end());
    qkv[c].resize(n * p);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t ch = 0; ch < p; ++ch) {
        T acc = 0;
        for (int64_t i = 0; i < kw; ++i)
          acc += filter[ch * kw + i] * hat[(t + i) * p + ch];
        qkv[c][t * p + ch] = silu(acc);
      }
    st.conv[c].assign(hat.end() - (kw - 1) * p, hat.end());
  }
  // L2-normalise q and k per head: x / sqrt(Σx² + 1e-6).
  for (int c = 0; c < 2; ++c)
    for (int64_t r = 0; r < n * h; ++r) {
      T ss = 0;
      for (int64_t i = 0; i < dk; ++i)
        ss += qkv[c][r * dk + i] * qkv[c][r * dk + i];
      T inv = T(1) / std::sqrt(ss + T(1e-6));
      for (int64_t i = 0; i < dk; ++i)
        qkv[c][r * dk + i] *= inv;
    }
  // Gate (per channel, fp32 math in the model; T here), beta.
  Rows f = linear(linear(x, d, at + "f_a_proj.weight"), dk, at + "f_b_proj.weight");
  const std::vector<T> &aLog = w(at + "A_log"), &dt = w(at + "dt_bias");
  for (int64_t t = 0; t < n; ++t)
    for (int64_t hh = 0; hh < h; ++hh)
      for (int64_t i = 0; i < dk; ++i) {
        T &gv = f[t * p + hh * dk + i];
        T z = gv + dt[hh * dk + i];
        T a = std::exp(aLog[hh]); // per head, never per channel
        gv = cfg.gateLowerBound ? T(*cfg.gateLowerBound) * sigmoid(a * z)
                                : -a * softplus(z);
      }
  Rows beta = linear(x, d, at + "b_proj.weight");
  for (T &b : beta)
    b = sigmoid(b);
  // Recurrence per head; q/k heads equal value heads in K3.
  Rows o(n * p);
  const T scale = T(1) / std::sqrt(T(dk));
  for (int64_t hh = 0; hh < h; ++hh) {
    std::vector<T> s(st.kda.begin() + hh * dk * dk,
                     st.kda.begin() + (hh + 1) * dk * dk);
    for (int64_t t = 0; t < n; ++t) {
      int64_t off = t * p + hh * dk;
      kdaStep(s, dk, dk, &qkv[0][off], &qkv[1][off], &qkv[2][off], &f[off],
              beta[t * h + hh], scale, &o[off]);
    }
    std::copy(s.begin(), s.end(), st.kda.begin() + hh * dk * dk);
  }
  // Head-wise RMSNorm with the sigmoid output gate.
  Rows gate = cfg.fullRankOutputGate
                  ? linear(x, d, at + "g_proj.weight")
                  : linear(linear(x, d, at + "g_a_proj.weight"), dk,
                           at + "g_b_proj.weight");
  Rows on = rmsNorm(o, dk, w(at + "o_norm.weight"), cfg.rmsNormEps);
  for (size_t i = 0; i < on.size(); ++i)
    on[i] *= sigmoid(gate[i]);
  return linear(on, p, at + "o_proj.weight");
}

template <typename T>
typename Model<T>::Rows Model<T>::mla(const Rows &x, int64_t layer,
                                      LayerState &st) const {
  const std::string at = "layers." + std::to_string(layer) + ".self_attn.";
  const int64_t d = cfg.hiddenSize, h = cfg.mlaHeads, dn = cfg.qkNopeHeadDim,
                dr = cfg.qkRopeHeadDim, dv = cfg.vHeadDim, l = cfg.kvLoraRank,
                width = cfg.mlaCacheWidth(), n = x.size() / d;
  Rows q = cfg.qLoraRank
               ? linear(rmsNorm(linear(x, d, at + "q_a_proj.weight"), *cfg.qLoraRank,
                                w(at + "q_a_layernorm.weight"), 1e-6),
                        *cfg.qLoraRank, at + "q_b_proj.weight")
               : linear(x, d, at + "q_proj.weight");
  Rows ckr = linear(x, d, at + "kv_a_proj_with_mqa.weight");
  const int64_t past = st.cache.size() / width;
  for (int64_t t = 0; t < n; ++t) {
    Rows c(ckr.begin() + t * width, ckr.begin() + t * width + l);
    c = rmsNorm(c, l, w(at + "kv_a_layernorm.weight"), 1e-6);
    st.cache.insert(st.cache.end(), c.begin(), c.end());
    st.cache.insert(st.cache.end(), ckr.begin() + t * width + l,
                    ckr.begin() + (t + 1) * width);
  }
  const int64_t total = past + n;
  // Expanded form: per-head keys and values from the cached latents.
  const std::vector<T> &kvb = w(at + "kv_b_proj.weight"); // [H·(dn+dv)][L]
  Rows kNope(total * h * dn), val(total * h * dv);
  for (int64_t j = 0; j < total; ++j)
    for (int64_t hh = 0; hh < h; ++hh)
      for (int64_t r = 0; r < dn + dv; ++r) {
        T acc = 0;
        const T *row = &kvb[(hh * (dn + dv) + r) * l];
        for (int64_t i = 0; i < l; ++i)
          acc += row[i] * st.cache[j * width + i];
        if (r < dn)
          kNope[(j * h + hh) * dn + r] = acc;
        else
          val[(j * h + hh) * dv + r - dn] = acc;
      }
  const T scale = T(1) / std::sqrt(T(dn + dr)); // never 1/sqrt(L + R)
  Rows o(n * h * dv);
  std::vector<T> score(total);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t hh = 0; hh < h; ++hh) {
      const T *qh = &q[(t * h + hh) * (dn + dr)];
      int64_t visible = past + t + 1; // causal
      T mx = -INFINITY;
      for (int64_t j = 0; j < visible; ++j) {
        T s = 0;
        for (int64_t i = 0; i < dn; ++i)
          s += qh[i] * kNope[(j * h + hh) * dn + i];
        for (int64_t i = 0; i < dr; ++i)
          s += qh[dn + i] * st.cache[j * width + l + i];
        score[j] = s * scale;
        mx = std::max(mx, score[j]);
      }
      T sum = 0;
      for (int64_t j = 0; j < visible; ++j)
        sum += (score[j] = std::exp(score[j] - mx));
      for (int64_t i = 0; i < dv; ++i) {
        T acc = 0;
        for (int64_t j = 0; j < visible; ++j)
          acc += score[j] / sum * val[(j * h + hh) * dv + i];
        o[(t * h + hh) * dv + i] = acc;
      }
    }
  if (cfg.mlaOutputGate) {
    Rows gate = linear(x, d, at + "g_proj.weight");
    for (size_t i = 0; i < o.size(); ++i)
      o[i] *= sigmoid(gate[i]);
  }
  return linear(o, h * dv, at + "o_proj.weight");
}

template <typename T>
typename Model<T>::Rows Model<T>::mlp(const Rows &x,
                                      const std::string &prefix) const {
  const int64_t d = cfg.hiddenSize;
  Rows g = linear(x, d, prefix + "gate_proj.weight");
  Rows u = linear(x, d, prefix + "up_proj.weight");
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = glu(cfg, g[i], u[i]);
  return linear(g, g.size() / (x.size() / d), prefix + "down_proj.weight");
}

template <typename T>
std::vector<T> Model<T>::expert(const std::vector<T> &z,
                                const std::string &prefix) const {
  const int64_t dl = z.size();
  Rows g = linear(z, dl, prefix + "w1.weight");
  Rows u = linear(z, dl, prefix + "w3.weight");
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = glu(cfg, g[i], u[i]);
  return linear(g, g.size(), prefix + "w2.weight");
}

template <typename T>
typename Model<T>::Rows Model<T>::moe(const Rows &x, int64_t layer) const {
  const std::string mp = "layers." + std::to_string(layer) + ".block_sparse_moe.";
  const int64_t d = cfg.hiddenSize, n = x.size() / d, dl = cfg.expertWidth();
  Rows logits = linear(x, d, mp + "gate.weight");
  Rows z = cfg.routedExpertHiddenSize
               ? linear(x, d, mp + "routed_expert_down_proj.weight")
               : x;
  Rows u(n * dl, T(0));
  std::vector<int64_t> sel;
  std::vector<T> wts;
  for (int64_t t = 0; t < n; ++t) {
    route(&logits[t * cfg.numExperts], w(mp + "gate.e_score_correction_bias").data(),
          cfg.numExperts, cfg.topK, cfg.moeRenormalize, cfg.routedScalingFactor,
          sel, wts);
    std::vector<T> zt(z.begin() + t * dl, z.begin() + (t + 1) * dl);
    for (int64_t j = 0; j < cfg.topK; ++j) {
      std::vector<T> e =
          expert(zt, mp + "experts." + std::to_string(sel[j]) + ".");
      for (int64_t i = 0; i < dl; ++i)
        u[t * dl + i] += wts[j] * e[i];
    }
  }
  if (cfg.latentMoeUseNorm)
    u = rmsNorm(u, dl, w(mp + "routed_expert_norm.weight"), cfg.rmsNormEps);
  Rows y = cfg.routedExpertHiddenSize
               ? linear(u, dl, mp + "routed_expert_up_proj.weight")
               : u;
  if (cfg.numSharedExperts > 0) {
    Rows s = mlp(x, mp + "shared_experts."); // on the original input
    for (size_t i = 0; i < y.size(); ++i)
      y[i] += s[i];
  }
  return y;
}

template <typename T>
std::vector<T> Model<T>::forward(const std::vector<int32_t> &ids,
                                 State &st) const {
  const int64_t d = cfg.hiddenSize, n = ids.size();
  Rows emb(n * d);
  const std::vector<T> &table = w("embed_tokens.weight");
  for (int64_t t = 0; t < n; ++t) {
    assert(ids[t] >= 0 && ids[t] < cfg.vocabSize);
    std::copy(table.begin() + ids[t] * d, table.begin() + (ids[t] + 1) * d,
              emb.begin() + t * d);
  }
  // AttnRes walk (K3_CHECKPOINT.md §6); without a block size, the plain
  // pre-norm residual.
  Rows running = emb;
  bool hasRunning = true;
  std::vector<Rows> blocks;
  auto sources = [&](const Rows &r) {
    std::vector<const Rows *> s;
    for (const Rows &b : blocks)
      s.push_back(&b);
    s.push_back(&r);
    return s;
  };
  for (int64_t l = 0; l < cfg.numLayers; ++l) {
    const std::string lp = "layers." + std::to_string(l) + ".";
    Rows h = running;
    if (cfg.attnResBlockSize && !blocks.empty())
      h = read(sources(running), lp + "self_attention_res_norm.weight",
               lp + "self_attention_res_proj.weight");
    if (cfg.seals(l)) {
      blocks.push_back(running);
      hasRunning = false;
    }
    Rows xn = rmsNorm(h, d, w(lp + "input_layernorm.weight"), cfg.rmsNormEps);
    Rows a = cfg.mixer(l) == Mixer::KDA ? kda(xn, l, st.layers[l])
                                        : mla(xn, l, st.layers[l]);
    if (hasRunning)
      for (size_t i = 0; i < a.size(); ++i)
        a[i] += running[i];
    running = std::move(a);
    hasRunning = true;
    h = cfg.attnResBlockSize
            ? read(sources(running), lp + "mlp_res_norm.weight",
                   lp + "mlp_res_proj.weight")
            : running;
    Rows y = rmsNorm(h, d, w(lp + "post_attention_layernorm.weight"),
                     cfg.rmsNormEps);
    Rows f = cfg.ffn(l) == FFN::Dense ? mlp(y, lp + "mlp.") : moe(y, l);
    for (size_t i = 0; i < f.size(); ++i)
      running[i] += f[i];
  }
  Rows h = cfg.attnResBlockSize
               ? read(sources(running), "output_attn_res_norm.weight",
                      "output_attn_res_proj.weight")
               : running;
  h = rmsNorm(h, d, w("norm.weight"), cfg.rmsNormEps);
  st.tokens += n;
  return linear(h, d,
                cfg.tieWordEmbeddings ? "embed_tokens.weight" : "lm_head.weight");
}

#define K3_INSTANTIATE(T)                                                      \
  template T situGlu<T>(T, T, double, std::optional<double>);                  \
  template void attnResRead<T>(const std::vector<const T *> &, int64_t,        \
                               const T *, const T *, double, T *);             \
  template void route<T>(const T *, const T *, int64_t, int64_t, bool, double, \
                         std::vector<int64_t> &, std::vector<T> &);            \
  template void kdaStep<T>(std::vector<T> &, int64_t, int64_t, const T *,      \
                           const T *, const T *, const T *, T, T, T *);        \
  template class Model<T>;
K3_INSTANTIATE(float)
K3_INSTANTIATE(double)
#undef K3_INSTANTIATE

} // namespace k3::ref
