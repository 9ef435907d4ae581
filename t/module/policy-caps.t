#!/usr/bin/perl
# A policy's ceilings hold where it names no default: what a request
# leaves out is the helper's default, capped at the policy's ceiling (the
# helper's create and exec "caps").  With ceilings timeout_s 2,
# memory_mb 100, output_bytes 64, ttl_s 120 and idle_s 60 and no
# defaults, against a helper whose defaults are above them: a create
# without limits gets the ceilings, an exec without timeout_s is killed
# at 2 s (not the helper's 20), its output cut at 64 bytes; a value the
# request names within the ceiling is kept.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;

VetoNginx::need(qw(helper));

my $n = VetoNginx->new;
$n->start_helper(default_timeout_s => 20, max_timeout_s => 60,
                 default_memory_mb => 512, default_output_bytes => 1024 * 1024,
                 default_ttl_s => 3600, max_ttl_s => 7200,
                 default_idle_s => 1800, max_idle_s => 3600);
$n->start(policy => { version => 1, tenants => { acme => {
    ceilings => { timeout_s => 2, memory_mb => 100, output_bytes => 64,
                  ttl_s => 120, idle_s => 60 } } } });
my $t = $n->token;

my ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t, {});
is($st, 201, 'a create naming no limit') or diag $b;
my $sb = $j->{id};
is($j->{limits}{timeout_s}, 2, "its timeout_s: the policy's ceiling, not the helper's default 20")
    or diag $b;
is($j->{limits}{memory_mb}, 100, '... memory_mb likewise');
is($j->{limits}{output_bytes}, 64, '... output_bytes likewise');
is($j->{ttl_s}, 120, '... ttl_s likewise');
is($j->{idle_s}, 60, '... idle_s likewise');

($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
    { argv => ['sh', '-c', 'sleep 5; echo done'] });
is($st, 200, 'an exec naming no timeout_s') or diag $b;
ok($j->{timed_out}, '... is killed at the ceiling') or diag $b;
isnt($j->{stdout} // '', "done\n", '... before it finished');

($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
    { argv => ['sh', '-c', 'head -c 1000 /dev/zero | tr "\\0" x'] });
ok($j->{stdout_truncated}, "an exec naming no output_bytes: cut at the ceiling") or diag $b;

($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t,
    { limits => { timeout_s => 1, memory_mb => 64 }, ttl_s => 60 });
is($st, 201, 'a create naming values within the ceilings') or diag $b;
is($j->{limits}{timeout_s}, 1, '... keeps them (timeout_s)');
is($j->{limits}{memory_mb}, 64, '... (memory_mb)');
is($j->{ttl_s}, 60, '... (ttl_s)');
$n->request(DELETE => "/v1/sandboxes/$j->{id}", $t);
$n->request(DELETE => "/v1/sandboxes/$sb", $t);

done_testing;
