// rdv_table_t (lci/runtime/rdv_table.hpp): ids are small integers handed to
// peers, so a peer's id is looked up, never trusted. An id past the table,
// the one just past it included, or one taken already, is refused naming it.
#include "lci/runtime/rdv_table.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace {

using lci::detail::rdv_table_t;
using lci::detail::request_t;

void expect_not_in_use(rdv_table_t& table, std::uint32_t id) {
  try {
    (void)table.at(id);
    ADD_FAILURE() << "at(" << id << ") found a request";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("rendezvous id " + std::to_string(id) +
                                             " is not in use"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW((void)table.take(id), std::logic_error) << "take(" << id << ")";
}

TEST(RdvTable, IdsNotInUseAreRefused) {
  rdv_table_t table;
  // Requests are only named here, never touched: any distinct addresses do.
  alignas(64) static char records[3][64];
  auto* first = reinterpret_cast<request_t*>(records[0]);
  auto* second = reinterpret_cast<request_t*>(records[1]);
  const std::uint32_t a = table.add(first);
  const std::uint32_t b = table.add(second);
  EXPECT_NE(a, b);
  EXPECT_EQ(table.at(a), first);
  EXPECT_EQ(table.at(b), second);
  expect_not_in_use(table, 2);  // just past the table
  expect_not_in_use(table, 1000);
  EXPECT_EQ(table.take(a), first);
  expect_not_in_use(table, a);  // taken
  // A taken id is reused.
  auto* third = reinterpret_cast<request_t*>(records[2]);
  EXPECT_EQ(table.add(third), a);
  EXPECT_EQ(table.take(a), third);
  EXPECT_EQ(table.take(b), second);
}

}  // namespace
