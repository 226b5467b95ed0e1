# SPDX-License-Identifier: BSD-3-Clause
# examples/fortran: the Fortran examples, built by make, run by make
# check, installed under the doc directory with a Makefile that builds
# them through pkg-config; and the Fortran twin of the MPI example.
if BUILD_FORTRAN
noinst_PROGRAMS += examples/fortran/textbook examples/fortran/galerkin \
	examples/fortran/galerkin_meshes examples/fortran/timestep \
	examples/fortran/train_map
FEXAMPLE_FCFLAGS = $(FMOD_FCFLAGS) $(WARN_FCFLAGS)
examples_fortran_textbook_SOURCES = examples/fortran/textbook.f90
examples_fortran_textbook_FCFLAGS = $(FEXAMPLE_FCFLAGS)
examples_fortran_textbook_LDADD = fortran/liblinattn_fortran.la
examples_fortran_galerkin_SOURCES = examples/fortran/galerkin.f90
examples_fortran_galerkin_FCFLAGS = $(FEXAMPLE_FCFLAGS)
examples_fortran_galerkin_LDADD = fortran/liblinattn_fortran.la
examples_fortran_galerkin_meshes_SOURCES = examples/fortran/galerkin_meshes.f90
examples_fortran_galerkin_meshes_FCFLAGS = $(FEXAMPLE_FCFLAGS)
examples_fortran_galerkin_meshes_LDADD = fortran/liblinattn_fortran.la
examples_fortran_timestep_SOURCES = examples/fortran/timestep.f90
examples_fortran_timestep_FCFLAGS = $(FEXAMPLE_FCFLAGS)
examples_fortran_timestep_LDADD = fortran/liblinattn_fortran.la
examples_fortran_train_map_SOURCES = examples/fortran/train_map.f90
examples_fortran_train_map_FCFLAGS = $(FEXAMPLE_FCFLAGS)
examples_fortran_train_map_LDADD = fortran/liblinattn_fortran.la
FORTRAN_EXAMPLE_OBJS = $(examples_fortran_textbook_OBJECTS) \
	$(examples_fortran_galerkin_OBJECTS) \
	$(examples_fortran_galerkin_meshes_OBJECTS) \
	$(examples_fortran_timestep_OBJECTS) \
	$(examples_fortran_train_map_OBJECTS)
$(FORTRAN_EXAMPLE_OBJS): fortran/linattn.lo
fexamplesdir = $(docexamplesdir)/fortran
dist_fexamples_DATA = examples/fortran/textbook.f90 \
	examples/fortran/galerkin.f90 examples/fortran/galerkin_meshes.f90 \
	examples/fortran/timestep.f90 \
	examples/fortran/train_map.f90
INSTALL_FORTRAN_EXAMPLES = $(INSTALL_DATA) \
	$(top_srcdir)/examples/fortran/Makefile.installed \
	"$(DESTDIR)$(fexamplesdir)/Makefile"
UNINSTALL_FORTRAN_EXAMPLES = rm -f "$(DESTDIR)$(fexamplesdir)/Makefile"
if HAVE_MPI_FORTRAN
# The Fortran twin of examples/mpi/causal_mpi (tests/mpi/example.sh)
noinst_PROGRAMS += examples/mpi/causal_mpi_f
examples_mpi_causal_mpi_f_SOURCES = examples/mpi/causal_mpi.f90
examples_mpi_causal_mpi_f_FCFLAGS = $(FEXAMPLE_FCFLAGS) $(MPI_FCFLAGS)
examples_mpi_causal_mpi_f_LDADD = fortran/liblinattn_mpi_fortran.la \
	fortran/liblinattn_fortran.la $(MPI_FCLIBS)
$(examples_mpi_causal_mpi_f_OBJECTS): $(MPIF_TOP_LO)
# and of examples/mpi/train_mpi (tests/mpi/train.sh)
noinst_PROGRAMS += examples/mpi/train_mpi_f
examples_mpi_train_mpi_f_SOURCES = examples/mpi/train_mpi.f90
examples_mpi_train_mpi_f_FCFLAGS = $(FEXAMPLE_FCFLAGS) $(MPI_FCFLAGS)
examples_mpi_train_mpi_f_LDADD = fortran/liblinattn_mpi_fortran.la \
	fortran/liblinattn_fortran.la $(MPI_FCLIBS)
$(examples_mpi_train_mpi_f_OBJECTS): $(MPIF_TOP_LO)
# installed beside the C program (examples/local.mk), whose Makefile
# builds it when linattn-mpi-fortran.pc is installed
mpifexamplesdir = $(docexamplesdir)/mpi
dist_mpifexamples_DATA = examples/mpi/causal_mpi.f90 examples/mpi/train_mpi.f90
endif
else
INSTALL_FORTRAN_EXAMPLES = :
UNINSTALL_FORTRAN_EXAMPLES = :
endif
EXTRA_DIST += examples/fortran/Makefile.installed examples/mpi/causal_mpi.f90 \
	examples/mpi/train_mpi.f90

