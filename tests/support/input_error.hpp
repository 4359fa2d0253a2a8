#pragma once
// The InputError a call throws, for tests of refusals: the error (empty where and detail, and a test
// failure) when the call does not throw one.
#include <gtest/gtest.h>

#include "preflight/common/error.hpp"

namespace preflight::test {

template <class F>
preflight::InputError input_error(F&& f) {
  try {
    f();
  } catch (const preflight::InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no InputError";
  return preflight::InputError("", "");
}

}  // namespace preflight::test
