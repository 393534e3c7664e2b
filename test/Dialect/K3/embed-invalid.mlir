// RUN: k3-opt %s --split-input-file --verify-diagnostics

// Token ids are a 1-D integer tensor.
func.func @float_ids(%ids: tensor<4xf32>, %t: tensor<10x8xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %h = k3.embed %ids, %t : (tensor<4xf32>, tensor<10x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// ids of rank 2 are rejected with the expected layout.
func.func @ids_rank(%ids: tensor<1x4xi32>, %t: tensor<10x8xf32>) {
  // expected-error @+1 {{ids must have rank 1 [T], got rank 2}}
  %h = k3.embed %ids, %t : (tensor<1x4xi32>, tensor<10x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// The table is [V, D].
func.func @table_rank(%ids: tensor<4xi32>, %t: tensor<10xf32>) {
  // expected-error @+1 {{table must have rank 2 [V, D], got rank 1}}
  %h = k3.embed %ids, %t : (tensor<4xi32>, tensor<10xf32>) -> tensor<4x8xf32>
  return
}

// -----

// The result is [T, D].
func.func @out_rank(%ids: tensor<4xi32>, %t: tensor<10x8xf32>) {
  // expected-error @+1 {{out must have rank 2 [T, D], got rank 1}}
  %h = k3.embed %ids, %t : (tensor<4xi32>, tensor<10x8xf32>) -> tensor<32xf32>
  return
}

// -----

// One row per id.
func.func @out_tokens(%ids: tensor<4xi32>, %t: tensor<10x8xf32>) {
  // expected-error @+1 {{out dim 0 (T) is 5, expected 4 from ids}}
  %h = k3.embed %ids, %t : (tensor<4xi32>, tensor<10x8xf32>) -> tensor<5x8xf32>
  return
}

// -----

// Rows are as wide as the table.
func.func @out_width(%ids: tensor<?xi32>, %t: tensor<10x8xf32>) {
  // expected-error @+1 {{out dim 1 (D) is 16, expected 8 from table}}
  %h = k3.embed %ids, %t : (tensor<?xi32>, tensor<10x8xf32>) -> tensor<?x16xf32>
  return
}

// -----

// A scalar id is rejected, not read past its rank.
func.func @scalar_ids(%ids: tensor<i32>, %t: tensor<10x8xf32>) {
  // expected-error @+1 {{ids must have rank 1 [T], got rank 0}}
  %h = k3.embed %ids, %t : (tensor<i32>, tensor<10x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// With dynamic ids the table and the result still have to agree.
func.func @dynamic_ids(%ids: tensor<?xi32>, %t: tensor<10x8xf32>) {
  // expected-error @+1 {{out dim 1 (D) is 4, expected 8 from table}}
  %h = k3.embed %ids, %t : (tensor<?xi32>, tensor<10x8xf32>) -> tensor<?x4xf32>
  return
}
