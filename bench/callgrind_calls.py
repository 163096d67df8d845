#!/usr/bin/env python3
"""bench/callgrind_calls.py - the figures of bench/sim_cost from its callgrind dumps.

Usage: callgrind_calls.py DIR JOBS EVENTS GPUJOB_BYTES POD_BYTES RAW_S IDLE_S

DIR holds the callgrind.out.* files of one gpuq-sim run; the dumps named
"create" and "raw" and "idle" (callgrind_control -d NAME) are read; RAW_S and IDLE_S are
the raw and idle phases' wall seconds. For a function F,
its inclusive instructions are its own cost lines plus the inclusive cost
callgrind records beside each call it makes, and its calls are the sum of
the calls= lines whose callee is F (the callgrind format, valgrind's
docs/callgrind-format). Prints the one sim_cost: line (bench/sim_cost).
"""
import glob
import re
import sys

def parse(path):
    """Returns (total Ir, {fn: inclusive Ir}, {fn: calls}) of one dump."""
    names, incl, calls = {}, {}, {}
    fn = cfn = None
    after_call = False
    total = 0

    def name(ref):
        m = re.match(r"\((\d+)\)(?: (.*))?$", ref)
        if not m:
            return ref
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), ref)

    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("fn="):
            fn = name(line[3:])
            after_call = False
        elif line.startswith("cfn="):
            cfn = name(line[4:])
        elif line.startswith("calls="):
            calls[cfn] = calls.get(cfn, 0) + int(line[6:].split()[0])
            after_call = True
        elif line.startswith(("summary:", "totals:")):
            total = total or int(line.split()[1])
        elif line and (line[0].isdigit() or line[0] in "+-*"):
            parts = line.split()
            cost = int(parts[1]) if len(parts) > 1 else 0
            if fn is not None:
                incl[fn] = incl.get(fn, 0) + cost
            after_call = False
        # every other line (fl=, fi=, fe=, cfi=, ob=, headers) changes nothing
    return total, incl, calls


def dump(d, desc):
    for path in sorted(glob.glob(d + "/callgrind.out.*")):
        with open(path, errors="replace") as f:
            head = f.read(4096)
        if re.search(r"^desc: Trigger: dump %s$" % desc, head, re.M):
            return parse(path)
    sys.exit("callgrind_calls.py: no dump named %r in %s" % (desc, d))


def per_call(incl, calls, fn):
    return incl.get(fn, 0) / calls[fn] if calls.get(fn) else 0.0


def main():
    if len(sys.argv) != 8:
        sys.exit(__doc__)
    d, jobs, events = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    raw_s, idle_s = float(sys.argv[6]), float(sys.argv[7])
    idle_rate = dump(d, "idle")[0] / idle_s
    _, ci, cc = dump(d, "create")
    rt, ri, rc = dump(d, "raw")
    g = per_call(ci, cc, "gq_sim_do_create")
    creates = rc.get("gq_sim_do_create", 0)
    # every store event goes through gq_sim_watch_notify to both watches
    watch = ci.get("gq_sim_watch_notify", 0) + ri.get("gq_sim_watch_notify", 0)
    pod = (ri.get("gq_sim_do_create", 0) - g * jobs) / max(creates - jobs, 1)
    print("phase create: %d calls of gq_sim_do_create; phase raw: %d creates,"
          " %d patches, %d store events; %d watch lines" %
          (cc.get("gq_sim_do_create", 0), creates,
           rc.get("gq_sim_do_patch", 0), rc.get("gq_sim_watch_notify", 0),
           events),
          file=sys.stderr)
    print("sim_cost: ir_per_job=%.0f ir_per_gpujob_create=%.0f "
          "ir_per_pod_create=%.0f ir_per_status_patch=%.0f "
          "ir_per_watch_event=%.0f watch_events=%d gpujob_bytes=%s "
          "pod_bytes=%s raw_seconds=%.1f ir_idle_per_s=%.0f "
          "ir_per_job_less_idle=%.0f" %
          (rt / jobs, g, pod, per_call(ri, rc, "gq_sim_do_patch"),
           watch / max(events, 1), events,
           sys.argv[4], sys.argv[5], raw_s, idle_rate,
           (rt - idle_rate * raw_s) / jobs))


if __name__ == "__main__":
    main()
