//===- Safetensors.cpp - Memory-mapped safetensors shards -----------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "lib/Model/Safetensors.h"

#include "lib/Model/Text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using json = nlohmann::json;

namespace k3::model {

std::unique_ptr<MappedFile> MappedFile::open(const std::string &path,
                                             std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = printable(path, 4096) + ": cannot open: " + std::strerror(errno);
    return nullptr;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    error = printable(path, 4096) + ": cannot stat: " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  if (!S_ISREG(st.st_mode)) {
    error = printable(path, 4096) + ": not a regular file";
    ::close(fd);
    return nullptr;
  }
  std::unique_ptr<MappedFile> f(new MappedFile());
  f->length = static_cast<size_t>(st.st_size);
  if (f->length > 0) {
    void *p = mmap(nullptr, f->length, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      error = printable(path, 4096) + ": cannot map: " + std::strerror(errno);
      ::close(fd);
      return nullptr;
    }
    f->base = static_cast<const uint8_t *>(p);
  }
  ::close(fd); // the mapping keeps the file alive
  return f;
}

MappedFile::~MappedFile() {
  if (base)
    munmap(const_cast<uint8_t *>(base), length);
}

std::optional<std::vector<TensorView>>
parseSafetensors(const uint8_t *data, size_t size, const std::string &file,
                 std::string &error) {
  auto fail = [&](const std::string &msg) {
    error = printable(file, 4096) + ": " + msg;
    return std::nullopt;
  };
  if (size < 8)
    return fail("truncated: " + std::to_string(size) +
                " bytes, a safetensors file needs at least the 8-byte header "
                "length");
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = headerLen << 8 | data[i];
  if (headerLen > size - 8)
    return fail("truncated: header length " + std::to_string(headerLen) +
                " exceeds the " + std::to_string(size - 8) +
                " bytes after it");
  const char *hdr = reinterpret_cast<const char *>(data + 8);
  json header = json::parse(hdr, hdr + headerLen, nullptr,
                            /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    return fail("malformed header: not a JSON object");
  const uint8_t *base = data + 8 + headerLen;
  const uint64_t dataSize = size - 8 - headerLen;

  std::vector<TensorView> out;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__")
      continue;
    const std::string &name = it.key();
    const std::string shown = printable(name); // for messages: one line
    const json &e = it.value();
    auto field = [&](const char *k) -> const json * {
      auto f = e.is_object() ? e.find(k) : e.end();
      return f == e.end() ? nullptr : &*f;
    };
    const json *dt = field("dtype"), *shape = field("shape"),
               *offs = field("data_offsets");
    if (!dt || !dt->is_string() || !shape || !shape->is_array() || !offs ||
        !offs->is_array() || offs->size() != 2)
      return fail("malformed header entry for tensor '" + shown +
                  "': needs dtype (string), shape (array) and data_offsets "
                  "([begin, end])");
    TensorView t;
    t.name = name;
    t.file = file;
    if (!parseDType(dt->get<std::string>(), t.dtype))
      return fail("tensor '" + shown + "' has unsupported dtype '" +
                  printable(dt->get<std::string>()) + "' (k3 reads F32, BF16, F16, U8)");
    // Every product is checked: a header may claim absurd sizes, and a zero
    // dimension must not hide an out-of-range one.
    uint64_t elements = 1;
    bool tooLarge = false;
    for (const json &d : *shape) {
      if (!d.is_number_unsigned())
        return fail("malformed shape of tensor '" + shown +
                    "': dimensions must be non-negative integers");
      uint64_t v = d.get<uint64_t>();
      tooLarge |= v > (uint64_t(1) << 53) ||
                  __builtin_mul_overflow(elements, v, &elements);
      t.shape.push_back(static_cast<int64_t>(v));
    }
    uint64_t want = 0;
    tooLarge |= __builtin_mul_overflow(elements, uint64_t(dtypeBytes(t.dtype)), &want);
    if (tooLarge)
      return fail("tensor '" + shown + "' has an impossibly large shape");
    if (!(*offs)[0].is_number_unsigned() || !(*offs)[1].is_number_unsigned())
      return fail("malformed data_offsets of tensor '" + shown + "'");
    uint64_t begin = (*offs)[0].get<uint64_t>(), end = (*offs)[1].get<uint64_t>();
    if (begin > end || end > dataSize)
      return fail("tensor '" + shown + "' data_offsets [" +
                  std::to_string(begin) + ", " + std::to_string(end) +
                  "] exceed the " + std::to_string(dataSize) +
                  " data bytes (truncated file?)");
    if (end - begin != want)
      return fail("tensor '" + shown + "' holds " + std::to_string(end - begin) +
                  " bytes, but " + dtypeName(t.dtype) + " " +
                  formatShape(t.shape) + " needs " + std::to_string(want));
    t.data = base + begin;
    t.bytes = end - begin;
    out.push_back(std::move(t));
  }
  // The format lays tensors out without overlap (the reference reader
  // refuses it too); two names over one byte are a corrupt header.
  std::vector<const TensorView *> byOffset;
  for (const TensorView &t : out)
    if (t.bytes)
      byOffset.push_back(&t);
  std::sort(byOffset.begin(), byOffset.end(),
            [](const TensorView *a, const TensorView *b) { return a->data < b->data; });
  for (size_t i = 1; i < byOffset.size(); ++i)
    if (byOffset[i]->data < byOffset[i - 1]->data + byOffset[i - 1]->bytes)
      return fail("tensors '" + printable(byOffset[i - 1]->name) + "' and '" +
                  printable(byOffset[i]->name) +
                  "' overlap at data offset " + std::to_string(byOffset[i]->data - base));
  return out;
}

namespace {

/// Shard file names of `dir`: from the index when present (then `index`
/// maps each tensor to its file), else every `*.safetensors`, sorted.
std::optional<std::vector<std::string>>
shardNames(const std::string &dir, std::map<std::string, std::string> &index_,
           std::string &error) {
  std::string indexPath = dir + "/model.safetensors.index.json";
  std::ifstream in(indexPath, std::ios::binary);
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    json index = json::parse(ss.str(), nullptr, false);
    auto map = index.is_object() ? index.find("weight_map") : index.end();
    if (index.is_discarded() || map == index.end() || !map->is_object()) {
      error = indexPath + ": malformed: needs a \"weight_map\" object";
      return std::nullopt;
    }
    std::set<std::string> names;
    if (map->empty()) {
      error = indexPath + ": weight_map lists no tensors";
      return std::nullopt;
    }
    for (auto it = map->begin(); it != map->end(); ++it) {
      // Shards are files of the checkpoint directory itself.
      if (!it->is_string() || it->get<std::string>().empty() ||
          it->get<std::string>().find('/') != std::string::npos) {
        error = indexPath + ": weight_map entry '" + printable(it.key()) +
                "' must name a file in the checkpoint directory";
        return std::nullopt;
      }
      names.insert(it->get<std::string>());
      index_[it.key()] = it->get<std::string>();
    }
    return std::vector<std::string>(names.begin(), names.end());
  }
  std::vector<std::string> names;
  DIR *d = opendir(dir.c_str());
  if (!d) {
    error = dir + ": cannot open directory: " + std::strerror(errno);
    return std::nullopt;
  }
  while (dirent *e = readdir(d))
    if (endsWith(e->d_name, ".safetensors"))
      names.push_back(e->d_name);
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace

std::unique_ptr<WeightStore> WeightStore::open(const std::string &dir,
                                               std::string &error) {
  std::map<std::string, std::string> index;
  auto names = shardNames(dir, index, error);
  if (!names)
    return nullptr;
  std::unique_ptr<WeightStore> store(new WeightStore());
  for (const std::string &name : *names) {
    std::string path = dir + "/" + name;
    auto file = MappedFile::open(path, error);
    if (!file)
      return nullptr;
    auto views = parseSafetensors(file->data(), file->size(), path, error);
    if (!views)
      return nullptr;
    for (TensorView &v : *views) {
      if (store->byName.count(v.name)) {
        error = printable(path, 4096) + ": tensor '" + printable(v.name) + "' also appears in " +
                printable(store->byName[v.name].file, 4096);
        return nullptr;
      }
      std::string key = v.name;
      store->byName.emplace(std::move(key), std::move(v));
    }
    store->files.push_back(std::move(file));
  }
  // The index must describe the shards truthfully.
  for (const auto &[name, file] : index) {
    const TensorView *v = store->find(name);
    if (!v || v->file != dir + "/" + file) {
      error = dir + "/model.safetensors.index.json: lists tensor '" + printable(name) +
              "' in " + printable(file, 4096) + ", which does not hold it";
      return nullptr;
    }
  }
  return store;
}

const TensorView *WeightStore::find(const std::string &name) const {
  auto it = byName.find(name);
  return it == byName.end() ? nullptr : &it->second;
}

bool writeSafetensors(const std::string &path,
                      const std::vector<const OwnedTensor *> &tensors,
                      std::string &error) {
  json header = json::object();
  uint64_t offset = 0;
  for (const OwnedTensor *t : tensors) {
    header[t->name] = {{"dtype", dtypeName(t->dtype)},
                       {"shape", t->shape},
                       {"data_offsets", {offset, offset + t->bytes.size()}}};
    offset += t->bytes.size();
  }
  std::string text = header.dump();
  // Pad with spaces so the data starts 8-byte aligned (the format allows it).
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    error = path + ": cannot write: " + std::strerror(errno);
    return false;
  }
  uint64_t len = text.size();
  char lenBytes[8];
  for (int i = 0; i < 8; ++i)
    lenBytes[i] = static_cast<char>(len >> (8 * i));
  out.write(lenBytes, 8);
  out.write(text.data(), text.size());
  for (const OwnedTensor *t : tensors)
    out.write(reinterpret_cast<const char *>(t->bytes.data()), t->bytes.size());
  if (!out) {
    error = path + ": write failed";
    return false;
  }
  return true;
}

} // namespace k3::model
