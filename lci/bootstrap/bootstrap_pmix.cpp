// The PMIx backend (compiled only with --config=pmix): a client of the PMIx
// server that launched the process (mpirun.openmpi, srun --mpi=pmix).
//   rank, size  PMIx_Init's process id; PMIX_JOB_SIZE of the job
//   put         PMIx_Put(PMIX_GLOBAL) of a byte object under "lci.<key>"
//               ("pmix." keys are reserved by the standard)
//   fence       PMIx_Commit, then PMIx_Fence with PMIX_COLLECT_DATA, so every
//               rank holds every value locally afterwards
//   get         PMIx_Get with PMIX_OPTIONAL: look only in the local copy
//               the fence brought, so an absent key fails at once instead
//               of waiting for a put that may never come
//   barrier     PMIx_Fence without data
#include <pmix.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "lci/bootstrap/detail/backends.hpp"
#include "lci/util/assert.hpp"

namespace lci::bootstrap::detail {

namespace {

[[noreturn]] void throw_pmix(const std::string& call, pmix_status_t status) {
  throw std::runtime_error("bootstrap pmix: " + call +
                           " failed: " + PMIx_Error_string(status));
}

// A pmix_info_t holding one bool attribute, destructed on scope exit.
class bool_info_t {
 public:
  explicit bool_info_t(const char* key) {
    PMIX_INFO_CONSTRUCT(&info_);
    const bool flag = true;
    PMIX_INFO_LOAD(&info_, key, &flag, PMIX_BOOL);
  }
  ~bool_info_t() { PMIX_INFO_DESTRUCT(&info_); }
  bool_info_t(const bool_info_t&) = delete;
  bool_info_t& operator=(const bool_info_t&) = delete;
  const pmix_info_t* get() const { return &info_; }

 private:
  pmix_info_t info_;
};

class pmix_bootstrap_t final : public bootstrap_t {
 public:
  pmix_bootstrap_t() {
    const pmix_status_t status = PMIx_Init(&proc_me_, nullptr, 0);
    if (status != PMIX_SUCCESS) {
      const char* pmix_rank = std::getenv("PMIX_RANK");
      const char* pmix_namespace = std::getenv("PMIX_NAMESPACE");
      throw std::runtime_error(
          std::string("bootstrap pmix: PMIx_Init failed: ") +
          PMIx_Error_string(status) +
          " (PMIX_RANK=" + (pmix_rank ? pmix_rank : "(unset)") +
          " PMIX_NAMESPACE=" + (pmix_namespace ? pmix_namespace : "(unset)") +
          ")");
    }
    try {
      rank_n_ = read_job_size();
    } catch (...) {
      PMIx_Finalize(nullptr, 0);
      throw;
    }
    LCI_ASSERT(rank_me() < rank_n_, "PMIx rank outside the job");
  }

  ~pmix_bootstrap_t() override {
    const pmix_status_t status = PMIx_Finalize(nullptr, 0);
    if (status != PMIX_SUCCESS) {
      std::fprintf(stderr, "lci bootstrap pmix: PMIx_Finalize failed: %s\n",
                   PMIx_Error_string(status));
    }
  }

  bootstrap_kind_t kind() const override { return bootstrap_kind_t::pmix; }
  int rank_me() const override { return static_cast<int>(proc_me_.rank); }
  int rank_n() const override { return rank_n_; }

  void put(const std::string& key, const void* value,
           std::size_t size) override {
    check_key(key);
    check_value_size(size);
    pmix_value_t pmix_value;
    PMIX_VALUE_CONSTRUCT(&pmix_value);
    pmix_value.type = PMIX_BYTE_OBJECT;
    // PMIx_Put copies the bytes; pmix_value only borrows them, so it is
    // not destructed (that would free the caller's buffer).
    pmix_value.data.bo.bytes =
        const_cast<char*>(static_cast<const char*>(value));
    pmix_value.data.bo.size = size;
    const pmix_status_t status =
        PMIx_Put(PMIX_GLOBAL, pmix_key(key).c_str(), &pmix_value);
    if (status != PMIX_SUCCESS) throw_pmix("PMIx_Put of '" + key + "'", status);
  }

  void fence() override {
    pmix_status_t status = PMIx_Commit();
    if (status != PMIX_SUCCESS) throw_pmix("PMIx_Commit", status);
    const bool_info_t collect(PMIX_COLLECT_DATA);
    status = PMIx_Fence(nullptr, 0, collect.get(), 1);
    if (status != PMIX_SUCCESS) throw_pmix("PMIx_Fence", status);
  }

  std::vector<std::byte> get(int rank, const std::string& key) override {
    check_key(key);
    check_rank(rank, rank_n_);
    pmix_proc_t proc;
    PMIX_LOAD_PROCID(&proc, proc_me_.nspace, static_cast<pmix_rank_t>(rank));
    const bool_info_t optional(PMIX_OPTIONAL);
    pmix_value_t* value = nullptr;
    const pmix_status_t status =
        PMIx_Get(&proc, pmix_key(key).c_str(), optional.get(), 1, &value);
    if (status == PMIX_ERR_NOT_FOUND) {
      throw std::runtime_error("bootstrap pmix: rank " + std::to_string(rank) +
                               " put no value under key '" + key +
                               "' before the last fence");
    }
    if (status != PMIX_SUCCESS) {
      throw_pmix("PMIx_Get of '" + key + "' from rank " + std::to_string(rank),
                 status);
    }
    std::vector<std::byte> bytes;
    const bool is_bytes = value->type == PMIX_BYTE_OBJECT;
    if (is_bytes) {
      const auto* first =
          reinterpret_cast<const std::byte*>(value->data.bo.bytes);
      bytes.assign(first, first + value->data.bo.size);
    }
    PMIX_VALUE_RELEASE(value);
    if (!is_bytes) {
      throw std::runtime_error("bootstrap pmix: key '" + key + "' of rank " +
                               std::to_string(rank) + " holds no byte object");
    }
    return bytes;
  }

  void barrier() override {
    const pmix_status_t status = PMIx_Fence(nullptr, 0, nullptr, 0);
    if (status != PMIX_SUCCESS) throw_pmix("PMIx_Fence (barrier)", status);
  }

 private:
  static std::string pmix_key(const std::string& key) { return "lci." + key; }

  int read_job_size() const {
    pmix_proc_t job;
    PMIX_LOAD_PROCID(&job, proc_me_.nspace, PMIX_RANK_WILDCARD);
    pmix_value_t* value = nullptr;
    const pmix_status_t status =
        PMIx_Get(&job, PMIX_JOB_SIZE, nullptr, 0, &value);
    if (status != PMIX_SUCCESS) throw_pmix("PMIx_Get(PMIX_JOB_SIZE)", status);
    const bool is_uint32 = value->type == PMIX_UINT32;
    const std::uint32_t size = is_uint32 ? value->data.uint32 : 0;
    PMIX_VALUE_RELEASE(value);
    if (!is_uint32 || size == 0 || size > 0x7fffffffu) {
      throw std::runtime_error("bootstrap pmix: unusable PMIX_JOB_SIZE");
    }
    return static_cast<int>(size);
  }

  pmix_proc_t proc_me_;
  int rank_n_ = 0;
};

}  // namespace

std::unique_ptr<bootstrap_t> open_pmix() {
  return std::make_unique<pmix_bootstrap_t>();
}

}  // namespace lci::bootstrap::detail
