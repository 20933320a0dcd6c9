#include "scheduler/secbad/gridworld.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace strata::secbad {

WindyGridworld::WindyGridworld(GridworldOptions options, SegmentPrior segments, uint64_t seed)
    : options_(options),
      segments_(std::move(segments)),
      context_rng_(DeriveSeed(seed, 1)),
      push_rng_(DeriveSeed(seed, 2)) {
  Reset();
}

void WindyGridworld::NewSegment() {
  for (double& w : wind_) w = options_.max_wind * (2 * context_rng_.Uniform() - 1);
  segment_end_ = step_ + segments_.Sample(context_rng_);
}

double WindyGridworld::PushProbability(double wind, int push) {
  const int along = wind > 0 ? 1 : -1;
  if (push == 0) return 1 - std::abs(wind);
  return push == along ? std::abs(wind) : 0.0;
}

void WindyGridworld::Reset() {
  x_ = y_ = step_ = 0;
  changes_.clear();
  NewSegment();
}

WindyGridworld::Outcome WindyGridworld::Act(int action) {
  Outcome out;
  out.pushed = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
  if (action >= 1 && action <= 4) {
    // The move's own cell, then one more along each axis whose wind
    // blows, with probability |w| of that axis.
    const int step[2] = {action == 2 ? 1 : action == 4 ? -1 : 0,
                         action == 1 ? 1 : action == 3 ? -1 : 0};
    int* position[2] = {&x_, &y_};
    for (int axis = 0; axis < 2; ++axis) {
      const double w = wind_[axis];
      const int push = push_rng_.Uniform() < std::abs(w) ? (w > 0 ? 1 : -1) : 0;
      const int wanted = *position[axis] + step[axis] + push;
      const int landed = std::clamp(wanted, 0, options_.size - 1);
      // Only a move that stayed inside the grid shows the push whole.
      if (landed == wanted) out.pushed[axis] = push;
      *position[axis] = landed;
    }
  }
  if (x_ == options_.goal_x && y_ == options_.goal_y) {
    out.reward = options_.goal_reward;
    x_ = y_ = 0;
  } else {
    out.reward = -options_.step_cost;
  }
  ++step_;
  out.done = step_ >= options_.episode_steps;
  if (!out.done && step_ >= segment_end_) {
    NewSegment();
    changes_.push_back(step_);
    out.wind_changed = true;
  }
  return out;
}

}  // namespace strata::secbad
