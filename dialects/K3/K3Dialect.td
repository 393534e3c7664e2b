//===- K3Dialect.td - The K3 dialect ---------------------------*- tablegen -*-===//
//
// Part of k3. The dialect definition shared by every K3 .td file.
//
//===----------------------------------------------------------------------===//

#ifndef K3_DIALECT_TD
#define K3_DIALECT_TD

include "mlir/IR/OpBase.td"

def K3_Dialect : Dialect {
  let name = "k3";
  let cppNamespace = "::mlir::k3";
  let summary = "Ops of Kimi-K3-style hybrid language models";
  let description = [{
    The K3 dialect expresses a Kimi K3 family model on tensors: token mixing
    (KDA recurrent attention with its gate and short convolutions, gated MLA),
    channel mixing (router, routed LatentMoE, SiTU-GLU, dense MLP), depth
    mixing (Attention Residuals) and the plumbing around them (embedding,
    RMSNorm, linear layers, the LM head, named weights).

    Conventions shared by every op:
    - Activations are token-major and carry no batch dimension: one op
      instance processes one sequence of `T` tokens (`T` may be dynamic).
    - Linear weights are `[out, in]` (`y = x · Wᵀ`), as in the checkpoint.
    - Statistics (norms, gates, softmax, routing) are computed in f32
      whatever the storage type.
    - Caches are explicit values: an op that extends a cache consumes the
      old one and yields the new one.
    - MXFP4 weights are tensors of builtin `f4E2M1FN` with one
      `f8E8M0FNU` scale per 32 consecutive elements of the input dimension.
  }];
}

class K3_Op<string mnemonic, list<Trait> traits = []>
    : Op<K3_Dialect, mnemonic, traits>;

#endif // K3_DIALECT_TD
