#!/usr/bin/perl
# SPDX-License-Identifier: BSD-3-Clause
#
# mkman.pl -- the manual pages, made from the single source of the
# documentation: the comments of the public headers, and a program's
# --help.
#
#   perl mkman.pl --out DIR --version V [--date D] HEADER...
#       one section-3 page per documented function of the headers: the
#       comment just above each LINATTN_API declaration, with the
#       declaration itself as the synopsis.  A function declared in the
#       precision template (X(name)) gets linattn_d_NAME.3 with both
#       precisions in its synopsis, and linattn_s_NAME.3 pointing at it.
#       A header's opening comment and its type and constant comments
#       make its overview page (linattn.3 for linattn.h).
#   PROG --help | perl mkman.pl --help2man PROG --out DIR --version V
#       a section-1 page from a program's --help.
#
# Plain Perl 5, no modules beyond the core: every system that builds the
# library has it.
use strict;
use warnings;

my ($out, $version, $date, $help2man) = ('.', '', '', '');
my @headers;
while (@ARGV) {
    my $a = shift @ARGV;
    if    ($a eq '--out')      { $out      = shift @ARGV; }
    elsif ($a eq '--version')  { $version  = shift @ARGV; }
    elsif ($a eq '--date')     { $date     = shift @ARGV; }
    elsif ($a eq '--help2man') { $help2man = shift @ARGV; }
    else                       { push @headers, $a; }
}
die "mkman.pl: --out DIR and --version V are required\n"
    unless defined $out && defined $version && $version ne '';
$date ||= 'linattn ' . $version;

# Text to roff: backslashes, leading dots and quotes, minus signs.
sub roff {
    my ($t) = @_;
    $t =~ s/\\/\\e/g;
    $t =~ s/-/\\-/g;
    $t =~ s/^([.'])/\\&$1/mg;
    return $t;
}

sub write_page {
    my ($file, $text) = @_;
    open(my $fh, '>', "$out/$file") or die "mkman.pl: $out/$file: $!\n";
    print $fh $text;
    close($fh) or die "mkman.pl: $out/$file: $!\n";
}

sub header_line {
    my ($name, $section) = @_;
    return ".\\\" Made by doc/mkman.pl from the linattn sources; do not edit.\n"
         . ".TH \U$name\E $section \"$date\" \"linattn $version\" "
         . "\"linattn manual\"\n";
}

if ($help2man ne '') {
    my @help = <STDIN>;
    die "mkman.pl: no --help text on standard input\n" unless @help;
    my $usage = shift @help;
    chomp $usage;
    $usage =~ s/^usage:\s*//;
    # indented lines continue the usage
    while (@help && $help[0] =~ /^\s+\S/) {
        (my $more = shift @help) =~ s/^\s+|\s+$//g;
        $usage .= " $more";
    }
    # the first sentence of the help names the program
    my $what = '';
    for my $l (@help) {
        (my $t = $l) =~ s/^\s+|\s+$//g;
        $what .= ($what eq '' ? '' : ' ') . $t;
        last if $t =~ /\.$/ || $t eq '';
    }
    $what =~ s/^(.*?\.)\s.*$/$1/;
    $what =~ s/\.$//;
    my $page = header_line($help2man, 1)
             . ".SH NAME\n" . roff("$help2man - $what") . "\n"
             . ".SH SYNOPSIS\n.B " . roff($usage) . "\n"
             . ".SH DESCRIPTION\n.nf\n" . roff(join('', @help)) . ".fi\n"
             . ".SH SEE ALSO\n.BR linattn (3)\n";
    write_page("$help2man.1", $page);
    exit 0;
}

die "mkman.pl: no header given\n" unless @headers;

# The comment text of a block of header lines: continuation backslashes,
# comment delimiters and the leading " * " go.
sub comment_text {
    my @lines = @_;
    my @t;
    for my $l (@lines) {
        $l =~ s/\\\s*$//;
        $l =~ s/\s+$//;
        $l =~ s{^\s*/\*+\s?}{};
        $l =~ s{\s*\*+/\s*$}{};
        $l =~ s{^\s*\*(\s|$)}{};
        push @t, $l;
    }
    shift @t while @t && $t[0] eq '';
    pop @t while @t && $t[-1] eq '';
    return @t;
}

# A declaration of the template in one precision.
sub instantiate {
    my ($decl, $p, $type) = @_;
    $decl =~ s/\bMX\((\w+)\)/linattn_mpi_${p}_$1/g;
    $decl =~ s/\bX\((\w+)\)/linattn_${p}_$1/g;
    $decl =~ s/\bR\b/$type/g;
    return $decl;
}

# The prototype at the head of a function's comment ends at its closing
# parenthesis; what follows (after an optional "--") describes it.
sub split_prototype {
    my ($text) = @_;
    my $open = index($text, '(');
    return ('', $text) if $open < 0;
    my $depth = 0;
    for (my $i = $open; $i < length $text; $i++) {
        my $c = substr($text, $i, 1);
        $depth++ if $c eq '(';
        $depth-- if $c eq ')';
        if ($depth == 0) {
            my $rest = substr($text, $i + 1);
            $rest =~ s/^\s*(--\s*)?//;
            return (substr($text, 0, $i + 1), $rest);
        }
    }
    return ('', $text);
}

# A declaration as synopsis lines of at most 76 columns, broken after
# commas, continuation lines under the first argument.
sub wrap_decl {
    my ($d) = @_;
    my $indent = ' ' x (index($d, '(') + 1);
    my @parts = split /(?<=,) /, $d;
    my ($line, $r) = (shift @parts, '');
    for my $p (@parts) {
        if (length($line) + 1 + length($p) > 76) {
            $r .= "$line\n";
            $line = $indent . $p;
        } else {
            $line .= " $p";
        }
    }
    return $r . $line . "\n";
}

# Paragraphs of a comment as filled roff text; lines that start a list
# entry ("  name  text", "- item", "N. item") keep their line.
sub body {
    my @lines = @_;
    my $r = '';
    for my $l (@lines) {
        if ($l eq '') { $r .= ".PP\n"; next; }
        $r .= ".br\n" if $l =~ /^\s{2,}\S/ || $l =~ /^\s*(-|\d+\.)\s/;
        (my $t = $l) =~ s/^\s+//;
        $r .= roff($t) . "\n";
    }
    return $r;
}

my @all;       # every function page, for the overview
my %overview;  # header => its overview page text
for my $h (@headers) {
    open(my $fh, '<', $h) or die "mkman.pl: $h: $!\n";
    my @src = <$fh>;
    close($fh);
    chomp @src;
    (my $base = $h) =~ s{.*/}{};
    (my $hname = $base) =~ s/\.h$//;
    my (@top, @types, @funcs);
    my $i = 0;
    while ($i < @src) {
        if ($src[$i] !~ m{^\s*/\*}) { $i++; next; }
        my $start = $i;
        $i++ while $i < @src && $src[$i] !~ m{\*/};
        my @block = comment_text(@src[$start .. $i]);
        $i++;
        my $j = $i;
        $j++ while $j < @src && $src[$j] =~ /^\s*\\?\s*$/;
        my $next = $j < @src ? $src[$j] : '';
        if ($next =~ /^\s*LINATTN(?:_MPI)?_API\b/) {
            my $decl = '';
            while ($j < @src) {
                (my $l = $src[$j]) =~ s/\\\s*$//;
                $decl .= "$l\n";
                last if $l =~ /;/;
                $j++;
            }
            $decl =~ s/^\s*LINATTN(?:_MPI)?_API\s+//;
            $decl =~ s/\s+/ /g;
            $decl =~ s/\s*;.*$/;/;
            $decl =~ s/\( /(/g;
            my ($name) = $decl =~ /\b((?:MX|X)\(\w+\)|\w+)\s*\(/;
            push @funcs, [$name, $decl, \@block];
        } elsif (@block && $block[0] =~ /^SPDX-License-Identifier/) {
            next;
        } elsif (!@top) {
            @top = @block;
        } elsif (@block && $next =~ /^\s*(typedef|enum|struct|#define)/) {
            my $k = $j;
            my $decl = '';
            my $depth = 0;
            my $defines = $next =~ /^\s*#define/;
            while ($k < @src) {
                (my $l = $src[$k]) =~ s/\\\s*$//;
                $decl .= "$l\n";
                $depth += () = $l =~ /\{/g;
                $depth -= () = $l =~ /\}/g;
                # a run of #defines (with continuation lines) ends at the
                # first line that is neither
                last if $defines && $src[$k] !~ /\\\s*$/ &&
                        ($k + 1 >= @src || $src[$k + 1] !~ /^\s*#define/);
                last if !$defines && $depth <= 0 && $l =~ /;\s*$/;
                $k++;
            }
            push @types, [\@block, $decl];
        }
    }

    for my $f (@funcs) {
        my ($name, $decl, $block) = @$f;
        # X(name): liblinattn's template; MX(name): liblinattn_mpi's
        my $generic = $name =~ /^(M?)X\((\w+)\)$/;
        my $lib = $generic && $1 ? 'linattn_mpi' : 'linattn';
        my $stem = $generic ? $2 : $name;
        my $page_name = $generic ? "${lib}_d_$stem" : $name;
        my @decls = $generic
            ? (instantiate($decl, 'd', 'double'), instantiate($decl, 's', 'float'))
            : ($decl);
        my @names = $generic ? ("${lib}_d_$stem", "${lib}_s_$stem") : ($name);
        my $text = join("\n", @$block);
        my (undef, $desc) = split_prototype($text);
        $desc = $text if $desc eq '';
        # "Errors: ..." to the end of the comment is the ERRORS section
        my $errors = '';
        if ($desc =~ /^(.*?)(?:^|\s)Errors:\s*(.*)$/s) {
            ($desc, $errors) = ($1, $2);
        }
        my @dl = split /\n/, $desc;
        (my $summary = join(' ', @dl)) =~ s/\s+/ /g;
        # the first sentence, cut at a word near 70 columns if longer
        $summary =~ s/^(.*?\.)\s.*$/$1/;
        $summary =~ s/\.$//;
        $summary =~ s/^(.{40,68}\S)\s.*$/$1 .../ if length $summary > 72;
        # NAME left-adjusted: a pair of long names that cannot be
        # hyphenated would leave a line groff cannot justify
        my $page = header_line($page_name, 3)
                 . ".SH NAME\n.ad l\n" . join(', ', map { roff($_) } @names)
                 . " \\- " . roff($summary) . "\n.ad b\n"
                 . ".SH SYNOPSIS\n.nf\n.B #include <$base>\n.PP\n"
                 . join(".PP\n", map { roff(wrap_decl($_)) } @decls) . ".fi\n"
                 . ".SH DESCRIPTION\n" . body(@dl)
                 . ($errors ne '' ? ".SH ERRORS\n" . body(split /\n/, $errors) : '')
                 . ($generic ? ".SH PRECISIONS\nThe double (${lib}_d_) and float "
                              . "(${lib}_s_) forms are made from one "
                              . "source; the description names the double "
                              . "one.\n" : '')
                 . ".SH SEE ALSO\n.BR $hname (3)\n";
        write_page("$page_name.3", $page);
        write_page("${lib}_s_$stem.3", ".so man3/$page_name.3\n") if $generic;
        push @all, @names;
    }

    # the opening comment's first paragraph names the header
    my @name;
    push @name, shift @top while @top && $top[0] ne '';
    (my $what = join(' ', @name)) =~ s/^\S+\s+--\s+//;
    $what =~ s/\.$//;
    my $ov = header_line($hname, 3)
           . ".SH NAME\n$hname \\- " . roff($what || $hname) . "\n"
           . ".SH SYNOPSIS\n.nf\n.B #include <$base>\n.fi\n"
           . ".SH DESCRIPTION\n" . body(@top);
    if (@types) {
        $ov .= ".SH TYPES AND CONSTANTS\n";
        for my $t (@types) {
            my ($block, $decl) = @$t;
            $ov .= body(@$block) . ".PP\n.nf\n" . roff($decl) . ".fi\n.PP\n";
        }
    }
    $overview{$hname} = $ov;
}

# Each header's overview lists the pages of every header given, left
# adjusted: a justified line of these long names may have no room to
# stretch (groff warns "cannot adjust line").
for my $hname (sort keys %overview) {
    my $ov = $overview{$hname} . ".SH SEE ALSO\n.ad l\n"
           . join(",\n", map { ".BR $_ (3)" } @all) . "\n";
    write_page("$hname.3", $ov);
}
