#!/bin/sh
# tests/bench/queue.sh BUILD_DIR - bench/queue (issue 6) runs from the
# repository root as bench/README.md says, against its own private
# redis-server, and prints its last line in the documented form. Rates are
# not checked (they are timings: bench/README.md records them); E, the
# Redis memory per queued job at 1M, is a count of bytes and must stay
# within the 512. ADMITS=1000 keeps the rounds short; the 1M
# enqueue still runs in full (about 25 s under ASan).
set -eu
build=$1
log=$(mktemp "${TMPDIR:-/tmp}/gpuq-test-bench-queue-XXXXXX")
out=$(mktemp "${TMPDIR:-/tmp}/gpuq-test-bench-queue-XXXXXX")
trap 'rm -f "$log" "$out"' EXIT
if ! BUILD="$build" ADMITS=1000 ./bench/queue >"$out" 2>"$log"; then
  echo "bench/queue failed:" >&2
  tail -n 20 "$log" >&2
  exit 1
fi
line=$(tail -n 1 "$out")
echo "$line"
num='[0-9][0-9]*'
echo "$line" | grep -q "^queue: admit_per_s_1k=$num admit_per_s_100k=$num admit_per_s_1m=$num redis_evalsha_per_s=$num bytes_per_job=$num\$" || {
  echo "last line is not in the documented form: '$line'" >&2
  tail -n 20 "$log" >&2
  exit 1
}
e=$(echo "$line" | sed 's/.*bytes_per_job=//')
if [ "$e" -gt 512 ]; then
  echo "bytes_per_job=$e: over the 512 bytes per queued job of issue 6" >&2
  exit 1
fi
