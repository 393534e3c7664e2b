//===- SafetensorsFuzzer.cpp - one safetensors file from memory -----------===//
//
// Part of k3. Invariants: parseSafetensors never reads out of bounds (the
// input is an exact-size heap copy, so ASan sees one byte past it); a
// refusal is one line; every tensor it accepts lies inside the data region,
// holds exactly its shape's bytes, and overlaps no other.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/Fuzz.h"
#include "lib/Model/Safetensors.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int k3fuzz::testOneInput(const uint8_t *bytes, size_t size) {
  std::vector<uint8_t> copy(bytes, bytes + size);
  std::string error;
  auto tensors = k3::model::parseSafetensors(copy.data(), copy.size(), "f.safetensors", error);
  if (!tensors) {
    k3fuzz::requireOneLine(error);
    return 0;
  }
  std::vector<std::pair<const uint8_t *, const uint8_t *>> ranges;
  for (const k3::model::TensorView &t : *tensors) {
    int64_t want = k3::model::numElements(t.shape) * k3::model::dtypeBytes(t.dtype);
    const uint8_t *end = copy.data() + size;
    if (t.data < copy.data() || t.data > end || t.bytes > size_t(end - t.data) ||
        int64_t(t.bytes) != want)
      k3fuzz::broken("a tensor lies in the file and holds its shape's bytes", t.name);
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < t.bytes; i += 61)
      sink = sink ^ t.data[i]; // touched: ASan checks each
    if (t.bytes)
      ranges.push_back({t.data, t.data + t.bytes});
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      k3fuzz::broken("tensors do not overlap", "");
  return 0;
}
