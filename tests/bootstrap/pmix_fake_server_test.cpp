// The PMIx bootstrap (lci/bootstrap/bootstrap_pmix.cpp) against a fake
// PMIx library (fake_pmix.hpp): what it makes of a server's answers that a
// real launcher here cannot give, a job of 2^31 - 1 ranks (the largest an
// int rank count holds) above all. The launch tests (launch_mpirun_pmix_*)
// run it against a real server.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "lci/bootstrap/detail/backends.hpp"
#include "tests/bootstrap/fake_pmix.hpp"

namespace {

using lci::bootstrap::detail::open_pmix;

void expect_open_refused(const fake_pmix::job_t& job, const std::string& reason) {
  fake_pmix::set_job(job);
  try {
    (void)open_pmix();
    ADD_FAILURE() << "opened; expected: " << reason;
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(reason), std::string::npos) << error.what();
  }
  EXPECT_EQ(fake_pmix::initialized(), 0) << "a refused open left PMIx initialized";
}

TEST(PmixFakeServer, TheLargestJobAnIntHoldsIsTaken) {
  fake_pmix::job_t job;
  job.size = 0x7fffffffu;
  job.rank = 0x7ffffffeu;
  fake_pmix::set_job(job);
  {
    const auto bootstrap = open_pmix();
    EXPECT_EQ(bootstrap->rank_n(), 0x7fffffff);
    EXPECT_EQ(bootstrap->rank_me(), 0x7ffffffe);
    EXPECT_EQ(fake_pmix::initialized(), 1);
  }
  EXPECT_EQ(fake_pmix::initialized(), 0);
}

TEST(PmixFakeServer, AJobSizeNoIntHoldsIsRefused) {
  fake_pmix::job_t job;
  job.size = 0x80000000u;
  expect_open_refused(job, "unusable PMIX_JOB_SIZE");
  job.size = 0xffffffffu;
  expect_open_refused(job, "unusable PMIX_JOB_SIZE");
}

TEST(PmixFakeServer, AnEmptyJobOrASizeOfAnotherTypeIsRefused) {
  fake_pmix::job_t job;
  job.size = 0;
  expect_open_refused(job, "unusable PMIX_JOB_SIZE");
  job.size = 4;
  job.size_type = PMIX_UINT64;
  expect_open_refused(job, "unusable PMIX_JOB_SIZE");
}

TEST(PmixFakeServer, FailedCallsAreNamed) {
  fake_pmix::job_t job;
  job.init = PMIX_ERR_UNREACH;
  expect_open_refused(job, "PMIx_Init failed: UNREACHABLE");
  job = fake_pmix::job_t{};
  job.size_status = PMIX_ERR_NOT_FOUND;
  expect_open_refused(job, "PMIx_Get(PMIX_JOB_SIZE) failed: NOT-FOUND");
}

TEST(PmixFakeServer, AValueIsSeenAfterTheFenceAndAnAbsentKeyFailsAtOnce) {
  fake_pmix::job_t job;
  job.size = 2;
  fake_pmix::set_job(job);
  const auto bootstrap = open_pmix();
  const std::vector<std::byte> value = {std::byte{0}, std::byte{7}, std::byte{255}};
  bootstrap->put("address", value.data(), value.size());
  EXPECT_THROW((void)bootstrap->get(0, "address"), std::runtime_error) << "seen before the fence";
  bootstrap->fence();
  EXPECT_EQ(bootstrap->get(0, "address"), value);
  try {
    (void)bootstrap->get(1, "address");
    ADD_FAILURE() << "rank 1 put nothing";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("rank 1 put no value under key 'address'"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
