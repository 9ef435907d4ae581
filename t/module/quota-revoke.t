#!/usr/bin/perl
# Quotas through nginx (concurrent sandboxes and execs per minute, per
# agent and per tenant: 429, Retry-After only for the exec rate, where
# waiting helps), sandbox ownership records,
# and token revocation by jti and by agent (401).

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);
use Time::HiRes qw(time sleep);

VetoNginx::need(qw(helper redis));

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            quotas => { concurrent_sandboxes => 3, execs_per_minute => 100,
                        per_agent => { concurrent_sandboxes => 2,
                                       execs_per_minute => 3 } },
            agents => {
                'agent-big' => { quotas => { concurrent_sandboxes => 5,
                                             execs_per_minute => 50 } },
            },
        },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;
$n->start(redis => 1, policy => $policy);

my $a1 = $n->token(sub => 'agent-1', jti => 'tok-a1');
my $a2 = $n->token(sub => 'agent-2');
my $big = $n->token(sub => 'agent-big');
my $r = $n->redis;

my ($st, $h, $b, $j);
eventually('the gateway serves (Redis connected)', 10, sub {
    ($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes', $a1);
    $st == 200;
});
is($st, 200, 'list');

sub create
{
    my ($tok) = @_;
    return $n->request(POST => '/v1/sandboxes', $tok, { ttl_s => 600 });
}

# ---- concurrent sandboxes, per agent
my @mine;
for my $i (1 .. 2) {
    ($st, $h, $b, $j) = create($a1);
    is($st, 201, "agent-1 sandbox $i") or diag $b;
    push @mine, $j->{id};
}
($st, $h, $b, $j) = create($a1);
is($st, 429, 'third sandbox of agent-1: 429');
# waiting is not what frees a slot (a delete does, at once): no Retry-After
ok(!exists $h->{'retry-after'}, 'no Retry-After for concurrent sandboxes')
    or diag "Retry-After: $h->{'retry-after'}";
like($j->{detail} // '', qr{delete one .*DELETE /v1/sandboxes/\{id\}.* at once},
     'the detail says what helps: a delete');
ok(($j->{oldest_expires_in} // 0) >= 1 && $j->{oldest_expires_in} <= 600,
   'and when the oldest ends by itself');
ok(!exists $j->{retry_after}, 'no retry_after member either');
is($j->{type}, 'urn:veto-sandbox:problem:quota_exceeded', 'problem+json');
is($j->{scope}, 'agent', 'the agent limit');
is($h->{'content-type'}, 'application/problem+json', 'content type');

# ownership records, shared by every gateway on this Redis
is($r->hget("veto:{acme}:sbx:own:$mine[0]", 'agent'), 'agent-1',
   'ownership record in Redis');
is($r->zcard('veto:{acme}:sbx:live'), 2, 'two live sandboxes counted');
is($r->zcard('veto:{acme}:sbx:live:agent-1'), 2, 'two for agent-1');

# ---- tenant total: 3
($st, $h, $b, $j) = create($a2);
is($st, 201, 'agent-2: first sandbox') or diag $b;
my $other = $j->{id};
($st, $h, $b, $j) = create($big);
is($st, 429, 'tenant total reached: 429 even for agent-big');
is($j->{scope}, 'tenant', 'the tenant limit');

# ---- delete frees the slot
($st) = $n->request(DELETE => "/v1/sandboxes/$mine[0]", $a1);
is($st, 200, 'delete');
eventually('slot released', 5,
           sub { $r->zcard('veto:{acme}:sbx:live:agent-1') == 1 });
($st, $h, $b, $j) = create($a1);
is($st, 201, 'after a delete agent-1 may create again') or diag $b;
push @mine, $j->{id};

# ---- execs per minute, per agent (3)
for my $i (1 .. 3) {
    ($st, $h, $b) = $n->request(POST => "/v1/sandboxes/$mine[1]/exec", $a1,
                                { argv => ['true'] });
    is($st, 200, "exec $i") or diag $b;
}
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$mine[1]/exec", $a1,
                                { argv => ['true'] });
is($st, 429, 'fourth exec in a minute: 429');
ok(($h->{'retry-after'} // 0) >= 1 && $h->{'retry-after'} <= 60,
   'Retry-After until the window frees');
is($j->{retry_after}, $h->{'retry-after'}, 'retry_after as in the header');
like($j->{detail} // '', qr/retry in \d+ s/, 'the detail says to wait');
is($j->{quota}, 'execs_per_minute', 'names the quota');
($st) = $n->request(POST => "/v1/sandboxes/$other/exec", $a2, { argv => ['true'] });
is($st, 200, "another agent's execs are its own");

# ---- revocation by jti
($st) = $n->request(GET => '/v1/sandboxes', $a1);
is($st, 200, 'token works');
$r->set('veto:{acme}:revoked:jti:tok-a1', 1, 'EX', 300);
($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes', $a1);
is($st, 401, 'revoked jti: 401');
like($h->{'www-authenticate'} // '', qr/invalid_token/, 'WWW-Authenticate');
is($j->{detail}, 'token revoked', 'says revoked');
my $a1b = $n->token(sub => 'agent-1', jti => 'tok-a1-new');
($st) = $n->request(GET => '/v1/sandboxes', $a1b);
is($st, 200, 'another token of the agent still works');

# ---- revocation by agent: tokens issued up to now
$r->set('veto:{acme}:revoked:agent:agent-2', int(time()) - 1);
($st) = $n->request(GET => '/v1/sandboxes', $a2);
is($st, 401, 'agent revoked: its old token 401');
my $a2new = $n->token(sub => 'agent-2', iat => int(time()) + 1);
($st) = $n->request(GET => '/v1/sandboxes', $a2new);
is($st, 200, 'a token issued after the revocation works');
$r->set('veto:{acme}:revoked:agent:agent-2', '*');
($st) = $n->request(GET => '/v1/sandboxes', $a2new);
is($st, 401, "'*' revokes every token of the agent");

my $denials;
eventually('six refusals on record', 5, sub {
    $denials = grep { my %f = @{ $_->[1] };
                      ($f{outcome} // '') eq 'denied'
                      && ($f{reason} // '') =~ /^(quota_exceeded|token_revoked|agent_revoked)$/ }
               @{ $r->xrange('veto:{acme}:audit', '-', '+') };
    $denials >= 6;
});
is($denials, 6, 'every quota and revocation refusal is on record');

$n->request(DELETE => "/v1/sandboxes/$_", $a1) for @mine[1, 2];
$r->del('veto:{acme}:revoked:agent:agent-2');
$n->request(DELETE => "/v1/sandboxes/$other", $a2);

done_testing;
