// The benchmarks' check of an MPI call's result (mpi_transport.cpp,
// collective_latency_mpi.cpp): anything but MPI_SUCCESS throws
// std::runtime_error("<call>: <MPI's error string>"), which the drivers
// print before they exit 1.
#pragma once

#include <mpi.h>

#include <stdexcept>
#include <string>

namespace lci::bench {

inline void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(std::string(call) + ": " +
                           std::string(text, static_cast<std::size_t>(length)));
}

}  // namespace lci::bench
