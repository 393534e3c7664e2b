//===- RegisterAll.cpp - Registration shared by every k3 tool -------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "lib/Registration/RegisterAll.h"

#include "dialects/K3/K3Dialect.h"
#include "dialects/K3/K3Sharding.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/Passes.h"

void mlir::k3::registerK3Dialects(DialectRegistry &registry) {
  // sharding-propagation and shard-partition for a grid's binary; first,
  // so that its tensor.empty model is the one kept.
  registerK3ShardingModels(registry);
  // Every upstream dialect and its interface models (bufferization,
  // LLVM translation, ...): the pipelines lower through many of them.
  registerAllDialects(registry);
  registerAllExtensions(registry);
  // gpu-module-to-binary translates each gpu.module to LLVM IR (NVVM).
  registerAllToLLVMIRTranslations(registry);
  registry.insert<K3Dialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, func::FuncDialect,
                  gpu::GPUDialect, LLVM::LLVMDialect, linalg::LinalgDialect,
                  math::MathDialect, memref::MemRefDialect,
                  nvgpu::NVGPUDialect, NVVM::NVVMDialect, scf::SCFDialect,
                  tensor::TensorDialect, vector::VectorDialect>();
}

void mlir::k3::registerK3Passes() {
  // Pass registration is global; guard so several tools/tests may call it.
  static bool registered = [] {
    registerAllPasses();
    registerK3TransformsPasses();
    registerK3Pipelines();
    registerK3GpuPipeline();
    return true;
  }();
  (void)registered;
}
