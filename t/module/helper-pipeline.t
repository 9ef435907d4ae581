#!/usr/bin/perl
# Quick requests (health, list, status, usage) are pipelined on one
# connection per worker (docs/helper-protocol.md, "Pipelining"): many at
# once share it and each gets its own reply, never another's; a helper
# that stalls or dies fails every request on it with the answer a
# connection of its own would have given, none hangs; a client that goes
# away while its request is on it costs the others nothing.

use strict;
use warnings;

use Test::More;
use HTTP::Tiny;
use JSON::PP ();
use POSIX ();
use Time::HiRes qw(sleep time);
use lib 't/lib';
use VetoNginx;

VetoNginx::need(qw(helper));

my $n = VetoNginx->new;
my $hp = $n->start_helper;
my $veto = $n->default_veto;
$veto =~ s{veto_sandbox_helper_read_timeout \S+;}{veto_sandbox_helper_read_timeout 2s;};
$n->start(veto => $veto);
my $t = $n->token;

sub helper_conns
{
    my $sock = $hp->socket_path;
    my @l = grep { /\bESTAB\b/ } `ss -xH src '$sock'`;
    return scalar @l;
}

# runs $code in $k forked clients, each reporting one line; returns the
# lines (a client that died or hung past its own timeout says so)
sub clients
{
    my ($k, $code) = @_;
    my @kids;
    for my $i (1 .. $k) {
        pipe(my $rd, my $wr) or die "pipe: $!";
        my $pid = fork() // die "fork: $!";
        if ($pid == 0) {
            close $rd;
            my $out = eval { $code->($i) } // "died: $@";
            print $wr "$out\n";
            close $wr;
            POSIX::_exit(0);
        }
        close $wr;
        push @kids, [ $pid, $rd ];
    }
    my @out;
    for (@kids) {
        my ($pid, $rd) = @$_;
        my $l = <$rd> // "no answer\n";
        chomp $l;
        push @out, $l;
        waitpid($pid, 0);
    }
    return @out;
}

# four sandboxes, each asked for by its id
my @ids;
for (1 .. 4) {
    my ($st, undef, $b, $j) = $n->request(POST => '/v1/sandboxes', $t, {});
    is($st, 201, "create $_") or BAIL_OUT($b);
    push @ids, $j->{id};
}

my ($st) = $n->request(GET => '/v1/health');
is($st, 200, 'health: 200');
my $before = helper_conns();

# ---- many at once: each its own reply, on the one connection
{
    my @out = clients(30, sub {
        my ($i) = @_;
        my @bad;
        for my $k (1 .. 20) {
            my $id = $ids[($i + $k) % 4];
            my $what = $k % 4;
            my ($st, undef, $b, $j) =
                  $what == 0 ? $n->request(GET => '/v1/health')
                : $what == 1 ? $n->request(GET => '/v1/sandboxes', $t)
                : $what == 2 ? $n->request(GET => "/v1/sandboxes/$id", $t)
                :              $n->request(GET => "/v1/sandboxes/$id/usage", $t);
            if ($st != 200) {
                push @bad, "$what: $st";
            } elsif ($what == 1 && ref $j->{sandboxes} ne 'ARRAY') {
                push @bad, "list: $b";
            } elsif ($what >= 2 && ($j->{id} // '') ne $id) {
                push @bad, "$what: asked $id, answered " . ($j->{id} // $b);
            }
        }
        return @bad ? join('; ', @bad) : 'ok';
    });
    my @bad = grep { $_ ne 'ok' } @out;
    is(scalar(@bad), 0, '30 clients x 20 quick requests of 4 kinds at once: '
       . 'each 200 with its own answer (never another sandbox\'s)')
        or diag explain \@bad;
    is(helper_conns(), $before, "and no connection more than before "
       . "($before: the worker's pipe and the kept ones of the creates)");
}

# ---- the helper stalls: each request on the pipe is answered at its
# read timeout (2 s), as on a connection of its own, none hangs
{
    # what a connection of its own answers: a create is not pipelined
    kill 'STOP', $hp->pid;
    my ($sst, undef, $sb, $sj) = $n->request(POST => '/v1/sandboxes', $t, {});
    kill 'CONT', $hp->pid;
    is($sst, 503, "a stopped helper, on a connection of its own: 503")
        or diag $sb;
    like($sj->{detail} // '', qr/did not answer in time/,
         '... it did not answer in time');

    kill 'STOP', $hp->pid;
    my @out = clients(20, sub {
        my ($i) = @_;
        my $ua = HTTP::Tiny->new(timeout => 20);
        my $r = $ua->get($n->url("/v1/sandboxes/$ids[$i % 4]"),
                         { headers => { Authorization => "Bearer $t" } });
        my $j = eval { JSON::PP->new->decode($r->{content}) } // {};
        return "$r->{status} " . ($j->{detail} // $r->{content});
    });
    kill 'CONT', $hp->pid;
    my @bad = grep { !/^503 the sandbox helper did not answer in time/ } @out;
    is(scalar(@bad), 0, '20 requests on the pipe to a stopped helper: each '
       . '503, did not answer in time') or diag explain \@out;
    my ($st2, undef, $b2, $j2) = $n->request(GET => "/v1/sandboxes/$ids[0]", $t);
    is($st2, 200, 'the helper resumed: served again') or diag $b2;
    is($j2->{id}, $ids[0], '... with its own answer (the late replies to '
       . 'the failed requests were not taken for it)');
}

# ---- the helper is stopped, then killed, with requests on the pipe: each
# gets the answer of a helper that closed the connection
{
    kill 'STOP', $hp->pid;
    my $killer = fork() // die "fork: $!";
    if ($killer == 0) {
        sleep 1;    # on purpose: the helper stalls 1 s
        kill 'KILL', $hp->pid;
        POSIX::_exit(0);
    }
    my @out = clients(20, sub {
        my ($i) = @_;
        my $ua = HTTP::Tiny->new(timeout => 20);
        my $r = $ua->get($n->url($i % 2 ? '/v1/health' : '/v1/sandboxes'),
                         { headers => { Authorization => "Bearer $t" } });
        my $j = eval { JSON::PP->new->decode($r->{content}) } // {};
        return "$r->{status} " . ($j->{detail} // $r->{content});
    });
    waitpid($killer, 0);
    my @bad = grep { !/^503 / } @out;
    is(scalar(@bad), 0, '20 requests on the pipe when the stopped helper '
       . 'is killed: each 503') or diag explain \@out;
    my $closed = grep { /closed the connection before it answered/ } @out;
    ok($closed >= 1, "... the helper closed the connection ($closed of 20; "
       . "the others were queued after it closed: not reachable)")
        or diag explain \@out;
    $hp->kill9;                     # reaped (it is dead already)
    $hp->launch;
    my %seen;
    for (1 .. 10) {
        my ($s) = $n->request(GET => '/v1/health');
        $seen{$s}++;
    }
    is_deeply(\%seen, { 200 => 10 }, 'a new helper: served at once');
}

# ---- clients that give up while their requests are on the pipe: the
# replies are dropped when they come, the requests after them get theirs
{
    my @new;
    for (1 .. 2) {
        my ($s, undef, $b, $j) = $n->request(POST => '/v1/sandboxes', $t, {});
        is($s, 201, "create after the restart") or diag $b;
        push @new, $j->{id};
    }
    kill 'STOP', $hp->pid;
    my @out = clients(10, sub {
        my ($i) = @_;
        my $ua = HTTP::Tiny->new(timeout => 0.5);
        my $r = $ua->get($n->url("/v1/sandboxes/$new[$i % 2]"),
                         { headers => { Authorization => "Bearer $t" } });
        return $r->{status};
    });
    is(scalar(grep { $_ eq '599' } @out), 10, '10 clients gave up while the '
       . 'helper was stopped');
    kill 'CONT', $hp->pid;
    my $bad = 0;
    for my $k (1 .. 20) {
        my $id = $new[$k % 2];
        my ($s, undef, undef, $j) = $n->request(GET => "/v1/sandboxes/$id", $t);
        $bad++ unless $s == 200 && ($j->{id} // '') eq $id;
    }
    is($bad, 0, 'the next 20 requests: each its own sandbox');
    for my $id (@new) {
        my ($s) = $n->request(DELETE => "/v1/sandboxes/$id", $t);
        is($s, 200, 'delete');
    }
}

unlike($n->error_log, qr/\[(alert|emerg)\]|segfault|exited on signal/,
       'no alerts or crashes in the error log');

done_testing;
