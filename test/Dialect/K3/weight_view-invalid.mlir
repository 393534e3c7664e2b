// RUN: k3-opt %s --split-input-file --verify-diagnostics

func.func @past_the_end(%p: tensor<96xi8>) -> tensor<4x4xbf16> {
  // expected-error @+1 {{'k3.weight_view' op its 32 bytes at offset 80 lie outside the 96-byte pack}}
  %w = k3.weight_view %p[80] : tensor<96xi8> -> tensor<4x4xbf16>
  return %w : tensor<4x4xbf16>
}

// -----

func.func @misaligned(%p: tensor<96xi8>) -> tensor<4xf32> {
  // expected-error @+1 {{'k3.weight_view' op offset 2 must be a non-negative multiple of the 4-byte element}}
  %w = k3.weight_view %p[2] : tensor<96xi8> -> tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

func.func @dynamic(%p: tensor<96xi8>) -> tensor<?xf32> {
  // expected-error @+1 {{'k3.weight_view' op result must have a static shape and whole-byte elements, got 'tensor<?xf32>'}}
  %w = k3.weight_view %p[0] : tensor<96xi8> -> tensor<?xf32>
  return %w : tensor<?xf32>
}

// -----

func.func @sub_byte(%p: tensor<96xi8>) -> tensor<8xi1> {
  // expected-error @+1 {{'k3.weight_view' op result must have a static shape and whole-byte elements, got 'tensor<8xi1>'}}
  %w = k3.weight_view %p[0] : tensor<96xi8> -> tensor<8xi1>
  return %w : tensor<8xi1>
}

// -----

func.func @dynamic_pack(%p: tensor<?xi8>) -> tensor<4xf32> {
  // expected-error @+1 {{'k3.weight_view' op pack must be a static 1-D tensor of bytes, got 'tensor<?xi8>'}}
  %w = k3.weight_view %p[0] : tensor<?xi8> -> tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

func.func @huge(%p: tensor<96xi8>) -> tensor<4611686018427387904x4xf32> {
  // expected-error @+1 {{'k3.weight_view' op result must have a static shape and whole-byte elements}}
  %w = k3.weight_view %p[0] : tensor<96xi8> -> tensor<4611686018427387904x4xf32>
  return %w : tensor<4611686018427387904x4xf32>
}

// -----

func.func @not_bytes(%p: tensor<24xi32>) -> tensor<4xf32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 8-bit signless integer values}}
  %w = k3.weight_view %p[0] : tensor<24xi32> -> tensor<4xf32>
  return %w : tensor<4xf32>
}
