#!/usr/bin/env bash
# The main job, as far as it exists: the controller's own validation of the
# example manifests, then a private redis-server, gpuq-sim with
# clusters/mixed.yaml and gpuq-controller, all on loopback and one shared
# accelerated clock; the examples are applied with the real kubectl and
# gpuq queues, admits and places them. (The replay of the Philly trace
# comes with issue 9.) Every process it starts is stopped at the end, also
# on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

scale=${SPEED:-60}
cluster=${CLUSTER:-clusters/mixed.yaml}
epoch=$(date +%s)
work=$(mktemp -d /tmp/gpuq-demo-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM # cleanup runs from the EXIT trap

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

echo "== validating examples/ with the controller's decoders"
./build/kubectl-gpuq validate -f examples/

echo
echo "== starting redis-server, gpuq-sim ($cluster) and gpuq-controller (clock x$scale)"
rport=$(free_port)
redis-server --bind 127.0.0.1 --port "$rport" --save '' --appendonly no \
  --dir "$work" >"$work/redis.log" 2>&1 &
pids+=($!)
./build/gpuq-sim --listen 127.0.0.1:0 --kubeconfig-out "$work/kubeconfig" \
  --crds crds --cluster "$cluster" --time-scale "$scale" --time-epoch "$epoch" \
  >"$work/sim.out" 2>"$work/sim.log" &
pids+=($!)
for _ in $(seq 1 200); do [ -f "$work/kubeconfig" ] && break; sleep 0.05; done
head -1 "$work/sim.out"
mport=$(free_port)
./build/gpuq-controller --kubeconfig "$work/kubeconfig" \
  --redis "redis://127.0.0.1:$rport/0" --metrics-addr "127.0.0.1:$mport" \
  --time-scale "$scale" --time-epoch "$epoch" 2>"$work/controller.log" &
pids+=($!)
k() { kubectl --kubeconfig "$work/kubeconfig" --cache-dir "$work/cache" "$@"; }

echo
echo "== applying examples/ (TeamQuotas and GpuJobs)"
for ns in research vision interns; do k create namespace "$ns" >/dev/null; done
k apply -f examples/
for _ in $(seq 1 100); do
  if ! k get gpujobs -A --no-headers | grep -qvE 'Running|Succeeded|Failed|Queued +[0-9]'; then
    break
  fi
  sleep 0.1
done
sleep 1
echo
k get nodes
echo
k get teamquotas
echo
k get gpujobs -A
echo
k get pods -A -o wide
echo
echo "== gpuq metrics (excerpt of http://127.0.0.1:$mport/metrics)"
curl -s "http://127.0.0.1:$mport/metrics" |
  grep -E '^gpuq_(admitted_gpus|pending_jobs|nominal_gpus|admissions_total)' || true
echo
echo "== sim invariant checker"
curl -s "$(head -1 "$work/sim.out" | sed 's/.* //')/sim/v1/report" |
  python3 -c 'import json,sys; r=json.load(sys.stdin); print("invariant violations:", r["invariant_violations"], " placement misses:", r["placement_misses"])'
