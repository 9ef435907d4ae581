#!/usr/bin/perl
# Atomicity: many gateways (forked processes, one Redis connection each)
# racing on one approval.  Exactly one consume wins; exactly one approve
# makes the transition when a threshold is met concurrently.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../../lib";
use Test::More;
use VetoRedisTest qw(redis_conn run_script);

my $T = 'race';
my $HASH = 'c' x 64;
my $N = 20;

sub keys_of {
    my ($id) = @_;
    return ("veto:{$T}:appr:$id", "veto:{$T}:appr:$id:rv", "veto:{$T}:appr:idx");
}

# Run $code->($i, $redis) in $N children released together; returns the
# first reply element of each, in child order.
sub race {
    my ($code) = @_;
    pipe(my $go_r, my $go_w) or die "pipe: $!";
    my @kids;
    for my $i (1 .. $N) {
        pipe(my $res_r, my $res_w) or die "pipe: $!";
        my $pid = fork();
        die "fork: $!" unless defined $pid;
        if ($pid == 0) {
            close $go_w;
            close $res_r;
            my $r = redis_conn();          # its own connection
            $r->ping;
            sysread($go_r, my $buf, 1);    # blocks until the parent closes
            my $res = $code->($i, $r);
            print {$res_w} join(',', @$res[0, 1]), "\n";
            close $res_w;
            POSIX::_exit(0);
        }
        close $res_w;
        push @kids, [$pid, $res_r];
    }
    close $go_r;
    select(undef, undef, undef, 0.3);      # let every child connect
    close $go_w;                           # go
    my @out;
    for my $k (@kids) {
        my $fh = $k->[1];
        my $line = <$fh> // 'child-failed';
        chomp $line;
        push @out, $line;
        waitpid $k->[0], 0;
    }
    return @out;
}

my $r = redis_conn();

for my $round (1 .. 5) {
    my $id = sprintf 'apr_%032x', $round;
    my @k = keys_of($id);
    run_script($r, 'approval_create', [@k],
               [$id, $T, 'agent-1', 'sandbox.exec', $HASH, '{}', 60000, 1, 60000]);
    is(run_script($r, 'approval_approve', [@k[0, 1]], [$T, 'rev-1'])->[1],
       'approved', "round $round: approved");

    my @res = race(sub {
        my ($i, $c) = @_;
        return run_script($c, 'approval_consume', [$k[0]],
                          [$T, 'agent-1', 'sandbox.exec', $HASH]);
    });
    my $wins = grep { $_ eq 'ok,consumed' } @res;
    my $lost = grep { $_ eq 'not_approved,consumed' } @res;
    is($wins, 1, "round $round: exactly one of $N concurrent consumes wins");
    is($lost, $N - 1, "round $round: the others see it consumed")
        or diag explain \@res;
}

# threshold 2, 20 distinct reviewers at once: one transition to approved
{
    my $id = sprintf 'apr_%032x', 99;
    my @k = keys_of($id);
    run_script($r, 'approval_create', [@k],
               [$id, $T, 'agent-1', 'sandbox.exec', $HASH, '{}', 60000, 2, 60000]);
    my @res = race(sub {
        my ($i, $c) = @_;
        return run_script($c, 'approval_approve', [@k[0, 1]], [$T, "rev-$i"]);
    });
    is(scalar(grep { $_ eq 'ok,approved' } @res), 1,
       'exactly one approval makes the transition');
    is(scalar(grep { $_ eq 'ok,pending' } @res), 1,
       'exactly one counted before the threshold');
    is(scalar(grep { $_ eq 'not_pending,approved' } @res), $N - 2,
       'the rest arrive too late') or diag explain \@res;
    is($r->scard($k[1]), 2, 'two reviewers recorded');
}

# a concurrent deny and approve: exactly one decision sticks
{
    my $id = sprintf 'apr_%032x', 100;
    my @k = keys_of($id);
    run_script($r, 'approval_create', [@k],
               [$id, $T, 'agent-1', 'sandbox.exec', $HASH, '{}', 60000, 1, 60000]);
    my @res = race(sub {
        my ($i, $c) = @_;
        return $i % 2
            ? run_script($c, 'approval_approve', [@k[0, 1]], [$T, "rev-$i"])
            : run_script($c, 'approval_deny', [@k[0, 1]], [$T, "rev-$i", 'no']);
    });
    is(scalar(grep { /^ok,/ } @res), 1, 'one decision among approve/deny racers')
        or diag explain \@res;
}

done_testing();
