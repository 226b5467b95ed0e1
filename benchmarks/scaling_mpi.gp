# SPDX-License-Identifier: BSD-3-Clause
# scaling_mpi.gp -- draws a linattn-scaling-mpi CSV: left, strong scaling
# (seconds per call against ranks, log-log: the call, its local compute,
# its communication, and the ideal T1 / P, T1 the one-rank time measured
# in the same run as each row); right, the efficiency of strong and weak
# scaling against ranks.
#
#   gnuplot -e "csv='scaling-mpi.csv'; png='scaling-mpi.png'" scaling_mpi.gp
#
# Needs awk.  Columns: see the CSV's header (doc/mpi.md).
if (!exists("csv")) csv = "scaling-mpi.csv"
if (!exists("png")) png = "scaling-mpi.png"

rows(mode, path) = sprintf("< awk -F, 'NR > 1 && $1 == \"%s\" && $2 == \"%s\"' '%s' | sort -t, -k8n", mode, path, csv)
setting = system(sprintf("awk -F, 'NR == 2 {printf \"%%s, d = %%s, e = %%s, m = %%s, %%s head(s), %%s thread(s) per rank, %%s\", $3, $4, $5, $6, $7, $9, $23}' '%s'", csv))
nstrong = system(sprintf("awk -F, 'NR > 1 && $1 == \"strong\" {print $10; exit}' '%s'", csv))
nweak = system(sprintf("awk -F, 'NR > 1 && $1 == \"weak\" {print $11; exit}' '%s'", csv))

set terminal pngcairo size 1300,560 enhanced font "sans,10"
set output png
set datafile separator ","
set multiplot layout 1,2 title sprintf("linattn across MPI ranks (%s)", setting)
set grid xtics ytics lc rgb "#dddddd"
set logscale x 2
set xlabel "ranks P"
set xtics 1, 2, 1024
set offsets graph 0.08, graph 0.08, 0, 0

set logscale y 10
set format y "10^{%T}"
set ylabel "seconds per call (median, slowest rank)"
set title sprintf("strong scaling, n = %s", nstrong)
set key bottom left box opaque
plot rows("strong", "attention") using 8:12 with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "attention: call", \
     rows("strong", "attention") using 8:14 with linespoints dt 2 pt 6 lc rgb "#1f77b4" title "attention: local compute", \
     rows("strong", "attention") using 8:15 with linespoints dt 3 pt 4 lc rgb "#1f77b4" title "attention: communication", \
     rows("strong", "causal") using 8:12 with linespoints lw 2 pt 7 lc rgb "#d62728" title "causal: call", \
     rows("strong", "causal") using 8:14 with linespoints dt 2 pt 6 lc rgb "#d62728" title "causal: local compute", \
     rows("strong", "causal") using 8:15 with linespoints dt 3 pt 4 lc rgb "#d62728" title "causal: communication", \
     rows("strong", "attention") using 8:($25 / $8) with linespoints dt 4 pt 2 lc rgb "#1f77b4" title "attention: ideal T_1 / P", \
     rows("strong", "causal") using 8:($25 / $8) with linespoints dt 4 pt 2 lc rgb "#d62728" title "causal: ideal T_1 / P"

unset logscale y
set format y "%.2f"
set yrange [0:1.15]
set ylabel "efficiency"
set title sprintf("efficiency: strong T_1 / (P T_P), weak T_1 / T_P (%s rows per rank)", nweak)
set key bottom left box opaque
plot rows("strong", "attention") using 8:19 with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "strong, attention", \
     rows("strong", "causal") using 8:19 with linespoints lw 2 pt 7 lc rgb "#d62728" title "strong, causal", \
     rows("weak", "attention") using 8:19 with linespoints dt 2 pt 6 lc rgb "#1f77b4" title "weak, attention", \
     rows("weak", "causal") using 8:19 with linespoints dt 2 pt 6 lc rgb "#d62728" title "weak, causal", \
     1 with lines dt 4 lc rgb "#888888" notitle
unset multiplot
