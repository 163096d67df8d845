#!/usr/bin/env bash
# The main job (`make demo`): gpuq on real input. A private redis-server,
# gpuq-sim and gpuq-controller, on 127.0.0.1 with a temporary directory and
# one shared accelerated clock, replay a real GPU cluster trace (500 jobs of
# Microsoft's Philly cluster, 10 teams, by default) with TeamQuotas derived
# from the teams' shares and a node event timeline (demo/events.yaml: one
# node drained, one node's device plugin lost, mid-run). One live status
# line while it runs; at the end the sim's summary, the checks that matter
# and an output folder with report.json and SVG plots. A private Prometheus
# scrapes the sim's dcgm-exporter endpoint and the controller, which reads
# GPU utilization from it (allocated against used GPUs, docs/usage.md);
# at the end `kubectl gpuq usage` gives out/demo/usage.json and the usage
# table. Every process it starts is stopped at the end, also on Ctrl-C.
#
# Options (environment, or `make demo VAR=...`):
#   TRACE    job trace CSV (default traces/philly_small.csv)
#   CLUSTER  gpuq-sim cluster file (default clusters/philly-small.yaml)
#   EVENTS   node event timeline (default demo/events.yaml; "none" = none)
#   SPEED    virtual seconds per real second (default 2000)
#   OUT      output folder (default out/demo)
#   BUILD    build directory with the binaries (default build)
#   IDLE_SHARE  share of the trace's jobs that are notebook-like, busy for
#            an hour and idle for two (gpuq-sim --idle-share; default 0.2)
#   PRICE    USD per GPU-hour of the cluster's GPUs, for usage's cost
#            (default 1.10)
# Exit status: 0 when every check passed, 1 when one failed, 130 on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

trace=${TRACE:-traces/philly_small.csv}
cluster=${CLUSTER:-clusters/philly-small.yaml}
events=${EVENTS:-demo/events.yaml}
speed=${SPEED:-2000}
out=${OUT:-out/demo}
build=${BUILD:-build}
idle_share=${IDLE_SHARE:-0.2}
price=${PRICE:-1.10}

for f in "$trace" "$cluster"; do
  [ -f "$f" ] || { echo "demo: no such file: $f" >&2; exit 1; }
done
[ "$events" = none ] || [ -f "$events" ] ||
  { echo "demo: no such file: $events (EVENTS)" >&2; exit 1; }
for t in redis-server prometheus gnuplot kubectl curl python3; do
  command -v "$t" >/dev/null ||
    { echo "demo: '$t' not found on PATH (run \`make deps\`)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/gpuq-demo-XXXXXX)
# shellcheck source=demo/stack.sh
. demo/stack.sh
cleanup() {
  stack_stop
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo; echo "demo: interrupted; stopping everything" >&2; exit 130' INT TERM

rm -rf "$out"
mkdir -p "$out/data"

njobs=$(($(wc -l <"$trace") - 1))
echo "== gpuq demo: $njobs jobs of $trace on $cluster, clock x$speed"
echo "   trace: Microsoft Philly (CC BY 4.0; Jeon et al., USENIX ATC 2019; see traces/README.md)"
[ "$events" = none ] || echo "   node events: $events"

STACK_SIM_ARGS=(--crds crds --cluster "$cluster" --trace "$trace"
                --report "$out/report.json" --series "$out/data"
                --idle-share "$idle_share" --serve-after-replay)
[ "$events" = none ] || STACK_SIM_ARGS+=(--events "$events")
STACK_PROM=1
stack_start "$work" "$build" "$speed"
sim_pid=$STACK_SIM_PID
ctl_pid=$STACK_CTL_PID
sim_url=$STACK_SIM_URL

# One live status line, from the sim's report while it runs.
status_line() {
  curl -sf --max-time 2 "$sim_url/sim/v1/report" | python3 -c '
import json, sys
r = json.load(sys.stdin); p = r.get("replay") or {}
v = p.get("virtual_s", 0)
print("virtual %3dh%02dm  queued %4d  running %4d  done %4d/%d  GPUs busy %4d  preemptions %d"
      % (v // 3600, v % 3600 // 60, p.get("queued", 0), p.get("running", 0),
         p.get("ended", 0), p.get("jobs", 0), r.get("busy_gpus", 0),
         r.get("preemptions", 0)))' 2>/dev/null || true
}
started=$(date +%s)
last=0
# the sim serves on after the replay (--serve-after-replay): its report
# file says the replay is over
while kill -0 "$sim_pid" 2>/dev/null && [ ! -f "$out/report.json" ]; do
  if ! kill -0 "$ctl_pid" 2>/dev/null; then
    echo; echo "demo: gpuq-controller exited early; its log:" >&2
    tail -20 "$work/controller.log" >&2
    exit 1
  fi
  line=$(status_line)
  if [ -n "$line" ]; then
    if [ -t 1 ]; then
      printf '\r  %s ' "$line"
    elif [ $(( $(date +%s) - last )) -ge 10 ]; then
      echo "  $line"; last=$(date +%s)
    fi
  fi
  sleep 1
done
[ -t 1 ] && echo
sim_rc=0
if ! kill -0 "$sim_pid" 2>/dev/null; then
  set +e
  wait "$sim_pid"
  sim_rc=$?
  set -e
fi
elapsed=$(( $(date +%s) - started ))

sed -n '/== replay summary/,$p' "$work/sim.out"
if [ ! -f "$out/report.json" ]; then
  echo "demo: the replay ended without a report (exit $sim_rc); sim log:" >&2
  tail -20 "$work/sim.log" >&2
  exit 1
fi

echo
echo "== plots"
marks=""
if [ "$events" != none ]; then
  marks=$(python3 - "$events" <<'EOF'
import re, sys
# The timeline's events as "HOURS LABEL" pairs for the plots (the file is
# the sim's own YAML flow-style list; only at, node and action are read).
marks = []
for line in open(sys.argv[1]):
    at = re.search(r"\bat:\s*(\d+)", line)
    act = re.search(r"\baction:\s*([\w-]+)", line)
    node = re.search(r"\bnode:\s*([\w.-]+)", line)
    if at and act:
        marks.append("%.2f %s %s" % (int(at.group(1)) / 3600, act.group(1),
                                     node.group(1) if node else ""))
print(";".join(marks))
EOF
)
fi
gpus=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gpus"])' "$out/report.json")
gnuplot -e "data='$out/data'; gpus=$gpus; marks='$marks'" demo/plots.gp
for f in queue_depth gpu_utilization allocated_vs_used queue_times; do
  mv "$out/data/$f.svg" "$out/$f.svg"
  echo "  $out/$f.svg"
done

echo
echo "== usage (kubectl gpuq usage: GPU-hours from the GpuJobs' status, as the controller measured them through Prometheus)"
product=$(python3 -c 'import re,sys; m=re.search(r"product:\s*([\w.-]+)", open(sys.argv[1]).read()); print(m.group(1) if m else "")' "$cluster")
usage_args=(usage --price "$product=$price")
# the last jobs' final status writes land within a moment of the report
sleep 1
KUBECONFIG="$work/kubeconfig" PATH="$build:$PATH" kubectl gpuq "${usage_args[@]}" -o json >"$out/usage.json"
KUBECONFIG="$work/kubeconfig" PATH="$build:$PATH" kubectl gpuq "${usage_args[@]}" | sed 's/^/  /'
echo "  $out/usage.json (price: $price USD per $product GPU-hour)"

xid_events=0
if [ "$events" != none ] && grep -q "action: xid" "$events"; then
  xid_events=$(KUBECONFIG="$work/kubeconfig" kubectl get events -A -o json |
    python3 -c 'import json,sys; print(sum(e.get("reason") == "GpuUnhealthy" for e in json.load(sys.stdin)["items"]))')
fi

echo
echo "== checks"
checks_rc=0
python3 - "$out/report.json" "$events" "$njobs" "$out/usage.json" "$xid_events" <<'EOF' || checks_rc=1
import json, sys
r = json.load(open(sys.argv[1]))
u = json.load(open(sys.argv[4]))["items"]
ended = r["jobs_completed"] + r["jobs_failed"]
checks = [
    ("every job ended (%d of %d submitted, %d in the trace; %d failed)"
     % (ended, r["jobs_submitted"], int(sys.argv[3]), r["jobs_failed"]),
     ended == r["jobs_submitted"] == int(sys.argv[3])),
    ("invariant violations = 0", r["invariant_violations"] == 0),
    ("placement misses = 0", r["placement_misses"] == 0),
]
# gpuq's usage (readings through Prometheus, one per 250 ms scrape) against
# the sim's exact integral of the same utilization timelines
def total(k):
    return sum(i[k] for i in u)
alloc, used, idle = total("allocated_gpu_hours"), total("used_gpu_hours"), total("idle_gpu_hours")
for name, mine, sims in (("allocated", alloc, r["allocated_gpu_hours"]),
                         ("used", used, r["used_gpu_hours"])):
    checks.append(("gpuq's %s GPU-hours %.0f within 5%% of the sim's %.0f"
                   % (name, mine, sims), abs(mine - sims) <= 0.05 * max(sims, 1)))
checks.append(("idle GPU-hours are counted (%.0f)" % idle, idle > 0))
if sys.argv[2] != "none" and "action: xid" in open(sys.argv[2]).read():
    checks.append(("the GPU XID error tainted its node (GpuUnhealthy events: %s)"
                   % sys.argv[5], int(sys.argv[5]) > 0))
if sys.argv[2] != "none":
    checks.append(("drained jobs resumed from a checkpoint (checkpoint_resumes = %d)"
                   % r["checkpoint_resumes"], r["checkpoint_resumes"] > 0))
bad = 0
for name, ok in checks:
    print("  %s %s" % ("ok  " if ok else "FAIL", name))
    bad += not ok
sys.exit(1 if bad else 0)
EOF
echo
echo "demo: replay took ${elapsed}s of real time; output in $(cd "$out" && pwd)"
exit $checks_rc
