# SPDX-License-Identifier: BSD-3-Clause
# scaling.gp -- draws a linattn-scaling CSV: time per call against n on
# log-log axes, the quadratic paths bold, the factored ones dashed (the
# textbook picture, measured), with the slopes and the crossover n that
# the driver fitted (from its summary file), and the factored paths'
# roofline floors (the CSV's floor_s, column 30: max(flops / GEMM rate,
# bytes / bandwidth) measured in the same run) as thin lines.
#
#   gnuplot -e "csv='scaling.csv'; png='scaling.png'" scaling.gp
#
# Optional: summary='...' (default: the CSV's name with -summary), and
# threads=T (default: the largest thread count in the CSV).  Needs awk.
if (!exists("csv")) csv = "scaling.csv"
if (!exists("png")) png = "scaling.png"
if (!exists("summary")) summary = csv[1:strlen(csv) - 4] . "-summary.csv"
if (!exists("threads")) \
    threads = int(system(sprintf("awk -F, 'NR > 1 && $10 > t {t = $10} END {print t + 0}' '%s'", csv)))

# The rows of one path at the chosen thread count, as a data source.
rows(path) = sprintf("< awk -F, 'NR > 1 && $2 == \"%s\" && $10 == %d' '%s'", path, threads, csv)
count(path) = int(system(sprintf("awk -F, 'NR > 1 && $2 == \"%s\" && $10 == %d {k++} END {print k + 0}' '%s'", path, threads, csv)))
# The run's settings, from the CSV's first row.
setting = system(sprintf("awk -F, 'NR == 2 {printf \"%%s, %%s, d = %%s, e = %%s, %%s x %%s problems\", $3, $4, $5, $7, $8, $9}' '%s'", csv))
# What the summary says ("" when it has nothing).
said(quantity, path) = system(sprintf("awk -F, '$1 == \"%s\" && $2 == \"%s\" && $3 == %d {print $5}' '%s' 2>/dev/null", quantity, path, threads, summary))
label(path, name) = name . (strlen(said("slope", path)) ? sprintf(", slope %.2f", real(said("slope", path))) : "")

set terminal pngcairo size 1000,700 enhanced font "sans,11"
set output png
set datafile separator ","
set logscale x 2
set logscale y 10
set format x "2^{%L}"
set format y "10^{%T}"
set xlabel "sequence length n"
set ylabel "seconds per call (median)"
set title sprintf("linattn: time against n (%s, %d thread(s))", setting, threads)
set key bottom right box opaque
set grid xtics ytics lc rgb "#dddddd"
crossover = said("crossover_n", "factored")
if (strlen(crossover) && real(crossover) > 0) \
    set arrow from real(crossover), graph 0 to real(crossover), graph 1 nohead dt 3 lc rgb "#555555"; \
    set label sprintf(" crossover n = %.0f", real(crossover)) at real(crossover), graph 0.04 font ",10"

# One curve per path that has rows, its style looked up by its place in
# the list: quadratic ones bold and solid, factored ones dashed.
paths = "naive softmax naive_causal factored causal bare_gemm"
names = "'naive linear attention, O(n^2)' 'softmax attention, O(n^2)' " . \
        "'naive causal, O(n^2)' 'factored linear attention, O(n)' " . \
        "'factored causal, O(n)' 'bare GEMM calls of the factored path'"
widths = "4 4 4 2.5 2.5 1.5"
dashes = "1 1 1 2 2 3"
points = "7 5 4 9 11 0"
colors = "#c0392b #e67e22 #8e44ad #2471a3 #17a589 #7f8c8d"
present = ""
do for [i = 1:words(paths)] {
    if (count(word(paths, i)) > 0) { present = present . " " . i }
}
k(j) = int(word(present, j))
# the floors: of the factored paths that ran (4: factored, 5: causal)
floors = ""
do for [i = 4:5] {
    if (count(word(paths, i)) > 0) { floors = floors . " " . i }
}
f(j) = int(word(floors, j))
plot for [j = 1:words(present)] rows(word(paths, k(j))) using 1:12 \
     with linespoints lw real(word(widths, k(j))) dt int(word(dashes, k(j))) \
     pt int(word(points, k(j))) ps 1.1 lc rgb word(colors, k(j)) \
     title label(word(paths, k(j)), word(names, k(j))), \
     for [j = 1:words(floors)] rows(word(paths, f(j))) using 1:30 \
     with lines lw 1 dt 4 lc rgb word(colors, f(j)) \
     title "roofline floor of " . word(paths, f(j))
