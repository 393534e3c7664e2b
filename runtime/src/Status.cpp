//===- Status.cpp - Runtime statuses --------------------------------------===//
//
// Part of k3.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Status.h"

extern "C" {

k3rt_status_code_t k3rt_status_code(k3rt_status_t status) {
  return status ? status->code : K3RT_OK;
}

const char *k3rt_status_message(k3rt_status_t status) {
  return status ? status->message.c_str() : "OK";
}

void k3rt_status_free(k3rt_status_t status) { delete status; }

} // extern "C"
