// Autocast (automatic mixed precision) state of libtorch, for the `ddp`
// crate's amp module (ddp/src/amp.rs).
//
// torch.autocast's __enter__ and __exit__ (torch/amp/autocast_mode.py) are a
// handful of calls into at::autocast; tch only wraps the CUDA ones, so this
// shim exposes them for any device type:
//
//   enter: prev_cache = is_autocast_cache_enabled()
//          prev = is_autocast_enabled(device); prev_dtype = get_autocast_dtype(device)
//          set_autocast_enabled(device, enabled); set_autocast_dtype(device, dtype)
//          increment_nesting(); set_autocast_cache_enabled(cache_enabled)
//   exit:  if decrement_nesting() == 0: clear_cache()
//          set_autocast_enabled(device, prev); set_autocast_dtype(device, prev_dtype)
//          set_autocast_cache_enabled(prev_cache)
//
// All of this state is thread-local in libtorch (the enabled flags live in the
// thread's local dispatch key set), so it only affects the calling thread.
//
// The C ABI: device_type is c10::DeviceType's value (0 = CPU, 1 = CUDA),
// dtype is c10::ScalarType's value (5 = Half, 15 = BFloat16). Every entry point
// catches C++ exceptions and returns a malloc'ed message through `err` (freed
// with ddp_error_free, csrc/hooks.cpp).

#include <ATen/autocast_mode.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

namespace {

char* amp_copy_message(const char* what) {
  const size_t len = std::strlen(what);
  char* out = static_cast<char*>(std::malloc(len + 1));
  if (out != nullptr) {
    std::memcpy(out, what, len + 1);
  }
  return out;
}

void amp_report(char** err, const char* what) {
  if (err != nullptr) {
    *err = amp_copy_message(what);
  }
}

c10::DeviceType autocast_device(int32_t device_type) {
  const auto type = static_cast<c10::DeviceType>(device_type);
  if (!at::autocast::is_autocast_available(type)) {
    throw std::invalid_argument("libtorch has no autocast for device type " +
                                std::to_string(device_type));
  }
  return type;
}

}  // namespace

extern "C" {

// The state torch.autocast's __exit__ restores.
struct ddp_autocast_prev {
  int32_t enabled;
  int32_t dtype;
  int32_t cache_enabled;
};

// torch.autocast(device_type, dtype, enabled, cache_enabled).__enter__().
// Stores the previous state in *prev. Returns 0 on success; otherwise stores a
// message in *err and changes nothing.
int32_t ddp_autocast_enter(int32_t device_type, int32_t dtype, int32_t enabled,
                           int32_t cache_enabled, ddp_autocast_prev* prev,
                           char** err) {
  try {
    if (prev == nullptr) {
      throw std::invalid_argument("prev pointer is null");
    }
    const c10::DeviceType device = autocast_device(device_type);
    const auto fast = static_cast<at::ScalarType>(dtype);
    if (fast != at::kHalf && fast != at::kBFloat16) {
      throw std::invalid_argument(
          std::string("autocast needs float16 or bfloat16, not ") +
          c10::toString(fast));
    }
    prev->cache_enabled = at::autocast::is_autocast_cache_enabled() ? 1 : 0;
    prev->enabled = at::autocast::is_autocast_enabled(device) ? 1 : 0;
    prev->dtype = static_cast<int32_t>(at::autocast::get_autocast_dtype(device));
    at::autocast::set_autocast_enabled(device, enabled != 0);
    at::autocast::set_autocast_dtype(device, fast);
    at::autocast::increment_nesting();
    at::autocast::set_autocast_cache_enabled(cache_enabled != 0);
    return 0;
  } catch (const std::exception& e) {
    amp_report(err, e.what());
  } catch (...) {
    amp_report(err, "unknown C++ exception while entering autocast");
  }
  return 1;
}

// torch.autocast(...).__exit__(): restores `prev`, clearing the cast cache
// when the outermost autocast region ends. Returns 0 on success; otherwise
// stores a message in *err.
int32_t ddp_autocast_exit(int32_t device_type, const ddp_autocast_prev* prev,
                          char** err) {
  try {
    if (prev == nullptr) {
      throw std::invalid_argument("prev pointer is null");
    }
    const c10::DeviceType device = autocast_device(device_type);
    if (at::autocast::decrement_nesting() == 0) {
      at::autocast::clear_cache();
    }
    at::autocast::set_autocast_enabled(device, prev->enabled != 0);
    at::autocast::set_autocast_dtype(device,
                                     static_cast<at::ScalarType>(prev->dtype));
    at::autocast::set_autocast_cache_enabled(prev->cache_enabled != 0);
    return 0;
  } catch (const std::exception& e) {
    amp_report(err, e.what());
  } catch (...) {
    amp_report(err, "unknown C++ exception while leaving autocast");
  }
  return 1;
}

// Whether autocast is enabled for `device_type` on this thread (1 or 0), and
// its dtype through *dtype. Returns -1 on failure with a message in *err.
int32_t ddp_autocast_state(int32_t device_type, int32_t* dtype, char** err) {
  try {
    const c10::DeviceType device = autocast_device(device_type);
    if (dtype != nullptr) {
      *dtype = static_cast<int32_t>(at::autocast::get_autocast_dtype(device));
    }
    return at::autocast::is_autocast_enabled(device) ? 1 : 0;
  } catch (const std::exception& e) {
    amp_report(err, e.what());
  } catch (...) {
    amp_report(err, "unknown C++ exception while reading the autocast state");
  }
  return -1;
}

// Whether the autocast weight-cast cache is enabled on this thread.
int32_t ddp_autocast_cache_enabled() {
  return at::autocast::is_autocast_cache_enabled() ? 1 : 0;
}

}  // extern "C"
