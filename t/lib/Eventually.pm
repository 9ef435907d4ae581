package Eventually;

# The one way a test waits: eventually($what, $timeout_s, $check) calls
# $check until it returns a true value and returns that value, or fails
# the test naming $what once $timeout_s (times VETO_TIME_SCALE) has gone
# by.  The polls start at 10 ms and double to 200 ms, so a quick
# condition costs little and a slow one does not spin.  Never a fixed
# sleep: what a test waits for is a condition it can name.
#
#   use Eventually qw(eventually);
#   my $st = eventually('the sandbox ends', 10, sub {
#       my $s = $h->status($id);
#       $s->{state} eq 'ended' ? $s : undef;
#   });
#
# In list context the check's value and how long it took (seconds).
# $check may die: that counts as "not yet" until the deadline, then its
# message is the failure's diagnostic.

use strict;
use warnings;

use Exporter qw(import);
use Test::More ();
use Time::HiRes qw(time sleep);

our @EXPORT_OK = qw(eventually);

sub eventually
{
    my ($what, $timeout, $check) = @_;
    my $scale = $ENV{VETO_TIME_SCALE} // 1;
    $scale = 1 unless $scale =~ /^[1-9][0-9]?$/;
    my $t0 = time;
    my $deadline = $t0 + $timeout * $scale;
    my $pause = 0.01;
    my $err;

    for (;;) {
        my $v = eval { $check->() };
        $err = $@;
        if ($v) {
            return wantarray ? ($v, time - $t0) : $v;
        }
        last if time >= $deadline;
        my $left = $deadline - time;
        sleep($pause < $left ? $pause : ($left > 0 ? $left : 0));
        $pause *= 2 if $pause < 0.2;
    }

    local $Test::Builder::Level = $Test::Builder::Level + 1;
    Test::More::fail("eventually: $what (within ${timeout} s"
                     . ($scale > 1 ? " x$scale" : '') . ')');
    Test::More::diag("the last check died: $err") if $err;
    return wantarray ? (undef, time - $t0) : undef;
}

1;
