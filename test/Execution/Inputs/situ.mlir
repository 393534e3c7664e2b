// An op-level module for k3-run --function: no weights, tensors in and out.
func.func @situ(%g: tensor<?x3xf32>, %u: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %y = k3.situ_glu %g, %u {beta1 = 4.0 : f32, beta2 = 25.0 : f32} : tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}
