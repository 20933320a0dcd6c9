// GridworldPlanner: the best action in the windy grid world
// (experiments/gridworld.h) for a wind it is told, by value iteration
// over the world's own rules (WindyGridworld::Land, PushProbability) for
// each wind of a grid across [-max_wind, max_wind] per axis; a wind between
// grid points takes the nearest one's plan.
//
// Told a belief's mean wind, it is the certainty-equivalent controller:
// the grid-world experiment's non-learned reference, which says what a
// context tracker's belief is worth to an agent that acts as if it were
// the truth, with no learning in the way.
//
//   absl::StatusOr<GridworldPlanner> planner = GridworldPlanner::Create(world, 0.99, 19);
//   int action = planner->Act(x, y, wind_x, wind_y);
//
// Immutable once made; thread-safe.
#ifndef STRATA_EXPERIMENTS_GRIDWORLD_PLANNER_H_
#define STRATA_EXPERIMENTS_GRIDWORLD_PLANNER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/gridworld.h"

namespace strata::secbad {

class GridworldPlanner {
 public:
  // Plans for winds_per_axis winds per axis (at least 2, ends included),
  // discounting by gamma in (0, 1). InvalidArgument otherwise.
  static absl::StatusOr<GridworldPlanner> Create(const GridworldOptions& world, double gamma,
                                                 int winds_per_axis);

  // The planned action from cell (x, y) under the grid wind nearest to
  // (wind_x, wind_y) (a wind beyond the grid takes its edge).
  int Act(int x, int y, double wind_x, double wind_y) const;

 private:
  GridworldPlanner(const GridworldOptions& world, int winds_per_axis)
      : world_(world), winds_(winds_per_axis) {}
  int WindIndex(double wind) const;
  double WindAt(int index) const;
  // Value iteration for one grid wind: fills its cells' actions.
  void Solve(int wind_x, int wind_y, double gamma);

  GridworldOptions world_;
  int winds_;
  std::vector<uint8_t> actions_;  // [wind_x][wind_y][x][y]
};

}  // namespace strata::secbad

#endif  // STRATA_EXPERIMENTS_GRIDWORLD_PLANNER_H_
