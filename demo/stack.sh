# demo/stack.sh - sourced by demo/run.sh and bench/replay: starts a private
# redis-server, gpuq-sim and gpuq-controller on 127.0.0.1, in one directory,
# on one accelerated clock, and stops them. Bash; the caller sets -e.
#
#   STACK_SIM_ARGS=(...) STACK_CTL_ARGS=(...)   extra arguments (arrays)
#   STACK_PROM=1   also a Prometheus (Debian's prometheus) on 127.0.0.1
#                  scraping the sim's dcgm-exporter endpoint (--dcgm-listen)
#                  and the controller's /metrics every 250 ms, started and
#                  scraping before the sim starts; the controller reads GPU
#                  utilization from it (--prometheus-url, one reading per
#                  scrape; docs/usage.md). Sets STACK_PROM_URL.
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

# Prometheus scraping the ports dport (sim) and mport (controller), ready
# and with both targets discovered (they are down until the processes come).
stack_prom_start() {
  local dir=$1 dport=$2 mport=$3 pport
  pport=$(stack_free_port)
  cat >"$dir/prometheus.yml" <<EOF
global: {scrape_interval: 250ms, scrape_timeout: 250ms}
scrape_configs:
- job_name: dcgm-exporter
  static_configs: [{targets: ["127.0.0.1:$dport"]}]
- job_name: gpuq-controller
  static_configs: [{targets: ["127.0.0.1:$mport"]}]
EOF
  prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" \
    --web.listen-address="127.0.0.1:$pport" >"$dir/prometheus.log" 2>&1 &
  STACK_PIDS+=($!)
  STACK_PROM_URL="http://127.0.0.1:$pport"
  for _ in $(seq 1 300); do
    curl -sf "$STACK_PROM_URL/api/v1/targets" 2>/dev/null |
      grep -q "127.0.0.1:$mport" && return 0
    sleep 0.1
  done
  echo "prometheus did not start:" >&2
  tail -5 "$dir/prometheus.log" >&2
  return 1
}

stack_start() {
  local dir=$1 bin=$2 speed=$3 epoch rport mport dport
  local sim_extra=() ctl_extra=()
  rport=$(stack_free_port)
  mport=$(stack_free_port)
  if [ "${STACK_PROM:-0}" = 1 ]; then
    dport=$(stack_free_port)
    stack_prom_start "$dir" "$dport" "$mport" || return 1
    sim_extra=(--dcgm-listen "127.0.0.1:$dport")
    # one reading per scrape: 250 real ms in virtual seconds
    ctl_extra=(--prometheus-url "$STACK_PROM_URL"
               --utilization-interval $(( speed / 4 > 0 ? speed / 4 : 1 ))
               --utilization-window $(( speed > 0 ? speed : 1 )))
  fi
  epoch=$(date +%s)
  redis-server --bind 127.0.0.1 --port "$rport" --save '' --appendonly no \
    --dir "$dir" >"$dir/redis.log" 2>&1 &
  STACK_PIDS+=($!)
  "$bin/gpuq-sim" --listen 127.0.0.1:0 --kubeconfig-out "$dir/kubeconfig" \
    --time-scale "$speed" --time-epoch "$epoch" "${STACK_SIM_ARGS[@]}" \
    "${sim_extra[@]}" >"$dir/sim.out" 2>"$dir/sim.log" &
  STACK_SIM_PID=$!
  STACK_PIDS+=($STACK_SIM_PID)
  for _ in $(seq 1 200); do [ -f "$dir/kubeconfig" ] && break; sleep 0.05; done
  if [ ! -f "$dir/kubeconfig" ]; then
    echo "gpuq-sim did not start:" >&2
    cat "$dir/sim.log" >&2
    return 1
  fi
  STACK_SIM_URL=$(head -1 "$dir/sim.out" | sed 's/.* //')
  STACK_METRICS_URL="http://127.0.0.1:$mport/metrics"
  "$bin/gpuq-controller" --kubeconfig "$dir/kubeconfig" \
    --redis "redis://127.0.0.1:$rport/0" --metrics-addr "127.0.0.1:$mport" \
    --time-scale "$speed" --time-epoch "$epoch" "${STACK_CTL_ARGS[@]}" \
    "${ctl_extra[@]}" 2>"$dir/controller.log" &
  STACK_CTL_PID=$!
  STACK_PIDS+=($STACK_CTL_PID)
}

stack_stop() {
  local p
  for p in "${STACK_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${STACK_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  STACK_PIDS=()
}
