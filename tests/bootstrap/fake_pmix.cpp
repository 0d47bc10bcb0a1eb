// The fake PMIx client library (fake_pmix.hpp). Values a process puts are
// visible to its own gets after a fence, as with a real server's
// PMIX_COLLECT_DATA; every rank but the caller's holds nothing.
#include "tests/bootstrap/fake_pmix.hpp"

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace fake_pmix {
namespace {

job_t job_;
int initialized_ = 0;
std::map<std::string, std::string> pending_;    // put, not yet fenced
std::map<std::string, std::string> committed_;  // visible to get

pmix_value_t* new_value() {
  auto* value = static_cast<pmix_value_t*>(std::calloc(1, sizeof(pmix_value_t)));
  value->type = PMIX_UNDEF;
  return value;
}

}  // namespace

void set_job(const job_t& job) {
  job_ = job;
  initialized_ = 0;
  pending_.clear();
  committed_.clear();
}

int initialized() { return initialized_; }

}  // namespace fake_pmix

extern "C" {

pmix_status_t PMIx_Init(pmix_proc_t* proc, pmix_info_t*, size_t) {
  if (fake_pmix::job_.init != PMIX_SUCCESS) return fake_pmix::job_.init;
  PMIX_LOAD_PROCID(proc, "fake-pmix", fake_pmix::job_.rank);
  ++fake_pmix::initialized_;
  return PMIX_SUCCESS;
}

pmix_status_t PMIx_Finalize(const pmix_info_t*, size_t) {
  --fake_pmix::initialized_;
  return PMIX_SUCCESS;
}

const char* PMIx_Error_string(pmix_status_t status) {
  switch (status) {
    case PMIX_SUCCESS: return "SUCCESS";
    case PMIX_ERR_NOT_FOUND: return "NOT-FOUND";
    case PMIX_ERR_UNREACH: return "UNREACHABLE";
    default: return "ERROR";
  }
}

pmix_status_t PMIx_Put(pmix_scope_t, const char* key, pmix_value_t* value) {
  if (value->type != PMIX_BYTE_OBJECT) return PMIX_ERR_BAD_PARAM;
  fake_pmix::pending_[key].assign(value->data.bo.bytes, value->data.bo.size);
  return PMIX_SUCCESS;
}

pmix_status_t PMIx_Commit(void) { return PMIX_SUCCESS; }

pmix_status_t PMIx_Fence(const pmix_proc_t*, size_t, const pmix_info_t*, size_t) {
  for (const auto& [key, bytes] : fake_pmix::pending_) fake_pmix::committed_[key] = bytes;
  fake_pmix::pending_.clear();
  return PMIX_SUCCESS;
}

pmix_status_t PMIx_Get(const pmix_proc_t* proc, const char key[], const pmix_info_t*, size_t,
                       pmix_value_t** out) {
  if (std::strcmp(key, PMIX_JOB_SIZE) == 0) {
    if (proc->rank != PMIX_RANK_WILDCARD) return PMIX_ERR_NOT_FOUND;
    if (fake_pmix::job_.size_status != PMIX_SUCCESS) return fake_pmix::job_.size_status;
    pmix_value_t* value = fake_pmix::new_value();
    value->type = fake_pmix::job_.size_type;
    switch (fake_pmix::job_.size_type) {
      case PMIX_UINT32: value->data.uint32 = static_cast<uint32_t>(fake_pmix::job_.size); break;
      case PMIX_UINT64: value->data.uint64 = fake_pmix::job_.size; break;
      default: value->data.int32 = static_cast<int32_t>(fake_pmix::job_.size); break;
    }
    *out = value;
    return PMIX_SUCCESS;
  }
  const auto found = fake_pmix::committed_.find(key);
  if (proc->rank != fake_pmix::job_.rank || found == fake_pmix::committed_.end()) return PMIX_ERR_NOT_FOUND;
  pmix_value_t* value = fake_pmix::new_value();
  value->type = PMIX_BYTE_OBJECT;
  value->data.bo.size = found->second.size();
  value->data.bo.bytes = static_cast<char*>(std::malloc(found->second.size() + 1));
  std::memcpy(value->data.bo.bytes, found->second.data(), found->second.size());
  *out = value;
  return PMIX_SUCCESS;
}

void PMIx_Value_destruct(pmix_value_t* value) {
  if (value->type == PMIX_BYTE_OBJECT) std::free(value->data.bo.bytes);
  value->type = PMIX_UNDEF;
}

pmix_status_t PMIx_Info_load(pmix_info_t* info, const char* key, const void* data,
                             pmix_data_type_t type) {
  PMIX_LOAD_KEY(info->key, key);
  info->value.type = type;
  if (type == PMIX_BOOL) info->value.data.flag = *static_cast<const bool*>(data);
  return PMIX_SUCCESS;
}

}  // extern "C"
