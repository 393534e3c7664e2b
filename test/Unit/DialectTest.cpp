//===- DialectTest.cpp - C++ API tests of the K3 dialect ------------------===//
//
// Part of k3. Builds K3 ops through the C++ builders the importer will use,
// and checks verification, textual and bytecode round trips and the shared
// registration.
//
//===----------------------------------------------------------------------===//

#include "dialects/K3/K3Ops.h"
#include "lib/Registration/RegisterAll.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::k3;

namespace {

class K3DialectTest : public ::testing::Test {
protected:
  K3DialectTest() {
    DialectRegistry registry;
    registerK3Dialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }

  /// A module holding one function whose body the test fills.
  std::pair<OwningOpRef<ModuleOp>, OpBuilder>
  makeFunc(ArrayRef<Type> inputs) {
    OpBuilder b(&ctx);
    OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
    b.setInsertionPointToEnd(module->getBody());
    auto fn = func::FuncOp::create(b, b.getUnknownLoc(), "f",
                                   b.getFunctionType(inputs, {}));
    b.setInsertionPointToEnd(fn.addEntryBlock());
    return {std::move(module), b};
  }

  static std::string print(Operation *op) {
    std::string s;
    llvm::raw_string_ostream os(s);
    op->print(os);
    return s;
  }

  MLIRContext ctx;
};

RankedTensorType tensor(ArrayRef<int64_t> shape, Type elt) {
  return RankedTensorType::get(shape, elt);
}

/// The router built through its C++ builder verifies, prints in the custom
/// form and parses back to the same text.
TEST_F(K3DialectTest, RouterBuildsAndRoundTrips) {
  Builder b(&ctx);
  auto x = tensor({ShapedType::kDynamic, 64}, b.getBF16Type());
  auto w = tensor({8, 64}, b.getBF16Type());
  auto bias = tensor({8}, b.getF32Type());
  auto [module, ob] = makeFunc({x, w, bias});
  auto *block = ob.getInsertionBlock();
  auto idxType = tensor({ShapedType::kDynamic, 2}, b.getI32Type());
  auto wType = tensor({ShapedType::kDynamic, 2}, b.getF32Type());
  RouterOp::create(ob, ob.getUnknownLoc(), idxType, wType,
                   block->getArgument(0), block->getArgument(1),
                   block->getArgument(2), /*top_k=*/uint64_t{2},
                   /*renormalize=*/true, /*scaling=*/llvm::APFloat(1.0f));
  func::ReturnOp::create(ob, ob.getUnknownLoc());
  ASSERT_TRUE(succeeded(verify(*module)));

  std::string text = print(*module);
  EXPECT_NE(text.find("k3.router %arg0, %arg1 bias(%arg2) top_k = 2 "
                      "renormalize scaling = 1.000000e+00"),
            std::string::npos)
      << text;
  OwningOpRef<ModuleOp> parsed = parseSourceString<ModuleOp>(text, &ctx);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(print(*parsed), text);
}

/// A verifier failure reports the sizes that disagree, once.
TEST_F(K3DialectTest, RouterTopKExceedingExpertsIsRejected) {
  Builder b(&ctx);
  auto x = tensor({4, 64}, b.getF32Type());
  auto w = tensor({8, 64}, b.getF32Type());
  auto [module, ob] = makeFunc({x, w});
  auto *block = ob.getInsertionBlock();
  RouterOp::create(ob, ob.getUnknownLoc(), tensor({4, 9}, b.getI32Type()),
                   tensor({4, 9}, b.getF32Type()), block->getArgument(0),
                   block->getArgument(1), Value(), /*top_k=*/uint64_t{9},
                   /*renormalize=*/false, /*scaling=*/llvm::APFloat(1.0f));
  func::ReturnOp::create(ob, ob.getUnknownLoc());

  std::vector<std::string> errors;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    errors.push_back(d.str());
    return success();
  });
  EXPECT_TRUE(failed(verify(*module)));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "'k3.router' op top_k 9 exceeds the 8 experts");
}

/// MXFP4 weights use the builtin f4E2M1FN / f8E8M0FNU types, and the module
/// survives the bytecode writer and reader unchanged.
TEST_F(K3DialectTest, Mxfp4LinearBytecodeRoundTrip) {
  const char *src = R"mlir(
    func.func @f(%x: tensor<?x64xbf16>, %w: tensor<128x64xf4E2M1FN>,
                 %s: tensor<128x2xf8E8M0FNU>) -> tensor<?x128xbf16> {
      %y = k3.linear %x, %w scales(%s)
          : (tensor<?x64xbf16>, tensor<128x64xf4E2M1FN>, tensor<128x2xf8E8M0FNU>)
          -> tensor<?x128xbf16>
      return %y : tensor<?x128xbf16>
    })mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(src, &ctx);
  ASSERT_TRUE(module);
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  ASSERT_TRUE(succeeded(writeBytecodeToFile(*module, os)));
  OwningOpRef<ModuleOp> back = parseSourceString<ModuleOp>(bytes, &ctx);
  ASSERT_TRUE(back);
  EXPECT_EQ(print(*back), print(*module));
}

/// Every tool calls registerK3Passes(); calling it twice must be harmless and
/// leave the K3 passes and the upstream generic ones registered.
TEST(K3Registration, PassesRegisteredOnceAndFound) {
  registerK3Passes();
  registerK3Passes();
  EXPECT_NE(PassInfo::lookup("k3-decompose-mlp"), nullptr);
  EXPECT_NE(PassInfo::lookup("canonicalize"), nullptr);
  EXPECT_EQ(PassInfo::lookup("k3-no-such-pass"), nullptr);
}

} // namespace
