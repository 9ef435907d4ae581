#!/usr/bin/perl
# What the policy's "export": true does and does not hold (docs/security.md,
# known limitations): it gates GET .../files, but an agent that may exec prints
# the same file with "cat" and reads it from stdout; gating execs too
# ("always": ["sandbox.exec"]) closes that road, and then the reviewer
# sees "cat <file>" in the summary.

use strict;
use warnings;

use Test::More;
use JSON::PP ();
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);

VetoNginx::need(qw(helper redis));

my $SECRET = "exported-only-with-a-human-4242\n";

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            approvals => { export => JSON::PP::true },
            agents => {
                'agent-strict' => { approvals => {
                    export => JSON::PP::true, always => ['sandbox.exec'] } },
            },
        },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;
$n->start(redis => 1, policy => $policy);

my ($st, $h, $b, $j);
eventually('Redis is up', 10, sub {
    (undef, undef, undef, $j) = $n->request(GET => '/v1/health');
    ($j->{redis} // '') eq 'up';
});

for my $who (qw(agent-1 agent-strict)) {
    my $tok = $n->token(sub => $who);
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $tok, { ttl_s => 300 });
    is($st, 201, "$who: create") or diag $b;
    my $sb = $j->{id};
    ($st, $h, $b) = $n->request(PUT => "/v1/sandboxes/$sb/files?path=out.patch",
                                $tok, $SECRET);
    is($st, 200, "$who: write a file") or diag $b;

    ($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb/files?path=out.patch",
                                    $tok);
    is($st, 202, "$who: reading the file out needs a human (export)");
    unlike($b, qr/exported-only/, "$who: ... and the 202 does not carry it");

    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $tok,
                                    { argv => ['cat', 'out.patch'] });
    if ($who eq 'agent-1') {
        is($st, 200, 'export alone: "exec cat" of the same file runs');
        is($j->{stdout}, $SECRET, '... and its stdout is the file: a speed bump');
    } else {
        is($st, 202, 'execs gated too: "exec cat" needs a human as well');
        is_deeply($j->{summary}{argv}, ['cat', 'out.patch'],
                  '... who sees what it would print');
        unlike($b, qr/exported-only/, '... and nothing of the file leaks');
    }
    ($st) = $n->request(DELETE => "/v1/sandboxes/$sb", $tok);
    is($st, 200, "$who: delete");
}

done_testing;
