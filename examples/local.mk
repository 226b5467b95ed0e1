# SPDX-License-Identifier: BSD-3-Clause
# examples: small programs a user copies from, built by make (the worked
# example is the README's main job), installed under the doc directory
# with Makefiles that build them against the installation (pkg-config):
# DOCDIR/examples (C; its Makefile also builds the two directories
# below), DOCDIR/examples/fortran (examples/fortran/local.mk) and
# DOCDIR/examples/mpi (the MPI program, its Fortran twin and the Slurm
# script).  make installcheck builds them all (tests/consumers.sh).
noinst_PROGRAMS += examples/worked_example
examples_worked_example_SOURCES = examples/worked_example.c
examples_worked_example_LDADD = lib/liblinattn.la
# Training a map's W by gradient descent (doc/gradients.md).
noinst_PROGRAMS += examples/train_map
examples_train_map_SOURCES = examples/train_map.c
examples_train_map_LDADD = lib/liblinattn.la
docexamplesdir = $(docdir)/examples
dist_docexamples_DATA = examples/worked_example.c examples/train_map.c
install-data-hook:
	$(INSTALL_DATA) $(top_srcdir)/examples/Makefile.installed \
	    "$(DESTDIR)$(docexamplesdir)/Makefile"
	$(INSTALL_FORTRAN_EXAMPLES)
	$(INSTALL_MPI_EXAMPLES)
uninstall-hook:
	rm -f "$(DESTDIR)$(docexamplesdir)/Makefile"
	$(UNINSTALL_FORTRAN_EXAMPLES)
	$(UNINSTALL_MPI_EXAMPLES)
EXTRA_DIST += examples/Makefile.installed examples/mpi/causal_mpi.slurm \
	examples/mpi/Makefile.installed
if HAVE_MPI
# Installed beside the others (the Fortran twin: examples/fortran/local.mk).
mpiexamplesdir = $(docexamplesdir)/mpi
dist_mpiexamples_DATA = examples/mpi/causal_mpi.c examples/mpi/causal_mpi.slurm \
	examples/mpi/train_mpi.c
INSTALL_MPI_EXAMPLES = $(INSTALL_DATA) \
	$(top_srcdir)/examples/mpi/Makefile.installed \
	"$(DESTDIR)$(mpiexamplesdir)/Makefile"
UNINSTALL_MPI_EXAMPLES = rm -f "$(DESTDIR)$(mpiexamplesdir)/Makefile"
# The MPI example (examples/mpi/: the program and a Slurm script).
noinst_PROGRAMS += examples/mpi/causal_mpi
examples_mpi_causal_mpi_SOURCES = examples/mpi/causal_mpi.c
examples_mpi_causal_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
examples_mpi_causal_mpi_LDADD = mpi/liblinattn_mpi.la lib/liblinattn.la \
	$(MPI_LIBS) -lm
# Training across ranks with the distributed backward (tests/mpi/train.sh).
noinst_PROGRAMS += examples/mpi/train_mpi
examples_mpi_train_mpi_SOURCES = examples/mpi/train_mpi.c
examples_mpi_train_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
examples_mpi_train_mpi_LDADD = mpi/liblinattn_mpi.la lib/liblinattn.la \
	$(MPI_LIBS) -lm
else
INSTALL_MPI_EXAMPLES = :
UNINSTALL_MPI_EXAMPLES = :
endif
