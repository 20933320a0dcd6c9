#include "experiments/gridworld_planner.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace strata::secbad {

absl::StatusOr<GridworldPlanner> GridworldPlanner::Create(const GridworldOptions& world,
                                                          double gamma, int winds_per_axis) {
  if (!(gamma > 0 && gamma < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("planner discount ", gamma, " is not in (0, 1)"));
  }
  if (winds_per_axis < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("the planner needs at least 2 winds per axis, not ", winds_per_axis));
  }
  GridworldPlanner planner(world, winds_per_axis);
  const size_t cells = static_cast<size_t>(world.size) * world.size;
  planner.actions_.assign(static_cast<size_t>(winds_per_axis) * winds_per_axis * cells, 0);
  for (int i = 0; i < winds_per_axis; ++i) {
    for (int j = 0; j < winds_per_axis; ++j) planner.Solve(i, j, gamma);
  }
  return planner;
}

double GridworldPlanner::WindAt(int index) const {
  return world_.max_wind * (2.0 * index / (winds_ - 1) - 1.0);
}

int GridworldPlanner::WindIndex(double wind) const {
  if (!(world_.max_wind > 0)) return 0;  // every grid wind is calm
  const double at = (wind / world_.max_wind + 1.0) / 2.0 * (winds_ - 1);
  return std::clamp(static_cast<int>(std::lround(at)), 0, winds_ - 1);
}

void GridworldPlanner::Solve(int wind_x, int wind_y, double gamma) {
  const int size = world_.size;
  const double wind[2] = {WindAt(wind_x), WindAt(wind_y)};
  // Per axis, the pushes a move can get and their probabilities.
  struct Push {
    int cells;
    double probability;
  };
  std::vector<Push> pushes[2];
  for (int axis = 0; axis < 2; ++axis) {
    for (int push = -1; push <= 1; ++push) {
      const double p = WindyGridworld::PushProbability(wind[axis], push);
      if (p > 0) pushes[axis].push_back({push, p});
    }
  }
  const std::vector<Push> unpushed = {{0, 1.0}};
  const auto cell = [size](int x, int y) { return static_cast<size_t>(x) * size + y; };
  std::vector<double> value(static_cast<size_t>(size) * size, 0.0), next(value.size());
  std::vector<uint8_t> best(value.size(), 0);
  // The action's expected reward plus the discounted value of where it
  // lands: a landing on the goal pays, and restarts at (0, 0) unless the
  // goal holds the agent.
  const size_t restart = world_.goal_holds ? cell(world_.goal_x, world_.goal_y) : cell(0, 0);
  const auto after = [&](int x, int y) {
    const bool goal = x == world_.goal_x && y == world_.goal_y;
    return goal ? world_.goal_reward + gamma * value[restart]
                : -world_.step_cost + gamma * value[cell(x, y)];
  };
  const auto q = [&](int x, int y, int action) {
    if (!WindyGridworld::IsMove(action)) return after(x, y);  // a stay is never pushed
    const std::vector<Push>& along_x =
        WindyGridworld::Pushes(world_, action, 0) ? pushes[0] : unpushed;
    const std::vector<Push>& along_y =
        WindyGridworld::Pushes(world_, action, 1) ? pushes[1] : unpushed;
    double total = 0;
    for (const Push& px : along_x) {
      for (const Push& py : along_y) {
        const WindyGridworld::Landing l =
            WindyGridworld::Land(world_, x, y, action, px.cells, py.cells);
        total += px.probability * py.probability * after(l.x, l.y);
      }
    }
    return total;
  };
  // Iterates until no value moves by more than a millionth of a step's cost
  // or a billionth of the goal's reward, whichever is larger (steps may be
  // free).
  const double tolerance = std::max(1e-6 * world_.step_cost, 1e-9 * world_.goal_reward);
  // Actions whose values differ by rounding alone tie (many do: moves that
  // land alike), and a tie goes to the lowest action, so that the plan
  // does not depend on the order a compiler gives a sum.
  const auto better = [](double v, double top) {
    return v > top + 1e-12 * std::max(1.0, std::abs(top));
  };
  for (int sweep = 0; sweep < 100000; ++sweep) {
    double change = 0;
    for (int x = 0; x < size; ++x) {
      for (int y = 0; y < size; ++y) {
        double top = q(x, y, 0);
        best[cell(x, y)] = 0;
        for (int action = 1; action < WindyGridworld::kActions; ++action) {
          const double v = q(x, y, action);
          if (better(v, top)) {
            top = v;
            best[cell(x, y)] = static_cast<uint8_t>(action);
          }
        }
        next[cell(x, y)] = top;
        change = std::max(change, std::abs(top - value[cell(x, y)]));
      }
    }
    value.swap(next);
    if (change < tolerance) break;
  }
  std::copy(best.begin(), best.end(),
            actions_.begin() + (static_cast<size_t>(wind_x) * winds_ + wind_y) * best.size());
}

int GridworldPlanner::Act(int x, int y, double wind_x, double wind_y) const {
  const size_t cells = static_cast<size_t>(world_.size) * world_.size;
  const size_t wind = static_cast<size_t>(WindIndex(wind_x)) * winds_ + WindIndex(wind_y);
  return actions_[wind * cells + static_cast<size_t>(x) * world_.size + y];
}

}  // namespace strata::secbad
