#!/usr/bin/perl
# Network egress end to end through the HTTP API: real nginx with the
# module, real Redis, the real helper running the egress proxy in the
# test's world namespace (t/lib/VetoEgress.pm: the only hosts reachable
# are the test hosts in a namespace of this test).
#
#   policy: network.allow (the ceiling), network.ask (a human decides),
#           network.default; nginx -t names a bad entry
#   create with an allowlist over HTTP: curl, python and node reach an
#           allowed host over explicit HTTP, CONNECT and transparently;
#           a host outside it is refused with the clear message, in the
#           exec's network field and in the exec's audit record;
#           "*.example.test" matches a.example.test, not
#           evil-example.test or example.test.evil
#   askable: 202, a reviewer approves, the repeat creates the sandbox,
#           the host works there and only there; the summary lists the
#           hosts and is marked irreversible (network egress), and many
#           hosts are cut to its byte bound with their count
#   PATCH:  an allowed host at once, an askable one after approval (its
#           summary names the sandbox and shows its env, which the
#           approval binds; an unknown sandbox gets no approval), a
#           forbidden one 422, ttl_s refused by name, scope checked
#   records: an exec's attempts in its audit record within the entry's
#           byte bound, the rest counted, a large request and all
#   the proxy stuck: 503 with Retry-After saying egress is restarting;
#   /v1/health reports egress.
use strict;
use warnings;

use Test::More;
use JSON::PP ();
use Time::HiRes qw(sleep time);
use lib 't/lib';
use VetoEgress;
use VetoNginx;
use Eventually qw(eventually);

VetoNginx::need(qw(helper redis));

my $e = VetoEgress->start(helper => 1);
my $n = VetoNginx->new;

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 60, ttl_s => 3600 },
            approvals => {},
            network => {
                allow => ['registry.example.test', '*.example.test',
                          'target.example.test:7000'],
                ask => ['askme.test'],
            },
            agents => {
                'agent-def' => { network => {
                    default => ['registry.example.test'] } },
                'agent-narrow' => { network => {
                    allow => ['registry.example.test'] } },
            },
        },
        globex => {
            ceilings => { memory_mb => 512, timeout_s => 60 },
        },
        # many askable hosts: what a reviewer's summary can hold of them
        initech => {
            ceilings => { memory_mb => 512, timeout_s => 60 },
            network => { ask => ['*.askable.test'] },
        },
    },
};

# ---- nginx -t: bad network sections are named ------------------------------
my @bad = (
    [ { allow => ['registry.example.test', 'bad host.test'] },
      qr/tenants\.acme: network\.allow\[1\]: allow entry "bad host\.test": invalid character/ ],
    [ { allow => ['*.test'] }, qr/network\.allow\[0\].*at least two labels/ ],
    [ { allow => ['a.test'], default => ['b.test'] },
      qr/network\.default\[0\] "b\.test" is outside network\.allow/ ],
    [ { allow => ['a.test:99999'] }, qr/network\.allow\[0\].*invalid port/ ],
    [ { allow => ['a.test'], colour => 1 },
      qr/network: unknown field "colour"/ ],
);
$n->start_redis;
for my $b (@bad) {
    my $p = JSON::PP->new->decode(JSON::PP->new->encode($policy));
    $p->{tenants}{acme}{network} = $b->[0];
    $n->write_policy($p);
    $n->render(redis => 1);
    my ($ok, $out) = $n->test_config;
    ok(!$ok, 'nginx -t refuses network ' . JSON::PP->new->canonical->encode($b->[0]));
    like($out, $b->[1], '... naming the entry') or diag $out;
}
{
    my $p = JSON::PP->new->decode(JSON::PP->new->encode($policy));
    $p->{tenants}{acme}{agents}{'agent-narrow'}{network}{allow} = ['other.test'];
    $n->write_policy($p);
    my ($ok, $out) = $n->test_config;
    ok(!$ok, 'nginx -t refuses an agent allowlist beyond its tenant\'s');
    like($out, qr/tenants\.acme\.agents\.agent-narrow: network\.allow\[0\] "other\.test" is outside the tenant's network\.allow/,
         '... naming the agent and the entry') or diag $out;
}
$n->write_policy($policy);
$n->render;
{
    my ($ok, $out) = $n->test_config;
    ok(!$ok, 'nginx -t: askable hosts without veto_sandbox_redis fail');
    like($out, qr/askable hosts \(network\.ask\), which need "veto_sandbox_redis"/,
         '... saying why');
}

# ---- the stack -------------------------------------------------------------
$n->start_helper($e->helper_conf, max_sandboxes => 8);
$n->render(redis => 1);
my ($ok, $out) = $n->test_config;
ok($ok, 'nginx -t accepts the policy') or diag $out;
$n->start(redis => 1, keep_conf => 1, policy => $policy);

my $agent = $n->token(sub => 'agent-1', scope =>
    'sandbox:create sandbox:exec sandbox:files sandbox:network');
my $noscope = $n->token(sub => 'agent-1', scope =>
    'sandbox:create sandbox:exec sandbox:files');
my $defagent = $n->token(sub => 'agent-def');
my $narrow = $n->token(sub => 'agent-narrow');
my $globex = $n->token(sub => 'agent-9', tenant => 'globex', scope =>
    'sandbox:create sandbox:exec sandbox:network');
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review');
my $auditor = $n->token(sub => 'auditor-1', scope => 'audit:read');
my $initech = $n->token(sub => 'agent-7', tenant => 'initech', scope =>
    'sandbox:create sandbox:exec sandbox:network');
my $irev = $n->token(sub => 'human-7', tenant => 'initech',
                     scope => 'approvals:review');

my ($st, $h, $b, $j);

sub health
{
    my $hj;
    eventually('Redis is up and egress available', 20, sub {
        (undef, undef, undef, $hj) = $n->request(GET => '/v1/health');
        $hj && $hj->{egress}{available} && ($hj->{redis} // '') eq 'up';
    });
    return $hj;
}

$j = health();
is_deeply($j->{egress}, { available => JSON::PP::true, state => 'up' },
          'health: egress available, the proxy up') or diag explain $j;

sub create
{
    my ($tok, $body, $hdr) = @_;
    return $n->request(POST => '/v1/sandboxes', $tok, $body, $hdr);
}

sub run
{
    my ($sb, $argv, %o) = @_;
    my ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec",
        $o{token} // $agent, { argv => $argv, timeout_s => 40,
                               ($o{env} ? (env => $o{env}) : ()) });
    is($st, 200, "exec $argv->[0] in $sb") or diag $b;
    return ($j, $j->{stdout} // '');
}

sub sh { my ($sb, $cmd) = @_; return run($sb, ['sh', '-c', $cmd]) }

sub put_ca
{
    my ($sb) = @_;
    my ($st) = $n->request(PUT => "/v1/sandboxes/$sb/files?path=ca.pem",
                           $agent, $e->slurp($e->{ca}));
    is($st, 200, "the test CA into $sb");
}

# ---- create: what the request may ask -------------------------------------
($st, $h, $b, $j) = create($agent, { network => { allow => ['evil.test'] } });
is($st, 422, 'create: a host outside the allowlist and not askable: 422');
is($j->{type}, 'urn:veto-sandbox:problem:network_not_allowed', '... network_not_allowed');
is($j->{entry}, 'evil.test', '... naming the entry');
is($j->{field}, 'network.allow[0]', '... and where it is');
like($j->{detail}, qr/"evil\.test" is not in the policy's network allowlist/, '... saying why');

for my $c ([ { allow => ['bad host'] }, 400, 'bad_value', 'network.allow[0]' ],
           [ { allow => 'registry.example.test' }, 400, 'bad_type', 'network.allow' ],
           [ { allow => [7] }, 400, 'bad_type', 'network.allow' ],
           [ { allow => ['registry.example.test'], ask => ['askme.test'] },
             400, 'unknown_field', 'network.ask' ],
           [ { add => ['x'] }, 400, 'unknown_field', 'network.add' ],
           [ {}, 400, 'missing_field', 'network.allow' ],
           [ 'all', 400, 'bad_value', 'network' ],
           [ 5, 400, 'bad_type', 'network' ],
           [ { allow => [ map { "h$_.example.test" } 1 .. 257 ] }, 422,
             'over_ceiling', 'network.allow' ]) {
    ($st, $h, $b, $j) = create($agent, { network => $c->[0] });
    my $what = substr(JSON::PP->new->canonical->encode($c->[0]), 0, 50);
    is($st, $c->[1], "create network $what: $c->[1]");
    is($j->{type}, "urn:veto-sandbox:problem:$c->[2]", "... $c->[2]") or diag $b;
    is($j->{field}, $c->[3], "... field $c->[3]");
}

# an agent's narrower ceiling
($st, $h, $b, $j) = create($narrow, { network => { allow => ['a.example.test'] } });
is($st, 422, 'an agent with a narrower allowlist: its own ceiling applies');

# another tenant has no network section: nothing but "none"
($st, $h, $b, $j) = create($globex, { network => { allow => ['registry.example.test'] } });
is($st, 422, 'a tenant without a network section: every host refused');
($st, $h, $b, $j) = create($globex, { network => 'none' });
is($st, 201, '... "none" works') or diag $b;
my $gsb = $j->{id};

# the policy's default
($st, $h, $b, $j) = create($defagent, {});
is($st, 201, 'create without network, the agent\'s policy default') or diag $b;
is_deeply($j->{network}, { allow => ['registry.example.test'], ask => ['askme.test'] },
          '... gets the default allowlist (and the askable hosts)');
my $dsb = $j->{id};
($st, $h, $b, $j) = create($agent, {});
is($j->{network}, 'none', 'an agent without a default gets "none"');
my $nsb = $j->{id};

# ---- an allowlist sandbox over HTTP ----------------------------------------
my $allow = ['registry.example.test', '*.example.test', 'target.example.test:7000'];
($st, $h, $b, $j) = create($agent, { network => { allow => $allow } });
is($st, 201, 'create with an allowlist within the policy: 201') or diag $b;
my $sb1 = $j->{id};
is_deeply($j->{network}{allow}, $allow, 'the sandbox\'s network is the allowlist');
is_deeply($j->{network}{ask}, ['askme.test'], '... with the policy\'s askable hosts');
put_ca($sb1);

# curl: explicit HTTP, CONNECT, transparent TLS and HTTP
my ($x, $o) = sh($sb1, $VetoEgress::CURL_CLIENTS);
like($o, qr{registry-ok http registry.example.test /pkg}, 'curl: explicit HTTP');
like($o, qr{registry-ok https registry.example.test /tls}, 'curl: CONNECT');
like($o, qr{registry-ok https registry.example.test /tr}, 'curl: transparent TLS');
like($o, qr{registry-ok http registry.example.test /trh}, 'curl: transparent HTTP');
my %kinds = map { $_->{kind} => 1 } @{ $x->{network}{attempts} };
is_deeply(\%kinds, { http => 1, connect => 1, tls => 1 },
          'the exec result\'s network field lists the attempts');
ok($x->{network}{complete}, '... complete');

# python: explicit, CONNECT, transparent, a refusal
($x, $o) = run($sb1, ['python3', '-c', $VetoEgress::PYTHON_CLIENT]);
like($o, qr{registry-ok http registry.example.test /py$}m, 'python: explicit HTTP');
like($o, qr{registry-ok https registry.example.test /pys}, 'python: CONNECT');
like($o, qr{registry-ok https registry.example.test /pyt}, 'python: transparent');
like($o, qr/^403 blocked by Veto Sandbox egress policy: notallowed.test:80 is not allowed$/m,
     'python: a host outside the allowlist gets the clear message');
my ($ref) = grep { $_->{decision} eq 'refused' } @{ $x->{network}{attempts} };
is($ref->{host}, 'notallowed.test', 'the refusal is in the exec\'s network field');
is($ref->{reason}, 'host not allowed', '... with its reason');
my $refused_exec_done = time;

# node: explicit, CONNECT, transparent (fetch)
($x, $o) = run($sb1, ['node', '-e', $VetoEgress::NODE_CLIENT],
    env => { NODE_EXTRA_CA_CERTS => '/workspace/ca.pem' });
like($o, qr{registry-ok http registry.example.test /node$}m, 'node: explicit HTTP');
like($o, qr{registry-ok https registry.example.test /nodetls}, 'node: CONNECT');
like($o, qr{registry-ok https registry.example.test /nodefetch}, 'node: transparent (fetch)');
like($o, qr/refused: ENOTFOUND/, 'node: a host outside the allowlist does not resolve');
my ($dns) = grep { $_->{kind} eq 'dns' } @{ $x->{network}{attempts} };
is($dns->{host}, 'notallowed.test', '... and the refused question is in the network field');

# the wildcard: strictly below its suffix
($x, $o) = sh($sb1, 'for h in a.example.test b.a.example.test evil-example.test '
    . 'example.test.evil example.test; do curl -sS http://$h/w; echo; done');
like($o, qr{registry-ok http a.example.test /w}, '*.example.test matches a.example.test');
like($o, qr{registry-ok http b.a.example.test /w}, '... and b.a.example.test');
like($o, qr/evil-example.test:80 is not allowed/, '... not evil-example.test');
like($o, qr/example.test.evil:80 is not allowed/, '... not example.test.evil');
like($o, qr/policy: example.test:80 is not allowed/, '... not example.test itself');
my %refused = map { $_->{host} => 1 }
              grep { $_->{decision} eq 'refused' } @{ $x->{network}{attempts} };
ok($refused{'evil-example.test'} && $refused{'example.test.evil'},
   'both refusals in the exec\'s network field');

# the exec's audit record carries its attempts (detail is an object)
my $rec;
eventually('the exec_finished record naming notallowed.test', 5, sub {
    ($st, $h, $b, $j) = $n->request(GET => "/v1/audit?sandbox=$sb1&limit=100", $auditor);
    ($rec) = grep {
        my $t = JSON::PP->new->canonical->encode($_->{detail} // {});
        ($_->{outcome} // '') eq 'exec_finished'
        && $t =~ /notallowed\.test/ && $t =~ /python/
    } @{ $j->{records} // [] };
    $rec;
});
ok($rec, 'the exec\'s audit record is there') or diag $b;
my $d = $rec ? $rec->{detail} : {};
my ($aref) = grep { $_->{host} eq 'notallowed.test' } @{ $d->{network}{attempts} // [] };
is($aref->{decision}, 'refused', 'the audit record lists the refused attempt');
ok(defined $d->{network}{dropped}, '... with a dropped count');
ok(length(JSON::PP->new->encode($d->{network}{attempts})) <= 4096,
   '... within its byte bound');

# a "none" sandbox's exec says so
($x, $o) = sh($nsb, 'curl -sS http://registry.example.test/ 2>&1; true');
is($x->{network}, 'none', 'a "none" sandbox: network "none" in the result');
like($o, qr/Could not resolve host/, '... and its lookups fail at once');

# ---- askable: 202, approve, the repeat creates; that sandbox only ----------
my $askbody = { network => { allow => ['registry.example.test', 'askme.test'] } };
($st, $h, $b, $j) = create($agent, $askbody);
is($st, 202, 'create asking an askable host: 202') or diag $b;
my $apr = $j->{approval_id};
like($apr // '', qr/^apr_[0-9a-f]{32}$/, '... with an approval');
is($j->{action}, 'sandbox.create', '... for the create');
is_deeply($j->{summary}{network}, { mode => 'allowlist',
                                    hosts => ['registry.example.test', 'askme.test'],
                                    needs_approval => ['askme.test'] },
          'the summary lists the hosts and those needing approval');
ok(JSON::PP::is_bool($j->{summary}{irreversible}) && $j->{summary}{irreversible},
   'the summary marks egress irreversible') or diag $b;
like($j->{summary}{irreversible_reason} // '',
     qr/^network egress: what the sandbox sends out cannot be recalled$/,
     '... with the reason a reviewer reads');

($st, $h, $b, $j) = create($agent, $askbody, { 'Veto-Approval' => $apr });
is($st, 403, 'the repeat before a decision: 403');

($st, $h, $b, $j) = $n->request(GET => "/v1/approvals/$apr", $rev);
is_deeply($j->{summary}{network}{needs_approval}, ['askme.test'],
          'the reviewer reads the hosts');
is_deeply($j->{summary}{network}{hosts}, ['registry.example.test', 'askme.test'],
          '... all of them');
ok($j->{summary}{irreversible} && $j->{summary}{irreversible_reason},
   '... marked irreversible in the record');
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$apr/approve", $rev,
                                { reason => 'the registry mirror' });
is($st, 200, 'a reviewer approves') or diag $b;

($st, $h, $b, $j) = create($agent, $askbody, { 'Veto-Approval' => $apr });
is($st, 201, 'the repeat with the approval creates the sandbox') or diag $b;
my $sb2 = $j->{id};
is_deeply($j->{network}{allow}, ['registry.example.test', 'askme.test'],
          '... with the approved host');

($x, $o) = sh($sb2, 'curl -sS http://askme.test/granted');
like($o, qr{registry-ok http askme.test /granted}, 'the approved host works in that sandbox');
($x, $o) = sh($sb1, 'curl -sS http://askme.test/other');
like($o, qr/askme.test:80 is not allowed/, 'another sandbox of the same agent is still refused');
like($o, qr/askable: .*network allow "askme.test:80"/, '... and told it may ask');

($st, $h, $b, $j) = create($agent, $askbody, { 'Veto-Approval' => $apr });
is($st, 403, 'the approval is used once');

# ---- PATCH: add hosts to a live sandbox ------------------------------------
($st, $h, $b, $j) = create($agent, { network => { allow => ['registry.example.test'] },
                                env => { GIT_DIR => '/workspace/.g', LANG => 'C.UTF-8' } });
is($st, 201, 'a sandbox with one host (and an env)') or diag $b;
my $sb3 = $j->{id};
($x, $o) = sh($sb3, 'curl -sS http://a.example.test/before');
like($o, qr/a.example.test:80 is not allowed/, 'before PATCH: a.example.test refused');

($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sb3", $agent,
                                { network => { add => ['a.example.test'] } });
is($st, 200, 'PATCH adding an allowed host: 200 at once') or diag $b;
is_deeply($j->{added}, ['a.example.test'], '... says what it added');
is_deeply($j->{network}{allow}, ['registry.example.test', 'a.example.test'],
          '... and the allowlist now');
($x, $o) = sh($sb3, 'curl -sS http://a.example.test/after');
like($o, qr{registry-ok http a.example.test /after}, 'after PATCH: it works');

my $patch = { network => { add => ['askme.test'] } };
($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sb3", $agent, $patch);
is($st, 202, 'PATCH adding an askable host: 202') or diag $b;
$apr = $j->{approval_id};
is($j->{action}, 'sandbox.update', '... for sandbox.update');
is_deeply($j->{summary}{network}{needs_approval}, ['askme.test'], '... naming the host');
is_deeply($j->{summary}{network}{hosts}, ['askme.test'], '... listing the hosts added');
is($j->{summary}{sandbox}, $sb3, '... naming the sandbox');
ok($j->{summary}{irreversible}, '... marked irreversible');
like($j->{summary}{irreversible_reason} // '', qr/^network egress: /, '... network egress');
is_deeply($j->{summary}{env}, { GIT_DIR => '/workspace/.g', LANG => 'C.UTF-8' },
          '... the sandbox\'s env, every value')
    or diag explain $j->{summary};
is_deeply($j->{summary}{env_flagged}, ['GIT_DIR'], '... GIT_DIR flagged, LANG inert');
is_deeply([sort @{ $j->{summary}{env_names} // [] }], ['GIT_DIR', 'LANG'], '... its names');
($x, $o) = sh($sb3, 'curl -sS http://askme.test/pending');
like($o, qr/askme.test:80 is not allowed/, 'nothing applied while pending');
($st) = $n->request(POST => "/v1/approvals/$apr/approve", $rev, {});
is($st, 200, 'a reviewer approves');
($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sb3", $agent, $patch,
                                { 'Veto-Approval' => $apr });
is($st, 200, 'the PATCH repeated with the approval: 200') or diag $b;
($x, $o) = sh($sb3, 'curl -sS http://askme.test/patched');
like($o, qr{registry-ok http askme.test /patched}, 'the approved host works');
($st) = $n->request(PATCH => "/v1/sandboxes/$sb1", $agent, $patch,
                    { 'Veto-Approval' => $apr });
is($st, 403, 'the approval does not carry over to another sandbox');

# an askable PATCH binds its sandbox's record: none, no approval made
my $ghost = 'sb-' . ('0' x 24);
for my $c ([ $ghost, 'an unknown sandbox' ], [ $gsb, 'another tenant\'s sandbox' ]) {
    ($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$c->[0]", $agent, $patch);
    is($st, 409, "askable PATCH of $c->[1]: 409") or diag $b;
    is($j->{type}, 'urn:veto-sandbox:problem:sandbox_env_unknown', '... sandbox_env_unknown');
    ok(!$j->{approval_id} && !$h->{location}, '... and no approval is made');
}
($st) = $n->request(PATCH => "/v1/sandboxes/$ghost", $agent,
                    { network => { add => ['a.example.test'] } });
is($st, 404, 'an allowed host needs no human: the helper\'s 404 for an unknown sandbox');

($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sb3", $agent,
                                { network => { add => ['evil.test'] } });
is($st, 422, 'PATCH adding a forbidden host: 422');
is($j->{entry}, 'evil.test', '... naming it');
($x, $o) = sh($sb3, 'curl -sS http://evil.test/x');
like($o, qr/evil.test:80 is not allowed/, '... and nothing was added');

for my $c ([ { network => { add => ['x.example.test'] }, ttl_s => 600 },
             400, 'bad_value', 'network', qr/separate PATCH requests/ ],
           [ { network => { add => ['x.example.test'] }, color => 1 }, 400,
             'unknown_field', 'color', qr/unknown field "color" \(known: .*network/ ],
           [ {}, 400, 'missing_field', 'network', qr/nothing to change/ ],
           [ { network => { remove => ['x'] } }, 400, 'unknown_field',
             'network.remove', qr/nothing is removed/ ],
           [ { network => { add => [] } }, 400, 'bad_value', 'network.add',
             qr/nothing to add/ ],
           [ { network => { add => ['a..b'] } }, 400, 'bad_value',
             'network.add[0]', qr/empty label/ ]) {
    ($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sb3", $agent, $c->[0]);
    is($st, $c->[1], 'PATCH ' . JSON::PP->new->canonical->encode($c->[0]) . ": $c->[1]");
    is($j->{type}, "urn:veto-sandbox:problem:$c->[2]", "... $c->[2]") or diag $b;
    is($j->{field}, $c->[3], "... field $c->[3]");
    like($j->{detail} // '', $c->[4], '... saying what to do');
}
($st, $h) = $n->request(PATCH => "/v1/sandboxes/$sb3", $noscope,
                        { network => { add => ['a.example.test'] } });
is($st, 403, 'PATCH without sandbox:network: 403');
like($h->{'www-authenticate'} // '', qr/scope="sandbox:network"/, '... naming the scope');
($st) = $n->request(PATCH => "/v1/sandboxes/$sb3", $globex,
                    { network => { add => ['registry.example.test'] } });
is($st, 422, 'another tenant\'s policy applies first');
($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$gsb", $agent,
                    { network => { add => ['registry.example.test'] } });
is($st, 404, 'another tenant\'s sandbox: 404');
($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$nsb", $agent,
                    { network => { add => ['registry.example.test'] } });
is($st, 400, 'PATCH on a "none" sandbox: 400');
like($j->{detail} // '', qr/"none"/, '... saying why') or diag $b;

# the record of a PATCH
($st, $h, $b, $j) = $n->request(GET => "/v1/audit?sandbox=$sb3&limit=100", $auditor);
my @upd = grep { ($_->{outcome} // '') eq 'network_updated' } @{ $j->{records} // [] };
is(scalar @upd, 2, 'two network_updated records') or diag $b;
ok((grep { ($_->{approval} // '') eq $apr } @upd), '... one with its approval');

# ---- many hosts: a reviewer sees every one, within the summary's bound
{
    my @many = map { sprintf('h%03d-%s.askable.test', $_, 'q' x 16) } 0 .. 199;
    ($st, $h, $b, $j) = create($initech, { network => { allow => \@many } });
    is($st, 202, '200 askable hosts: 202') or diag $b;
    my $id = $j->{approval_id};
    ($st, $h, $b, $j) = $n->request(GET => "/v1/approvals/$id", $irev);
    is($st, 200, 'the reviewer reads it') or diag $b;
    my $net = $j->{summary}{network} // {};
    my $text = JSON::PP->new->canonical->encode($j->{summary});
    ok(length($text) <= 32768, 'the summary stays within 32 KiB (' . length($text) . ')');
    ok(!$net->{needs_approval_truncated} && !$net->{hosts_truncated}, 'nothing cut')
        or diag explain $net;
    is_deeply($net->{needs_approval}, \@many, 'every host a human grants, in order');
    is_deeply($net->{hosts}, \@many, '... and every host granted');
    ok($j->{summary}{irreversible}, '... and marked irreversible');
}

# ---- an exec's attempts in its audit record: within the entry's bound ------
{
    my $pad = 'p' x 1000;
    my $script = join("\n", 'import urllib.request',
        'for i in range(80):',
        '    try: urllib.request.urlopen("http://n%d.notallowed.test/" % i)',
        '    except Exception: pass', 'print("done")');
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb1/exec", $agent, {
        argv => ['python3', '-c', $script, ($pad) x 4],
        env => { map { ("GIT_PAD$_" => $pad) } 1 .. 3 },
        stdin => ('s' x 8192), timeout_s => 40 });
    is($st, 200, 'an exec with a large request making 80 refused attempts') or diag $b;
    is($j->{stdout}, "done\n", '... ran');
    my $n_att = scalar @{ $j->{network}{attempts} // [] };
    ok($n_att + ($j->{network}{dropped} // 0) >= 80, "... its result counts them ($n_att kept)");
    my $big;
    eventually('the audit record', 5, sub {
        my ($s2, $h2, $b2, $j2) = $n->request(GET => "/v1/audit?sandbox=$sb1&limit=20", $auditor);
        ($big) = grep { ($_->{outcome} // '') eq 'exec_finished'
                        && ($_->{detail}{request}{stdin_bytes} // 0) == 8192 }
                 @{ $j2->{records} // [] };
        $big;
    });
    ok($big, 'its audit record is there, the request kept (stdin_bytes)') or diag $b;
    my $d = $big ? $big->{detail} : {};
    ok(!$d->{dropped}, '... the detail whole, not replaced by a note');
    ok(ref $d->{network}{attempts} eq 'ARRAY' && @{ $d->{network}{attempts} },
       '... with attempts') or diag explain $d->{network};
    ok(length(JSON::PP->new->encode($d->{network}{attempts} // [])) <= 4096,
       '... within 4 KiB');
    is(scalar(@{ $d->{network}{attempts} // [] }) + ($d->{network}{dropped} // 0),
       $n_att + ($j->{network}{dropped} // 0), '... the rest counted as dropped');
    my $entry = 0;
    for my $k (grep { $_ ne 'id' } keys %{ $big // {} }) {
        my $v = $big->{$k};
        $entry += length($k) + length(ref $v ? JSON::PP->new->encode($v) : $v);
    }
    ok($entry <= 20 * 1024, "the entry is within 20 KiB ($entry bytes)");
}

# ---- the proxy stuck: 503, Retry-After, egress restarting ------------------
my ($ppid) = $n->helper->log_text =~ /.*started the egress proxy .* \(pid (\d+)\)/s;
ok($ppid && kill('STOP', $ppid), "the egress proxy ($ppid) stopped (SIGSTOP)");
($st, $h, $b, $j) = create($agent, { network => { allow => ['registry.example.test'] } });
is($st, 503, 'create while the proxy does not answer: 503') or diag $b;
is($j->{type}, 'urn:veto-sandbox:problem:unavailable', '... unavailable');
like($j->{detail} // '', qr/egress is restarting/, '... egress is restarting');
ok($h->{'retry-after'}, '... with Retry-After');
kill 'CONT', $ppid;
$j = health();
ok($j->{egress}{available}, 'egress is back (the helper replaced the proxy)') or diag explain $j;
($st, $h, $b, $j) = create($agent, { network => { allow => ['registry.example.test'] } });
is($st, 201, 'and allowlist creates work again') or diag $b;
my $sb4 = $j->{id};
($x, $o) = sh($sb1, 'curl -sS http://registry.example.test/again');
like($o, qr{registry-ok http registry.example.test /again}, 'the first sandbox works again');

# ---- the end ---------------------------------------------------------------
for my $sb ($sb1, $sb2, $sb3, $sb4, $dsb, $nsb) {
    my $tok = $sb eq $dsb ? $defagent : $agent;
    ($st, $h, $b) = $n->request(DELETE => "/v1/sandboxes/$sb", $tok);
    is($st, 200, "delete $sb") or diag $b;
}
($st) = $n->request(DELETE => "/v1/sandboxes/$gsb", $globex);
is($st, 200, "delete $gsb");
is($e->trapped, 0, 'no packet reached an address that is not a test host');
$n->stop;
is($n->helper->stop, 0, 'helper exits 0') or diag $n->helper->log_text;
unlike($n->helper->log_text, qr/ERROR: AddressSanitizer|runtime error:|LeakSanitizer/,
       'no sanitizer report from the helper or the proxy');
$e->finish_hosts;
done_testing;
