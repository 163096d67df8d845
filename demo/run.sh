#!/usr/bin/env bash
# The main job. Until the simulated kubelets, the controller and the trace
# replay exist (issues 4-9), it runs what exists: the controller's own
# validation of the example manifests, then gpuq-sim with the GPU node
# fixtures and the examples applied through the real kubectl.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d /tmp/gpuq-demo-XXXXXX)
sim_pid=""
cleanup() {
  [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null && wait "$sim_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM # cleanup runs from the EXIT trap

echo "== validating examples/ with the controller's decoders"
./build/kubectl-gpuq validate -f examples/

echo
echo "== starting gpuq-sim on a private loopback port"
./build/gpuq-sim --listen 127.0.0.1:0 --kubeconfig-out "$work/kubeconfig" \
  >"$work/sim.out" 2>"$work/sim.log" &
sim_pid=$!
for _ in $(seq 1 200); do [ -f "$work/kubeconfig" ] && break; sleep 0.05; done
head -1 "$work/sim.out"
k() { kubectl --kubeconfig "$work/kubeconfig" --cache-dir "$work/cache" "$@"; }

echo
echo "== registering GPU nodes (tests/fixtures/nodes) and applying examples/"
for f in tests/fixtures/nodes/*.json; do k create -f "$f" >/dev/null; done
for ns in research vision interns; do k create namespace "$ns" >/dev/null; done
k apply -f examples/
echo
k get nodes
echo
k get teamquotas
echo
k get gpujobs -A
echo
echo "These jobs stay unadmitted: gpuq-sim's kubelets are ready to run them,"
echo "but the controller loop that queues, admits and places them (issue 7)"
echo "comes next."
