#!/usr/bin/env bash
# The maintenance exercise of docs/runbook.md: drain a GPU node under a
# running checkpointing job and check that the job resumes elsewhere from
# its checkpoint. Runs against gpuq-sim with a private redis-server and
# gpuq-controller on 127.0.0.1 (demo/stack.sh), nothing else needed:
#
#   docs/exercises/drain.sh [BUILD_DIR]        (default: build)
#
# Prints each step with the command and what it checked; exits 0 when
# every check passed, 1 at the first that failed (with the logs' tails).
# ctest runs it as test_drain_exercise.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=$(cd "${1:-build}" && pwd)
WORK=$(mktemp -d)
source demo/stack.sh
trap 'stack_stop; rm -rf "$WORK"' EXIT

step() { printf '\n== %s\n' "$*"; }
fail() {
  echo "FAIL: $*"
  tail -n 20 "$WORK/controller.log" "$WORK/sim.log" >&2 || true
  exit 1
}
# until CMD... prints WANT (deadline 60 s; a condition, not a sleep)
wait_for() {
  local want=$1 got=""; shift
  for _ in $(seq 1 600); do
    got=$("$@" 2>/dev/null || true)
    [ "$got" = "$want" ] && { echo "ok: $* -> $got"; return 0; }
    sleep 0.1
  done
  fail "$* printed '$got', want '$want'"
}
jobfield() { kubectl get gpujob train -n research -o "jsonpath={$1}"; }
metric() { curl -sf "$STACK_METRICS_URL" | awk -v m="$1" '$1 == m {print $2}'; }
node_status() { kubectl gpuq nodes | awk -v n="$1" '$1 == n {print $NF}'; }

step "start gpuq-sim (clusters/mixed.yaml), redis-server and gpuq-controller"
STACK_SIM_ARGS=(--cluster clusters/mixed.yaml --crds crds)
stack_start "$WORK" "$BIN" 60   # 1 real second = 1 virtual minute
export KUBECONFIG=$WORK/kubeconfig PATH=$BIN:$PATH
HEALTH=${STACK_METRICS_URL%/metrics}
wait_for ok curl -sf "$HEALTH/readyz"

step "normal operation: nodes, teams, readiness"
kubectl gpuq nodes
kubectl create namespace research >/dev/null
kubectl apply -f - <<'YAML'
apiVersion: gpuq.dev/v1alpha1
kind: TeamQuota
metadata: {name: research}
spec:
  namespaces: [research]
  resources: [{flavor: NVIDIA-H100-80GB-HBM3, nominal: 16}]
YAML
wait_for 16 kubectl get teamquota research -o 'jsonpath={.status.nominalGPUs}'
kubectl gpuq teams

step "a checkpointing job: 8 H100 GPUs, checkpoint written 5 min (virtual) after SIGTERM"
kubectl apply -f - <<'YAML'
apiVersion: gpuq.dev/v1alpha1
kind: GpuJob
metadata: {name: train, namespace: research}
spec:
  team: research
  gpusPerReplica: 8
  gpu: {products: [NVIDIA-H100-80GB-HBM3]}
  checkpoint: {gracePeriodSeconds: 600, intervalSeconds: 1800}
  template:
    metadata:
      annotations:
        sim.gpuq.dev/run-seconds: "36000"
        sim.gpuq.dev/checkpoint-seconds: "300"
    spec:
      containers: [{name: train, image: example/train}]
YAML
wait_for Running jobfield .status.phase
NODE=$(jobfield '.status.nodes[0]')
echo "train runs on $NODE"
kubectl gpuq nodes | grep -E "NAME|$NODE"

step "kubectl drain $NODE"
kubectl drain "$NODE" --ignore-daemonsets --timeout=120s >"$WORK/drain.out" 2>&1 &
DRAIN=$!
# while the pod writes its checkpoint (5 virtual minutes = 5 s here)
wait_for Ready,SchedulingDisabled,Draining node_status "$NODE"
wait "$DRAIN" || { cat "$WORK/drain.out"; fail "kubectl drain failed"; }
cat "$WORK/drain.out"
wait_for 2 jobfield .status.attempts
wait_for Running jobfield .status.phase
CKPT=$(jobfield .status.lastCheckpoint.location)
NEW=$(jobfield '.status.nodes[0]')
[ -n "$CKPT" ] || fail "no status.lastCheckpoint after the drain"
[ "$NEW" != "$NODE" ] || fail "attempt 2 runs on the drained node"
echo "ok: checkpoint $CKPT; attempt 2 on $NEW"
RESUME=$(kubectl get pods -n research -l gpuq.dev/job=train,gpuq.dev/attempt=2 \
  -o 'jsonpath={.items[0].spec.containers[0].env[?(@.name=="GPUQ_RESUME_FROM")].value}')
[ "$RESUME" = "$CKPT" ] || fail "GPUQ_RESUME_FROM is '$RESUME', want '$CKPT'"
echo "ok: the new pod resumes from $RESUME"
kubectl get events -n research --field-selector involvedObject.name=train \
  -o 'custom-columns=REASON:.reason,MESSAGE:.message' | grep -E "REASON|Disrupted|Checkpointed|Resuming"
kubectl gpuq nodes | grep -E "NAME|$NODE"
wait_for 1 metric 'gpuq_checkpoint_resumes_total{team="research"}'

step "kubectl uncordon $NODE; delete the job"
kubectl uncordon "$NODE"
kubectl delete gpujob train -n research --wait=false
wait_for 0 metric 'gpuq_pending_jobs{team="research"}'
echo
echo "PASS: drained $NODE, the job checkpointed and resumed on $NEW from $CKPT"
