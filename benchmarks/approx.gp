# approx.gp -- the approximation study's picture from benchmarks/approx's
# CSV: output MSE and kernel MSE against m on log-log axes, one curve per
# random-feature map (mean over seeds, error bars one standard error), the
# exact maps as dashed levels, and a 1/m reference line.
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
swept = "favor favor-iid favor-fixed favor-hyp trig"
exact = "taylor elu1 relu"

set terminal pngcairo size 1400,650 font ",11"
set output out
set datafile separator ","
set logscale xy
set format y "10^{%T}"
set xrange [mmin / 1.3 : mmax * 1.3]
set xlabel "m (features)"
set grid
set key bottom left
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
     for [mp in exact] in using (mmin):(strcol(1) eq mp ? $6 : 1/0):(mmax - mmin):(0) \
         with vectors nohead dt 2 lw 2 title mp." (exact map)", \
     c_out / x with lines lc rgb "gray30" lw 2 dt 3 title "slope 1/m"
set title "kernel MSE: (phi(q).phi(k) - exp(q.k/sqrt(d)))^2"
plot for [mp in swept] in using 2:(strcol(1) eq mp ? $12 : 1/0):13 \
         with yerrorlines lw 2 title mp, \
     in using (mmin):(strcol(1) eq "taylor" ? $12 : 1/0):(mmax - mmin):(0) \
         with vectors nohead dt 2 lw 2 title "taylor (exact map)", \
     c_ker / x with lines lc rgb "gray30" lw 2 dt 3 title "slope 1/m"
unset multiplot
