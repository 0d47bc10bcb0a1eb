// MPI transport of the message-rate and bandwidth benchmarks (see
// mpi_transport.hpp).
#include "bench/mpi_transport.hpp"

#include <mpi.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench/mpi_check.hpp"

namespace lci::bench {

namespace {

// Sends in flight per channel before try_send() answers "no room": a
// window's worth, twice (the driver never has more than one window out).
constexpr std::size_t sends_in_flight_factor = 2;

// Completes what has finished among `requests` (MPI_Testsome) and removes
// those entries; returns how many finished. With `statuses`, fills it with
// theirs.
std::size_t test_some(std::vector<MPI_Request>* requests, std::vector<int>* indices,
                      std::vector<MPI_Status>* statuses) {
  if (requests->empty()) return 0;
  indices->resize(requests->size());
  statuses->resize(requests->size());
  int done = 0;
  check_mpi(MPI_Testsome(static_cast<int>(requests->size()), requests->data(), &done,
                         indices->data(), statuses->data()),
            "MPI_Testsome");
  if (done <= 0) return 0;  // MPI_UNDEFINED (none active) or none finished
  // Completed requests were set to MPI_REQUEST_NULL: drop them.
  requests->erase(std::remove(requests->begin(), requests->end(), MPI_REQUEST_NULL),
                  requests->end());
  return static_cast<std::size_t>(done);
}

class mpi_channel_t final : public channel_t {
 public:
  mpi_channel_t(const options_t& options, MPI_Comm comm, int partner, int thread_index)
      : comm_(comm),
        partner_(partner),
        tag_(thread_index),
        sends_max_(options.window * sends_in_flight_factor),
        send_buffer_(options.message_size_max_bytes(), 's'),
        receive_slots_(options),
        slot_bytes_(options.message_size_max_bytes()) {
    receives_.reserve(options.window);
    sends_.reserve(sends_max_);
  }

  void expect(std::size_t count, std::size_t size_bytes) override {
    expected_size_bytes_ = size_bytes;
    for (std::size_t i = 0; i < count; ++i) {
      MPI_Request request = MPI_REQUEST_NULL;
      // The slot's full size: a longer message than expected then arrives
      // whole and fails the size check instead of MPI's truncation error.
      check_mpi(MPI_Irecv(receive_slots_.next(), static_cast<int>(slot_bytes_), MPI_BYTE,
                          partner_, tag_, comm_, &request),
                "MPI_Irecv");
      receives_.push_back(request);
    }
  }

  bool try_send(std::size_t size_bytes) override {
    if (sends_.size() >= sends_max_) return false;
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Isend(send_buffer_.data(), static_cast<int>(size_bytes), MPI_BYTE, partner_,
                        tag_, comm_, &request),
              "MPI_Isend");
    sends_.push_back(request);
    return true;
  }

  std::size_t poll() override {
    (void)test_some(&sends_, &indices_, &statuses_);
    const std::size_t arrived = test_some(&receives_, &indices_, &statuses_);
    for (std::size_t i = 0; i < arrived; ++i) check_arrival(statuses_[i]);
    return arrived;
  }

  std::size_t sends_pending() const override { return sends_.size(); }

 private:
  void check_arrival(const MPI_Status& status) {
    int size_bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &size_bytes);
    if (status.MPI_SOURCE != partner_ ||
        static_cast<std::size_t>(size_bytes) != expected_size_bytes_) {
      fail("mpi arrival", std::to_string(size_bytes) + " bytes from rank " +
                              std::to_string(status.MPI_SOURCE) + ", expected " +
                              std::to_string(expected_size_bytes_) + " from rank " +
                              std::to_string(partner_));
    }
  }

  const MPI_Comm comm_;
  const int partner_;
  const int tag_;
  const std::size_t sends_max_;
  std::vector<char> send_buffer_;
  receive_slots_t receive_slots_;
  const std::size_t slot_bytes_;
  std::vector<MPI_Request> receives_;  // posted, in posting order
  std::vector<MPI_Request> sends_;     // in flight
  std::vector<int> indices_;           // MPI_Testsome's scratch
  std::vector<MPI_Status> statuses_;   // MPI_Testsome's scratch
  std::size_t expected_size_bytes_ = 0;  // of the arrivals expect() announced last
};

class mpi_transport_t final : public transport_t {
 public:
  explicit mpi_transport_t(const options_t& options) : options_(options) {
    const int wanted = options.threads > 1 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE;
    int provided = MPI_THREAD_SINGLE;
    check_mpi(MPI_Init_thread(nullptr, nullptr, wanted, &provided), "MPI_Init_thread");
    if (provided < wanted) {
      MPI_Finalize();
      fail("mpi", "--threads " + std::to_string(options.threads) +
                      " needs MPI_THREAD_MULTIPLE, which this MPI does not provide");
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_me_);
    MPI_Comm_size(MPI_COMM_WORLD, &rank_n_);
  }
  ~mpi_transport_t() override {
    channels_.clear();
    for (MPI_Comm& comm : comms_) MPI_Comm_free(&comm);
    MPI_Finalize();
  }

  int rank_me() const override { return rank_me_; }
  int rank_n() const override { return rank_n_; }
  const char* name() const override { return "mpi"; }

  channel_t& open_channel(int thread_index) override {
    MPI_Comm comm = MPI_COMM_WORLD;
    if (options_.devices == devices_kind_t::dedicated) {
      MPI_Comm own = MPI_COMM_NULL;
      check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &own), "MPI_Comm_dup");  // collective
      comms_.push_back(own);
      comm = own;
    }
    const int partner = (rank_me_ + rank_n_ / 2) % rank_n_;
    channels_.push_back(std::make_unique<mpi_channel_t>(options_, comm, partner, thread_index));
    return *channels_.back();
  }

  void barrier() override { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

  std::vector<double> allgather(double value) override {
    std::vector<double> values(static_cast<std::size_t>(rank_n_));
    check_mpi(MPI_Allgather(&value, 1, MPI_DOUBLE, values.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD),
              "MPI_Allgather");
    return values;
  }

 private:
  const options_t options_;
  int rank_me_ = 0;
  int rank_n_ = 0;
  std::vector<MPI_Comm> comms_;  // dedicated communicators, in thread order
  std::vector<std::unique_ptr<mpi_channel_t>> channels_;
};

}  // namespace

std::unique_ptr<transport_t> make_mpi_transport(const options_t& options) {
  return std::make_unique<mpi_transport_t>(options);
}

}  // namespace lci::bench
