// Every binding that computes runs its body through Guarded: a C++ exception (a degenerate
// input the engine refuses, std::bad_alloc when the heap cannot grow) is caught inside the
// module, its message kept for edgesfm_last_error(), and the binding returns its failure
// value. The module is built with WebAssembly exception handling (-fwasm-exceptions), so the
// stack unwinds normally and the engine instance stays usable; TypeScript (ts/engine.ts) turns
// the message into an EngineError. Require() states an input rule where a binding checks one.
#pragma once

#include <exception>
#include <new>
#include <stdexcept>
#include <string>

namespace edgesfm::bindings {

// The message of the last guarded call that failed; empty when it succeeded.
std::string& LastError();

template <typename Result, typename Body>
Result Guarded(Result failure, Body&& body) {
  LastError().clear();
  try {
    return body();
  } catch (const std::bad_alloc&) {
    LastError() = "out of memory in the engine (the input is too large for this device)";
  } catch (const std::exception& e) {
    LastError() = *e.what() ? e.what() : "engine error";
  } catch (...) {
    LastError() = "unknown engine error";
  }
  return failure;
}

// Throws std::invalid_argument(message) unless `condition`.
inline void Require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument(message);
}

}  // namespace edgesfm::bindings
