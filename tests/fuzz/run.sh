#!/bin/sh
# tests/fuzz/run.sh <dir of fuzz_* binaries> <seconds per target> [target...]
#
# Runs each libFuzzer harness (make fuzz builds them with -DGQ_FUZZ=ON), one
# at a time, for <seconds> over a fresh copy of its seed corpus
# tests/fuzz/corpus/<target> (the copy grows; the tree's corpus does not).
# Any crash, leak, timeout or sanitizer report fails the run: the input is
# saved as <dir>/artifacts/<target>/crash-... (add it to the corpus with
# the fix). Writes one line per target to <dir>/report.txt:
#   <target> rc=<exit code> execs=<total executions> corpus=<inputs>
# Exits 1 if any target failed. stdin is /dev/null (kubeconfig paths).
set -u
bin=$1
secs=$2
shift 2
src=$(cd "$(dirname "$0")" && pwd)
out=$bin/runs
rm -rf "$out" "$bin/artifacts"
mkdir -p "$out" "$bin/artifacts"
: >"$bin/report.txt"
if [ $# -gt 0 ]; then
  targets=$*
else
  targets=$(cd "$bin" && ls fuzz_* | sed 's/^fuzz_//')
fi
fail=0
for t in $targets; do
  work=$out/corpus-$t
  art=$bin/artifacts/$t
  mkdir -p "$work" "$art"
  cp "$src/corpus/$t"/* "$work"/
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$bin/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$art/" "$work" \
    </dev/null >"$out/$t.log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t.log" | tail -1)
  n=$(ls "$work" | wc -l)
  line="$t rc=$rc execs=${execs:-?} corpus=$n"
  echo "$line" | tee -a "$bin/report.txt"
  if [ $rc -ne 0 ]; then
    fail=1
    echo "fuzz: '$t' failed; log: $out/$t.log, input: $(ls "$art" | head -1)"
    grep -m5 -E "ERROR|runtime error|SUMMARY" "$out/$t.log"
  fi
done
exit $fail
