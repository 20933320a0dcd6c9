#!/usr/bin/env python3
"""Writes the job configs of the common models into configs/:

  alexnet, vgg16, resnet18, resnet50    3x224x224, 1000 classes, the layers of
                                        torchvision.models' definitions
  alexnet_cifar, vgg16_cifar,           3x32x32, 10 classes, the same families
  resnet18_cifar, resnet50_cifar,       sized for CIFAR (torchvision has none)
  resnet20_cifar
  resnet20_fmnist                       ResNet-20 on Fashion-MNIST (real data)

Layers are named as torchvision names its modules ("features.0",
"layer1.0.conv1", "layer1.0.downsample.0"), so a parameter's Strata name is
its torchvision state_dict key. Every model splits before its first linear
layer. The ImageNet-sized and CIFAR-sized configs train on synthetic data
of a few hundred images (throughput, not accuracy).

  tools/configs/write_model_configs.py [--out configs] [--check]

--check writes nothing and exits 1 if a config in --out differs from what
this script would write.
"""
import argparse
import json
import os
import sys


def conv(name, out, kernel=3, stride=1, padding=None, bias=True):
    layer = {"type": "conv2d", "name": name, "out_channels": out, "kernel": kernel,
             "stride": stride, "padding": kernel // 2 if padding is None else padding}
    if not bias:
        layer["bias"] = False
    return layer


def relu(name):
    return {"type": "relu", "name": name}


def bn(name):
    return {"type": "batchnorm2d", "name": name}


def maxpool(name, kernel, stride, padding=0):
    return {"type": "maxpool2d", "name": name, "kernel": kernel, "stride": stride,
            "padding": padding}


def linear(name, out):
    return {"type": "linear", "name": name, "out_features": out}


def dropout(name):
    return {"type": "dropout", "name": name, "p": 0.5}


# --- AlexNet and VGG: a features list and a classifier list -----------------

def alexnet_layers(classes, cifar):
    if cifar:  # 32x32 -> 16 -> 8 -> 4 -> 2: a 256x2x2 trunk output
        f = [conv("features.0", 64, 3, 2, 1), relu("features.1"), maxpool("features.2", 2, 2),
             conv("features.3", 192, 3), relu("features.4"), maxpool("features.5", 2, 2)]
        last_pool = maxpool("features.12", 2, 2)
    else:  # torchvision: 224 -> 55 -> 27 -> 13 -> 6
        f = [conv("features.0", 64, 11, 4, 2), relu("features.1"), maxpool("features.2", 3, 2),
             conv("features.3", 192, 5), relu("features.4"), maxpool("features.5", 3, 2)]
        last_pool = maxpool("features.12", 3, 2)
    f += [conv("features.6", 384, 3), relu("features.7"), conv("features.8", 256, 3),
          relu("features.9"), conv("features.10", 256, 3), relu("features.11"), last_pool]
    # torchvision's adaptive average pool to 6x6 is the identity on a 6x6 map.
    head = [{"type": "flatten", "name": "flatten"}, dropout("classifier.0"),
            linear("classifier.1", 4096), relu("classifier.2"), dropout("classifier.3"),
            linear("classifier.4", 4096), relu("classifier.5"), linear("classifier.6", classes)]
    return f + head, "features.12"


VGG16 = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


def vgg16_layers(classes):
    layers, i = [], 0
    for v in VGG16:
        if v == "M":
            layers.append(maxpool(f"features.{i}", 2, 2))
            i += 1
        else:
            layers += [conv(f"features.{i}", v, 3), relu(f"features.{i + 1}")]
            i += 2
    last = layers[-1]["name"]
    # torchvision's adaptive average pool to 7x7 is the identity on a 7x7 map
    # (224x224 input); a 32x32 input leaves 1x1x512.
    layers += [{"type": "flatten", "name": "flatten"}, linear("classifier.0", 4096),
               relu("classifier.1"), dropout("classifier.2"), linear("classifier.3", 4096),
               relu("classifier.4"), dropout("classifier.5"), linear("classifier.6", classes)]
    return layers, last


# --- ResNets ----------------------------------------------------------------

def downsample(prefix, out, stride):
    return [conv(f"{prefix}.downsample.0", out, 1, stride, 0, bias=False),
            bn(f"{prefix}.downsample.1")]


def basic_block(prefix, in_ch, out, stride):
    """torchvision's BasicBlock: two 3x3 convolutions."""
    body = [conv("conv1", out, 3, stride, 1, bias=False), bn("bn1"), relu("relu1"),
            conv("conv2", out, 3, 1, 1, bias=False), bn("bn2")]
    return body, in_ch != out or stride != 1, out


def bottleneck(prefix, in_ch, planes, stride):
    """torchvision's Bottleneck (v1.5: the stride on the 3x3 convolution)."""
    out = planes * 4
    body = [conv("conv1", planes, 1, 1, 0, bias=False), bn("bn1"), relu("relu1"),
            conv("conv2", planes, 3, stride, 1, bias=False), bn("bn2"), relu("relu2"),
            conv("conv3", out, 1, 1, 0, bias=False), bn("bn3")]
    return body, in_ch != out or stride != 1, out


def residual_stages(block, stages, in_ch, first_stride=1):
    """stages: [(name, width, blocks)]; each stage but the first halves the map."""
    layers = []
    for s, (stage, width, count) in enumerate(stages):
        for b in range(count):
            prefix = f"{stage}.{b}"
            stride = (first_stride if s == 0 else 2) if b == 0 else 1
            body, project, out = block(prefix, in_ch, width, stride)
            entry = {"type": "residual", "name": prefix, "body": body}
            if project:
                entry["shortcut"] = [{**l, "name": l["name"][len(prefix) + 1:]}
                                     for l in downsample(prefix, out, stride)]
            layers += [entry, relu(f"{prefix}.relu")]
            in_ch = out
    return layers, in_ch


def resnet_imagenet(depth, classes, cifar):
    block, counts = {18: (basic_block, [2, 2, 2, 2]), 50: (bottleneck, [3, 4, 6, 3])}[depth]
    if cifar:  # a 3x3 stem and no pooling: 32 -> 32 -> 16 -> 8 -> 4
        stem = [conv("conv1", 64, 3, 1, 1, bias=False), bn("bn1"), relu("relu")]
    else:  # torchvision: 224 -> 112 -> 56 -> 28 -> 14 -> 7
        stem = [conv("conv1", 64, 7, 2, 3, bias=False), bn("bn1"), relu("relu"),
                maxpool("maxpool", 3, 2, 1)]
    stages = [("layer1", 64, counts[0]), ("layer2", 128, counts[1]),
              ("layer3", 256, counts[2]), ("layer4", 512, counts[3])]
    body, _ = residual_stages(block, stages, 64)
    head = [{"type": "global_avgpool", "name": "avgpool"}, linear("fc", classes)]
    return stem + body + head, "avgpool"


def resnet20(classes):
    """He et al.'s CIFAR ResNet-20: 16-32-64 channels, 3 blocks per stage,
    1x1 projections where the shape changes."""
    stem = [conv("conv1", 16, 3, 1, 1, bias=False), bn("bn1"), relu("relu")]
    body, _ = residual_stages(basic_block, [("layer1", 16, 3), ("layer2", 32, 3),
                                            ("layer3", 64, 3)], 16)
    head = [{"type": "global_avgpool", "name": "avgpool"}, linear("fc", classes)]
    return stem + body + head, "avgpool"


# --- Whole configs ----------------------------------------------------------

def synthetic_config(name, input_shape, classes, layers_and_split, lr):
    layers, split = layers_and_split
    return {
        "name": name,
        "data": {"dataset": "synthetic", "train_size": 256, "test_size": 64},
        "model": {"input": input_shape, "classes": classes, "split_after": split,
                  "layers": layers},
        "optimizer": {"type": "sgd", "lr": lr, "momentum": 0.9, "weight_decay": 0.0005},
        "training": {"batch_size": 32, "epochs": 1, "seed": 1, "threads": 2, "log_every": 1},
        "cluster": {"mode": "single", "servers": 1, "conv_workers": 2, "fc_workers": 1},
    }


def resnet20_fmnist():
    layers, split = resnet20(10)
    return {
        "name": "resnet20_fmnist",
        "data": {"dataset": "fashion_mnist", "path": "/usr/share/datasets/fashion-mnist",
                 "mean": [0.2860], "std": [0.3530],
                 "augment": {"crop_padding": 2, "horizontal_flip": True}},
        "model": {"input": [28, 28, 1], "classes": 10, "split_after": split, "layers": layers},
        "optimizer": {"type": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.0005,
                      "nesterov": True},
        "schedule": {"type": "cosine"},
        "training": {"batch_size": 128, "epochs": 20, "seed": 1, "threads": 2,
                     "log_every": 100},
        "cluster": {"mode": "stanza", "servers": 1, "conv_workers": 2, "fc_workers": 1},
    }


def configs():
    big, small = [224, 224, 3], [32, 32, 3]
    return {
        "alexnet": synthetic_config("alexnet", big, 1000, alexnet_layers(1000, False), 0.01),
        "vgg16": synthetic_config("vgg16", big, 1000, vgg16_layers(1000), 0.01),
        "resnet18": synthetic_config("resnet18", big, 1000, resnet_imagenet(18, 1000, False), 0.1),
        "resnet50": synthetic_config("resnet50", big, 1000, resnet_imagenet(50, 1000, False), 0.1),
        "alexnet_cifar": synthetic_config("alexnet_cifar", small, 10, alexnet_layers(10, True),
                                          0.01),
        "vgg16_cifar": synthetic_config("vgg16_cifar", small, 10, vgg16_layers(10), 0.01),
        "resnet18_cifar": synthetic_config("resnet18_cifar", small, 10,
                                           resnet_imagenet(18, 10, True), 0.1),
        "resnet50_cifar": synthetic_config("resnet50_cifar", small, 10,
                                           resnet_imagenet(50, 10, True), 0.1),
        "resnet20_cifar": synthetic_config("resnet20_cifar", small, 10, resnet20(10), 0.1),
        "resnet20_fmnist": resnet20_fmnist(),
    }


def render(value, indent=0):
    """JSON with one layer per line, so a config reads as a table."""
    pad = "  " * indent
    if isinstance(value, dict) and any(isinstance(v, (dict, list)) and v and
                                       any(isinstance(x, dict) for x in
                                           (v if isinstance(v, list) else [v]))
                                       for v in value.values()):
        items = [f'{pad}  {json.dumps(k)}: {render(v, indent + 1).lstrip()}'
                 for k, v in value.items()]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
        items = [render(x, indent + 1) for x in value]
        return pad + "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return pad + json.dumps(value)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "configs"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    stale = []
    for name, config in configs().items():
        text = render(config) + "\n"
        path = os.path.join(args.out, name + ".json")
        if args.check:
            try:
                with open(path) as f:
                    if f.read() != text:
                        stale.append(path)
            except FileNotFoundError:
                stale.append(path)
        else:
            with open(path, "w") as f:
                f.write(text)
            print(f"wrote {os.path.normpath(path)}")
    if stale:
        print("out of date (run tools/configs/write_model_configs.py): " + ", ".join(stale),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
