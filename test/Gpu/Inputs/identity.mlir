// A GPU binary without a kernel: the host program alone (returns its input).
func.func @ident(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  return %x : tensor<?x3xf32>
}
