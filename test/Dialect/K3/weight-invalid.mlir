// RUN: k3-opt %s --split-input-file --verify-diagnostics

// A weight must name a checkpoint tensor.
func.func @empty_name() -> tensor<4xf32> {
  // expected-error @+1 {{'k3.weight' op weight name must not be empty}}
  %w = k3.weight "" : tensor<4xf32>
  return %w : tensor<4xf32>
}
