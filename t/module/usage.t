#!/usr/bin/perl
# GET /v1/sandboxes/{id}/usage through nginx, Redis and the real helper:
# what a live sandbox uses now against its limits (a 5 MiB file the
# workload wrote is on its disk and in its memory, a busy loop's CPU
# time, a background sleep's processes), for any sandbox scope and only
# its owner (another agent's or tenant's sandbox is unknown), 410 once
# it ended; reading one's own usage is no decision on record (a refusal
# is).

use strict;
use warnings;

use Test::More;
use JSON::PP ();
use Time::HiRes qw(time sleep);
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);

VetoNginx::need(qw(helper redis));

my $mib = 1024 * 1024;

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;
$n->start(redis => 1);

my $t = $n->token;
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review audit:read');
my ($st, $h, $b, $j);

($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t,
    { limits => { memory_mb => 256, pids => 64, timeout_s => 30 } });
is($st, 201, 'create') or BAIL_OUT($b);
my $sb = $j->{id};
my $disk_mb = $j->{limits}{disk_mb};

sub usage
{
    my ($what, %o) = @_;
    my @r = $n->request(GET => "/v1/sandboxes/$sb/usage", $o{token} // $t);
    is($r[0], 200, "$what: 200") or diag $r[2];
    like($r[1]{'content-type'} // '', qr{^application/json},
         "$what: JSON");
    return $r[3];
}

# ---- a fresh sandbox: its limits, nothing running
my $u0 = usage('fresh');
is($u0->{id}, $sb, 'its id');
ok(!exists $u0->{ok} && !exists $u0->{request_id},
   'nothing of the helper protocol');
is($u0->{memory_limit_bytes}, 256 * $mib, 'memory_limit_bytes: 256 MiB');
is($u0->{pids_limit}, 64, 'pids_limit');
is($u0->{disk_limit_bytes}, $disk_mb * $mib,
   "disk_limit_bytes: its disk_mb ($disk_mb)");
is($u0->{execs_running}, 0, 'no exec runs');
is($u0->{background_execs_running}, 0, 'none in the background');
ok(abs($u0->{measured_at} - time) < 30, 'measured now');
for my $k (qw(memory_bytes memory_peak_bytes oom_kills pids pids_peak
              cpu_ms disk_used_bytes))
{
    ok(defined $u0->{$k} && $u0->{$k} =~ /^\d+$/, "$k is a count");
}

# ---- the workload writes 5 MiB and spins a while
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
    { argv => ['sh', '-c', 'head -c 5242880 /dev/zero > five.bin && '
                           . 'i=0; while [ $i -lt 20000 ]; do '
                           . 'i=$((i+1)); done'],
      timeout_s => 30 });
is($st, 200, 'exec: 5 MiB written') or diag $b;
is($j->{exit_code}, 0, 'exec: exit 0');

my $u1 = usage('after 5 MiB');
ok($u1->{disk_used_bytes} >= $u0->{disk_used_bytes} + 5 * $mib,
   "disk_used_bytes grew by the 5 MiB ($u0->{disk_used_bytes} -> "
   . "$u1->{disk_used_bytes})");
ok($u1->{disk_used_bytes} <= $u1->{disk_limit_bytes},
   'within its disk limit');
ok($u1->{memory_bytes} >= 5 * $mib,
   "the tmpfs file is charged to its memory ($u1->{memory_bytes})");
ok($u1->{memory_peak_bytes} >= $u1->{memory_bytes},
   'the memory peak is at least the current figure');
ok($u1->{cpu_ms} > $u0->{cpu_ms},
   "cpu_ms counts the loop ($u0->{cpu_ms} -> $u1->{cpu_ms})");

# ---- a background sleep: its processes, a running exec
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
    { argv => ['sleep', '60'], background => JSON::PP::true });
is($st, 202, 'background sleep') or diag $b;
my $ex = $j->{id};

# the 202 comes at once, maybe before its process joined the cgroup
my $u2;
eventually('the background sleep shows in the usage', 10, sub {
    $u2 = usage('with a background sleep');
    $u2->{pids} >= 1;
});
ok($u2->{pids} >= 1, "pids counts the sleep ($u2->{pids})");
ok($u2->{pids_peak} >= $u2->{pids}, 'pids_peak at least pids');
is($u2->{execs_running}, 1, 'one exec runs');
is($u2->{background_execs_running}, 1, 'in the background');

($st) = $n->request(DELETE => "/v1/sandboxes/$sb/execs/$ex", $t);
is($st, 200, 'the sleep killed');
my $u3 = usage('after the kill');
is($u3->{execs_running}, 0, 'no exec runs after the kill');
is($u3->{pids}, 0, 'no process left');

# ---- scopes: any sandbox scope reads it; others do not
for my $scope ('sandbox:files', 'sandbox:exec', 'sandbox:network') {
    usage("scope $scope", token => $n->token(scope => $scope));
}
($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb/usage", $rev);
is($st, 403, 'a reviewer token: 403') or diag $b;
like($h->{'content-type'} // '', qr{^application/problem\+json},
     '403 is problem+json');
($st) = $n->request(GET => "/v1/sandboxes/$sb/usage");
is($st, 401, 'no token: 401');

# ---- owners only: another agent's or tenant's sandbox is unknown
for my $other ([ 'another agent', $n->token(sub => 'agent-2') ],
               [ 'another tenant', $n->token(sub => 'agent-1',
                                             tenant => 'globex') ])
{
    ($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb/usage",
                                    $other->[1]);
    is($st, 404, "$other->[0]: 404") or diag $b;
    like($j->{type} // '', qr/:not_found$/,
         "$other->[0]: not_found, as no sandbox") or diag $b;
}
($st) = $n->request(GET => '/v1/sandboxes/sb-000000000000000000000000/usage',
                    $t);
is($st, 404, 'no such sandbox: 404');
($st) = $n->request(GET => '/v1/sandboxes/sb-nope/usage', $t);
is($st, 404, 'not a sandbox id: 404');

# ---- methods: a read only
($st, $h) = $n->request(POST => "/v1/sandboxes/$sb/usage", $t, {});
is($st, 405, 'POST: 405');
is($h->{allow}, 'GET, HEAD', 'Allow: GET, HEAD');
($st, $h, $b) = $n->request(HEAD => "/v1/sandboxes/$sb/usage", $t);
is($st, 200, 'HEAD: 200');
is($b // '', '', 'HEAD: no body');

# ---- reading one's own usage is no decision on record; a refusal is
($st, $h, $b, $j) = $n->request(GET => '/v1/audit?limit=300', $rev);
is($st, 200, 'audit read') or diag $b;
my @recs = @{ $j->{records} // [] };
ok((grep { $_->{action} eq 'sandbox.create' } @recs),
   'the create is on record');
my @usage = grep { $_->{action} eq 'sandbox.usage' } @recs;
is(scalar @usage, 1, 'one usage record: the reviewer\'s refusal')
    or diag explain \@usage;
is($usage[0]{outcome}, 'denied', 'denied');
is($usage[0]{reason}, 'insufficient_scope', 'for its scope');
is($usage[0]{agent}, 'human-1', 'the reviewer\'s');

# ---- an ended sandbox: 410
($st) = $n->request(DELETE => "/v1/sandboxes/$sb", $t);
is($st, 200, 'delete');
($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb/usage", $t);
is($st, 410, 'ended: 410') or diag $b;
like($h->{'content-type'} // '', qr{^application/problem\+json},
     '410 is problem+json');

done_testing;
