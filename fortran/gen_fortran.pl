#!/usr/bin/perl
# SPDX-License-Identifier: BSD-3-Clause
# gen_fortran.pl -- the Fortran bind(C) side of a linattn C header, generated
# from the header itself (as FFTW generates its Fortran interface), so that
# constants, structs and prototypes cannot drift from C.
#
#   perl gen_fortran.pl [--module NAME] [--public | --check-c | --check-f |
#                       --list | --shim] [-I DIR]... [--type CTYPE=FORTRAN]...
#                       [--api MACRO] [--own] [--comm CTYPE] HEADER
#
# writes to standard output, in free-form Fortran 2008:
#
#   module NAME      integer parameters for every integer #define and enum
#                    member; a bind(C) type c_<struct> for every typedef'd
#                    struct (linattn_ stripped); bind(C) interfaces c_<fn>
#                    for the prototypes outside the precision template;
#                    c_argnames(fn) and c_status_name(status) for messages.
#   module NAME_d    interfaces c_<fn> bound to the template's double
#   module NAME_s    and float instances (when the header has a template);
#   module NAME_any  for each template function without a real argument
#                    passed by value, cx_<fn>(kind, ...) calling the float
#                    instance for kind = real32 and the double one else,
#                    so that code taking only handles is written once.
#
# With --public it writes instead a public statement for every constant,
# which module linattn includes to re-export them.  --check-c and
# --check-f write the two halves of a test (tests/fortran/test_f_api):
# every constant's value and every struct's size and field offsets as C
# computes them, and as the generated Fortran sees them.  --list names
# the interface c_<name> of every function, one a line, with its C names.
#
# For a header that extends linattn.h (linattn_mpi.h): --api MACRO reads
# the declarations marked MACRO instead of LINATTN_API; --own leaves the
# header's "quoted" includes (linattn.h) out, so that only its own
# constants and functions are generated.  A template macro may take the
# serial library's mangling as a middle argument (MX, X, R).  --comm
# MPI_Comm makes every function with a parameter of that type reach C
# through a shim taking the Fortran handle (MPI_Fint, converted by
# MPI_Comm_f2c), as FFTW's MPI interface does: --shim writes the shims'
# C source (hidden symbols of the Fortran library), and the interfaces
# bind to them (<name>_f) with the handle as integer(c_int).
#
# Every pointer argument becomes type(c_ptr), value (the wrappers pass
# c_loc of the caller's memory: no copies, NULL where C allows it).  A
# declaration the script does not understand stops it with a message
# rather than being skipped: a new C function always gets its interface or
# breaks the build.  Needs only perl (perl-base, essential on Debian).
use strict;
use warnings;

my $module = 'linattn_c';
my $mode = 'modules';
my $api = 'LINATTN_API';
my $own = 0;
my $comm_type = '';
my @incdirs;
my %ctype = (
    'int' => 'integer(c_int)', 'int32_t' => 'integer(c_int32_t)',
    'uint32_t' => 'integer(c_int32_t)', 'int64_t' => 'integer(c_int64_t)',
    'uint64_t' => 'integer(c_int64_t)', 'size_t' => 'integer(c_size_t)',
    'double' => 'real(c_double)', 'float' => 'real(c_float)',
    'char' => 'character(kind=c_char)');
while (@ARGV && $ARGV[0] =~ /^(--|-I$)/) {
    my $opt = shift @ARGV;
    if ($opt eq '--module') { $module = shift @ARGV; }
    elsif ($opt eq '-I') { push @incdirs, shift @ARGV; }
    elsif ($opt =~ /^--(public|check-c|check-f|list|shim)$/) { $mode = $1; }
    elsif ($opt eq '--api') { $api = shift @ARGV; }
    elsif ($opt eq '--own') { $own = 1; }
    elsif ($opt eq '--comm') {
        $comm_type = shift @ARGV;
        $ctype{$comm_type} = 'integer(c_int)';
    }
    elsif ($opt eq '--type') {
        my ($c, $f) = split /=/, shift(@ARGV), 2;
        $ctype{$c} = $f;
    } else { die "gen_fortran.pl: unknown option $opt\n"; }
}
@ARGV == 1 or die "usage: gen_fortran.pl [--module NAME] [--public|--check-c|--check-f|--list|--shim] [-I DIR] [--type C=F] [--api MACRO] [--own] [--comm CTYPE] HEADER\n";
my $header = $ARGV[0];
(my $hname = $header) =~ s{.*/}{};
(my $hdir = $header) =~ s{[^/]*$}{};
$hdir = '.' if $hdir eq '';
my $text = read_header($header, 0);

# The header with its own "quoted" includes (linattn_version.h, made by
# configure in the build tree) inlined: found beside it or in a -I DIR.
sub read_header {
    my ($path, $depth) = @_;
    die "gen_fortran.pl: includes nested too deeply at $path\n" if $depth > 8;
    open my $in, '<', $path or die "gen_fortran.pl: $path: $!\n";
    my $t = do { local $/; <$in> };
    close $in;
    $t =~ s{^[ \t]*#[ \t]*include[ \t]+"([^"]+)".*$}{
        my $name = $1;
        $own ? '' : do {
        my ($found) = grep { -f "$_/$name" } ($hdir, @incdirs);
        defined $found or die "gen_fortran.pl: $name (included by $path) not found; give -I DIR\n";
        read_header("$found/$name", $depth + 1);
        }
    }gme;
    return $t;
}

$text =~ s{/\*.*?\*/}{ }gs;          # comments
$text =~ s{//[^\n]*}{}g;
$text =~ s{\\\n}{ }g;                # macro continuations
$text =~ s{^\s*#\s*define\s+$api\b.*$}{}mg;   # its definitions

# ---- the precision template: its formal names and its instances ----
# (X, R), or (MX, X, R) for a header over linattn.h: the first names its
# functions, the last the real type.
my ($tmpl_x, $tmpl_r, $tmpl_args, $tmpl_macro);
if ($text =~ /#\s*define\s+(\w+_DEFINE_API)\(\s*(\w+(?:\s*,\s*\w+){1,2})\s*\)/) {
    $tmpl_macro = $1;
    $tmpl_args = $2;
    my @a = split /\s*,\s*/, $2;
    ($tmpl_x, $tmpl_r) = ($a[0], $a[-1]);
}
my %mangle;   # mangling macro -> prefix
while ($text =~ /#\s*define\s+(\w+)\(\s*(\w+)\s*\)\s+(\w+)##\2\b/g) {
    $mangle{$1} = $3;
}
my @instances;   # [suffix, prefix, C real type, the macro's arguments]
while ($text =~ /^\s*\w+_DEFINE_API\(\s*(\w+(?:\s*,\s*\w+){1,2})\s*\)/mg) {
    my $all = $1;
    my @a = split /\s*,\s*/, $all;
    my ($m, $r) = ($a[0], $a[-1]);
    defined $mangle{$m} or die "gen_fortran.pl: no mangling macro $m\n";
    my $sfx = $r eq 'double' ? 'd' : $r eq 'float' ? 's'
        : die "gen_fortran.pl: template instance of type $r\n";
    push @instances, [$sfx, $mangle{$m}, $r, $all];
}
die "gen_fortran.pl: template without instances\n" if $tmpl_x && !@instances;

# ---- integer constants: #defines, then enums ----
my (@consts, %known);
sub int_expr {
    my ($v) = @_;
    $v =~ s/^\s+|\s+$//g;
    $v =~ s/\s+/ /g;
    $v =~ s/\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b/$1 =~ m{^0[xX]} ? hex($1) : $1/ge;
    return undef if $v eq '' || $v !~ /^[\s\w()+\-*\/]+$/;
    for my $id ($v =~ /([A-Za-z_]\w*)/g) { return undef unless $known{$id}; }
    return $v;
}
for my $line (split /\n/, $text) {
    next unless $line =~ /^\s*#\s*define\s+(LINATTN_\w+)(?!\()\s*(.*)$/;
    my ($name, $value) = ($1, $2);
    my $expr = int_expr($value);
    next unless defined $expr;        # LINATTN_API, include guards
    push @consts, [$name, $expr, '#define'];
    $known{$name} = 1;
}
my @status_names;
while ($text =~ /enum\s+(\w+)\s*\{(.*?)\}\s*;/gs) {
    my ($ename, $body) = ($1, $2);
    my $next = '0';
    for my $item (split /,/, $body) {
        $item =~ s/^\s+|\s+$//g;
        next if $item eq '';
        $item =~ /^(\w+)\s*(?:=\s*(.+))?$/s
            or die "gen_fortran.pl: enum $ename: cannot read '$item'\n";
        my ($name, $v) = ($1, defined $2 ? int_expr($2) : $next);
        defined $v or die "gen_fortran.pl: enum $ename: value of $name\n";
        push @consts, [$name, $v, "enum $ename"];
        $known{$name} = 1;
        push @status_names, $name if $ename eq 'linattn_status';
        $next = "$name + 1";
    }
}

# ---- structs ----
# typedef struct TAG { fields } NAME; outside the template, and
# typedef struct X(TAG) { fields } X(NAME); inside it (one type per
# instance, in the instance's module).  A pointer field (any type) is
# type(c_ptr); the template's real type is the instance's real.
sub fname { my ($c) = @_; $c =~ s/^linattn_//; return "c_$c"; }
sub struct_fields {
    my ($tname, $body) = @_;
    my @fields;
    for my $decl (split /;/, $body) {
        $decl =~ s/^\s+|\s+$//g;
        next if $decl eq '';
        $decl =~ /^(?:const\s+)?((?:unsigned\s+)?(?:$tmpl_x\(\w+\)|\w+))\s*(.*)$/s
            or die "gen_fortran.pl: struct $tname: cannot read '$decl'\n";
        my ($type, $names) = ($1, $2);
        for my $n (split /,/, $names) {
            $n =~ s/\s+//g;
            $n =~ s/^\*const\*/**/; # a const array of pointers: a pointer
            $n =~ /^(\*{0,2})(\w+)(?:\[(\w+)\])?$/
                or die "gen_fortran.pl: struct $tname: field '$n'\n";
            my ($ptr, $fn, $dim) = ($1, $2, $3);
            my $ft = $ptr ? 'type(c_ptr)'
                : ($tmpl_r && $type eq $tmpl_r) ? 'REAL'
                : $ctype{$type};
            defined $ft
                or die "gen_fortran.pl: struct $tname: field type $type\n";
            push @fields, [$ft, $fn, $dim];
        }
    }
    return \@fields;
}
my (@structs, @tstructs);
while ($text =~ /typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;/gs) {
    my ($tag, $body, $tname) = ($1, $2, $3);
    my $fields = struct_fields($tname, $body);
    grep { $_->[0] eq 'REAL' } @$fields
        and die "gen_fortran.pl: struct $tname: real field outside the template\n";
    push @structs, [$tname, $fields];
}
if ($tmpl_x) {
    while ($text =~ /typedef\s+struct\s+$tmpl_x\(\w+\)\s*\{(.*?)\}\s*$tmpl_x\((\w+)\)\s*;/gs) {
        my ($body, $name) = ($1, $2);
        push @tstructs, [$name, struct_fields($name, $body)];
    }
}
my $nstruct = () = $text =~ /typedef\s+struct\s+[^;{]*\{/g;
@structs + @tstructs == $nstruct
    or die "gen_fortran.pl: $nstruct structs, " . (@structs + @tstructs)
         . " read\n";

# A struct's Fortran type: its fields, real as the instance's.
sub struct_type {
    my ($fortran_name, $cname, $fields, $real) = @_;
    my $out = "\n  ! struct $cname\n  type, bind(C) :: $fortran_name\n";
    for my $fl (@$fields) {
        my ($t, $n, $dim) = @$fl;
        $t = $real if $t eq 'REAL';
        my $d = defined $dim ? ", dimension($dim)" : '';
        $out .= "    $t$d :: $n\n";
    }
    return $out . "  end type\n";
}

# ---- prototypes ----
my (@plain, @templ);
my $ndecl = () = $text =~ /\b$api\s+(?!__)/g;
while ($text =~ /\b$api\s+([^;]*?)\s*;/gs) {
    my $decl = $1;
    $decl =~ s/\s+/ /g;
    next if $decl =~ /^__attribute__/;   # the macro's own definition
    my ($ret, $name, $params);
    if ($tmpl_x && $decl =~ /^(.*?)\s*\b$tmpl_x\((\w+)\)\s*\((.*)\)$/) {
        ($ret, $name, $params) = ($1, $2, $3);
        push @templ, parse_fn($decl, $ret, $name, $params);
    } elsif ($decl =~ /^(.*?)\s*\b(\w+)\s*\((.*)\)$/) {
        ($ret, $name, $params) = ($1, $2, $3);
        push @plain, parse_fn($decl, $ret, $name, $params);
    } else {
        die "gen_fortran.pl: cannot read declaration '$decl'\n";
    }
}
@plain + @templ == $ndecl
    or die "gen_fortran.pl: $ndecl $api declarations, "
         . (@plain + @templ) . " read\n";

sub parse_fn {
    my ($decl, $ret, $name, $params) = @_;
    $ret =~ s/^\s+|\s+$//g;
    my $rk = $ret eq 'int' ? 'int' : $ret eq 'void' ? 'void'
        : $ret =~ /\*$/ ? 'ptr'
        : die "gen_fortran.pl: $name returns '$ret'\n";
    my @args;
    $params =~ s/^\s+|\s+$//g;
    if ($params ne 'void' && $params ne '') {
        for my $p (split /,/, $params) {
            $p =~ s/^\s+|\s+$//g;
            my $ptext = $p;
            $p =~ s/\bconst\b\s*//g;
            $p =~ /^(.*?)\s*(\w+)$/
                or die "gen_fortran.pl: $name: parameter '$p'\n";
            my ($type, $an) = ($1, $2);
            $type =~ s/\s+//g;
            my $kind;
            if ($type =~ /\*/) { $kind = 'ptr'; }
            elsif ($tmpl_r && $type eq $tmpl_r) { $kind = 'real'; }
            elsif (defined $ctype{$type}) { $kind = $type; }
            else { die "gen_fortran.pl: $name: parameter type '$type'\n"; }
            $an ne 'cresult' or die "gen_fortran.pl: $name: parameter named cresult\n";
            $an ne 'cresult'
                or die "gen_fortran.pl: $name: a parameter named cresult\n";
            push @args, [$an, $kind, $ptext];
        }
    }
    my $shim = $comm_type && grep { $_->[1] eq $comm_type } @args;
    return { name => $name, ret => $rk, args => \@args, shim => $shim };
}

# ---- output ----
sub wrap {    # free-form lines of at most 100 characters, & continued
    my ($first, $sep, @items) = @_;
    my @out;
    my $line = $first;
    for my $i (0 .. $#items) {
        my $piece = $items[$i] . ($i < $#items ? $sep : '');
        if (length($line) + length($piece) > 96) {
            push @out, "$line&";
            $line = '        & ';
        }
        $line .= $piece;
    }
    push @out, $line;
    return join("\n", @out) . "\n";
}

sub interface {
    my ($f, $cname, $real) = @_;
    my @names = map { $_->[0] } @{$f->{args}};
    my $out = '';
    my $kw = $f->{ret} eq 'void' ? 'subroutine' : 'function';
    my $suffix = $f->{ret} eq 'void' ? '' : ' result(cresult)';
    (my $fn = $f->{name}) =~ s/^linattn_//;
    $out .= wrap("    $kw c_$fn(", ', ', @names) =~ s/\n$//r;
    my $bind = $f->{shim} ? "${cname}_f" : $cname;
    $out .= ") &\n        bind(C, name='$bind')$suffix\n";
    $out .= "      import\n      implicit none\n";
    $out .= "      integer(c_int) :: cresult\n" if $f->{ret} eq 'int';
    $out .= "      type(c_ptr) :: cresult\n" if $f->{ret} eq 'ptr';
    for my $a (@{$f->{args}}) {
        my ($an, $k) = @$a;
        my $t = $k eq 'ptr' ? 'type(c_ptr)' : $k eq 'real' ? $real : $ctype{$k};
        $out .= "      $t, value :: $an\n";
    }
    $out .= "    end $kw c_$fn\n";
    return $out;
}

if ($mode eq 'list') {
    for my $f (@plain) {
        (my $n = $f->{name}) =~ s/^linattn_//;
        print "$n $f->{name}\n";
    }
    for my $f (@templ) {
        print "$f->{name} " . join(' ', map { "$_->[1]$f->{name}" } @instances)
            . "\n";
    }
    exit 0;
}
if ($mode eq 'shim') {
    my @shims = grep { $_->{shim} } @templ;
    my @pshims = grep { $_->{shim} } @plain;
    @shims || @pshims or die "gen_fortran.pl: --shim: no function takes $comm_type\n";
    print "/* SPDX-License-Identifier: BSD-3-Clause */\n";
    print "/* Generated by fortran/gen_fortran.pl from $hname: do not edit.\n";
    print " * The functions of $hname that take an $comm_type, taking the\n";
    print " * Fortran handle instead (MPI_Fint, converted by MPI_Comm_f2c), for\n";
    print " * the Fortran interfaces; hidden: the Fortran library calls them. */\n";
    print "#include \"$hname\"\n\n";
    print "#if defined(__GNUC__)\n#define LINATTN_SHIM __attribute__((visibility(\"hidden\")))\n";
    print "#else\n#define LINATTN_SHIM\n#endif\n\n";
    print "/* the interfaces declare the handle integer(c_int) */\n";
    print "_Static_assert(sizeof(MPI_Fint) == sizeof(int), \"MPI_Fint is not a C int\");\n\n";
    print "/* The C handle of f.  MPI_Comm_f2c may not be called before MPI_Init,\n";
    print " * after MPI_Finalize (Open MPI aborts) or, below MPI_THREAD_SERIALIZED,\n";
    print " * from another thread than MPI's main one: then MPI_COMM_NULL, and the\n";
    print " * call refuses MPI itself first (LINATTN_EMPIUSE). */\n";
    print "static MPI_Comm linattn_shim_comm(MPI_Fint f)\n{\n";
    print "    int up = 0, down = 0, level = MPI_THREAD_SINGLE, main = 0;\n";
    print "    if (MPI_Initialized(&up) != MPI_SUCCESS || !up ||\n";
    print "        MPI_Finalized(&down) != MPI_SUCCESS || down ||\n";
    print "        MPI_Query_thread(&level) != MPI_SUCCESS)\n";
    print "        return MPI_COMM_NULL;\n";
    print "    if (level < MPI_THREAD_SERIALIZED &&\n";
    print "        (MPI_Is_thread_main(&main) != MPI_SUCCESS || !main))\n";
    print "        return MPI_COMM_NULL;\n";
    print "    return MPI_Comm_f2c(f);\n}\n\n";
    my $shim = sub {
        my ($f, $fname) = @_;
        my @decl = map { $_->[1] eq $comm_type ? "MPI_Fint $_->[0]" : $_->[2] } @{$f->{args}};
        my @call = map { $_->[1] eq $comm_type ? "linattn_shim_comm($_->[0])" : $_->[0] } @{$f->{args}};
        $f->{ret} eq 'int' or die "gen_fortran.pl: --shim: $f->{name} does not return int\n";
        return "LINATTN_SHIM int " . $fname->("$f->{name}_f") . "(" . join(', ', @decl) . ")"
            . " { return " . $fname->($f->{name}) . "(" . join(', ', @call) . "); }";
    };
    print $shim->($_, sub { $_[0] }), "\n" for @pshims;
    if (@shims) {
        print "\n#define LINATTN_SHIMS($tmpl_args) \\\n";
        print join(" \\\n", map { $shim->($_, sub { "$tmpl_x($_[0])" }) } @shims), "\n\n";
        print "LINATTN_SHIMS($_->[3])\n" for @instances;
    }
    exit 0;
}
if ($mode eq 'check-c') {
    print "/* SPDX-License-Identifier: BSD-3-Clause */\n";
    print "/* Generated by fortran/gen_fortran.pl from $hname: do not edit. */\n";
    print "#include <stddef.h>\n#include <stdint.h>\n#include \"$hname\"\n\n";
    print "const int64_t linattn_ftest_consts[] = {\n";
    print join(",\n", map { "    (int64_t)($_->[0])" } @consts), "\n};\n";
    print "const int64_t linattn_ftest_layout[] = {\n";
    my @l;
    for my $st (@structs) {
        my ($tname, $fields) = @$st;
        push @l, "    (int64_t)sizeof($tname)";
        push @l, "    (int64_t)offsetof($tname, $_->[1])" for @$fields;
    }
    for my $inst (@instances) {
        for my $st (@tstructs) {
            my ($name, $fields) = @$st;
            my $tname = $inst->[1] . $name;
            push @l, "    (int64_t)sizeof($tname)";
            push @l, "    (int64_t)offsetof($tname, $_->[1])" for @$fields;
        }
    }
    print join(",\n", @l), "\n};\n";
    exit 0;
}
print "! SPDX-License-Identifier: BSD-3-Clause\n";
print "! Generated by fortran/gen_fortran.pl from $hname: do not edit.\n";
if ($mode eq 'public') {
    print wrap('  public :: ', ', ', map { $_->[0] } @consts);
    exit 0;
}
if ($mode eq 'check-f') {
    my $nl = 0;
    $nl += 1 + @{$_->[1]} for @structs;
    $nl += (1 + @{$_->[1]}) * @instances for @tstructs;
    # every struct as (Fortran type, its fields, a variable's name)
    my @all = map { [fname($_->[0]), $_->[1]] } @structs;
    for my $inst (@instances) {
        push @all, map { ["$inst->[0]_" . fname($_->[0]), $_->[1]] } @tstructs;
    }
    print "! The constants and the structs' layouts as the generated Fortran\n";
    print "! sees them, next to C's (the --check-c half).\n";
    print "module ${module}_check\n  use, intrinsic :: iso_c_binding\n";
    print "  use $module\n";
    for my $inst (@instances) {
        next unless @tstructs;
        print wrap("  use ${module}_$inst->[0], only: ", ', ',
                   map { "$inst->[0]_" . fname($_->[0]) . ' => ' . fname($_->[0]) }
                   @tstructs);
    }
    print "  implicit none\n";
    print "  integer, parameter :: nconsts = " . scalar(@consts) . "\n";
    print "  integer, parameter :: nlayout = $nl\n";
    print "  character(40), parameter :: const_names(nconsts) = [character(40) :: &\n";
    print join(", &\n", map { "      '$_->[0]'" } @consts), "]\n";
    print "  integer(c_int64_t), bind(C, name='linattn_ftest_consts') :: &\n";
    print "      c_consts(nconsts)\n";
    print "  integer(c_int64_t), bind(C, name='linattn_ftest_layout') :: &\n";
    print "      c_layout(nlayout)\n";
    print "contains\n  subroutine f_constants(v)\n";
    print "    integer(c_int64_t), intent(out) :: v(nconsts)\n";
    my $i = 0;
    print "    v(" . ++$i . ") = $_->[0]\n" for @consts;
    print "  end subroutine f_constants\n\n";
    print "  subroutine f_layout(v)\n    integer(c_int64_t), intent(out) :: v(nlayout)\n";
    my $k = 0;
    for my $st (@all) {
        print "    type($st->[0]), target :: s$k\n";
        $k++;
    }
    $i = 0;
    $k = 0;
    for my $st (@all) {
        my ($tname, $fields) = @$st;
        print "    v(" . ++$i . ") = c_sizeof(s$k)\n";
        for my $fl (@$fields) {
            my $ref = "s$k%$fl->[1]" . (defined $fl->[2] ? '(1)' : '');
            print "    v(" . ++$i . ") = offset(c_loc(s$k), c_loc($ref))\n";
        }
        $k++;
    }
    print "  end subroutine f_layout\n\n";
    print "  function offset(p, q) result(n)\n    type(c_ptr), intent(in) :: p, q\n";
    print "    integer(c_int64_t) :: n\n";
    print "    n = transfer(q, 0_c_intptr_t) - transfer(p, 0_c_intptr_t)\n";
    print "  end function offset\nend module ${module}_check\n";
    exit 0;
}
print "! The bind(C) view of the C API; the module linattn wraps it.\n";
print "module $module\n  use, intrinsic :: iso_c_binding\n  implicit none\n";
print "  public\n\n";
my $group = q{};
for my $c (@consts) {
    print "  ! $c->[2]\n" if $c->[2] ne $group;
    $group = $c->[2];
    print wrap("  integer, parameter :: $c->[0] = ", q{ }, split(/ /, $c->[1]));
}
print struct_type(fname($_->[0]), $_->[0], $_->[1], undef) for @structs;
if (@plain) {
    print "\n  interface\n";
    print interface($_, $_->{name}, undef) for @plain;
    print "  end interface\n";
}
print "\ncontains\n\n";
print "  ! The C argument names of function fn (its name without linattn_ and\n";
print "  ! without the precision prefix), blank-separated, for messages.\n";
print "  function c_argnames(fn) result(names)\n";
print "    character(*), intent(in) :: fn\n";
print "    character(:), allocatable :: names\n";
print "    select case (fn)\n";
for my $f (@plain, @templ) {
    (my $fn = $f->{name}) =~ s/^linattn_//;
    # the list in pieces of a few names, joined: no line too long
    my @words = map { $_->[0] } @{$f->{args}};
    my @pieces;
    push @pieces, join(' ', splice(@words, 0, 8)) while @words;
    @pieces = ('') unless @pieces;
    print "    case ('$fn')\n      names = '"
        . join(" ' // &\n          '", @pieces) . "'\n";
}
print "    case default\n      names = ''\n    end select\n";
print "  end function c_argnames\n\n";
print "  ! The name of a positive status code of the C library, or ''.\n";
print "  function c_status_name(status) result(name)\n";
print "    integer, intent(in) :: status\n";
print "    character(:), allocatable :: name\n";
print "    select case (status)\n";
for my $n (@status_names) {
    print "    case ($n)\n      name = '$n'\n";
}
print "    case default\n      name = ''\n    end select\n";
print "  end function c_status_name\nend module $module\n";

for my $inst (@instances) {
    my ($sfx, $prefix, $r) = @$inst;
    my $real = $r eq 'double' ? 'real(c_double)' : 'real(c_float)';
    print "\n! The $r instance of the template: ${prefix}*.\n";
    print "module ${module}_$sfx\n  use, intrinsic :: iso_c_binding\n";
    print "  implicit none\n  public\n";
    print struct_type(fname($_->[0]), $prefix . $_->[0], $_->[1], $real)
        for @tstructs;
    print "\n" if @tstructs;
    print "  interface\n";
    print interface($_, $prefix . $_->{name}, $real) for @templ;
    print "  end interface\nend module ${module}_$sfx\n";
}
if (@instances == 2) {
    my @any = grep { !grep { $_->[1] eq 'real' } @{$_->{args}} } @templ;
    print "\n! The template's functions without a real argument by value, for\n";
    print "! either precision: kind = real32 calls the float instance.\n";
    print "module ${module}_any\n  use, intrinsic :: iso_c_binding\n";
    print "  use, intrinsic :: iso_fortran_env, only: real32\n";
    for my $sfx ('d', 's') {
        print wrap("  use ${module}_$sfx, only: ", ', ',
                   map { "${sfx}_$_->{name} => c_$_->{name}" } @any);
    }
    print "  implicit none\n  private\n";
    print wrap('  public :: ', ', ', map { "cx_$_->{name}" } @any);
    print "contains\n";
    for my $f (@any) {
        my @names = map { $_->[0] } @{$f->{args}};
        my $void = $f->{ret} eq 'void';
        my $kw = $void ? 'subroutine' : 'function';
        print wrap("\n  $kw cx_$f->{name}(", ', ', 'kind', @names) =~ s/\n$//r;
        print ")" . ($void ? '' : ' result(cresult)') . "\n";
        print "    integer, intent(in) :: kind\n";
        print "    integer(c_int) :: cresult\n" unless $void;
        for my $a (@{$f->{args}}) {
            my ($an, $k) = @$a;
            my $t = $k eq 'ptr' ? 'type(c_ptr)' : $ctype{$k};
            print "    $t, intent(in) :: $an\n";
        }
        for my $sfx ('s', 'd') {
            print $sfx eq 's' ? "    if (kind == real32) then\n" : "    else\n";
            my $lead = ($void ? "      call " : "      cresult = ")
                . "${sfx}_$f->{name}(";
            print wrap($lead, ', ', @names) =~ s/\n$//r, ")\n";
        }
        print "    end if\n  end $kw cx_$f->{name}\n";
    }
    print "end module ${module}_any\n";
}
