# kernelet-bench plots, from the data files the harness writes into its results folder:
#   total_time.png  total time of each policy relative to base, per workload (lower is better)
#   slowdown.png    mean slowdown (turnaround / time alone) of each kernel, per policy
# With --rounds, both are the medians over the rounds.
# Usage: gnuplot -e "dir='kernelet-bench-results'" plot.gp
if (!exists("dir")) dir = "."
set terminal pngcairo size 1000,520 noenhanced font ",10"
set style data histograms
set style histogram cluster gap 1
set style fill solid 0.85 border -1
set key outside right top
set grid ytics
set datafile missing "NaN"

set output dir."/total_time.png"
set title "Total time relative to base (lower is better)"
set ylabel "time / time of base"
set yrange [0:*]
plot for [c=2:6] dir."/plot_total.dat" using c:xtic(1) title columnheader(c)

set output dir."/slowdown.png"
set title "Mean slowdown per kernel (turnaround / time alone)"
set ylabel "slowdown (log scale)"
set yrange [*:*]
set logscale y
set xtics rotate by -45
plot for [c=2:6] dir."/plot_slowdown.dat" using c:xtic(1) title columnheader(c)
