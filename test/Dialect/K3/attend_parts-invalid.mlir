// RUN: k3-opt %s --split-input-file --verify-diagnostics

// 40 keys in parts of 16 are 3 parts.
func.func @parts(%q: memref<2x40xf32>, %rows: memref<40x40xf32>, %m: memref<2x2xf32>,
                 %l: memref<2x2xf32>, %u: memref<2x2x32xf32>) {
  // expected-error @+1 {{has 2 parts, expected 3 for 40 keys in parts of 16}}
  k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 16
      : (memref<2x40xf32>, memref<40x40xf32>, memref<2x2xf32>, memref<2x2xf32>, memref<2x2x32xf32>) -> ()
  return
}

// -----

func.func @width(%q: memref<2x40xf32>, %rows: memref<40x48xf32>, %m: memref<2x3xf32>,
                 %l: memref<2x3xf32>, %u: memref<2x3x32xf32>) {
  // expected-error @+1 {{rows dim 1 (D) is 48, expected 40 from q}}
  k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 16
      : (memref<2x40xf32>, memref<40x48xf32>, memref<2x3xf32>, memref<2x3xf32>, memref<2x3x32xf32>) -> ()
  return
}

// -----

func.func @values(%q: memref<2x40xf32>, %rows: memref<40x40xf32>, %m: memref<2x3xf32>,
                  %l: memref<2x3xf32>, %u: memref<2x3x48xf32>) {
  // expected-error @+1 {{u has 48 value columns, more than the rows' 40}}
  k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 16
      : (memref<2x40xf32>, memref<40x40xf32>, memref<2x3xf32>, memref<2x3xf32>, memref<2x3x48xf32>) -> ()
  return
}

// -----

func.func @keys(%q: memref<2x40xf32>, %rows: memref<40x40xf32>, %m: memref<2x3xf32>,
                %l: memref<2x3xf32>, %u: memref<2x3x32xf32>) {
  // expected-error @+1 {{part_keys must be at least 1, got 0}}
  k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 0
      : (memref<2x40xf32>, memref<40x40xf32>, memref<2x3xf32>, memref<2x3xf32>, memref<2x3x32xf32>) -> ()
  return
}

// -----

func.func @mixed(%q: tensor<2x40xf32>, %rows: memref<40x40xf32>, %m: memref<2x3xf32>,
                 %l: memref<2x3xf32>, %u: memref<2x3x32xf32>) {
  // expected-error @+1 {{operands must be all ranked tensors or all memrefs}}
  k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 16
      : (tensor<2x40xf32>, memref<40x40xf32>, memref<2x3xf32>, memref<2x3xf32>, memref<2x3x32xf32>) -> ()
  return
}

// -----

func.func @results(%q: tensor<2x40xf32>, %rows: tensor<40x40xf32>, %m: tensor<2x3xf32>,
                   %l: tensor<2x3xf32>, %u: tensor<2x3x32xf32>) {
  // expected-error @+1 {{result 2 has type 'tensor<2x3x16xf32>', expected its destination's 'tensor<2x3x32xf32>'}}
  %a, %b, %c = k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 16
      : (tensor<2x40xf32>, tensor<40x40xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3x32xf32>)
      -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3x16xf32>)
  return
}

// -----

func.func @types(%q: memref<2x40xf16>, %rows: memref<40x40xf32>, %m: memref<2x3xf32>,
                 %l: memref<2x3xf32>, %u: memref<2x3x32xf32>) {
  // expected-error @+1 {{q, max, sum and u must be f32 and rows bf16, f16 or f32}}
  k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 16
      : (memref<2x40xf16>, memref<40x40xf32>, memref<2x3xf32>, memref<2x3xf32>, memref<2x3x32xf32>) -> ()
  return
}

// -----

func.func @scale(%q: memref<2x40xf32>, %rows: memref<40x40xf32>, %m: memref<2x3xf32>,
                 %l: memref<2x3xf32>, %u: memref<2x3x32xf32>) {
  // expected-error @+1 {{q_scale must be finite, got inf}}
  k3.attend_parts %q, %rows outs(%m, %l, %u) part_keys = 16 {q_scale = 0x7F800000 : f32}
      : (memref<2x40xf32>, memref<40x40xf32>, memref<2x3xf32>, memref<2x3xf32>, memref<2x3x32xf32>) -> ()
  return
}
