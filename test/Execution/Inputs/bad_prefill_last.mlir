// A model-shaped module whose prefill_last returns every row's logits
// (prefill-last.test: the runtime refuses it).
func.func @prefill(%ids: tensor<?xi32>, %s: tensor<4xf32>) -> (tensor<?x8xf32>, tensor<4xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %ids, %c0 : tensor<?xi32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %l = linalg.fill ins(%z : f32) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %l, %s : tensor<?x8xf32>, tensor<4xf32>
}
func.func @prefill_last(%ids: tensor<?xi32>, %s: tensor<4xf32>) -> (tensor<?x8xf32>, tensor<4xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %ids, %c0 : tensor<?xi32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %l = linalg.fill ins(%z : f32) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %l, %s : tensor<?x8xf32>, tensor<4xf32>
}
func.func @decode(%ids: tensor<1xi32>, %s: tensor<4xf32>) -> (tensor<1x8xf32>, tensor<4xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8xf32>
  %l = linalg.fill ins(%z : f32) outs(%e : tensor<1x8xf32>) -> tensor<1x8xf32>
  return %l, %s : tensor<1x8xf32>, tensor<4xf32>
}
