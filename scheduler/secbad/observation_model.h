// ObservationModel: how observations depend on the latent context of the
// segment they fall in, as the run-length inference
// (scheduler/secbad/run_length_posterior.h) needs it. The model keeps, for
// every s = 0..W, the posterior over the context given the last s
// observations taken as one segment (s = 0: the prior), and answers two
// questions about them:
//
//   model.LogPredictive(x, out);  // out[s] = log p(x | last s observations), s = 0..W
//   model.Observe(x);             // x joins: slot s now holds the last s observations
//   model.BeliefOf(s);            // the context's mean and variance under slot s
//
// Implementations: NormalGammaModel (below: conjugate, each dimension a
// Gaussian of unknown mean and precision), GridContextModel (below: each
// dimension's context one of a grid of values, observations discrete with
// known probabilities), or a learned one (an encoder over a segment's
// observations) behind the same calls.
//
// Contract: Reset(window) before use and at each new sequence; every call
// costs O(W * dims()) and no more; slots beyond the observations seen so
// far hold all of them. A dimension given as NaN was not observed at that
// step: it adds nothing to any slot and its density is 1 (a step that sees
// nothing still passes time, so the hazard moves the run lengths). Not
// thread-safe.
#ifndef STRATA_SCHEDULER_SECBAD_OBSERVATION_MODEL_H_
#define STRATA_SCHEDULER_SECBAD_OBSERVATION_MODEL_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace strata::secbad {

// A belief over the latent context: per dimension, its mean and variance,
// and, for a model whose context is one of a grid of values
// (GridContextModel), the probability of each grid value (empty for any
// other model).
struct ContextBelief {
  std::vector<double> mean;
  std::vector<double> variance;
  std::vector<std::vector<double>> distribution;
};

class ObservationModel {
 public:
  virtual ~ObservationModel() = default;
  virtual int dims() const = 0;
  // Forgets every observation; slots 0..window follow.
  virtual void Reset(int window) = 0;
  // out[s] = log p(x | the last s observations, one segment), s = 0..W
  // (out has W + 1 entries); x has dims() entries.
  virtual void LogPredictive(const double* x, double* out) const = 0;
  virtual void Observe(const double* x) = 0;
  virtual ContextBelief BeliefOf(int slot) const = 0;
  // Slot updates the last LogPredictive and Observe made (the O(W) count).
  virtual int64_t last_work() const = 0;
};

// The Normal-Gamma prior of one dimension: the context is the mean mu of
// a Gaussian with precision lambda, lambda ~ Gamma(shape, rate) and
// mu | lambda ~ N(mean, 1 / (strength * lambda)).
struct NormalGammaPrior {
  double mean = 0;
  double strength = 0.1;  // kappa: pseudo-observations behind `mean`
  double shape = 2;       // alpha (> 1, so the context's variance is finite)
  double rate = 1;        // beta: E[1 / lambda] = rate / (shape - 1)

  // A prior for a signal whose noise has standard deviation about `noise`
  // and whose segment means lie within about `spread` of `mean`.
  static NormalGammaPrior For(double mean, double noise, double spread);
};

// Readings that now and then have nothing to do with the context (an
// iteration stalled by a hiccup on a shared machine): with probability
// `rate` an observation lies anywhere in [low[d], high[d]] per dimension d,
// uniformly, instead of near its segment's context. Rate 0: never.
struct OutlierModel {
  double rate = 0;
  std::vector<double> low, high;
};

// Each dimension an independent Gaussian of unknown mean (the context) and
// precision, with a Normal-Gamma prior: predictives are Student-t, and a
// slot is three sums (count, sum, sum of squares), so a step is a few array
// updates per slot. With outliers (OutlierModel), each predictive is the
// mixture (1 - rate) Student-t + rate uniform: one stray reading then no
// longer rules out every segment that began before it, and a change takes
// a second reading or more to be believed. A reading joins each slot's
// sums weighted by how likely it is not an outlier to that slot's
// segment (so counts may be fractional).
class NormalGammaModel final : public ObservationModel {
 public:
  // One prior per dimension. InvalidArgument for none, a strength <= 0, a
  // shape <= 1 or a rate <= 0, naming the dimension; for outliers at a
  // rate outside [0, 1), or (rate above 0) without one range per dimension
  // with low < high.
  static absl::StatusOr<NormalGammaModel> Create(std::vector<NormalGammaPrior> priors,
                                                 OutlierModel outliers = {});

  int dims() const override { return static_cast<int>(priors_.size()); }
  void Reset(int window) override;
  void LogPredictive(const double* x, double* out) const override;
  void Observe(const double* x) override;
  ContextBelief BeliefOf(int slot) const override;
  int64_t last_work() const override { return last_work_; }

 private:
  NormalGammaModel(std::vector<NormalGammaPrior> priors, OutlierModel outliers)
      : priors_(std::move(priors)), outliers_(std::move(outliers)) {}
  // The posterior parameters of slot `s`, dimension `d`.
  struct Posterior {
    double mean, strength, shape, rate;
  };
  Posterior PosteriorOf(int slot, int d) const;
  // log of slot `slot`'s Student-t predictive of x (over the dimensions seen).
  double StudentLogDensity(int slot, const double* x) const;
  // log(rate * the outliers' uniform density of x over the dimensions seen).
  double LogStrayDensity(const double* x) const;

  std::vector<NormalGammaPrior> priors_;
  OutlierModel outliers_;
  int window_ = 0;
  // Per slot s (0..W) and dimension d, at s * dims + d (each reading
  // weighted by how likely it is not an outlier: 1 without outliers).
  std::vector<double> count_, sum_, sum_squares_;
  // Per count c (0..W) and dimension d, at c * dims + d: the predictive's
  // log normalising terms, lgamma((nu+1)/2) - lgamma(nu/2) - log(nu pi)/2
  // for nu = 2 shape + c.
  std::vector<double> constant_;
  // With outliers: per slot, log((1 - rate) t) of the x LogPredictive was
  // last asked about (kept_for_), for Observe to reuse.
  mutable std::vector<double> kept_, kept_for_;
  mutable int64_t last_work_ = 0;
};

// One dimension of a GridContextModel: the values its context may take,
// the values an observation may take, and how likely each observation is
// under each context value.
struct GridDimension {
  std::vector<double> contexts;  // the grid, G values
  std::vector<double> symbols;   // what an observation can be, K values
  // likelihood[g][k] = p(observation symbols[k] | context contexts[g]);
  // each row sums to 1.
  std::vector<std::vector<double>> likelihood;
  // p(context contexts[g]) before any observation; empty: uniform.
  std::vector<double> prior;
};

// Each dimension's context is one of a grid of values and each observation
// of it one of a few symbols, whose probabilities under every context value
// are known (a world's own rules, or a table estimated from traces). A slot
// holds the exact posterior over the grid given its observations, so the
// predictive of an observation is a sum over the grid: a step costs
// O(W * dims * G). An observation that is no symbol of its dimension (and
// NaN) is taken as not observed.
//
// Where a likelihood is 0, an observation rules the context value out for
// good: one observation no value of a slot allows gives that slot density
// 0, which the run-length inference reads as "a new segment began".
class GridContextModel final : public ObservationModel {
 public:
  // InvalidArgument naming the dimension for: none, an empty grid or
  // symbol list, a likelihood table that is not G x K, a row that has a
  // negative entry or does not sum to 1 (within 1e-6), or a prior that is
  // not G non-negative values with a positive sum.
  static absl::StatusOr<GridContextModel> Create(std::vector<GridDimension> dims);

  int dims() const override { return static_cast<int>(dims_.size()); }
  void Reset(int window) override;
  void LogPredictive(const double* x, double* out) const override;
  void Observe(const double* x) override;
  ContextBelief BeliefOf(int slot) const override;
  int64_t last_work() const override { return last_work_; }

 private:
  explicit GridContextModel(std::vector<GridDimension> dims);
  // The symbol index of x in dimension d; -1 when x is none of them.
  int SymbolOf(int d, double x) const;
  // The posterior of slot s, dimension d: G probabilities summing to 1.
  const double* PosteriorOf(int slot, int d) const;
  double* PosteriorOf(int slot, int d);

  std::vector<GridDimension> dims_;
  std::vector<size_t> offset_;  // where dimension d's grid starts in a slot
  size_t slot_size_ = 0;        // sum of the grids
  int window_ = 0;
  std::vector<double> posterior_;  // slot s at s * slot_size_
  mutable int64_t last_work_ = 0;
};

}  // namespace strata::secbad

#endif  // STRATA_SCHEDULER_SECBAD_OBSERVATION_MODEL_H_
