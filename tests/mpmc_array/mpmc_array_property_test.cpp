// Random put/push_back/get sequences against a sequential model of the MPMC
// array (a vector that grows on write, reads default beyond what was
// written, and refuses writes at or beyond capacity_max).
#include <rapidcheck/state.h>

#include <algorithm>
#include <vector>

#include "lci/mpmc_array/mpmc_array.hpp"
#include "tests/property/property.hpp"

namespace {

using lci::errorcode_t;
using array_t = lci::mpmc_array::mpmc_array_t<int>;

constexpr int default_value = -1;
constexpr std::size_t capacity_max = 40;

struct model_t {
  std::vector<int> values;  // index -> value; default_value where unwritten

  int get(std::size_t index) const {
    return index < values.size() ? values[index] : default_value;
  }
};

using command_t = rc::state::Command<model_t, array_t>;

struct put_t : command_t {
  std::size_t index = *rc::gen::inRange<std::size_t>(0, capacity_max + 4);
  int value = *rc::gen::inRange(0, 1000);

  void apply(model_t& model) const override {
    if (index >= capacity_max) return;  // refused: nothing stored
    if (model.values.size() <= index) model.values.resize(index + 1, default_value);
    model.values[index] = value;
  }
  void run(const model_t& model, array_t& array) const override {
    const lci::error_t result = array.put(index, value);
    RC_ASSERT((index < capacity_max) == result.is_done());
    if (!result.is_done()) RC_ASSERT(result.errorcode == errorcode_t::retry_nomem);
    (void)model;
  }
  void show(std::ostream& os) const override {
    os << "put(" << index << ", " << value << ")";
  }
};

struct push_back_t : command_t {
  int value = *rc::gen::inRange(0, 1000);

  void apply(model_t& model) const override {
    if (model.values.size() < capacity_max) model.values.push_back(value);
  }
  void run(const model_t& model, array_t& array) const override {
    std::size_t index = 12345;
    const lci::error_t result = array.push_back(value, &index);
    if (model.values.size() < capacity_max) {
      RC_ASSERT(result.is_done());
      RC_ASSERT(index == model.values.size());
    } else {
      RC_ASSERT(result.errorcode == errorcode_t::retry_nomem);
    }
  }
  void show(std::ostream& os) const override { os << "push_back(" << value << ")"; }
};

struct get_t : command_t {
  std::size_t index = *rc::gen::inRange<std::size_t>(0, capacity_max + 8);

  void run(const model_t& model, array_t& array) const override {
    RC_ASSERT(array.get(index) == model.get(index));
    RC_ASSERT(array.size() == model.values.size());
    RC_ASSERT(array.capacity() <= capacity_max);
    RC_ASSERT(array.capacity() >= array.size());
  }
  void show(std::ostream& os) const override { os << "get(" << index << ")"; }
};

LCI_PROPERTY(MpmcArrayProperty, MatchesVectorModel,
             "mpmc_array: random put/push_back/get agree with a vector", [] {
               const auto capacity_initial = *rc::gen::inRange<std::size_t>(1, 5);
               array_t array(capacity_initial, default_value, capacity_max);
               rc::state::check(model_t{}, array,
                                rc::state::gen::execOneOfWithArgs<put_t, push_back_t,
                                                                  get_t>());
             })

}  // namespace
