# demo/stack.sh - sourced by demo/run.sh and bench/replay: starts a private
# redis-server, gpuq-sim and gpuq-controller on 127.0.0.1, in one directory,
# on one accelerated clock, and stops them. Bash; the caller sets -e.
#
#   STACK_SIM_ARGS=(...) STACK_CTL_ARGS=(...)   extra arguments (arrays)
#   stack_start DIR BIN SPEED
#     DIR gets redis.log, sim.out, sim.log, controller.log, kubeconfig;
#     BIN holds gpuq-sim and gpuq-controller. Sets STACK_SIM_PID,
#     STACK_CTL_PID, STACK_SIM_URL, STACK_METRICS_URL and appends every pid
#     to STACK_PIDS. Returns 1 (with the sim's log on stderr) when the sim
#     does not come up within 10 s.
#   stack_stop
#     SIGTERM to every process started, then waits for each.

STACK_PIDS=()
STACK_SIM_ARGS=()
STACK_CTL_ARGS=()

stack_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

stack_start() {
  local dir=$1 bin=$2 speed=$3 epoch rport mport
  epoch=$(date +%s)
  rport=$(stack_free_port)
  redis-server --bind 127.0.0.1 --port "$rport" --save '' --appendonly no \
    --dir "$dir" >"$dir/redis.log" 2>&1 &
  STACK_PIDS+=($!)
  "$bin/gpuq-sim" --listen 127.0.0.1:0 --kubeconfig-out "$dir/kubeconfig" \
    --time-scale "$speed" --time-epoch "$epoch" "${STACK_SIM_ARGS[@]}" \
    >"$dir/sim.out" 2>"$dir/sim.log" &
  STACK_SIM_PID=$!
  STACK_PIDS+=($STACK_SIM_PID)
  for _ in $(seq 1 200); do [ -f "$dir/kubeconfig" ] && break; sleep 0.05; done
  if [ ! -f "$dir/kubeconfig" ]; then
    echo "gpuq-sim did not start:" >&2
    cat "$dir/sim.log" >&2
    return 1
  fi
  STACK_SIM_URL=$(head -1 "$dir/sim.out" | sed 's/.* //')
  mport=$(stack_free_port)
  STACK_METRICS_URL="http://127.0.0.1:$mport/metrics"
  "$bin/gpuq-controller" --kubeconfig "$dir/kubeconfig" \
    --redis "redis://127.0.0.1:$rport/0" --metrics-addr "127.0.0.1:$mport" \
    --time-scale "$speed" --time-epoch "$epoch" "${STACK_CTL_ARGS[@]}" \
    2>"$dir/controller.log" &
  STACK_CTL_PID=$!
  STACK_PIDS+=($STACK_CTL_PID)
}

stack_stop() {
  local p
  for p in "${STACK_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${STACK_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  STACK_PIDS=()
}
