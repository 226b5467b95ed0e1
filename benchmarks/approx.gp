# SPDX-License-Identifier: BSD-3-Clause
# approx.gp -- the approximation study's picture from benchmarks/approx's
# CSV: output MSE and kernel MSE against m on log-log axes, one curve per
# random-feature map (mean over seeds, error bars one standard error), the
# maps of fixed m (Taylor, elu+1, ReLU) as dashed levels across the range,
# and a 1/m reference line.
#
#   ./benchmarks/approx > approx.csv
#   gnuplot -e "in='approx.csv'; out='approx.png'" benchmarks/approx.gp
#
# Columns: 1 map, 2 m, 3 seeds, then mean and standard error of out_rel,
# out_mse (6, 7), attn_rel, kernel_rel, kernel_mse (12, 13), out_max.
if (!exists("in")) in = 'approx.csv'
if (!exists("out")) out = 'approx.png'
if (!exists("mmin")) mmin = 16
if (!exists("mmax")) mmax = 1024
swept = "favor favor-iid favor-fixed favor-hyp favor-hyp-iid trig trig-iid"
exact = "taylor elu1 relu"
# line types 21.. for the maps of fixed m, apart from the cycling colours
set linetype 21 lc rgb "black" dt 2 lw 2
set linetype 22 lc rgb "brown" dt 2 lw 2
set linetype 23 lc rgb "gray50" dt 2 lw 2

set terminal pngcairo size 1600,620 font ",11"
set output out
set datafile separator ","
set logscale xy
set format y "10^{%T}"
set xrange [mmin / 1.3 : mmax * 1.3]
set xlabel "m (features)"
set grid
set key outside right top Left reverse
set xtics (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)

# The 1/m reference starts at twice favor's mean at the smallest m (above
# the curves, so that both stay visible).
stats in using ((strcol(1) eq "favor" && $2 == mmin) ? $6 : 1/0) nooutput
c_out = 2 * STATS_max * mmin
stats in using ((strcol(1) eq "favor" && $2 == mmin) ? $12 : 1/0) nooutput
c_ker = 2 * STATS_max * mmin

set multiplot layout 1, 2 title "kernelized attention against softmax (benchmarks/approx)"
set title "output MSE, mean over seeds"
plot for [mp in swept] in using 2:(strcol(1) eq mp ? $6 : 1/0):7 \
         with yerrorlines lw 2 title mp, \
     for [i = 1:words(exact)] in \
         using (mmin):(strcol(1) eq word(exact, i) ? $6 : 1/0):(mmax - mmin):(0) \
         with vectors nohead lt (20 + i) \
         title word(exact, i)." (fixed m)", \
     c_out / x with lines lc rgb "gray30" lw 2 dt 3 title "slope 1/m"
set title "kernel MSE: (phi(q).phi(k) - exp(q.k/sqrt(d)))^2"
plot for [mp in swept] in using 2:(strcol(1) eq mp ? $12 : 1/0):13 \
         with yerrorlines lw 2 title mp, \
     in using (mmin):(strcol(1) eq "taylor" ? $12 : 1/0):(mmax - mmin):(0) \
         with vectors nohead lt 21 title "taylor (fixed m)", \
     c_ker / x with lines lc rgb "gray30" lw 2 dt 3 title "slope 1/m"
unset multiplot
