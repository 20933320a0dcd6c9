// WindyGridworld: SeCBAD's grid world, where the context is a wind that
// holds for a segment and then changes abruptly.
//
// A 5 x 5 grid, the agent starting at (0, 0), the goal fixed at (3, 3).
// Actions: 0 stay, 1 up (+y), 2 right (+x), 3 down (-y), 4 left (-x). The
// wind w = (w_x, w_y), each component uniform in [-0.9, 0.9], pushes
// moves: a move goes one cell its way, and then one more cell along each
// axis whose wind blows, in the wind's direction, with probability |w| of
// that axis (clamped to the grid). Staying is never pushed. Landing on the
// goal earns +1 and puts the agent back at the start; every other step
// earns nothing, so an episode's return counts its arrivals at the goal.
// (A step cost may be set: over episodes of a fixed length it moves the
// return's zero and scale, not which policy is best.) An episode is 200
// steps; the wind is drawn anew at the start and after every segment,
// whose length comes from the segment prior (SeCBAD's: max(N(80, 20),
// 10)). Knowing the wind pays throughout the episode: the best move from a
// cell depends on where the wind will carry the agent, so no one policy
// does well in every wind.
//
// SeCBAD's public code plays the rules differently (GridworldOptions::
// SecbadCodeRules): the wind pushes a move only along the move's own
// axis; the goal holds the agent (each step on it earns +1 again, and
// staying there is never pushed); every other step costs 0.1. So the wind
// matters until the goal is reached, and again only if the agent leaves
// it.
//
// What the agent sees of the wind: after a move, per axis, how far the
// wind pushed it (0 or +-1: its mean is that axis's wind), NaN for an axis
// where the grid's edge stopped it or (pushes along the move only) the
// move does not go, and for both after a stay.
//
// Deterministic for a seed: the winds and segment lengths depend on the
// seed alone, not on what the agent does. Not thread-safe.
#ifndef STRATA_EXPERIMENTS_GRIDWORLD_H_
#define STRATA_EXPERIMENTS_GRIDWORLD_H_

#include <array>
#include <cstdint>
#include <vector>

#include "core/util/rng.h"
#include "scheduler/secbad/segment_prior.h"

namespace strata::secbad {

struct GridworldOptions {
  int size = 5;
  int goal_x = 3;
  int goal_y = 3;
  int episode_steps = 200;
  double max_wind = 0.9;
  double goal_reward = 1.0;
  double step_cost = 0;  // what each step that does not land on the goal costs
  // Whether the wind pushes a move only along the move's own axis (else
  // along both axes).
  bool push_along_move_only = false;
  // Whether landing on the goal leaves the agent there (else it goes back
  // to the start).
  bool goal_holds = false;

  // The rules of SeCBAD's public code: both of the above, and its step
  // cost of 0.1.
  static GridworldOptions SecbadCodeRules() {
    GridworldOptions o;
    o.push_along_move_only = true;
    o.goal_holds = true;
    o.step_cost = 0.1;
    return o;
  }
};

class WindyGridworld {
 public:
  static constexpr int kActions = 5;

  WindyGridworld(GridworldOptions options, SegmentPrior segments, uint64_t seed);

  // A new episode: the agent at the start, a fresh wind and segment.
  void Reset();

  struct Outcome {
    double reward = 0;
    bool done = false;             // the episode's last step
    std::array<double, 2> pushed;  // what the agent saw of the wind (see above)
    bool wind_changed = false;     // a new segment begins with the next step
  };
  // One step; `action` in [0, kActions).
  Outcome Act(int action);

  // Whether `action` moves (every action but stay).
  static bool IsMove(int action) { return action >= 1 && action < kActions; }
  // Whether the wind along `axis` (0: x, 1: y) pushes `action` under
  // `options`' rules.
  static bool Pushes(const GridworldOptions& options, int action, int axis);

  // The world's rule for where `action` from (x, y) lands when the wind
  // pushes it by (push_x, push_y) cells (each -1, 0 or +1; a stay is never
  // pushed, nor an axis Pushes says is not), and per axis whether it was
  // pushed and the grid's edge left the push whole.
  struct Landing {
    int x = 0, y = 0;
    std::array<bool, 2> whole = {false, false};
  };
  static Landing Land(const GridworldOptions& options, int x, int y, int action, int push_x,
                      int push_y);

  // The world's rule for what a move shows of one axis's wind w, when the
  // axis is pushed at all: the probability that it is pushed by `push`
  // cells (-1, 0 or +1).
  static double PushProbability(double wind, int push);

  int x() const { return x_; }
  int y() const { return y_; }
  int step() const { return step_; }
  const std::array<double, 2>& wind() const { return wind_; }
  const GridworldOptions& options() const { return options_; }
  // The steps at which each segment after the first began, this episode.
  const std::vector<int>& changes() const { return changes_; }

 private:
  void NewSegment();

  GridworldOptions options_;
  SegmentPrior segments_;
  // The context's course (segment lengths, winds) and the pushes draw from
  // streams of their own, so agents that act differently in worlds of one
  // seed meet the same winds at the same steps.
  Rng context_rng_;
  Rng push_rng_;
  int x_ = 0, y_ = 0, step_ = 0;
  int segment_end_ = 0;  // the step at which the current segment ends
  std::array<double, 2> wind_ = {0, 0};
  std::vector<int> changes_;
};

}  // namespace strata::secbad

#endif  // STRATA_EXPERIMENTS_GRIDWORLD_H_
