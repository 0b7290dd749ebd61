#include "core/backends/backend.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"

namespace arch_bench {

namespace {
// steady_clock around `steps` back-to-back calls: on the CPU a call is complete when it returns.
class ClockTimer final : public SampleTimer {
 public:
  ClockTimer(Backend& backend, const std::function<void()>& work, std::int64_t steps)
      : backend_(backend), work_(work), steps_(steps), batch_([this] {
          for (std::int64_t i = 0; i < steps_; ++i) work_();
        }) {}
  double sample_ms() override { return backend_.time_ms(steps_ == 1 ? work_ : batch_); }

 private:
  Backend& backend_;
  const std::function<void()>& work_;
  std::int64_t steps_;
  std::function<void()> batch_;
};
}  // namespace

std::unique_ptr<SampleTimer> Backend::make_timer(const std::function<void()>& work, const TimingPlan& timing) {
  if (timing.method != TimingMethod::steady_clock) {
    throw UsageError(fmt::format("timing method {} needs the CUDA backend; the {} backend times with steady_clock",
                                 timing_method_name(timing.method), name()));
  }
  if (timing.steps_per_sample < 1) {
    throw UsageError(fmt::format("--steps-per-sample must be >= 1 (got {})", timing.steps_per_sample));
  }
  return std::make_unique<ClockTimer>(*this, work, timing.steps_per_sample);
}

}  // namespace arch_bench
