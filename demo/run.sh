#!/usr/bin/env bash
# The main job. Until the simulated cluster, the controller and the trace
# replay exist (issues 3-9), it runs what exists: the controller's own
# validation of the example manifests, through the kubectl plugin.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gpuq: validating examples/ with the controller's decoders"
./build/kubectl-gpuq validate -f examples/
echo
echo "The trace replay on the simulated cluster is not built yet: it needs"
echo "gpuq-sim (issues 3-4) and gpuq-controller (issue 7). Nothing else ran."
