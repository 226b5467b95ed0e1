# SPDX-License-Identifier: BSD-3-Clause
# doc: the guides (installed under the doc directory), and the manual
# pages, made from the single source of the documentation:
# the headers' comments (section 3) and linattn-scaling --help (section 1),
# by doc/mkman.pl.  Installed with the library; tests/manpages.sh checks
# that every exported function has its page.
EXTRA_DIST += doc
man3dir = $(mandir)/man3
MKMAN_INPUTS = $(top_srcdir)/include/linattn.h
MKMAN = $(PERL) $(top_srcdir)/doc/mkman.pl --version $(VERSION)
man/man3/.stamp: $(top_srcdir)/doc/mkman.pl $(MKMAN_INPUTS)
	$(AM_V_GEN)rm -rf man/man3 && $(MKDIR_P) man/man3 && \
	    $(MKMAN) --out man/man3 $(MKMAN_INPUTS) && touch $@
man/linattn-scaling.1: benchmarks/linattn-scaling$(EXEEXT) $(top_srcdir)/doc/mkman.pl
	$(AM_V_GEN)$(MKDIR_P) man && ./benchmarks/linattn-scaling --help | \
	    $(MKMAN) --help2man linattn-scaling --out man
nodist_man1_MANS += man/linattn-scaling.1
man/linattn-scaling-mpi.1: benchmarks/linattn-scaling-mpi$(EXEEXT) $(top_srcdir)/doc/mkman.pl
	$(AM_V_GEN)$(MKDIR_P) man && ./benchmarks/linattn-scaling-mpi --help | \
	    $(MKMAN) --help2man linattn-scaling-mpi --out man
all-local: man/man3/.stamp
install-data-local: man/man3/.stamp
	$(MKDIR_P) "$(DESTDIR)$(man3dir)"
	$(INSTALL_DATA) man/man3/*.3 "$(DESTDIR)$(man3dir)"
uninstall-local:
	for page in man/man3/*.3; do \
	    rm -f "$(DESTDIR)$(man3dir)/$${page##*/}"; \
	done
# The guides: every document the README names, installed in DOCDIR
# (doc/NAME.md as NAME.md, beside the pictures they show;
# doc/fortran.md comes from fortran/local.mk), benchmarks/README.md in
# DOCDIR/benchmarks.  make installcheck checks that every document the
# installed README names is there (tests/consumers.sh).
dist_doc_DATA += README.md LICENSE NEWS doc/guide.md doc/internals.md \
	doc/mpi.md doc/gradients.md doc/maps.md doc/rng.md doc/decay.md \
	doc/approximation.md doc/checkpoint-format.md doc/performance.md \
	doc/testing.md doc/release.md doc/approx.png doc/approx-norm2.png \
	doc/scaling-mpi.png
benchdocdir = $(docdir)/benchmarks
dist_benchdoc_DATA = benchmarks/README.md

