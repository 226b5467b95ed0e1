#!/usr/bin/perl
# SPDX-License-Identifier: BSD-3-Clause
# gen_precision_mk.pl -- tests/precision.mk from tests/precision.list: the
# automake stanzas of the test programs built for both precisions.
#   perl tests/gen_precision_mk.pl tests/precision.list > tests/precision.mk
use strict;
use warnings;

my $list = shift @ARGV or die "usage: $0 tests/precision.list\n";
open my $in, '<', $list or die "$0: $list: $!\n";

# Per section: the source's folder, the headers every program of it uses,
# its flags, what it links, and how its programs are built (make check's
# programs, or extra programs that the MPI scripts depend on; Fortran
# programs from their two kind-setting sources and a shared .inc).
my %kind = (
    suite => { dir => 'tests', headers => 'tests/testutil.h',
               cpp => '$(AM_CPPFLAGS)', ldadd => '$(TEST_LDADD)',
               list => 'check_PROGRAMS', ext => '', cond => ['HAVE_CHECK'] },
    mpi   => { dir => 'tests/mpi', headers => '$(MPI_TEST_H)',
               cpp => '$(MPI_TEST_CPP)', ldadd => '$(MPI_TEST_LDADD)',
               list => 'MPI_CHECK_PROGS', ext => '$(EXEEXT)',
               cond => ['HAVE_CHECK', 'HAVE_MPI'] },
    # Fortran: NAME_d.f90 and NAME_s.f90 set the kind and include NAME.inc
    fortran => { dir => 'tests/fortran', ldadd => '$(FTEST_LDADD)',
                 list => 'check_PROGRAMS', cond => ['BUILD_FORTRAN',
                 'HAVE_CHECK'], fortran => 1 },
);

my (%body, %dist, @order, $section);
while (my $line = <$in>) {
    chomp $line;
    next if $line =~ /^\s*(#|$)/;
    if ($line =~ /^\[(\w+)\]$/) {
        $section = $1;
        die "$0: $list:$.: unknown section [$section]\n" unless $kind{$section};
        push @order, $section unless $body{$section};
        $body{$section} //= '';
        next;
    }
    die "$0: $list:$.: a test before any [section]\n" unless $section;
    my ($names, $libs) = split /\|/, $line, 2;
    my ($name, @headers) = split ' ', $names;
    die "$0: $list:$.: not a test name: $name\n" unless $name =~ /^\w+$/;
    my $k = $kind{$section};
    my $d = "$k->{dir}/${name}_d";
    my $s = "$k->{dir}/${name}_s";
    (my $cd = $d) =~ s/\W/_/g;
    (my $cs = $s) =~ s/\W/_/g;
    if ($k->{fortran}) {
        my $ldadd = join ' ', $k->{ldadd}, defined $libs ? split(' ', $libs) : ();
        my $inc = join ' ', "\$(top_srcdir)/$k->{dir}/$name.inc",
            map { "\$(top_srcdir)/$_" } @headers;
        $body{$section} .= <<"STANZA";
$k->{list} += $d $s
${cd}_SOURCES = $d.f90
${cd}_FCFLAGS = \$(FTEST_FCFLAGS)
${cd}_LDADD = $ldadd
${cs}_SOURCES = $s.f90
${cs}_FCFLAGS = \$(FTEST_FCFLAGS)
${cs}_LDADD = \$(${cd}_LDADD)
\$(${cd}_OBJECTS) \$(${cs}_OBJECTS): fortran/linattn.lo \\
	tests/fortran/libftest.la $inc
FORTRAN_PRECISION_LOGS += $d.log $s.log
STANZA
        $dist{$section} .= " $k->{dir}/$name.inc";
        next;
    }
    my $sources = join ' ', "$k->{dir}/$name.c", $k->{headers}, @headers;
    my $ldadd = join ' ', $k->{ldadd}, defined $libs ? split(' ', $libs) : ();
    $body{$section} .= <<"STANZA";
$k->{list} += $d$k->{ext} $s$k->{ext}
${cd}_SOURCES = $sources
${cd}_CPPFLAGS = $k->{cpp}
${cd}_CFLAGS = \$(TEST_CFLAGS)
${cd}_LDADD = $ldadd
${cs}_SOURCES = \$(${cd}_SOURCES)
${cs}_CPPFLAGS = $k->{cpp} -DTEST_SINGLE
${cs}_CFLAGS = \$(TEST_CFLAGS)
${cs}_LDADD = \$(${cd}_LDADD)
STANZA
}
close $in;

print "# SPDX-License-Identifier: BSD-3-Clause\n",
      "# Made by tests/gen_precision_mk.pl from tests/precision.list: edit\n",
      "# the list, not this file.\n";
for my $section (@order) {
    my @cond = @{ $kind{$section}{cond} };
    print "\n# [$section]\n";
    # the logs of the Fortran programs, for the tests that must run after
    # them (tests/fortran/local.mk)
    print "FORTRAN_PRECISION_LOGS =\n" if $kind{$section}{fortran};
    print "EXTRA_DIST +=$dist{$section}\n" if $dist{$section};
    print "if $_\n" for @cond;
    print $body{$section};
    print "endif\n" for @cond;
}
