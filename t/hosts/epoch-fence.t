#!/usr/bin/perl
# The epoch fence (issue 20): with a host identity, a request for a
# sandbox this host owns carries the helper run its ownership record
# names, and the helper refuses any other run.  Through nginx, one host
# (veto_sandbox_host), plain Redis, the real helper: the record's epoch
# is the helper's and requests run; the record's epoch set to another
# run's in Redis: exec, write, GET and DELETE answer 404 not_found (the
# record was read once more and still disagreed; the helper has no ENDED
# record for it) and nothing ran, was written or was destroyed; the
# record put right: the sandbox answers again; put right while a request
# waits at the (stopped) helper: the second read finds it right and the
# request is sent once more and runs once; an ended sandbox whose
# record (forged back in) names another run: 410 ended with the helper's
# ENDED record's end_reason, never a run; a GET of it answers that
# record as the sandbox's state (200, state ended).

use strict;
use warnings;

use Test::More;
use POSIX ();
use Time::HiRes qw(sleep time);
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);

VetoNginx::need(qw(helper redis));

my $n = VetoNginx->new;
$n->start_redis;
my $hp = $n->start_helper;
$n->start(redis => 1,
          http_extra => 'veto_sandbox_host gw-f 127.0.0.1:' . $n->port
                        . ";\n");

my $m = $n->redis;
eventually('the host holds its lease', 10,
           sub { $m->hget('veto:{:hosts}:lease:gw-f', 'epoch') });

my $tok = $n->token;
my ($st, $h, $b, $j);

($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $tok, {});
is($st, 201, 'create') or BAIL_OUT($b);
my $id = $j->{id};
my $own = "veto:{acme}:sbx:own:$id";
my $run = $hp->ping->{epoch};
eventually("the ownership record names the helper's run ($run)", 5,
           sub { ($m->hget($own, 'epoch') // '') eq $run });
is($m->hget($own, 'gateway'), 'gw-f', '... and this host');

sub helper_file
{
    my ($path) = @_;
    my ($r, $p) = $hp->call({ op => 'read_file', tenant => 'acme',
                              agent => 'agent-1', id => $id,
                              path => $path });
    return $r->{ok} ? $p : "$r->{error}:" . ($r->{field} // '');
}

($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$id/exec", $tok,
    { argv => ['sh', '-c', 'echo one > /workspace/one'] });
is($st, 200, 'exec, the record right: runs') or diag $b;
is(helper_file('one'), "one\n", '... and wrote its file');

# ---- the record names another run of the helper
my $other = $run =~ tr/0-9a-f/1-9a-f0/r;
$m->hset($own, 'epoch', $other);

($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$id/exec", $tok,
    { argv => ['sh', '-c', 'echo ran > /workspace/ran'] });
is($st, 404, 'exec, the record naming another run: 404') or diag $b;
is($j->{type}, 'urn:veto-sandbox:problem:not_found', '... not_found');
is(helper_file('ran'), 'not_found:path', '... and nothing ran');

($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$id/files?path=w",
                                $tok, 'data',
                                { 'Content-Type' => 'application/octet-stream' });
is($st, 404, 'a write: 404') or diag $b;
is(helper_file('w'), 'not_found:path', '... nothing written');

($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$id", $tok);
is($st, 404, 'GET: 404') or diag $b;

($st, $h, $b, $j) = $n->request(DELETE => "/v1/sandboxes/$id", $tok);
is($st, 404, 'DELETE: 404') or diag $b;
my ($s) = $hp->call({ op => 'status', tenant => 'acme', agent => 'agent-1',
                      id => $id });
is($s->{sandbox}{state}, 'ready', '... the sandbox was not destroyed');

ok($m->exists($own) && defined $m->zscore('veto:{acme}:sbx:live', $id),
   'the record and the quota slot of the live sandbox are not freed');

like($n->error_log, qr/ownership record's epoch $other is not the helper's $run/,
     'the disagreement is logged, naming both runs');

# ---- put right: it answers again
$m->hset($own, 'epoch', $run);
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$id/exec", $tok,
    { argv => ['cat', '/workspace/one'] });
is($st, 200, 'the record right again: exec runs') or diag $b;
is($j->{stdout}, "one\n", '... in the same sandbox');

# ---- the record put right while the request is under way: the helper
# (stopped, so the request waits at it with the wrong epoch) refuses the
# first try; the module reads the record once more, finds it right and
# sends the request once more: it runs, once
sub mismatches { scalar(() = $n->error_log =~ /reading it again/g) }
my ($retried, $ran_once, $answer) = (0, 0, '');
for my $try (1 .. 3) {
    $m->hset($own, 'epoch', $other);
    my $before = mismatches();
    my $out = $n->dir . "/retry-$try";
    kill 'STOP', $hp->pid;
    my $kid = fork() // die "fork: $!";
    if ($kid == 0) {
        my ($st1, undef, $b1) = $n->request(POST => "/v1/sandboxes/$id/exec",
            $tok, { argv => ['sh', '-c', "echo $try >> /workspace/retry"] });
        open(my $fh, '>', $out) or POSIX::_exit(1);
        print $fh "$st1 $b1";
        close $fh;
        POSIX::_exit(0);
    }
    sleep 1;                        # the request reaches the stopped helper
    $m->hset($own, 'epoch', $run);
    kill 'CONT', $hp->pid;
    waitpid($kid, 0);
    $answer = do { local (@ARGV, $/) = ($out); <> } // '';
    next unless mismatches() > $before;     # read after the fix: again
    $retried = 1;
    my $runs = () = helper_file('retry') =~ /^$try$/mg;
    $ran_once = ($answer =~ /^200 / && $runs == 1);
    last;
}
kill 'CONT', $hp->pid;
ok($retried, 'a request sent with a wrong epoch met the fence');
ok($ran_once, '... the record right on the second read: sent once more, '
              . 'ran once') or diag $answer;

($st, $h, $b, $j) = $n->request(DELETE => "/v1/sandboxes/$id", $tok);
is($st, 200, 'DELETE') or diag $b;
eventually('the ownership record is freed at the end', 5,
           sub { !$m->exists($own) });

# ---- an ended sandbox whose record (forged back) names another run
# a GET asks for the sandbox's state: the fence's probe finds the
# helper's ENDED record, and that is the GET's answer (the op row's
# NGX_HTTP_VSB_ROW_STATE), not a 410
$m->hset($own, 'agent', 'agent-1', 'gateway', 'gw-f', 'epoch', $other);
($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$id", $tok);
is($st, 200, "GET: the helper's ENDED record, as the sandbox's state")
    or diag $b;
is($j->{state}, 'ended', '... state ended') or diag $b;
is($j->{end_reason}, 'deleted', '... with its end_reason') or diag $b;
# any other op: 410 with the ENDED record's end_reason, nothing ran
$m->hset($own, 'agent', 'agent-1', 'gateway', 'gw-f', 'epoch', $other);
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$id/exec", $tok,
    { argv => ['true'] });
is($st, 410, 'exec of an ended sandbox, the record naming another run: 410')
    or diag $b;
is($j->{type}, 'urn:veto-sandbox:problem:ended', '... ended');
is($j->{end_reason}, 'deleted', "... with the helper's end_reason")
    or diag $b;
$m->del($own);

done_testing;
