#include "experiments/gridworld.h"

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

bool WindyGridworld::Pushes(const GridworldOptions& options, int action, int axis) {
  if (!IsMove(action)) return false;
  if (!options.push_along_move_only) return true;
  const int along = action == 2 || action == 4 ? 0 : 1;  // right, left: x
  return axis == along;
}

WindyGridworld::Landing WindyGridworld::Land(const GridworldOptions& options, int x, int y,
                                             int action, int push_x, int push_y) {
  Landing landing;
  if (!IsMove(action)) {
    landing.x = x;
    landing.y = y;
    return landing;
  }
  // The move's own cell, then the pushes, clamped to the grid.
  if (!Pushes(options, action, 0)) push_x = 0;
  if (!Pushes(options, action, 1)) push_y = 0;
  const int wanted_x = x + (action == 2 ? 1 : action == 4 ? -1 : 0) + push_x;
  const int wanted_y = y + (action == 1 ? 1 : action == 3 ? -1 : 0) + push_y;
  landing.x = std::clamp(wanted_x, 0, options.size - 1);
  landing.y = std::clamp(wanted_y, 0, options.size - 1);
  landing.whole = {landing.x == wanted_x && Pushes(options, action, 0),
                   landing.y == wanted_y && Pushes(options, action, 1)};
  return landing;
}

void WindyGridworld::Reset() {
  x_ = y_ = step_ = 0;
  changes_.clear();
  NewSegment();
}

WindyGridworld::Outcome WindyGridworld::Act(int action) {
  Outcome out;
  out.pushed = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
  if (IsMove(action)) {
    int push[2];
    for (int axis = 0; axis < 2; ++axis) {
      const double w = wind_[axis];
      push[axis] = push_rng_.Uniform() < std::abs(w) ? (w > 0 ? 1 : -1) : 0;
    }
    const Landing landing = Land(options_, x_, y_, action, push[0], push[1]);
    // Only a pushed axis of a move that stayed inside the grid shows the
    // push whole.
    for (int axis = 0; axis < 2; ++axis) {
      if (landing.whole[axis]) out.pushed[axis] = push[axis];
    }
    x_ = landing.x;
    y_ = landing.y;
  }
  if (x_ == options_.goal_x && y_ == options_.goal_y) {
    out.reward = options_.goal_reward;
    if (!options_.goal_holds) x_ = y_ = 0;
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
