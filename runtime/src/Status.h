//===- Status.h - Runtime statuses ------------------------------*- C++ -*-===//
//
// Part of k3. The C++ side of k3rt_status_t: a code and one line of text.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_SRC_STATUS_H
#define RUNTIME_SRC_STATUS_H

#include "runtime/include/k3rt/k3rt.h"

#include <string>

struct k3rt_status_s {
  k3rt_status_code_t code;
  std::string message;
};

namespace k3rt {

/// A failed status (never NULL).
inline k3rt_status_t makeStatus(k3rt_status_code_t code, std::string message) {
  return new k3rt_status_s{code, std::move(message)};
}

/// The message of a failed `status`, which it frees.
inline std::string takeMessage(k3rt_status_t status) {
  std::string m = k3rt_status_message(status);
  k3rt_status_free(status);
  return m;
}

} // namespace k3rt

#endif // RUNTIME_SRC_STATUS_H
