#!/usr/bin/perl
# The admin API through nginx (scope admin:revoke): revoke a token by jti
# and take it back, revoke an agent (tokens issued until now, or all),
# read a revocation; list every sandbox of the admin's tenant and end
# another agent's (its quota slot freed); an admin of another tenant can
# touch none of it; a token without the scope gets 403; bad bodies name
# the field; every admin action is on the audit stream.  Real nginx,
# Redis and helper.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);
use Time::HiRes qw(sleep);

VetoNginx::need(qw(helper redis));

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            quotas => { concurrent_sandboxes => 10,
                        per_agent => { concurrent_sandboxes => 3 } },
        },
        globex => {
            ceilings => { memory_mb => 512, timeout_s => 30 },
        },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;
$n->start(redis => 1, policy => $policy);
my $r = $n->redis;

my $admin = $n->token(sub => 'admin-1', jti => 'adm-1', scope => 'admin:revoke');
my $admin2 = $n->token(sub => 'admin-2', scope => 'admin:revoke');
my $gadmin = $n->token(sub => 'admin-g', tenant => 'globex', scope => 'admin:revoke');
my $a1 = $n->token(sub => 'agent-1', jti => 'tok-1');
my $a1b = $n->token(sub => 'agent-1', jti => 'tok-1b');
my $a2 = $n->token(sub => 'agent-2', jti => 'tok-2');
my $g1 = $n->token(sub => 'agent-1', tenant => 'globex', jti => 'tok-1');
my $all = $n->token(sub => 'agent-9', scope => 'sandbox:create sandbox:exec '
                    . 'sandbox:files approvals:review audit:read');

my ($st, $h, $b, $j);
eventually('the gateway serves (Redis connected)', 10, sub {
    ($st) = $n->request(GET => '/v1/sandboxes', $a1);
    $st == 200;
});
is($st, 200, 'the gateway answers');

sub problem
{
    my ($name, $want, $field) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    is($st, $want, "$name: $want") or diag $b;
    like($h->{'content-type'} // '', qr{^application/problem\+json},
         "$name: problem+json");
    is($j->{field}, $field, "$name: names $field") if defined $field;
}

# ---- no admin scope: 403 on every admin route, even with every other one
my $sb0 = 'sb-' . ('0' x 24);
for my $c ([POST => '/v1/admin/revocations', { kind => 'agent', value => 'agent-2' }],
           [GET => '/v1/admin/revocations/jti/tok-1'],
           [DELETE => '/v1/admin/revocations/agent/agent-2'],
           [GET => '/v1/admin/sandboxes'],
           [DELETE => "/v1/admin/sandboxes/$sb0"]) {
    ($st, $h, $b, $j) = $n->request($c->[0] => $c->[1], $all, $c->[2]);
    problem("$c->[0] $c->[1] without admin:revoke", 403);
    is($j->{scope}, 'admin:revoke', 'the scope it needs is named');
    like($h->{'www-authenticate'} // '', qr/insufficient_scope/,
         'WWW-Authenticate says insufficient_scope');
}
is($r->exists('veto:{acme}:revoked:agent:agent-2'), 0, 'nothing was revoked');
($st) = $n->request(GET => '/v1/admin/sandboxes');
is($st, 401, 'no token: 401');

# ---- bad bodies name the field
for my $c ([{ kind => 'jti', value => 'x', expires_at => time + 60, extra => 1 },
            'unknown_field', 'extra'],
           [{ value => 'x' }, 'missing_field', 'kind'],
           [{ kind => 'token', value => 'x' }, 'bad_value', 'kind'],
           [{ kind => 'jti', expires_at => time + 60 }, 'missing_field', 'value'],
           [{ kind => 'jti', value => 'a:b', expires_at => time + 60 },
            'bad_value', 'value'],
           [{ kind => 'agent', value => '*' }, 'bad_value', 'value'],
           [{ kind => 'agent', value => 'x' x 129 }, 'bad_value', 'value'],
           [{ kind => 'jti', value => 'x' }, 'missing_field', 'expires_at'],
           [{ kind => 'jti', value => 'x', expires_at => 'soon' },
            'bad_value', 'expires_at'],
           [{ kind => 'jti', value => 'x', expires_at => 253402300800 },
            'bad_value', 'expires_at'],
           [{ kind => 'agent', value => 'x', expires_at => time + 60 },
            'bad_value', 'expires_at'],
           [{ kind => 'jti', value => 'x', expires_at => time + 60,
              which => 'all' }, 'bad_value', 'which'],
           [{ kind => 'agent', value => 'x', which => 'some' },
            'bad_value', 'which'],
           [{ kind => 'agent', value => 'x', reason => 'r' x 1025 },
            'bad_value', 'reason']) {
    ($st, $h, $b, $j) = $n->request(POST => '/v1/admin/revocations', $admin,
                                    $c->[0]);
    problem("revocation body with $c->[1] $c->[2]", 400, $c->[2]);
    is($j->{type}, "urn:veto-sandbox:problem:$c->[1]", "type $c->[1]");
}
($st, $h, $b, $j) = $n->request(POST => '/v1/admin/revocations', $admin, '[1]',
                                { 'Content-Type' => 'application/json' });
is($st, 400, 'not an object: 400');
($st, $h, $b, $j) = $n->request(POST => '/v1/admin/revocations', $admin);
is($st, 400, 'no body: 400');
my @written = $r->keys('veto:{acme}:revoked:*');
is(scalar @written, 0, 'no bad body wrote anything');

# a path that cannot name a jti names nothing
for my $p ('/v1/admin/revocations/jti/a:b', '/v1/admin/revocations/jti/',
           '/v1/admin/revocations/other/x', '/v1/admin/revocations/jti/a%20b') {
    ($st, $h, $b, $j) = $n->request(GET => $p, $admin);
    problem("GET $p", 404);
}

# ---- revoke a token by jti, and take it back
my $exp = int(time()) + 300;
($st, $h, $b, $j) = $n->request(POST => '/v1/admin/revocations', $admin,
                                { kind => 'jti', value => 'tok-1',
                                  expires_at => $exp, reason => 'leaked in a log' });
is($st, 201, 'revoke jti: 201') or diag $b;
is($h->{location}, '/v1/admin/revocations/jti/tok-1', 'Location');
is_deeply($j, { kind => 'jti', value => 'tok-1', expires_at => $exp,
                revoked => JSON::PP::true }, 'what was revoked');
my $ttl = $r->ttl('veto:{acme}:revoked:jti:tok-1');
ok($ttl > 290 && $ttl <= 300, "the record expires with the token ($ttl s)");

($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes', $a1);
is($st, 401, 'the revoked token: 401');
is($j->{detail}, 'token revoked', 'says revoked');
($st) = $n->request(GET => '/v1/sandboxes', $a1b);
is($st, 200, "the agent's other token still works");
($st) = $n->request(GET => '/v1/sandboxes', $g1);
is($st, 200, "another tenant's token with the same jti still works");

($st, $h, $b, $j) = $n->request(GET => '/v1/admin/revocations/jti/tok-1', $admin);
is($st, 200, 'read it back');
ok($j->{revoked} && abs($j->{expires_at} - $exp) <= 2, 'revoked until its exp');

($st, $h, $b, $j) = $n->request(DELETE => '/v1/admin/revocations/jti/tok-1', $admin);
is($st, 200, 'un-revoke: 200') or diag $b;
ok(!$j->{revoked}, 'no longer revoked');
($st) = $n->request(GET => '/v1/sandboxes', $a1);
is($st, 200, 'the token is accepted again');
($st, $h, $b, $j) = $n->request(DELETE => '/v1/admin/revocations/jti/tok-1', $admin);
problem('un-revoke again', 404);
($st, $h, $b, $j) = $n->request(GET => '/v1/admin/revocations/jti/tok-1', $admin);
problem('read a revocation that is not there', 404);

# an expired token's revocation is kept a minute, not refused
($st, $h, $b, $j) = $n->request(POST => '/v1/admin/revocations', $admin,
                                { kind => 'jti', value => 'old-1',
                                  expires_at => int(time()) - 100 });
is($st, 201, 'revoke an expired jti: 201');
ok($j->{expires_at} >= time + 55 && $j->{expires_at} <= time + 61,
   'kept a minute');

# ---- revoke an agent: its tokens issued until now
($st, $h, $b, $j) = $n->request(POST => '/v1/admin/revocations', $admin,
                                { kind => 'agent', value => 'agent-2' });
is($st, 201, 'revoke agent: 201') or diag $b;
is($j->{which}, 'existing', 'the tokens issued until now');
ok(abs($j->{issued_before} - time) <= 2, 'up to now');
is($h->{location}, '/v1/admin/revocations/agent/agent-2', 'Location');
($st) = $n->request(GET => '/v1/sandboxes', $a2);
is($st, 401, "the agent's token: 401");
my $a2new = $n->token(sub => 'agent-2', iat => int(time()) + 2);
($st) = $n->request(GET => '/v1/sandboxes', $a2new);
is($st, 200, 'a token issued later works');
($st, $h, $b, $j) = $n->request(GET => '/v1/admin/revocations/agent/agent-2', $admin);
is($st, 200, 'read the agent revocation');
is($j->{which}, 'existing', 'existing');

# every token, also later ones
($st, $h, $b, $j) = $n->request(POST => '/v1/admin/revocations', $admin,
                                { kind => 'agent', value => 'agent-2',
                                  which => 'all' });
is($st, 201, 'revoke every token of the agent');
is($r->get('veto:{acme}:revoked:agent:agent-2'), '*', 'stored as "*"');
($st) = $n->request(GET => '/v1/sandboxes', $a2new);
is($st, 401, 'the later token too: 401');
($st, $h, $b, $j) = $n->request(GET => '/v1/admin/revocations/agent/agent-2', $admin);
is($j->{which}, 'all', 'read back: all');

($st) = $n->request(DELETE => '/v1/admin/revocations/agent/agent-2', $admin);
is($st, 200, 'un-revoke the agent');
($st) = $n->request(GET => '/v1/sandboxes', $a2);
is($st, 200, "the agent's first token works again");

# an agent name with a slash, escaped in Location, found again from it
($st, $h, $b, $j) = $n->request(POST => '/v1/admin/revocations', $admin,
                                { kind => 'agent', value => 'ci/bot-7' });
is($st, 201, 'an agent with a slash');
is($h->{location}, '/v1/admin/revocations/agent/ci%2Fbot-7', 'escaped');
($st) = $n->request(DELETE => $h->{location}, $admin);
is($st, 200, 'taken back through its Location');
is($r->exists('veto:{acme}:revoked:agent:ci/bot-7'), 0, 'gone');

# ---- another tenant's admin: its own tenant only
($st, $h, $b, $j) = $n->request(POST => '/v1/admin/revocations', $gadmin,
                                { kind => 'jti', value => 'tok-1b',
                                  expires_at => time + 300 });
is($st, 201, "globex's admin revokes a jti (in globex)");
($st) = $n->request(GET => '/v1/sandboxes', $a1b);
is($st, 200, "acme's token with that jti is untouched");
($st) = $n->request(DELETE => '/v1/admin/revocations/jti/old-1', $gadmin);
is($st, 404, "globex's admin cannot take back acme's revocation");
is($r->exists('veto:{acme}:revoked:jti:old-1'), 1, 'still there');
($st) = $n->request(DELETE => '/v1/admin/revocations/jti/tok-1b', $gadmin);
is($st, 200, 'and takes back its own');

# ---- sandboxes: every one of the tenant, and ending another agent's
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $a1, {});
my $sb1 = $j->{id};
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $a2, {});
my $sb2 = $j->{id};
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $g1, {});
my $sbg = $j->{id};
ok($sb1 && $sb2 && $sbg, 'three sandboxes, two tenants') or diag $b;

($st, $h, $b, $j) = $n->request(GET => '/v1/admin/sandboxes', $admin);
is($st, 200, 'admin list') or diag $b;
my %ids = map { $_->{id} => $_->{agent} } @{ $j->{sandboxes} };
is_deeply(\%ids, { $sb1 => 'agent-1', $sb2 => 'agent-2' },
          "every sandbox of acme, whoever made it, and no other tenant's");
($st, $h, $b, $j) = $n->request(GET => '/v1/admin/sandboxes?agent=agent-2', $admin);
is_deeply([map { $_->{id} } @{ $j->{sandboxes} }], [$sb2], '?agent= narrows it');
($st, $h, $b, $j) = $n->request(GET => '/v1/admin/sandboxes?agent=a:b', $admin);
problem('?agent= that names no agent', 400, 'agent');
($st, $h, $b, $j) = $n->request(GET => '/v1/admin/sandboxes', $gadmin);
is_deeply([map { $_->{id} } @{ $j->{sandboxes} }], [$sbg],
          "globex's admin sees only globex's");

is($r->zcard('veto:{acme}:sbx:live:agent-2'), 1, "agent-2's slot is held");
($st, $h, $b, $j) = $n->request(DELETE => "/v1/admin/sandboxes/$sb2", $admin);
is($st, 200, "admin ends agent-2's sandbox") or diag $b;
is($j->{state}, 'terminated', 'terminated, confirmed');
ok($j->{confirmed}{processes} && $j->{confirmed}{files}, 'kill and deletion confirmed');
($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb2", $a2);
is($st, 200, 'its owner is told it ended') or diag $b;
is($j->{state}, 'ended', '... state ended');
is($j->{end_reason}, 'admin', '... by an administrator');
eventually("the owner's slot is free", 5,
           sub { $r->zcard('veto:{acme}:sbx:live:agent-2') == 0 });
($st, $h, $b, $j) = $n->request(DELETE => "/v1/admin/sandboxes/$sb2", $admin);
problem('end it again', 404);

($st, $h, $b, $j) = $n->request(DELETE => "/v1/admin/sandboxes/$sbg", $admin);
problem("acme's admin ends globex's sandbox", 404);
is($j->{detail}, 'no such sandbox', 'as unknown as one that never was');
($st) = $n->request(GET => "/v1/sandboxes/$sbg", $g1);
is($st, 200, "globex's sandbox lives on");
($st) = $n->request(DELETE => "/v1/admin/sandboxes/$sb1", $gadmin);
is($st, 404, "and globex's admin cannot end acme's");
($st) = $n->request(GET => "/v1/sandboxes/$sb1", $a1);
is($st, 200, "acme's sandbox lives on");

# ---- a revoked admin is refused like any token
($st) = $n->request(POST => '/v1/admin/revocations', $admin2,
                    { kind => 'jti', value => 'adm-1', expires_at => time + 300 });
is($st, 201, 'one admin revokes another');
($st, $h, $b, $j) = $n->request(GET => '/v1/admin/sandboxes', $admin);
is($st, 401, 'the revoked admin: 401');
($st) = $n->request(DELETE => '/v1/admin/revocations/jti/adm-1', $admin2);
is($st, 200, 'and back');

# ---- the audit stream has every admin action
my (%count, @recs, @adm);
eventually('the admin actions are on record', 5, sub {
    @recs = map { { @{ $_->[1] } } }
            @{ $r->xrange('veto:{acme}:audit', '-', '+') };
    @adm = grep { ($_->{action} // '') =~ /^admin\./
                     && ($_->{agent} // '') =~ /^admin-/ } @recs;
    %count = ();
    $count{"$_->{action} $_->{outcome}"}++ for @adm;
    ($count{'admin.revoke revoked'} // 0) >= 6
        && ($count{'admin.unrevoke unrevoked'} // 0) >= 4
        && ($count{'admin.revocation.get allowed'} // 0) >= 3;
});
is($count{'admin.revoke revoked'}, 6, 'every revocation on record');
is($count{'admin.unrevoke unrevoked'}, 4, 'every un-revoke on record');
is($count{'admin.revocation.get allowed'}, 3, 'every read on record');
is($count{'admin.sandbox.list allowed'}, 2, 'every list on record');
is($count{'admin.sandbox.delete sandbox_destroyed'}, 1, 'the end on record');
my ($end) = grep { $_->{outcome} eq 'sandbox_destroyed' } @adm;
is($end->{sandbox}, $sb2, 'the sandbox it ended');
is($end->{agent}, 'admin-1', 'the admin as the agent');
like($end->{detail} // '', qr/"owner":"agent-2"/, 'its owner in the detail');
my ($first) = grep { $_->{outcome} eq 'revoked' } @adm;
is($first->{reason}, 'leaked in a log', 'the reason given');
like($first->{detail} // '', qr/"value":"tok-1"/, 'what was revoked');
my $denied = grep { ($_->{action} // '') =~ /^admin\./
                    && $_->{outcome} eq 'denied'
                    && ($_->{reason} // '') eq 'insufficient_scope' } @recs;
is($denied, 5, 'every refused admin attempt on record');
my @g = map { { @{ $_->[1] } } } @{ $r->xrange('veto:{globex}:audit', '-', '+') };
is(scalar(grep { ($_->{action} // '') eq 'admin.revoke' } @g), 1,
   "globex's admin action is on globex's stream");

# an admin's record is bounded like any other: a reason the redaction
# makes longer (each "token=a" becomes "token=[redacted]") is cut to the
# field's 1 KiB, the entry within 20 KiB, the stream's byte count moves
my $bytes0 = $r->get('veto:{acme}:audit:bytes') // 0;
my $long = join(' ', ('token=a') x 128);
$long = substr($long, 0, 1024);
($st, $h, $b, $j) = $n->request(POST => '/v1/admin/revocations', $admin,
                                { kind => 'agent', value => 'agent-9',
                                  reason => $long });
is($st, 201, 'a revocation with a 1 KiB reason: 201') or diag $b;
# the record is written after the answer, and other records (a sandbox's
# end seen by the poller) may land after it: the newest revocation of it
my $big = eventually('the revocation of agent-9 on record', 5, sub {
    (grep { ($_->{action} // '') eq 'admin.revoke'
            && ($_->{detail} // '') =~ /"value":"agent-9"/ }
     map { { @{ $_->[1] } } }
     @{ $r->xrevrange('veto:{acme}:audit', '+', '-', 'COUNT', 20) })[0];
}) // {};
is($big->{action}, 'admin.revoke', 'the newest entry of that revocation');
is($big->{outcome}, 'revoked', 'its outcome');
like($big->{reason} // '', qr/^token=\[redacted\]/, 'its reason redacted');
unlike($big->{reason} // '', qr/token=a\b/, 'no value of a secret name');
ok(length($big->{reason} // '') <= 1024,
   'the reason cut to 1 KiB (' . length($big->{reason} // '') . ' bytes)');
my $entry = 0;
$entry += length($_) + length($big->{$_}) for keys %$big;
ok($entry <= 20 * 1024, "the entry within 20 KiB ($entry bytes)");
my $bytes1 = $r->get('veto:{acme}:audit:bytes') // 0;
ok($bytes1 > $bytes0, "the stream's byte count moved ($bytes0 -> $bytes1)");
$n->request(DELETE => '/v1/admin/revocations/agent/agent-9', $admin);

$n->request(DELETE => "/v1/sandboxes/$sb1", $a1);
$n->request(DELETE => "/v1/sandboxes/$sbg", $g1);

# ---- without Redis there is no revocation to manage (nor quotas:
# nginx -t refuses a policy with quotas and no veto_sandbox_redis)
my $m = VetoNginx->new;
$m->{helper_sock} = $n->helper->socket_path;
$m->start(policy => { version => 1, tenants => {
    acme => { ceilings => { memory_mb => 512, timeout_s => 30 } } } });
my $madmin = $m->token(sub => 'admin-1', scope => 'admin:revoke');
($st, $h, $b, $j) = $m->request(POST => '/v1/admin/revocations', $madmin,
                                { kind => 'agent', value => 'agent-2' });
is($st, 404, 'no veto_sandbox_redis: revocations 404');
like($j->{detail} // '', qr/veto_sandbox_redis/, 'says why');
($st) = $m->request(GET => '/v1/admin/sandboxes', $madmin);
is($st, 200, 'the sandboxes need only the helper');
$m->stop;

done_testing;
