# SPDX-License-Identifier: BSD-3-Clause
# cmake (and modulefiles): the CMake package configuration and the
# environment modules (Lmod and Tcl), made at make time so that every
# installation path is expanded; tests/consumers.sh (make installcheck)
# uses all three.
LINATTN_SUBST = $(SED) -e 's|@prefix[@]|$(prefix)|g' \
	-e 's|@bindir[@]|$(bindir)|g' -e 's|@libdir[@]|$(libdir)|g' \
	-e 's|@includedir[@]|$(includedir)|g' -e 's|@datadir[@]|$(datadir)|g' \
	-e 's|@mandir[@]|$(mandir)|g' -e 's|@docdir[@]|$(docdir)|g' \
	-e 's|@VERSION[@]|$(VERSION)|g' \
	-e 's|@LINATTN_VERSION_MAJOR[@]|$(LINATTN_VERSION_MAJOR)|g' \
	-e 's|@LINATTN_VERSION_MINOR[@]|$(LINATTN_VERSION_MINOR)|g' \
	-e 's|@SIZEOF_VOID_P[@]|$(SIZEOF_VOID_P)|g' \
	-e 's|@OPENMP_CFLAGS[@]|$(OPENMP_CFLAGS)|g' \
	-e 's|@LAPACKE_LIBS[@]|$(LAPACKE_LIBS)|g' \
	-e 's|@BLAS_LIBS[@]|$(BLAS_LIBS)|g' -e 's|@LIBS[@]|$(LIBS)|g'
cmakedir = $(libdir)/cmake/linattn
nodist_cmake_DATA += cmake/linattnConfig.cmake cmake/linattnConfigVersion.cmake
lmoddir = $(datadir)/lmod/linattn
nodist_lmod_DATA = modulefiles/lmod/$(VERSION).lua
tclmoddir = $(datadir)/modulefiles/linattn
nodist_tclmod_DATA = modulefiles/tcl/$(VERSION)
cmake/linattnConfig.cmake: $(top_srcdir)/cmake/linattnConfig.cmake.in Makefile
	$(AM_V_GEN)$(MKDIR_P) cmake && $(LINATTN_SUBST) $(top_srcdir)/cmake/linattnConfig.cmake.in > $@
cmake/linattn-mpi.cmake: $(top_srcdir)/cmake/linattn-mpi.cmake.in Makefile
	$(AM_V_GEN)$(MKDIR_P) cmake && $(LINATTN_SUBST) \
	    -e 's|@MPI_CFLAGS[@]|$(MPI_CFLAGS)|g' -e 's|@MPI_LIBS[@]|$(MPI_LIBS)|g' \
	    $(top_srcdir)/cmake/linattn-mpi.cmake.in > $@
cmake/linattnConfigVersion.cmake: $(top_srcdir)/cmake/linattnConfigVersion.cmake.in Makefile
	$(AM_V_GEN)$(MKDIR_P) cmake && $(LINATTN_SUBST) $(top_srcdir)/cmake/linattnConfigVersion.cmake.in > $@
modulefiles/lmod/$(VERSION).lua: $(top_srcdir)/modulefiles/linattn.lua.in Makefile
	$(AM_V_GEN)$(MKDIR_P) modulefiles/lmod && $(LINATTN_SUBST) $(top_srcdir)/modulefiles/linattn.lua.in > $@
modulefiles/tcl/$(VERSION): $(top_srcdir)/modulefiles/linattn.tcl.in Makefile
	$(AM_V_GEN)$(MKDIR_P) modulefiles/tcl && $(LINATTN_SUBST) $(top_srcdir)/modulefiles/linattn.tcl.in > $@
EXTRA_DIST += cmake/linattnConfig.cmake.in cmake/linattnConfigVersion.cmake.in \
	cmake/linattn-mpi.cmake.in \
	modulefiles/linattn.lua.in modulefiles/linattn.tcl.in
CLEANFILES += $(nodist_cmake_DATA) $(nodist_lmod_DATA) $(nodist_tclmod_DATA)

