//===- K3Sharding.h - Sharding models of the k3 ops -------------*- C++ -*-===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_K3_K3SHARDING_H
#define DIALECTS_K3_K3SHARDING_H

namespace mlir {
class DialectRegistry;
namespace k3 {

/// Attaches upstream's `shard::ShardingInterface` to the k3 ops an import
/// holds, and to the upstream tensor and arith ops the importer builds
/// models from that upstream leaves without one, so that
/// `sharding-propagation` and `shard-partition` split a model (issue 28).
/// Register it before upstream's extensions: its tensor.empty model
/// replaces upstream's (the first model attached to an op is kept).
void registerK3ShardingModels(DialectRegistry &registry);

} // namespace k3
} // namespace mlir

#endif // DIALECTS_K3_K3SHARDING_H
