// A transposed weight: [K, N] instead of [N, K].
func.func @bad(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) -> tensor<2x8xf32> {
  %y = k3.linear %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}
