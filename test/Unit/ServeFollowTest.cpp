//===- ServeFollowTest.cpp - The engine steps of a grid's rank 0 ----------===//
//
// Part of k3. What rank 0 of a served grid sends the other ranks before each
// engine step (tools/k3-serve/Follow.h): every field of a request survives
// the trip exactly, framing and malformed messages are refused with a line.
// The ranks themselves are tested under mpirun (test/Serve/grid.test.mjs).
//
//===----------------------------------------------------------------------===//

#include "tools/k3-serve/Follow.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

using namespace k3serve;

namespace {

k3rt::RequestSpec sampleSpec() {
  k3rt::RequestSpec s;
  s.id = "cmpl-\xff\x01"; // not UTF-8: replaced, never a failure
  s.prompt = {1, 2, 3, 511};
  s.maxNewTokens = 1234567890123;
  s.salt = std::numeric_limits<uint64_t>::max();
  s.stop = {482};
  s.draft = {7, 8};
  s.sampling.temperature = 0.1f; // not a short decimal in binary
  s.sampling.topK = 40;
  s.sampling.topP = 0.95f;
  s.sampling.seed = 0x9E3779B97F4A7C15ull;
  return s;
}

TEST(ServeFollow, RoundTripIsExact) {
  StepMessage m;
  m.admitted.emplace_back(17, sampleSpec());
  m.admitted.emplace_back(18, k3rt::RequestSpec());
  m.cancelled = {3, 17};
  m.step = true;
  std::string bytes = encodeStep(m);
  StepMessage back;
  std::string error;
  ASSERT_TRUE(decodeStep(bytes, back, error)) << error;
  ASSERT_EQ(back.admitted.size(), 2u);
  const k3rt::RequestSpec &a = sampleSpec(), &b = back.admitted[0].second;
  EXPECT_EQ(back.admitted[0].first, 17u);
  EXPECT_EQ(b.id, "cmpl-\xef\xbf\xbd\x01");
  EXPECT_EQ(b.prompt, a.prompt);
  EXPECT_EQ(b.maxNewTokens, a.maxNewTokens);
  EXPECT_EQ(b.salt, a.salt);
  EXPECT_EQ(b.stop, a.stop);
  EXPECT_EQ(b.draft, a.draft);
  EXPECT_EQ(std::memcmp(&b.sampling.temperature, &a.sampling.temperature, sizeof(float)), 0);
  EXPECT_EQ(b.sampling.topK, a.sampling.topK);
  EXPECT_EQ(std::memcmp(&b.sampling.topP, &a.sampling.topP, sizeof(float)), 0);
  EXPECT_EQ(b.sampling.seed, a.sampling.seed);
  EXPECT_EQ(back.admitted[1].first, 18u);
  EXPECT_EQ(back.cancelled, (std::vector<k3rt::RequestHandle>{3, 17}));
  EXPECT_TRUE(back.step);
  EXPECT_FALSE(back.stop);
}

TEST(ServeFollow, HeartbeatIsEmptyAndStopIsNot) {
  EXPECT_EQ(encodeStep(StepMessage()), "");
  StepMessage back;
  std::string error;
  back.step = true;
  ASSERT_TRUE(decodeStep("", back, error));
  EXPECT_TRUE(back.empty());
  StepMessage stop;
  stop.stop = true;
  ASSERT_TRUE(decodeStep(encodeStep(stop), back, error)) << error;
  EXPECT_TRUE(back.stop);
  EXPECT_FALSE(back.step);
}

TEST(ServeFollow, MalformedMessagesAreRefused) {
  StepMessage back;
  for (const char *bytes : {"[1]", "{\"admitted\": [{\"handle\": 1}]}",
                            "{\"admitted\": [{\"handle\": \"x\"}]}", "{\"cancelled\": 3}", "{"}) {
    std::string error;
    EXPECT_FALSE(decodeStep(bytes, back, error)) << bytes;
    EXPECT_NE(error.find("rank 0's engine step"), std::string::npos) << error;
  }
}

TEST(ServeFollow, DigestSeesOutcomesNotHandles) {
  k3rt::RequestEvent a;
  a.handle = 1;
  a.tokens = {5, 6};
  std::vector<k3rt::RequestEvent> one{a};
  a.handle = 7; // a follower's own handle: the same outcome
  std::vector<k3rt::RequestEvent> same{a};
  EXPECT_EQ(stepDigest(one), stepDigest(same));
  a.tokens = {5, 7};
  EXPECT_NE(stepDigest(one), stepDigest({a}));
  a.tokens = {5, 6};
  a.done = true;
  EXPECT_NE(stepDigest(one), stepDigest({a}));
  EXPECT_NE(stepDigest(one), stepDigest({}));
}

/// A group of one that remembers what was broadcast and plays it back:
/// the framing of sendStep / receiveStep without MPI.
class Loopback : public k3rt::comm::Communicator {
public:
  std::vector<std::vector<uint8_t>> sent;
  size_t next = 0;
  k3rt_status_t allReduce(void *, size_t, k3rt::comm::DType, k3rt::comm::Reduce) override {
    return nullptr;
  }
  k3rt_status_t allGather(const void *, void *, size_t, k3rt::comm::DType) override {
    return nullptr;
  }
  k3rt_status_t reduceScatter(const void *, void *, size_t, k3rt::comm::DType,
                              k3rt::comm::Reduce) override {
    return nullptr;
  }
  k3rt_status_t allToAll(const void *, const size_t *, void *, const size_t *,
                         k3rt::comm::DType) override {
    return nullptr;
  }
  k3rt_status_t broadcast(void *buf, size_t count, k3rt::comm::DType dtype, int) override {
    size_t bytes = count * k3rt::comm::dtypeBytes(dtype);
    if (receiving) {
      EXPECT_LT(next, sent.size());
      EXPECT_EQ(sent[next].size(), bytes);
      std::memcpy(buf, sent[next++].data(), bytes);
    } else {
      auto *p = static_cast<const uint8_t *>(buf);
      sent.emplace_back(p, p + bytes);
    }
    return nullptr;
  }
  bool receiving = false;
};

TEST(ServeFollow, FramingIsALengthThenTheBytes) {
  Loopback world;
  StepMessage m;
  m.admitted.emplace_back(5, sampleSpec());
  ASSERT_EQ(sendStep(world, m), nullptr);
  ASSERT_EQ(sendStep(world, StepMessage()), nullptr); // a heartbeat: the length only
  ASSERT_EQ(world.sent.size(), 3u);
  EXPECT_EQ(world.sent[2].size(), sizeof(int64_t));
  world.receiving = true;
  StepMessage back;
  ASSERT_EQ(receiveStep(world, back), nullptr);
  ASSERT_EQ(back.admitted.size(), 1u);
  EXPECT_EQ(back.admitted[0].second.prompt, sampleSpec().prompt);
  ASSERT_EQ(receiveStep(world, back), nullptr);
  EXPECT_TRUE(back.empty());

  // A length no rank 0 sends is refused before anything is allocated.
  Loopback bad;
  int64_t huge = int64_t(1) << 40;
  bad.broadcast(&huge, 1, k3rt::comm::DType::I64, 0);
  bad.receiving = true;
  k3rt_status_t s = receiveStep(bad, back);
  ASSERT_NE(s, nullptr);
  EXPECT_NE(std::string(k3rt_status_message(s)).find("1099511627776 bytes"), std::string::npos);
  k3rt_status_free(s);
}

} // namespace
