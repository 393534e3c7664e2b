// RUN: k3-opt %s --split-input-file --k3-pack-layer-weights | FileCheck %s
// RUN: k3-opt %s --split-input-file --k3-pack-layer-weights --k3-pack-layer-weights | FileCheck %s --check-prefix=TWICE
// RUN: not k3-opt %s --k3-pack-layer-weights=alignment=48 2>&1 | FileCheck %s --check-prefix=ALIGN

// Two layers of one kind and two entry points whose functions take the
// same weights in different orders: each layer's weights become one pack,
// ordered by name (the norm "a.norm" before the projection "a.proj"), each
// member at a multiple of 64 bytes; prefill and decode share a layer's pack
// (one per call in each entry point), and the entry points keep no weight
// argument of their own. The hidden state stays an argument.
// CHECK-LABEL: func.func private @prefill_layer(%arg0: tensor<?x4xf32>, %arg1: tensor<96xi8>)
// CHECK-NEXT: %[[N:.+]] = k3.weight_view %arg1[0] : tensor<96xi8> -> tensor<4xf32>
// CHECK-NEXT: %[[P:.+]] = k3.weight_view %arg1[64] : tensor<96xi8> -> tensor<4x4xbf16>
// CHECK-NEXT: k3.rms_norm %arg0, %[[N]]
// CHECK-NEXT: k3.linear %{{.+}}, %[[P]]
// CHECK-LABEL: func.func private @decode_layer(%arg0: tensor<1x4xf32>, %arg1: tensor<96xi8>)
// CHECK-NEXT: %[[N:.+]] = k3.weight_view %arg1[0] : tensor<96xi8> -> tensor<4xf32>
// CHECK-NEXT: %[[P:.+]] = k3.weight_view %arg1[64] : tensor<96xi8> -> tensor<4x4xbf16>
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: %arg0: tensor<?x4xf32>
// CHECK-SAME: %arg1: tensor<96xi8> {k3.pack = [{k3.offset = 0 : i64, k3.type = tensor<4xf32>, k3.weight = "layers.0.a.norm"}, {k3.offset = 64 : i64, k3.type = tensor<4x4xbf16>, k3.weight = "layers.0.a.proj"}]}
// CHECK-SAME: %arg2: tensor<96xi8> {k3.pack = [{k3.offset = 0 : i64, k3.type = tensor<4xf32>, k3.weight = "layers.1.a.norm"}, {k3.offset = 64 : i64, k3.type = tensor<4x4xbf16>, k3.weight = "layers.1.a.proj"}]}
// CHECK-SAME: ) -> tensor<?x4xf32>
// CHECK-NEXT: %[[A:.+]] = call @prefill_layer(%arg0, %arg1)
// CHECK-NEXT: call @prefill_layer(%[[A]], %arg2)
// CHECK-LABEL: func.func @decode(
// CHECK-SAME: %arg0: tensor<1x4xf32>
// CHECK-SAME: %arg1: tensor<96xi8> {k3.pack = [{{.*}}"layers.0.a.norm"{{.*}}"layers.0.a.proj"}]}
// CHECK-SAME: %arg2: tensor<96xi8> {k3.pack = [{{.*}}"layers.1.a.norm"{{.*}}"layers.1.a.proj"}]}
// CHECK-SAME: ) -> tensor<1x4xf32>
// Packing what is packed changes nothing.
// TWICE-LABEL: func.func private @prefill_layer(%arg0: tensor<?x4xf32>, %arg1: tensor<96xi8>)
// ALIGN: error: k3-pack-layer-weights: alignment must be a power of two, got 48
func.func private @prefill_layer(%h: tensor<?x4xf32>, %proj: tensor<4x4xbf16>, %norm: tensor<4xf32>) -> tensor<?x4xf32> {
  %n = k3.rms_norm %h, %norm {eps = 1.0e-05 : f32} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %y = k3.linear %n, %proj : (tensor<?x4xf32>, tensor<4x4xbf16>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
func.func private @decode_layer(%h: tensor<1x4xf32>, %norm: tensor<4xf32>, %proj: tensor<4x4xbf16>) -> tensor<1x4xf32> {
  %n = k3.rms_norm %h, %norm {eps = 1.0e-05 : f32} : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
  %y = k3.linear %n, %proj : (tensor<1x4xf32>, tensor<4x4xbf16>) -> tensor<1x4xf32>
  return %y : tensor<1x4xf32>
}
func.func @prefill(%x: tensor<?x4xf32>,
                   %p0: tensor<4x4xbf16> {k3.weight = "layers.0.a.proj"},
                   %n0: tensor<4xf32> {k3.weight = "layers.0.a.norm"},
                   %p1: tensor<4x4xbf16> {k3.weight = "layers.1.a.proj"},
                   %n1: tensor<4xf32> {k3.weight = "layers.1.a.norm"}) -> tensor<?x4xf32> {
  %a = call @prefill_layer(%x, %p0, %n0) : (tensor<?x4xf32>, tensor<4x4xbf16>, tensor<4xf32>) -> tensor<?x4xf32>
  %b = call @prefill_layer(%a, %p1, %n1) : (tensor<?x4xf32>, tensor<4x4xbf16>, tensor<4xf32>) -> tensor<?x4xf32>
  return %b : tensor<?x4xf32>
}
func.func @decode(%x: tensor<1x4xf32>,
                  %n0: tensor<4xf32> {k3.weight = "layers.0.a.norm"},
                  %p0: tensor<4x4xbf16> {k3.weight = "layers.0.a.proj"},
                  %n1: tensor<4xf32> {k3.weight = "layers.1.a.norm"},
                  %p1: tensor<4x4xbf16> {k3.weight = "layers.1.a.proj"}) -> tensor<1x4xf32> {
  %a = call @decode_layer(%x, %n0, %p0) : (tensor<1x4xf32>, tensor<4xf32>, tensor<4x4xbf16>) -> tensor<1x4xf32>
  %b = call @decode_layer(%a, %n1, %p1) : (tensor<1x4xf32>, tensor<4xf32>, tensor<4x4xbf16>) -> tensor<1x4xf32>
  return %b : tensor<1x4xf32>
}

// -----

// A weight two functions would put in two different packs ("w.shared",
// read by @one with "w.a" and by @two with "w.b", as a tied embedding is
// read by the embedding and the output) leaves both functions as they
// were; @three still packs, "w.c" before "w.d" whatever its argument order.
// CHECK-LABEL: func.func private @one(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>, %arg2: tensor<2xf32>)
// CHECK-LABEL: func.func private @two(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>, %arg2: tensor<2xf32>)
// CHECK-LABEL: func.func private @three(%arg0: tensor<2xf32>, %arg1: tensor<72xi8>)
// CHECK-LABEL: func.func @mixed(
// CHECK-SAME: %arg1: tensor<2xf32> {k3.weight = "w.a"}
// CHECK-SAME: %arg2: tensor<2xf32> {k3.weight = "w.b"}
// CHECK-SAME: %arg3: tensor<2xf32> {k3.weight = "w.shared"}
// CHECK-SAME: %arg4: tensor<72xi8> {k3.pack = [{k3.offset = 0 : i64, k3.type = tensor<2xf32>, k3.weight = "w.c"}, {k3.offset = 64 : i64, k3.type = tensor<2xf32>, k3.weight = "w.d"}]}
// CHECK-NEXT: call @one(%arg0, %arg1, %arg3)
// CHECK-NEXT: call @two(%{{.+}}, %arg2, %arg3)
// CHECK-NEXT: call @three(%{{.+}}, %arg4)
func.func private @one(%x: tensor<2xf32>, %a: tensor<2xf32>, %s: tensor<2xf32>) -> tensor<2xf32> {
  %y = arith.addf %x, %a : tensor<2xf32>
  %z = arith.addf %y, %s : tensor<2xf32>
  return %z : tensor<2xf32>
}
func.func private @two(%x: tensor<2xf32>, %b: tensor<2xf32>, %s: tensor<2xf32>) -> tensor<2xf32> {
  %y = arith.mulf %x, %b : tensor<2xf32>
  %z = arith.mulf %y, %s : tensor<2xf32>
  return %z : tensor<2xf32>
}
func.func private @three(%x: tensor<2xf32>, %d: tensor<2xf32>, %c: tensor<2xf32>) -> tensor<2xf32> {
  %y = arith.subf %x, %c : tensor<2xf32>
  %z = arith.subf %y, %d : tensor<2xf32>
  return %z : tensor<2xf32>
}
func.func @mixed(%x: tensor<2xf32>, %a: tensor<2xf32> {k3.weight = "w.a"},
                 %b: tensor<2xf32> {k3.weight = "w.b"}, %s: tensor<2xf32> {k3.weight = "w.shared"},
                 %c: tensor<2xf32> {k3.weight = "w.c"}, %d: tensor<2xf32> {k3.weight = "w.d"}) -> tensor<2xf32> {
  %1 = call @one(%x, %a, %s) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %2 = call @two(%1, %b, %s) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %3 = call @three(%2, %d, %c) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %3 : tensor<2xf32>
}

// -----

// Not packed: a function whose calls pass a non-weight at a position
// (the second call's %x), one with a dynamic or sub-byte weight, and a
// public function (not a layer function).
// CHECK-LABEL: func.func private @mixed_operands(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>, %arg2: tensor<2xf32>)
// CHECK-LABEL: func.func private @sub_byte(%arg0: tensor<2xf32>, %arg1: tensor<2xi1>, %arg2: tensor<?xf32>)
// CHECK-LABEL: func.func @public_callee(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>, %arg2: tensor<2xf32>)
func.func private @mixed_operands(%x: tensor<2xf32>, %a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %y = arith.addf %x, %a : tensor<2xf32>
  %z = arith.addf %y, %b : tensor<2xf32>
  return %z : tensor<2xf32>
}
func.func private @sub_byte(%x: tensor<2xf32>, %m: tensor<2xi1>, %v: tensor<?xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func @public_callee(%x: tensor<2xf32>, %a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func @caller(%x: tensor<2xf32>, %a: tensor<2xf32> {k3.weight = "a"},
                  %b: tensor<2xf32> {k3.weight = "b"}, %m: tensor<2xi1> {k3.weight = "m"},
                  %v: tensor<?xf32> {k3.weight = "v"}) -> tensor<2xf32> {
  %1 = call @mixed_operands(%x, %a, %b) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %2 = call @mixed_operands(%1, %a, %x) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %3 = call @sub_byte(%2, %m, %v) : (tensor<2xf32>, tensor<2xi1>, tensor<?xf32>) -> tensor<2xf32>
  %4 = call @public_callee(%3, %a, %b) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %4 : tensor<2xf32>
}

// -----

// The same weight passed twice would need two places in one pack: the
// function stays as it is.
// CHECK-LABEL: func.func private @twice(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>, %arg2: tensor<2xf32>)
func.func private @twice(%x: tensor<2xf32>, %a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %y = arith.addf %x, %a : tensor<2xf32>
  %z = arith.addf %y, %b : tensor<2xf32>
  return %z : tensor<2xf32>
}
func.func @twice_caller(%x: tensor<2xf32>, %a: tensor<2xf32> {k3.weight = "a"}) -> tensor<2xf32> {
  %1 = call @twice(%x, %a, %a) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %1 : tensor<2xf32>
}
