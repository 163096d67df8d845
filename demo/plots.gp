# demo/plots.gp - the demo's plots, SVG, from the data files gpuq-sim
# writes at the end of a replay (gpuq-sim --series DIR: utilization.dat,
# queued.dat, queue_times.dat, usage.dat). Run as
#   gnuplot -e "data='DIR'; gpus=320; marks='20 drain;22 device plugin lost'" demo/plots.gp
# and writes queue_depth.svg, gpu_utilization.svg, allocated_vs_used.svg and
# queue_times.svg there.
# marks: "HOURS LABEL" pairs separated by ';' drawn as vertical lines
# (the node events of the timeline); may be empty.

if (!exists("marks")) marks = ""
if (!exists("gpus")) gpus = 0
set terminal svg size 960,540 dynamic enhanced font "sans,13" background "white"
set border 3 lc "#555555"
set tics nomirror textcolor "#333333"
set grid ytics lc "#dddddd" lw 1 dt 1
set key outside right top samplen 2 spacing 1.1 textcolor "#333333"
# one color per team, the same in every plot (team k = column k + 1)
colors = "#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b #e377c2 #7f7f7f #bcbd22 #17becf #393b79 #ad494a #637939 #8ca252 #7b4173 #3182bd"
color(k) = word(colors, (k - 1) % words(colors) + 1)

# one arrow and label per mark
m = marks
i = 1
while (strlen(m) > 0 && i <= 10) {
  cut = strstrt(m, ";")
  item = cut > 0 ? m[1:cut - 1] : m
  m = cut > 0 ? m[cut + 1:] : ""
  h = real(word(item, 1))
  lbl = item[strlen(word(item, 1)) + 2:]
  set arrow i from h, graph 0 to h, graph 1 nohead lc "#b03030" dt 2 lw 1.5
  set label i lbl at h, graph 0.97 - 0.05 * (i - 1) offset 0.6, 0 left textcolor "#b03030" font ",11"
  i = i + 1
}

# 1. Jobs waiting per team over time (stacked).
set output data."/queue_depth.svg"
set title "Jobs waiting in the queue, per team" textcolor "#222222"
set xlabel "virtual time (hours since the first submission)"
set ylabel "jobs waiting"
set xrange [0:*]
set yrange [0:*]
stats data."/queued.dat" skip 1 nooutput
ncol = STATS_columns
set style fill solid 0.85 noborder
plot for [c = ncol:2:-1] data."/queued.dat" using 1:(sum [k = 2:c] column(k)) \
     with filledcurves x1 lc rgb color(c - 1) title columnhead(c)

# 2. GPU utilization over time.
set output data."/gpu_utilization.svg"
set title sprintf("GPU utilization (%d GPUs)", gpus) textcolor "#222222"
set ylabel "GPUs busy (%)"
set yrange [0:105]
set style fill solid 0.35 noborder
plot data."/utilization.dat" using 1:3 with filledcurves x1 lc "#2a6fb0" notitle, \
     "" using 1:3 with lines lc "#1b4f80" lw 1.5 title "busy GPUs"

# 2b. GPUs allocated to running pods against GPUs actually used (issue 22;
# usage.dat: means over each sample interval, so the areas are the report's
# allocated_gpu_hours and used_gpu_hours).
set output data."/allocated_vs_used.svg"
set title sprintf("GPUs allocated and used (%d GPUs)", gpus) textcolor "#222222"
set ylabel "GPUs"
set style fill solid 0.9 noborder
set yrange [0:*]
plot data."/usage.dat" using 1:2 with filledcurves x1 lc "#9ecae1" title "allocated", \
     "" using 1:3 with filledcurves x1 lc "#2a6fb0" title "used (utilization x GPUs)"

# 3. Queue time distribution per team (CDF, log scale).
unset arrow
unset label
set output data."/queue_times.svg"
set title "Queue time per team (submit to first start): share of jobs that waited at most x" textcolor "#222222"
set xlabel "queue time (seconds, log scale)"
set ylabel "share of the team's jobs"
set logscale x
set xrange [1:*]
set yrange [0:1.02]
set format x "10^{%T}"
teams = system("head -1 '".data."/queued.dat' | cut -d' ' -f2-")
plot for [b = 1:words(teams)] data."/queue_times.dat" index (b - 1) using 1:2 \
     with steps lw 1.8 lc rgb color(b) title word(teams, b)
