#!/usr/bin/perl
# The module's floors (ngx_veto_sandbox_module/FLOORS) as
# scripts/check-floors checks them: the tree as committed has no call up
# and no circle; a copy of the module with an upward call planted (a
# function of the lowest floor calling one of the top floor), with a
# circle planted (two files of one floor calling each other), with the
# top floor's header included by a file of the lowest, or with a file on
# no floor fails the check, naming the files and the names.

use strict;
use warnings;

use Test::More;
use File::Temp qw(tempdir);
use File::Copy qw(copy);
use lib 't/lib';
use VetoNginx;

my $ROOT = $VetoNginx::ROOT;
my $MOD = "$ROOT/ngx_veto_sandbox_module";
my $CHECK = "$ROOT/scripts/check-floors";
my $PREFIX = 'ngx_http_veto_sandbox_';

sub check
{
    my ($dir) = @_;
    my $out = `python3 $CHECK --dir $dir 2>&1`;
    return ($? >> 8, $out);
}

sub slurp { my ($f) = @_; open my $fh, '<', $f or die "$f: $!"; local $/; <$fh> }
sub spew { my ($f, $s) = @_; open my $fh, '>', $f or die "$f: $!"; print $fh $s; close $fh }

# ---- the tree as it is
my ($rc, $out) = check($MOD);
is($rc, 0, 'the module as committed: no call up, no circle') or diag $out;
like($out, qr/no call up, no circle/, '... and it says so');

# ---- the floors, read as the script reads them
my (@floors, @FLOOR_NAMES, %floor_of);
{
    my $cur;
    for my $line (split /\n/, slurp("$MOD/FLOORS")) {
        $line =~ s/#.*//;
        next unless $line =~ /\S/;
        if ($line =~ /^(\w+):\s*(.*)$/) {
            push @floors, [];
            push @FLOOR_NAMES, $1;
            $cur = $#floors;
            $line = $2;
        }
        for my $name (split ' ', $line) {
            push @{ $floors[$cur] }, $name;
            $floor_of{$name} = $cur;
        }
    }
}
cmp_ok(scalar @floors, '>=', 3, 'FLOORS names several floors');

# a non-static function a file defines (nginx style: the name at column 0)
sub exported
{
    my ($name) = @_;
    my @lines = split /\n/, slurp("$MOD/$PREFIX$name.c");
    for my $i (1 .. $#lines) {
        next if $lines[$i - 1] =~ /\bstatic\b/;
        return $1 if $lines[$i] =~ /^(ngx_http_veto_sandbox_\w+)\(/;
    }
    return undef;
}

sub copy_module
{
    my $dir = tempdir(CLEANUP => 1);
    opendir my $dh, $MOD or die $!;
    for my $f (readdir $dh) {
        next unless $f =~ /\.(c|h)$/ || $f eq 'FLOORS';
        copy("$MOD/$f", "$dir/$f") or die "copy $f: $!";
    }
    return $dir;
}

sub plant
{
    my ($dir, $name, $callee) = @_;
    my $f = "$dir/$PREFIX$name.c";
    spew($f, slurp($f) . "\n\nstatic void\nngx_http_vsb_planted_$name(void)\n{\n"
                      . "    (void) $callee;\n}\n");
}

# ---- an upward call: the lowest floor's first file names a function of
# the top floor
my ($low) = grep { defined exported($_) } @{ $floors[0] };
my ($high, $high_fn);
for my $name (reverse @{ $floors[-1] }) {
    $high_fn = exported($name);
    if (defined $high_fn) { $high = $name; last }
}
ok(defined $low && defined $high, "a file of the lowest floor ($low) and one of the top ($high)");
{
    my $dir = copy_module();
    plant($dir, $low, $high_fn);
    ($rc, $out) = check($dir);
    isnt($rc, 0, "an upward call planted ($low calls $high_fn): the check fails");
    (my $short = $high_fn) =~ s/^$PREFIX//;
    like($out, qr/^check-floors: \Q$low\E \(\w+\) calls up into \Q$high\E \(\w+\): .*\b\Q$short\E\b/m,
         '... naming both files and the name') or diag $out;
}

# ---- a circle: two files of one floor that call each other
{
    my ($a, $b, $fa, $fb);
    FLOOR: for my $f (@floors) {
        my @have = grep { defined exported($_) } @$f;
        if (@have >= 2) {
            ($a, $b) = @have[0, 1];
            ($fa, $fb) = (exported($a), exported($b));
            last FLOOR;
        }
    }
    ok(defined $a, "two files of one floor: $a and $b");
    my $dir = copy_module();
    plant($dir, $a, $fb);
    plant($dir, $b, $fa);
    ($rc, $out) = check($dir);
    isnt($rc, 0, "$a and $b calling each other: the check fails");
    like($out, qr/a circle of \d+ files on floor \w+:\n(?:  .*\n)*  \Q$a\E -> \Q$b\E: /,
         '... naming the circle and its ties') or diag $out;
}

# ---- a header of a higher floor included by a file of the lowest
{
    my $dir = copy_module();
    my $top = $FLOOR_NAMES[-1];
    my $f = "$dir/$PREFIX$low.c";
    my $text = slurp($f);
    $text =~ s/^(#include "ngx_http_veto_sandbox_\w+\.h")/#include "$PREFIX$top.h"\n$1/m
        or die "no module include in $low";
    spew($f, $text);
    ($rc, $out) = check($dir);
    isnt($rc, 0, "$low including the $top floor's header: the check fails");
    like($out, qr/^check-floors: \Q$low\E \(\w+\) includes \Q$PREFIX$top.h\E/m,
         '... naming the file and the header') or diag $out;
}

# ---- a file on no floor
{
    my $dir = copy_module();
    spew("$dir/${PREFIX}stray.c", "int ngx_http_vsb_stray;\n");
    ($rc, $out) = check($dir);
    isnt($rc, 0, 'a file on no floor: the check fails');
    like($out, qr/${PREFIX}stray\.c is on no floor/, '... naming it') or diag $out;
}

done_testing();
