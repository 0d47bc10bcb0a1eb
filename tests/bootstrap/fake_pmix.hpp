// A fake of the PMIx client library (the nine calls bootstrap_pmix.cpp
// makes), linked into a test in place of libpmix: a one-process "server"
// whose answers a test sets. It lets the PMIx bootstrap's checks of what a
// server says (a job size past int, a value of the wrong type, a failed
// call) run without a launcher, in every configuration.
//
// Thread safety: none; one test thread at a time.
#pragma once

#include <pmix.h>

#include <cstdint>

namespace fake_pmix {

// What the fake server answers. Reset by set_job().
struct job_t {
  pmix_status_t init = PMIX_SUCCESS;  // PMIx_Init's result
  pmix_rank_t rank = 0;               // the caller's rank
  // PMIX_JOB_SIZE's answer: its status, type and value (the value is stored
  // in the member of pmix_value_t's union that the type names).
  pmix_status_t size_status = PMIX_SUCCESS;
  pmix_data_type_t size_type = PMIX_UINT32;
  std::uint64_t size = 1;
};

// Sets the answers and forgets every value put so far.
void set_job(const job_t& job);
// PMIx_Init calls minus PMIx_Finalize calls since set_job().
int initialized();

}  // namespace fake_pmix
