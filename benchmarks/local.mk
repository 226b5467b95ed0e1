# SPDX-License-Identifier: BSD-3-Clause
# benchmarks: the timing programs (doc/performance.md), the approximation
# study, and the scaling studies (linattn-scaling, linattn-scaling-mpi:
# installed).
EXTRA_DIST += benchmarks/README.md
noinst_PROGRAMS += benchmarks/bench_core benchmarks/bench_causal \
	benchmarks/bench_maps
# What the benchmarks measure besides the library (the GEMM ceilings, the
# machine's threads and memory) and one size of a scaling study: the
# precision-generic parts compiled once per precision, as the library is.
BENCH_GENERIC = benchmarks/measure.c benchmarks/scaling_run.c
BENCH_H = benchmarks/bench_prec.h benchmarks/measure.h benchmarks/scaling.h \
	benchmarks/timing.h benchmarks/machine.h
noinst_LTLIBRARIES += benchmarks/libbench_d.la benchmarks/libbench_s.la \
	benchmarks/libbench.la
benchmarks_libbench_d_la_SOURCES = $(BENCH_GENERIC) $(BENCH_H)
benchmarks_libbench_d_la_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
benchmarks_libbench_s_la_SOURCES = $(BENCH_GENERIC) $(BENCH_H)
benchmarks_libbench_s_la_CPPFLAGS = $(AM_CPPFLAGS) -DBENCH_SINGLE
benchmarks_libbench_s_la_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
benchmarks_libbench_la_SOURCES = benchmarks/machine.c benchmarks/scaling_report.c \
	benchmarks/scaling_report.h benchmarks/roofline.c benchmarks/roofline.h \
	$(BENCH_H)
benchmarks_libbench_la_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
benchmarks_libbench_la_LIBADD = benchmarks/libbench_d.la benchmarks/libbench_s.la
BENCH_LDADD = benchmarks/libbench.la lib/liblinattn.la $(BLAS_LIBS) -lm
benchmarks_bench_core_SOURCES = benchmarks/bench_core.c benchmarks/timing.h \
	benchmarks/blas_rate.h
benchmarks_bench_core_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
benchmarks_bench_core_LDADD = $(BENCH_LDADD)
benchmarks_bench_maps_SOURCES = benchmarks/bench_maps.c benchmarks/timing.h \
	benchmarks/blas_rate.h
benchmarks_bench_maps_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
benchmarks_bench_maps_LDADD = lib/liblinattn.la $(BLAS_LIBS) -lm
benchmarks_bench_causal_SOURCES = benchmarks/bench_causal.c benchmarks/timing.h
benchmarks_bench_causal_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
benchmarks_bench_causal_LDADD = $(BENCH_LDADD)
noinst_PROGRAMS += benchmarks/bench_ragged
benchmarks_bench_ragged_SOURCES = benchmarks/bench_ragged.c benchmarks/timing.h
benchmarks_bench_ragged_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
benchmarks_bench_ragged_LDADD = $(BENCH_LDADD)
noinst_PROGRAMS += benchmarks/bench_packed
benchmarks_bench_packed_SOURCES = benchmarks/bench_packed.c benchmarks/timing.h
benchmarks_bench_packed_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
benchmarks_bench_packed_LDADD = $(BENCH_LDADD)
# decay and gates against the undecayed paths, in double and in float
noinst_PROGRAMS += benchmarks/bench_decay benchmarks/bench_decay_s
benchmarks_bench_decay_SOURCES = benchmarks/bench_decay.c \
	benchmarks/timing.h benchmarks/bench_prec.h
benchmarks_bench_decay_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
benchmarks_bench_decay_LDADD = $(BENCH_LDADD)
benchmarks_bench_decay_s_SOURCES = $(benchmarks_bench_decay_SOURCES)
benchmarks_bench_decay_s_CPPFLAGS = $(AM_CPPFLAGS) -DBENCH_SINGLE
benchmarks_bench_decay_s_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
benchmarks_bench_decay_s_LDADD = $(BENCH_LDADD)
# The backward calls against the forward calls, and their memory.
noinst_PROGRAMS += benchmarks/bench_grad
benchmarks_bench_grad_SOURCES = benchmarks/bench_grad.c benchmarks/timing.h \
	benchmarks/machine.h
benchmarks_bench_grad_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
benchmarks_bench_grad_LDADD = $(BENCH_LDADD)

# The approximation study (doc/approximation.md): errors against m per map,
# and Lemma 2 of Choromanski et al. 2021 against Monte Carlo.  Not
# installed: a study tool, like the benchmarks; users call approx_error.
noinst_PROGRAMS += benchmarks/approx
benchmarks_approx_SOURCES = benchmarks/approx.c benchmarks/approx_theory.c \
	benchmarks/approx.h benchmarks/timing.h
benchmarks_approx_LDADD = lib/liblinattn.la -lm
EXTRA_DIST += benchmarks/approx.gp
# Row norms d^(1/4) (the default) and 2 d^(1/4) = 5.656854 at d = 64.
approx-study: benchmarks/approx
	nice -n 10 ./benchmarks/approx --raw approx-raw.csv > approx.csv
	gnuplot -e "in='approx.csv'; out='approx.png'" $(top_srcdir)/benchmarks/approx.gp
	nice -n 10 ./benchmarks/approx --norm 5.656854 > approx-norm2.csv
	gnuplot -e "in='approx-norm2.csv'; out='approx-norm2.png'" \
	    $(top_srcdir)/benchmarks/approx.gp
	nice -n 10 ./benchmarks/approx --theory > approx-theory.txt
	@echo "approx-study: approx.csv, approx-raw.csv, approx.png," \
	    "approx-norm2.csv, approx-norm2.png, approx-theory.txt"
CLEANFILES += approx.csv approx-raw.csv approx.png approx-norm2.csv \
	approx-norm2.png approx-theory.txt
.PHONY: approx-study

# ---- the scaling study: linattn-scaling, installed ----
bin_PROGRAMS += benchmarks/linattn-scaling
benchmarks_linattn_scaling_SOURCES = benchmarks/linattn_scaling.c
benchmarks_linattn_scaling_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
benchmarks_linattn_scaling_LDADD = $(BENCH_LDADD)
# gnuplot draws its CSV; installed beside the data of the package.
dist_pkgdata_DATA = benchmarks/scaling.gp
SCALING_CSV = scaling.csv
SCALING_PNG = scaling.png
GNUPLOT = gnuplot
scaling-plot:
	@command -v $(GNUPLOT) >/dev/null 2>&1 || { \
	    echo "make scaling-plot needs gnuplot: apt-get install gnuplot-nox (Debian/Ubuntu)" >&2; \
	    exit 1; }
	$(GNUPLOT) -e "csv='$(SCALING_CSV)'; png='$(SCALING_PNG)'" \
	    $(top_srcdir)/benchmarks/scaling.gp
	@echo "plot: $(SCALING_PNG)"
scaling: benchmarks/linattn-scaling
	./benchmarks/linattn-scaling --csv $(SCALING_CSV) $(SCALING_ARGS)
	$(MAKE) $(AM_MAKEFLAGS) scaling-plot

# ---- the scaling study across MPI ranks: linattn-scaling-mpi, installed
# with liblinattn_mpi; make scaling-mpi runs it at 1 and 2 ranks (one
# thread each) and draws scaling-mpi.png (doc/mpi.md) ----
EXTRA_DIST += benchmarks/scaling_mpi.gp
SCALING_MPI_CSV = scaling-mpi.csv
SCALING_MPI_PNG = scaling-mpi.png
SCALING_MPI_RANKS = 1 2
if HAVE_MPI
bin_PROGRAMS += benchmarks/linattn-scaling-mpi
benchmarks_linattn_scaling_mpi_SOURCES = benchmarks/linattn_scaling_mpi.c \
	benchmarks/timing.h benchmarks/machine.h
benchmarks_linattn_scaling_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
benchmarks_linattn_scaling_mpi_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
benchmarks_linattn_scaling_mpi_LDADD = mpi/liblinattn_mpi.la $(BENCH_LDADD) \
	$(MPI_LIBS)
dist_pkgdata_DATA += benchmarks/scaling_mpi.gp
scaling-mpi: benchmarks/linattn-scaling-mpi
	rm -f $(SCALING_MPI_CSV)
	for np in $(SCALING_MPI_RANKS); do \
	    OMP_NUM_THREADS=1 MPIEXEC='$(MPIEXEC)' ./libtool --mode=execute \
	        sh $(top_srcdir)/tests/mpi/launch.sh $$np \
	        ./benchmarks/linattn-scaling-mpi --csv $(SCALING_MPI_CSV) \
	        $(SCALING_MPI_ARGS) || exit 1; \
	done
	$(GNUPLOT) -e "csv='$(SCALING_MPI_CSV)'; png='$(SCALING_MPI_PNG)'" \
	    $(top_srcdir)/benchmarks/scaling_mpi.gp
	@echo "scaling-mpi: $(SCALING_MPI_CSV), $(SCALING_MPI_PNG)"
else
scaling-mpi:
	@echo "make scaling-mpi needs liblinattn_mpi: install MPI (apt-get install libopenmpi-dev openmpi-bin) and re-run ./configure" >&2
	@exit 1
endif
CLEANFILES += $(SCALING_MPI_CSV) $(SCALING_MPI_PNG)
.PHONY: scaling-mpi

.PHONY: scaling scaling-plot

