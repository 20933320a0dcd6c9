#include "core/layers/residual.h"

#include "absl/strings/str_cat.h"
#include "core/layers/fusion.h"
#include "core/status.h"

namespace strata {
namespace {

Tensor ChainForward(const LayerChain& chain, const Tensor& input, bool training) {
  Tensor x = input;
  for (const auto& layer : chain) x = layer->Forward(x, training);
  return x;
}

// dL/d(chain input) when `need_input_grad`, else undefined.
Tensor ChainBackward(const LayerChain& chain, const Tensor& grad_output, bool need_input_grad) {
  Tensor g = grad_output;
  for (size_t i = chain.size(); i-- > 0;) {
    g = chain[i]->Backward(g, /*need_input_grad=*/i > 0 || need_input_grad);
  }
  return g;
}

absl::Status CheckChain(const LayerChain& chain, const Shape& input, const char* branch) {
  Shape shape = input;
  for (size_t i = 0; i < chain.size(); ++i) {
    if (chain[i]->input_shape() != shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          branch, "[", i, "] (\"", chain[i]->name(), "\") takes ",
          chain[i]->input_shape().ToString(), " per sample but is given ", shape.ToString()));
    }
    shape = chain[i]->output_shape();
  }
  return absl::OkStatus();
}

Shape ChainOutput(const LayerChain& chain, const Shape& input) {
  return chain.empty() ? input : chain.back()->output_shape();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Residual>> Residual::Create(std::string name,
                                                           const Shape& input_shape,
                                                           LayerChain body, LayerChain shortcut,
                                                           const Backend& backend) {
  if (body.empty()) {
    return absl::InvalidArgumentError("a residual block needs at least one layer in its body");
  }
  STRATA_RETURN_IF_ERROR(CheckChain(body, input_shape, "body"));
  STRATA_RETURN_IF_ERROR(CheckChain(shortcut, input_shape, "shortcut"));
  const Shape body_out = ChainOutput(body, input_shape);
  const Shape shortcut_out = ChainOutput(shortcut, input_shape);
  if (body_out != shortcut_out) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the body outputs ", body_out.ToString(), " per sample but the ",
        shortcut.empty() ? "identity shortcut passes " : "shortcut outputs ",
        shortcut_out.ToString(),
        "; the two are summed, so they must agree (a shortcut of one conv2d with kernel 1, the "
        "body's stride and its out_channels projects the input)"));
  }
  FuseRelus(body, 0, body.size());
  FuseRelus(shortcut, 0, shortcut.size());
  return std::unique_ptr<Residual>(
      new Residual(std::move(name), input_shape, std::move(body), std::move(shortcut), backend));
}

Tensor Residual::Forward(const Tensor& input, bool training) {
  const Tensor body_out = ChainForward(body_, input, training);
  const Tensor shortcut_out = ChainForward(shortcut_, input, training);
  // A fresh output: a branch's last layer may keep its own output for its
  // backward, so neither is overwritten.
  Tensor output = Tensor::Empty(body_out.shape(), DType::kF32, backend_.device());
  STRATA_CHECK_OK(backend_.Add(body_out, shortcut_out, output));
  return output;
}

Tensor Residual::Backward(const Tensor& grad_output, bool need_input_grad) {
  // dL/dy reaches both branches unchanged; their input gradients add up.
  const Tensor body_grad = ChainBackward(body_, grad_output, need_input_grad);
  const Tensor shortcut_grad = ChainBackward(shortcut_, grad_output, need_input_grad);
  if (!need_input_grad) return Tensor();
  Tensor grad_input = Tensor::Empty(body_grad.shape(), DType::kF32, backend_.device());
  STRATA_CHECK_OK(backend_.Add(body_grad, shortcut_grad, grad_input));
  return grad_input;
}

template <typename F>
void Residual::ForEachLayer(F&& f) const {
  for (const auto& layer : body_) f(*layer);
  for (const auto& layer : shortcut_) f(*layer);
}

std::vector<Parameter*> Residual::parameters() {
  std::vector<Parameter*> out;
  ForEachLayer([&](Layer& l) {
    for (Parameter* p : l.parameters()) out.push_back(p);
  });
  return out;
}

std::vector<Parameter*> Residual::replicated_parameters() {
  std::vector<Parameter*> out;
  ForEachLayer([&](Layer& l) {
    for (Parameter* p : l.replicated_parameters()) out.push_back(p);
  });
  return out;
}

std::vector<StateBuffer*> Residual::state_buffers() {
  std::vector<StateBuffer*> out;
  ForEachLayer([&](Layer& l) {
    for (StateBuffer* b : l.state_buffers()) out.push_back(b);
  });
  return out;
}

void Residual::InitParameters(Rng& rng) {
  ForEachLayer([&](Layer& l) {
    Rng own(rng.NextU64());
    l.InitParameters(own);
  });
}

int64_t Residual::ForwardFlopsPerSample() const {
  int64_t flops = 0;
  ForEachLayer([&](Layer& l) { flops += l.ForwardFlopsPerSample(); });
  return flops;
}

}  // namespace strata
