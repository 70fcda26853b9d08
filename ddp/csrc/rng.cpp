// Get and set the state of libtorch's default random generators, for the
// `ddp` crate's checkpoints (ddp/src/checkpoint.rs).
//
// This is what torch.get_rng_state()/torch.set_rng_state() do for the CPU
// generator (at::detail::getDefaultCPUGenerator()) and
// torch.cuda.get_rng_state(i)/set_rng_state(state, i) for CUDA device i:
// under the generator's mutex, Generator::get_state() returns the state as a
// CPU uint8 tensor and Generator::set_state() restores one. The CUDA
// generators are reached through at::globalContext().defaultGenerator(device),
// which goes through libtorch's CUDA hooks, so this file needs no CUDA
// headers and builds against a CPU-only libtorch too.
//
// The C ABI below is the only thing Rust sees:
//   * device_type is c10::DeviceType's value (0 = CPU, 1 = CUDA); the index
//     is ignored for the CPU;
//   * tensors cross the boundary as tch does it: a heap-allocated
//     `at::Tensor*` that the Rust side owns (and deletes through tch);
//   * every entry point catches C++ exceptions and returns a malloc'ed
//     message through `err` (freed with ddp_error_free, csrc/hooks.cpp).

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/core/Generator.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>

namespace {

char* rng_copy_message(const char* what) {
  const size_t len = std::strlen(what);
  char* out = static_cast<char*>(std::malloc(len + 1));
  if (out != nullptr) {
    std::memcpy(out, what, len + 1);
  }
  return out;
}

void rng_report(char** err, const char* what) {
  if (err != nullptr) {
    *err = rng_copy_message(what);
  }
}

// The default generator of (device_type, index).
at::Generator default_generator(int32_t device_type, int64_t index) {
  const auto type = static_cast<c10::DeviceType>(device_type);
  if (type == c10::DeviceType::CPU) {
    return at::detail::getDefaultCPUGenerator();
  }
  if (type == c10::DeviceType::CUDA) {
    if (!at::globalContext().hasCUDA()) {
      throw std::runtime_error(
          "CUDA is not available, so there is no CUDA generator");
    }
    if (index < 0 || index > INT8_MAX) {
      throw std::invalid_argument("CUDA device index " +
                                  std::to_string(index) + " is out of range");
    }
    return at::globalContext().defaultGenerator(
        at::Device(type, static_cast<c10::DeviceIndex>(index)));
  }
  throw std::invalid_argument("device type " + std::to_string(device_type) +
                              " has no default generator here (CPU and CUDA "
                              "only)");
}

}  // namespace

extern "C" {

// The generator's state as a new CPU uint8 tensor (`at::Tensor*`, owned by
// the caller). On failure returns nullptr and stores a message in *err.
void* ddp_rng_get_state(int32_t device_type, int64_t index, char** err) {
  try {
    at::Generator gen = default_generator(device_type, index);
    at::Tensor state;
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      state = gen.get_state();
    }
    return new at::Tensor(std::move(state));
  } catch (const std::exception& e) {
    rng_report(err, e.what());
  } catch (...) {
    rng_report(err, "unknown C++ exception while reading a generator state");
  }
  return nullptr;
}

// Restores a state returned by ddp_rng_get_state (`state` is an
// `at::Tensor*`). libtorch checks the tensor (uint8, CPU, the right size) and
// throws otherwise. Returns 0 on success; otherwise stores a message in *err.
int32_t ddp_rng_set_state(int32_t device_type, int64_t index,
                          const void* state, char** err) {
  try {
    if (state == nullptr) {
      throw std::invalid_argument("state tensor pointer is null");
    }
    const auto& tensor = *static_cast<const at::Tensor*>(state);
    if (!tensor.defined()) {
      throw std::invalid_argument("state tensor is undefined");
    }
    at::Generator gen = default_generator(device_type, index);
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(tensor);
    return 0;
  } catch (const std::exception& e) {
    rng_report(err, e.what());
  } catch (...) {
    rng_report(err, "unknown C++ exception while setting a generator state");
  }
  return 1;
}

}  // extern "C"
