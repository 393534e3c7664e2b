// RUN: k3-opt %s --split-input-file --verify-diagnostics

func.func @not_doubled(%b: tensor<8x16xi8>) -> tensor<8x16xf4E2M1FN> {
  // expected-error @+1 {{'k3.unpack_e2m1' op codes dimension 1 must be 32 for bytes of size 16 (two codes per byte), got 16}}
  %c = k3.unpack_e2m1 %b : tensor<8x16xi8> -> tensor<8x16xf4E2M1FN>
  return %c : tensor<8x16xf4E2M1FN>
}

// -----

func.func @rows_differ(%b: tensor<8x16xi8>) -> tensor<4x32xf4E2M1FN> {
  // expected-error @+1 {{'k3.unpack_e2m1' op codes dimension 0 must be 8 for bytes of size 8, got 4}}
  %c = k3.unpack_e2m1 %b : tensor<8x16xi8> -> tensor<4x32xf4E2M1FN>
  return %c : tensor<4x32xf4E2M1FN>
}

// -----

func.func @rank(%b: tensor<8x16xi8>) -> tensor<256xf4E2M1FN> {
  // expected-error @+1 {{'k3.unpack_e2m1' op bytes and codes must have the same non-zero rank, got 2 and 1}}
  %c = k3.unpack_e2m1 %b : tensor<8x16xi8> -> tensor<256xf4E2M1FN>
  return %c : tensor<256xf4E2M1FN>
}

// -----

func.func @dynamic_last(%b: tensor<8x?xi8>) -> tensor<8x?xf4E2M1FN> {
  // expected-error @+1 {{'k3.unpack_e2m1' op needs a static last dimension}}
  %c = k3.unpack_e2m1 %b : tensor<8x?xi8> -> tensor<8x?xf4E2M1FN>
  return %c : tensor<8x?xf4E2M1FN>
}

// -----

func.func @not_bytes(%b: tensor<8x16xi16>) -> tensor<8x32xf4E2M1FN> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 8-bit signless integer values}}
  %c = k3.unpack_e2m1 %b : tensor<8x16xi16> -> tensor<8x32xf4E2M1FN>
  return %c : tensor<8x32xf4E2M1FN>
}
