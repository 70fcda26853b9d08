// Post-accumulate-grad hooks on parameters, for the `ddp` crate.
//
// This is the mechanism PyTorch's DDP reducer uses (reducer.cpp, Reducer ctor):
// a post hook on the parameter's AccumulateGrad node, obtained with
// torch::autograd::impl::grad_accumulator(variable). The autograd engine runs
// a node's post hooks right after the node itself, so when the hook runs the
// gradient has already been accumulated into `param.grad`.
//
// The C ABI below is the only thing Rust sees (ddp/src/hooks.rs):
//   * every entry point catches C++ exceptions and reports them as a message;
//   * the hook calls a Rust `extern "C"` callback with (context, index, sink);
//     a non-zero return makes the hook throw std::runtime_error with the text
//     the callback put into `sink`, which fails the backward pass the way a
//     throwing C++ hook does (the engine rethrows it in the caller of backward).
//
// Removal. Node::del_post_hook mutates the node's hook vector, which the
// engine iterates without a lock while a backward runs, so erasing from it
// would race with a concurrent backward. A handle therefore deactivates its
// hook instead: under the hook's own mutex it clears the callback, after which
// the hook is a no-op and never touches the Rust context again; the handle
// then drops its strong reference to the AccumulateGrad node. The inert hook
// object is freed together with the node. The mutex is recursive so that a
// callback may drop its own handle; the Rust side keeps its context alive for
// the duration of a call, so that is safe too.

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

extern "C" {
// Called after `.grad` of parameter `index` has been accumulated. Returns 0 on
// success; otherwise it must have stored a message with ddp_hook_set_error.
typedef int32_t (*ddp_grad_ready_fn)(void* ctx, int64_t index, void* err_sink);
}

namespace {

using torch::autograd::FunctionPostHook;
using torch::autograd::Node;
using torch::autograd::variable_list;

struct HookState {
  HookState(ddp_grad_ready_fn cb, void* ctx, int64_t index)
      : cb(cb), ctx(ctx), index(index) {}
  std::recursive_mutex mu;
  ddp_grad_ready_fn cb;  // nullptr once the handle is gone
  void* ctx;
  int64_t index;
};

class GradReadyPostHook final : public FunctionPostHook {
 public:
  explicit GradReadyPostHook(std::shared_ptr<HookState> state)
      : state_(std::move(state)) {}

  variable_list operator()(const variable_list& outputs,
                           const variable_list& /*inputs*/) override {
    std::lock_guard<std::recursive_mutex> guard(state_->mu);
    if (state_->cb == nullptr) {
      return outputs;
    }
    std::string message;
    const int32_t rc = state_->cb(state_->ctx, state_->index, &message);
    if (rc != 0) {
      if (message.empty()) {
        message = "post-accumulate-grad hook of parameter " +
                  std::to_string(state_->index) + " failed";
      }
      throw std::runtime_error(message);
    }
    return outputs;
  }

 private:
  std::shared_ptr<HookState> state_;
};

char* copy_message(const char* what) {
  const size_t len = std::strlen(what);
  char* out = static_cast<char*>(std::malloc(len + 1));
  if (out != nullptr) {
    std::memcpy(out, what, len + 1);
  }
  return out;
}

void report(char** err, const char* what) {
  if (err != nullptr) {
    *err = copy_message(what);
  }
}

}  // namespace

// Opaque to Rust.
struct ddp_hook {
  std::shared_ptr<HookState> state;
  c10::intrusive_ptr<Node> grad_accumulator;
};

extern "C" {

// Registers the hook on `param` (a `torch::Tensor*`, as tch's Tensor::as_ptr
// gives it). On failure returns nullptr and stores a malloc'ed message in *err
// (free it with ddp_error_free). On success *err is left untouched.
ddp_hook* ddp_hook_register(const void* param, int64_t index,
                            ddp_grad_ready_fn cb, void* ctx, char** err) {
  try {
    if (param == nullptr) {
      throw std::invalid_argument("parameter pointer is null");
    }
    if (cb == nullptr) {
      throw std::invalid_argument("callback pointer is null");
    }
    const auto& variable = *static_cast<const at::Tensor*>(param);
    if (!variable.defined()) {
      throw std::invalid_argument("parameter " + std::to_string(index) +
                                  " is an undefined tensor");
    }
    if (!variable.requires_grad()) {
      throw std::invalid_argument("parameter " + std::to_string(index) +
                                  " does not require grad");
    }
    if (!variable.is_leaf()) {
      throw std::invalid_argument(
          "parameter " + std::to_string(index) +
          " is not a leaf tensor (it has a grad_fn), so it has no "
          "AccumulateGrad node");
    }
    c10::intrusive_ptr<Node> acc =
        torch::autograd::impl::grad_accumulator(variable);
    if (!acc) {
      throw std::runtime_error("parameter " + std::to_string(index) +
                               " has no gradient accumulator");
    }
    auto state = std::make_shared<HookState>(cb, ctx, index);
    auto handle = std::make_unique<ddp_hook>();
    handle->state = state;
    handle->grad_accumulator = acc;
    acc->add_post_hook(std::make_unique<GradReadyPostHook>(std::move(state)));
    return handle.release();
  } catch (const std::exception& e) {
    report(err, e.what());
  } catch (...) {
    report(err, "unknown C++ exception while registering a grad hook");
  }
  return nullptr;
}

// Deactivates the hook and frees the handle. Waits for a call of this hook
// that is running on another thread to return. Never throws.
void ddp_hook_remove(ddp_hook* handle) {
  if (handle == nullptr) {
    return;
  }
  try {
    std::lock_guard<std::recursive_mutex> guard(handle->state->mu);
    handle->state->cb = nullptr;
    handle->state->ctx = nullptr;
  } catch (...) {
    // Locking a recursive_mutex only throws on a broken system; clear the
    // callback anyway so that the context is never used again.
    handle->state->cb = nullptr;
    handle->state->ctx = nullptr;
  }
  delete handle;
}

// Stores `len` bytes of `msg` as the error text of a failing callback.
void ddp_hook_set_error(void* err_sink, const char* msg, size_t len) {
  if (err_sink == nullptr || msg == nullptr) {
    return;
  }
  try {
    static_cast<std::string*>(err_sink)->assign(msg, len);
  } catch (...) {
    // Out of memory: the hook falls back to its generic message.
  }
}

// Sets `param.grad` (both `torch::Tensor*`) to `grad`, as `param.grad = grad`
// does in Python; tch has no setter for it. Returns 0, or -1 with *err set.
int ddp_set_grad(const void* param, const void* grad, char** err) {
  try {
    if (param == nullptr || grad == nullptr) {
      throw std::invalid_argument("tensor pointer is null");
    }
    const auto& p = *static_cast<const at::Tensor*>(param);
    const auto& g = *static_cast<const at::Tensor*>(grad);
    p.mutable_grad() = g;
    return 0;
  } catch (const std::exception& e) {
    report(err, e.what());
  } catch (...) {
    report(err, "unknown C++ exception while setting a gradient");
  }
  return -1;
}

// Frees a message returned through an `err` out-parameter.
void ddp_error_free(char* msg) { std::free(msg); }

}  // extern "C"
