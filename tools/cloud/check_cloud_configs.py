#!/usr/bin/python3
"""Checks Strata's cloud cluster files against the fields their services document.

The pcluster and cyclecloud CLIs cannot run here, so this is the check the
files get before a user's cloud account sees them:

  * an AWS ParallelCluster 3 cluster configuration (YAML): the documented
    top-level sections, the required fields of HeadNode and of each Slurm
    queue and compute resource, value kinds and ranges, EFA only on
    instance types that have it; for Strata, a "cpu" and a "gpu" queue;
  * an Azure CycleCloud cluster template (its own nested [section],
    [[section]], [[[section]]] format, not INI) and the JSON parameters
    file it is created with: sections nest one level at a time, one
    [cluster], a scheduler node and node arrays with a machine type and a
    Slurm partition, every $Parameter the template uses declared in a
    [parameters] section, and the parameters file naming only declared
    parameters, with values of their type, and every required one.

  check_cloud_configs.py --pcluster tools/cloud/aws/pcluster.yaml
  check_cloud_configs.py --cyclecloud tools/cloud/azure/strata-slurm.txt \\
      --cyclecloud-params tools/cloud/azure/strata-params.json

Prints one line per problem and exits 1 when there is any, 0 otherwise.
"""

import argparse
import json
import re
import sys

import yaml

# ParallelCluster 3's documented top-level sections.
PCLUSTER_SECTIONS = {
    "Region", "CustomS3Bucket", "AdditionalResources", "Iam", "Image", "HeadNode", "Scheduling",
    "SharedStorage", "Monitoring", "Tags", "AdditionalPackages", "DirectoryService",
    "DeploymentSettings", "Imds", "LoginNodes", "DevSettings",
}
PCLUSTER_OS = {"alinux2", "alinux2023", "ubuntu2004", "ubuntu2204", "ubuntu2404", "rhel8",
               "rocky8", "rhel9", "rocky9"}
STORAGE_TYPES = {"Ebs", "Efs", "FsxLustre", "FsxOntap", "FsxOpenZfs", "FileCache"}
# Instance types with an Elastic Fabric Adapter, among those a Strata
# cluster would pick (the EC2 documentation lists them all).
EFA_INSTANCE_TYPES = {
    "c5n.18xlarge", "c5n.metal", "c6gn.16xlarge", "c6in.32xlarge", "c7gn.16xlarge",
    "hpc6a.48xlarge", "hpc6id.32xlarge", "hpc7a.96xlarge", "hpc7g.16xlarge", "m5n.24xlarge",
    "m6i.32xlarge", "r5n.24xlarge", "g4dn.12xlarge", "g4dn.metal", "g5.48xlarge",
    "p3dn.24xlarge", "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge",
}
GPU_FAMILIES = ("p3", "p4", "p5", "g4", "g5", "g6")
NAME = re.compile(r"^[a-z][a-z0-9-]{0,24}$")


class Problems:
    def __init__(self, source):
        self.source = source
        self.lines = []

    def add(self, where, what):
        self.lines.append(f"{self.source}: {where}: {what}")


def field(problems, mapping, path, key, kind, required=True):
    """mapping[key] checked to be of `kind`; None when absent or wrong."""
    where = f"{path}.{key}" if path else key
    if not isinstance(mapping, dict) or key not in mapping:
        if required:
            problems.add(where, "missing")
        return None
    value = mapping[key]
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        problems.add(where, f"expected {kind.__name__}, got {type(value).__name__} {value!r}")
        return None
    return value


def check_pcluster(path):
    problems = Problems(path)
    with open(path) as f:
        config = yaml.safe_load(f)
    if not isinstance(config, dict):
        problems.add("(top)", "not a mapping")
        return problems.lines
    for key in config:
        if key not in PCLUSTER_SECTIONS:
            problems.add(key, "not a ParallelCluster 3 section")
    field(problems, config, "", "Region", str, required=False)
    image = field(problems, config, "", "Image", dict)
    os_name = field(problems, image, "Image", "Os", str)
    if os_name is not None and os_name not in PCLUSTER_OS:
        problems.add("Image.Os", f"{os_name!r} is not one of {sorted(PCLUSTER_OS)}")
    head = field(problems, config, "", "HeadNode", dict)
    field(problems, head, "HeadNode", "InstanceType", str)
    networking = field(problems, head, "HeadNode", "Networking", dict)
    field(problems, networking, "HeadNode.Networking", "SubnetId", str)
    ssh = field(problems, head, "HeadNode", "Ssh", dict, required=False)
    if ssh is not None:
        field(problems, ssh, "HeadNode.Ssh", "KeyName", str)
    scheduling = field(problems, config, "", "Scheduling", dict)
    scheduler = field(problems, scheduling, "Scheduling", "Scheduler", str)
    if scheduler is not None and scheduler != "slurm":
        problems.add("Scheduling.Scheduler", f"{scheduler!r}: Strata runs under slurm")
    queues = field(problems, scheduling, "Scheduling", "SlurmQueues", list) or []
    names = set()
    for i, queue in enumerate(queues):
        where = f"Scheduling.SlurmQueues[{i}]"
        name = field(problems, queue, where, "Name", str)
        if name is not None:
            if not NAME.match(name):
                problems.add(f"{where}.Name", f"{name!r}: lowercase letters, digits and hyphens, "
                             "at most 25, starting with a letter")
            if name in names:
                problems.add(f"{where}.Name", f"{name!r} is used twice")
            names.add(name)
        queue_networking = field(problems, queue, where, "Networking", dict)
        subnets = field(problems, queue_networking, f"{where}.Networking", "SubnetIds", list)
        if subnets is not None and not subnets:
            problems.add(f"{where}.Networking.SubnetIds", "empty")
        resources = field(problems, queue, where, "ComputeResources", list) or []
        if not resources:
            problems.add(f"{where}.ComputeResources", "no compute resource")
        for j, resource in enumerate(resources):
            rwhere = f"{where}.ComputeResources[{j}]"
            field(problems, resource, rwhere, "Name", str)
            instance = field(problems, resource, rwhere, "InstanceType", str)
            low = field(problems, resource, rwhere, "MinCount", int, required=False) or 0
            high = field(problems, resource, rwhere, "MaxCount", int, required=False)
            if low < 0 or (high is not None and high < max(low, 1)):
                problems.add(rwhere, f"needs 0 <= MinCount <= MaxCount and MaxCount >= 1, "
                             f"got {low} and {high}")
            efa = field(problems, resource, rwhere, "Efa", dict, required=False)
            enabled = efa is not None and field(problems, efa, f"{rwhere}.Efa", "Enabled", bool)
            if enabled and instance is not None and instance not in EFA_INSTANCE_TYPES:
                problems.add(f"{rwhere}.Efa", f"{instance} has no EFA")
            if name == "gpu" and instance is not None and not instance.startswith(GPU_FAMILIES):
                problems.add(f"{rwhere}.InstanceType", f"{instance} in the gpu queue has no GPU")
    for wanted in ("cpu", "gpu"):
        if queues and wanted not in names:
            problems.add("Scheduling.SlurmQueues", f"no {wanted!r} queue (Strata's scripts use it)")
    for i, storage in enumerate(field(problems, config, "", "SharedStorage", list,
                                      required=False) or []):
        where = f"SharedStorage[{i}]"
        field(problems, storage, where, "MountDir", str)
        field(problems, storage, where, "Name", str)
        kind = field(problems, storage, where, "StorageType", str)
        if kind is not None and kind not in STORAGE_TYPES:
            problems.add(f"{where}.StorageType", f"{kind!r} is not one of {sorted(STORAGE_TYPES)}")
    return problems.lines


SECTION = re.compile(r"^(\[+)([^\[\]]+?)(\]+)$")
ATTRIBUTE = re.compile(r"^([A-Za-z][\w.\-]*)\s*=\s*(.*)$")
REFERENCE = re.compile(r"\$([A-Za-z_]\w*)")


def parse_template(path, problems):
    """The sections of a CycleCloud template: [(depth, kind, name, {attribute: value})]."""
    sections = []
    depth = 0
    with open(path) as f:
        for number, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            header = SECTION.match(line)
            if header:
                opening, title, closing = header.groups()
                if len(opening) != len(closing):
                    problems.add(f"line {number}", f"unbalanced brackets in {line!r}")
                    continue
                if len(opening) > 3:
                    problems.add(f"line {number}",
                                 f"{line!r}: CycleCloud sections nest at most 3 deep")
                elif len(opening) > depth + 1:
                    problems.add(f"line {number}",
                                 f"{line!r} nests {len(opening)} levels under a level-{depth} "
                                 "section")
                depth = len(opening)
                parts = title.split(None, 1)
                sections.append((depth, parts[0], parts[1] if len(parts) > 1 else "", {}, number))
                continue
            attribute = ATTRIBUTE.match(line)
            if not attribute:
                problems.add(f"line {number}", f"neither a [section] nor Name = Value: {line!r}")
                continue
            if not sections:
                problems.add(f"line {number}", "an attribute before any section")
                continue
            sections[-1][3][attribute.group(1)] = attribute.group(2)
    return sections


def check_cyclecloud(template_path, params_path):
    problems = Problems(template_path)
    sections = parse_template(template_path, problems)
    clusters = [s for s in sections if s[0] == 1 and s[1] == "cluster"]
    if len(clusters) != 1:
        problems.add("[cluster]", f"expected one [cluster NAME] section, found {len(clusters)}")
    for depth, kind, name, _, number in sections:
        if depth == 1 and kind not in ("cluster", "parameters"):
            problems.add(f"line {number}", f"[{kind} {name}]: a top level section is [cluster] "
                         "or [parameters]")
    nodes = {(kind, name): attrs for depth, kind, name, attrs, _ in sections if depth == 2}
    if ("node", "defaults") not in nodes:
        problems.add("[[node defaults]]", "missing")
    if "MachineType" not in nodes.get(("node", "scheduler"), {}):
        problems.add("[[node scheduler]]", "missing, or without a MachineType")
    arrays = [name for (kind, name) in nodes if kind == "nodearray"]
    if not arrays:
        problems.add("[[nodearray]]", "no node array")
    # Each node array's own MachineType and Slurm partition (its
    # [[[configuration]]] follows it).
    current = None
    partitions = {}
    for depth, kind, name, attrs, _ in sections:
        if depth == 2:
            current = name if kind == "nodearray" else None
            if current is not None and "MachineType" not in attrs:
                problems.add(f"[[nodearray {name}]]", "no MachineType")
        elif depth == 3 and kind == "configuration" and current is not None:
            if "slurm.partition" in attrs:
                partitions[current] = attrs["slurm.partition"]
    for name in arrays:
        if name not in partitions:
            problems.add(f"[[nodearray {name}]]", "no slurm.partition in its [[[configuration]]]")
    # Parameters: declared under [parameters ...], used as $Name.
    declared = {}
    in_parameters = False
    for depth, kind, name, attrs, _ in sections:
        if depth == 1:
            in_parameters = kind == "parameters"
        elif depth == 3 and kind == "parameter":
            if not in_parameters:
                problems.add(f"[[[parameter {name}]]]", "outside a [parameters] section")
            declared[name] = attrs
    in_cluster = False
    for depth, kind, name, attrs, _ in sections:
        if depth == 1:
            in_cluster = kind == "cluster"
        if not in_cluster:
            continue
        for value in attrs.values():
            for used in REFERENCE.findall(value):
                if used not in declared:
                    problems.add(f"${used}", "used in the template but not declared as a "
                                 "[[[parameter]]]")
    lines = problems.lines
    if params_path:
        lines += check_cyclecloud_params(params_path, declared)
    return lines


def check_cyclecloud_params(path, declared):
    problems = Problems(path)
    with open(path) as f:
        params = json.load(f)
    if not isinstance(params, dict):
        problems.add("(top)", "not a JSON object")
        return problems.lines
    for name, value in params.items():
        if name not in declared:
            problems.add(name, "not a parameter of the template")
            continue
        kind = declared[name].get("ParameterType", "")
        if kind == "Integer" and (isinstance(value, bool) or not isinstance(value, int)):
            problems.add(name, f"an Integer parameter, got {value!r}")
        if kind == "Boolean" and not isinstance(value, bool):
            problems.add(name, f"a Boolean parameter, got {value!r}")
    for name, attrs in declared.items():
        required = attrs.get("Required", "false").lower() == "true"
        if required and "DefaultValue" not in attrs and name not in params:
            problems.add(name, "required by the template and not given")
    return problems.lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pcluster", action="append", default=[])
    parser.add_argument("--cyclecloud")
    parser.add_argument("--cyclecloud-params")
    args = parser.parse_args()
    problems = []
    for path in args.pcluster:
        problems += check_pcluster(path)
    if args.cyclecloud:
        problems += check_cyclecloud(args.cyclecloud, args.cyclecloud_params)
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
