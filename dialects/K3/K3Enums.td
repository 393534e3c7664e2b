//===- K3Enums.td - Enumerations of the K3 dialect -------------*- tablegen -*-===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#ifndef K3_ENUMS_TD
#define K3_ENUMS_TD

include "mlir/IR/EnumAttr.td"

def K3_KdaGateForm_LowerBound : I32EnumAttrCase<"lower_bound", 0>;
def K3_KdaGateForm_Softplus : I32EnumAttrCase<"softplus", 1>;

def K3_KdaGateFormAttr : I32EnumAttr<"KdaGateForm",
    "form of the KDA per-channel log-decay gate",
    [K3_KdaGateForm_LowerBound, K3_KdaGateForm_Softplus]> {
  let cppNamespace = "::mlir::k3";
  let description = [{
    `lower_bound`: `g = lb · sigmoid(exp(A_log) · (x + dt_bias))`, in `(lb, 0)`
    (Kimi K3, `gate_lower_bound`). `softplus`: `g = −exp(A_log) ·
    softplus(x + dt_bias)`, in `(−∞, 0]` (Kimi Linear).
  }];
}

def K3_KdaTileForm_Factored : I32EnumAttrCase<"factored", 0>;
def K3_KdaTileForm_Safe : I32EnumAttrCase<"safe", 1>;

def K3_KdaTileFormAttr : I32EnumAttr<"KdaTileForm",
    "how chunked KDA forms its intra-sub-chunk decay products",
    [K3_KdaTileForm_Factored, K3_KdaTileForm_Safe]> {
  let cppNamespace = "::mlir::k3";
  let description = [{
    `factored`: the diagonal sub-chunk blocks use `(X ⊙ e^{G−Gref}) ·
    (K ⊙ e^{Gref−G})ᵀ` (matmul-shaped; the right factor grows up to
    `e^{(B−1)·|lb|}`), valid only when the gate is proven bounded (KDA.md
    §6.3). `safe`: every entry uses the exact pairwise decay
    `e^{G_r−G_s}`, never above 1, for any gate (the sub-chunk size does
    not change the result).
  }];
}

def K3_GluActivation_Situ : I32EnumAttrCase<"situ", 0>;
def K3_GluActivation_Silu : I32EnumAttrCase<"silu", 1>;

def K3_GluActivationAttr : I32EnumAttr<"GluActivation",
    "activation of a gated linear unit (the dense MLP and the experts)",
    [K3_GluActivation_Situ, K3_GluActivation_Silu]> {
  let cppNamespace = "::mlir::k3";
  let description = [{
    `situ`: SiTU-GLU, `[β1·tanh(g/β1)·sigmoid(g)] · [β2·tanh(u/β2)]` (Kimi
    K3, `hidden_act: situ`, with the betas). `silu`: SwiGLU, `silu(g) · u`
    (Kimi Linear, `hidden_act: silu`; no parameters).
  }];
}

def K3_CollectiveKind_AllReduce : I32EnumAttrCase<"all_reduce", 0>;
def K3_CollectiveKind_AllGather : I32EnumAttrCase<"all_gather", 1>;

def K3_CollectiveKindAttr : I32EnumAttr<"CollectiveKind",
    "the collective a sharded binary's k3.collective runs",
    [K3_CollectiveKind_AllReduce, K3_CollectiveKind_AllGather]> {
  let cppNamespace = "::mlir::k3";
  let description = [{
    `all_reduce`: the sum over the group, every rank the same result.
    `all_gather`: each rank's input, stacked in group-rank order along a new
    leading dimension.
  }];
}

#endif // K3_ENUMS_TD
