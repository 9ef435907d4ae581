#!/usr/bin/perl
# Two gateway hosts sharing one Redis under Sentinel (issue 20, what
# works before routing): each an nginx with its own helper and its own
# `veto_sandbox_host` name.  Quotas are global; an approval asked through
# one host is reviewed through the other and used once; a sandbox asked
# for on the host that does not hold it is 404 and its owner's quota slot
# stays (an exec that needs a human is refused by b with 421
# sandbox_elsewhere naming a, before an approval is asked for or used); a
# helper restart on one host drops only that host's dead
# sandboxes from the quota, never the other's live ones (both hosts have
# the same machine hostname here, so without their names the restart
# would free the other host's slot).  nginx -t on the directive.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use VetoSentinel;
use VetoHosts qw(up);
use Eventually qw(eventually);
use Time::HiRes qw(sleep time);

VetoNginx::need(qw(helper redis));
VetoSentinel::need();

my $policy = VetoHosts::acme_policy(
    approvals => { exec_argv => ['sh -c *'] },
    quotas => { concurrent_sandboxes => 2 });

# ---- nginx -t
my $t = VetoNginx->new;
$t->write_policy($policy);
for my $c (['veto_sandbox_host "";', qr/1\.\.64 bytes/, 'empty'],
           ['veto_sandbox_host ' . ('a' x 65) . ';', qr/1\.\.64 bytes/,
            'too long'],
           ['veto_sandbox_host "gw a";', qr/letters, digits/, 'a space'],
           ['veto_sandbox_host gw/a;', qr/letters, digits/, 'a slash'],
           ["veto_sandbox_host a;\nveto_sandbox_host b;", qr/is duplicate/,
            'twice'])
{
    $t->render(http_extra => $c->[0]);
    my ($ok, $out) = $t->test_config;
    ok(!$ok, "nginx -t refuses veto_sandbox_host: $c->[2]");
    like($out, $c->[1], "... naming why: $c->[2]");
}
$t->render(http_extra => "veto_sandbox_redis 127.0.0.1:1;\nveto_sandbox_host gw-a.example_1;");
my ($tok, $tout) = $t->test_config;
ok($tok, 'nginx -t accepts a host name') or diag $tout;

# ---- two hosts, one Redis under Sentinel
my $s = VetoSentinel->new(addr => '127.0.0.1');
my %gw = VetoHosts::gateways(names => [qw(a b)], sentinel => $s,
                             policy => $policy, check => 1);
my ($A, $B) = @gw{qw(a b)};

eventually('both hosts found the master', 15, sub { up($A) && up($B) });

my $agent = $A->token(sub => 'agent-1');
my $rev_b = $B->token(sub => 'human-1', scope => 'approvals:review');
my $agent_b = $B->token(sub => 'agent-1');
my ($st, $h, $b, $j);

($st, $h, $b, $j) = $A->request(POST => '/v1/sandboxes', $agent, {});
is($st, 201, 'create on host a') or diag $b;
my $sa = $j->{id};
($st, $h, $b, $j) = $B->request(POST => '/v1/sandboxes', $agent_b, {});
is($st, 201, 'create on host b') or diag $b;
my $sb = $j->{id};

my $m = $s->master;
# the records are written after the 201 (bookkeeping): wait for them
sub owner_of
{
    my ($id) = @_;
    return scalar eventually("$id has an owner", 5,
                      sub { $m->hget("veto:{acme}:sbx:own:$id", 'gateway') });
}
is(owner_of($sa), 'gw-a', "a's sandbox is recorded as host a's");
is(owner_of($sb), 'gw-b', "b's sandbox is recorded as host b's");

($st) = $A->request(POST => '/v1/sandboxes', $agent, {});
is($st, 429, 'the quota is global: a third create on a is refused');
($st) = $B->request(POST => '/v1/sandboxes', $agent_b, {});
is($st, 429, '... and on b');

# ---- a's sandbox asked for on b: 404 from b's helper; a's slot stays
($st, $h, $b, $j) = $B->request(POST => "/v1/sandboxes/$sa/exec", $agent_b,
                                { argv => ['true'] });
is($st, 404, "a's sandbox through b: 404 (no routing yet)") or diag $b;
ok(defined $m->zscore('veto:{acme}:sbx:live', $sa)
   && $m->exists("veto:{acme}:sbx:own:$sa"),
   "a's sandbox is still counted and owned after b's not_found");
($st) = $B->request(POST => '/v1/sandboxes', $agent_b, {});
is($st, 429, 'so the quota is still full');

# ---- an exec that needs a human, for a's sandbox, through b: b reads
# the ownership record and says where the sandbox is, before any
# approval is asked for (or used: it would be spent on a request b's
# helper cannot run)
my $gated = { argv => ['sh', '-c', 'echo once >> /workspace/log'] };
($st, $h, $b, $j) = $B->request(POST => "/v1/sandboxes/$sa/exec", $agent_b,
                                $gated);
is($st, 421, "a gated exec of a's sandbox through b: 421") or diag $b;
is($j->{type}, 'urn:veto-sandbox:problem:sandbox_elsewhere',
   '... sandbox_elsewhere');
is($j->{host}, 'gw-a', '... naming the host that holds it');

# a sandbox nobody holds: 409 as before, answered once (the log checks
# below: no "header already sent")
($st, $h, $b, $j) = $A->request(POST => '/v1/sandboxes/sb-000000000000000000000000/exec',
                                $agent, $gated);
is($st, 409, 'a gated exec of an unknown sandbox: 409') or diag $b;
is($j->{type}, 'urn:veto-sandbox:problem:sandbox_env_unknown',
   '... sandbox_env_unknown');

# asked through a, approved through b, used through a
($st, $h, $b, $j) = $A->request(POST => "/v1/sandboxes/$sa/exec", $agent,
                                $gated);
is($st, 202, 'the approval asked through a') or diag $b;
my $apr = $j->{approval_id};
($st) = $B->request(POST => "/v1/approvals/$apr/approve", $rev_b, {});
is($st, 200, 'approved through b');
($st, $h, $b, $j) = $B->request(POST => "/v1/sandboxes/$sa/exec", $agent_b,
                                $gated, { 'Veto-Approval' => $apr });
is($st, 421, 'used through b: 421, the approval not spent') or diag $b;
($st, $h, $b) = $A->request(POST => "/v1/sandboxes/$sa/exec", $agent,
                            $gated, { 'Veto-Approval' => $apr });
is($st, 200, 'used through a, the host holding the sandbox') or diag $b;
($st, $h, $b, $j) = $A->request(POST => "/v1/sandboxes/$sa/exec", $agent,
                                $gated, { 'Veto-Approval' => $apr });
is($st, 403, 'used once only');
is($j->{state}, 'consumed', '... as consumed');
($st, $h, $b) = $A->request(GET => "/v1/sandboxes/$sa/files?path=log",
                            $agent);
is($b, "once\n", 'it ran once');

# ---- b's helper restarts: b's dead sandbox leaves the quota, a's stays
my $hb = $B->helper;
$hb->kill9;
$hb->launch;
($st, $h, $b, $j) = $B->request(POST => '/v1/sandboxes', $agent_b, {});
is($st, 201, "after b's helper restarted, a create on b succeeds (b's "
             . 'dead sandbox dropped)') or diag $b;
my $sb2 = $j->{id};
ok(!defined $m->zscore('veto:{acme}:sbx:live', $sb),
   "b's dead sandbox is no longer counted");
ok(defined $m->zscore('veto:{acme}:sbx:live', $sa),
   "a's live sandbox is still counted");
($st) = $A->request(POST => '/v1/sandboxes', $agent, {});
is($st, 429, 'the quota is full again (a\'s and b\'s new sandbox)');
($st) = $A->request(POST => "/v1/sandboxes/$sa/exec", $agent,
                    { argv => ['true'] });
is($st, 200, "a's sandbox still works");

for ([$A, $sa, $agent], [$B, $sb2, $agent_b]) {
    my ($n, $id, $tok) = @$_;
    ($st) = $n->request(DELETE => "/v1/sandboxes/$id", $tok);
    is($st, 200, "delete $id");
}

for my $name (qw(a b)) {
    my $n = $gw{$name};
    $n->stop;
    my $log = $n->error_log;
    unlike($log, qr/\[(alert|crit)\]/, "no alert in ${name}'s log")
        or diag join("\n", grep { /\[(alert|crit)\]/ } split /\n/, $log);
    $n->helper->leaks_ok("host $name");
}

done_testing;
