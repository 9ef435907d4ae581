#!/usr/bin/perl
# Credentials through the HTTP API: real nginx with the module, Redis,
# the helper with the egress proxy and the operator's credentials.
#
#   policy: "credentials": {"allow": [...], "ask": [...]} per tenant and
#           agent; nginx -t names a bad name, an unknown field, an
#           agent's name beyond its tenant's
#   create: "credentials": ["git-deploy"] attaches it: the sandbox's view
#           names it, its host and variable (never a value); the
#           workload's request to the bound host carries the real header
#           (the test server checks the token); the placeholder sent
#           elsewhere is refused and the exec's network names the
#           credential; the create's audit record names it
#   refused: a name the policy does not list is 403 credential_not_allowed;
#           no field lets an agent bind a secret to a host of its choosing
#           (every attempt is 400); one the proxy refused at load or the
#           helper has no binding for is 422 credential_unavailable
#   ask:    a credential under "ask" is 202: the summary names the secret
#           and the host the operator binds it to (the helper's bindings:
#           host, header, variable, path; never a value); approved, the
#           repeat attaches it
#   PATCH:  {"credentials": {"add": [...]}} attaches to a live sandbox
#           (scope sandbox:network; askable ones need approval);
#           {"credentials": {"remove": [...]}} detaches (no human): the
#           next exec lacks the variable, the host leaves the allowlist,
#           the placeholder is refused wherever it is sent (plain HTTP, an
#           intercepted connection) and recorded; the detach is audited
#   the value is in no response, approval, audit entry, Redis key or log
#   of the gateway; the metrics count injections and refused placeholders
use strict;
use warnings;

use Test::More;
use JSON::PP ();
use Time::HiRes qw(sleep time);
use lib 't/lib';
use VetoEgress;
use VetoNginx;

VetoNginx::need(qw(helper redis));

my $TOKEN = 'tok-' . join('', map { sprintf '%02x', int(rand(256)) } 1 .. 16);
my $e = VetoEgress->start(helper => 1, token => $TOKEN);
my $dir = $e->{dir};
my $n = VetoNginx->new;

# the operator's credentials: hosts, headers and values are set here only
$e->write_credentials([
    'git-deploy host=a.example.test path=/private/ template="Bearer {{secret}}" env=GIT_TOKEN',
    'api-token host=b.a.example.test template="Bearer {{secret}}" env=API_TOKEN',
    'other-token host=a.example.test template="Bearer {{secret}}" env=OTHER_TOKEN',
    'crlf-token host=b.a.example.test template="Bearer {{secret}}" env=CRLF_TOKEN'],
    (map { $_ => "$TOKEN\n" } qw(git-deploy api-token other-token)),
    'crlf-token' => "x\r\nInjected: $TOKEN\n");

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 60, ttl_s => 3600 },
            network => { allow => ['registry.example.test'] },
            credentials => { allow => ['git-deploy', 'crlf-token', 'unbound'],
                             ask => ['api-token'] },
            agents => {
                'agent-narrow' => { credentials => { allow => [], ask => [] } },
            },
        },
        globex => { ceilings => { memory_mb => 512, timeout_s => 60 } },
    },
};

sub copy { JSON::PP->new->decode(JSON::PP->new->encode($_[0])) }

# ---- nginx -t: bad credentials sections are named --------------------------
$n->start_redis;
for my $b ([ sub { $_[0]{tenants}{acme}{credentials}{allow} = ['Git Deploy'] },
             qr/tenants\.acme: credentials\.allow\[0\]: a credential name is 1 \.\. 64 bytes of \[a-z0-9\._-\]/ ],
           [ sub { $_[0]{tenants}{acme}{credentials}{hosts} = ['evil.test'] },
             qr/tenants\.acme: credentials: unknown field "hosts" \(known: allow, ask, agent_hosts\)/ ],
           [ sub { $_[0]{tenants}{acme}{credentials}{allow} = 'git-deploy' },
             qr/credentials\.allow must be an array of credential names/ ],
           [ sub { $_[0]{tenants}{acme}{agents}{'agent-narrow'}{credentials}{allow} = ['other-token'] },
             qr/tenants\.acme\.agents\.agent-narrow: credentials\.allow\[0\] "other-token" is outside the tenant's credentials\.allow/ ],
           [ sub { $_[0]{tenants}{acme}{agents}{'agent-narrow'}{credentials}{ask} = ['other-token'] },
             qr/credentials\.ask\[0\] "other-token" is outside the tenant's credentials\.allow and credentials\.ask/ ]) {
    my $p = copy($policy);
    $b->[0]->($p);
    $n->write_policy($p);
    $n->render(redis => 1);
    my ($ok, $out) = $n->test_config;
    ok(!$ok, 'nginx -t refuses a bad credentials section');
    like($out, $b->[1], '... naming it') or diag $out;
}
{
    $n->write_policy($policy);
    $n->render;
    my ($ok, $out) = $n->test_config;
    ok(!$ok, 'nginx -t: askable credentials without veto_sandbox_redis fail');
    like($out, qr/askable credentials \(credentials\.ask\) or askable hosts \(network\.ask\), which need "veto_sandbox_redis"/,
         '... saying why') or diag $out;
}

# ---- the stack -------------------------------------------------------------
$n->start_helper($e->helper_conf, max_sandboxes => 8,
                 egress_credentials => "$dir/creds",
                 egress_upstream_ca => $e->{ca});
$n->render(redis => 1, server_extra => <<'EOF');
        location = /metrics {
            veto_sandbox_metrics;
            allow 127.0.0.1;
            deny all;
        }
EOF
my ($ok, $out) = $n->test_config;
ok($ok, 'nginx -t accepts the policy') or diag $out;
$n->start(redis => 1, keep_conf => 1, policy => $policy);

my $agent = $n->token(sub => 'agent-1', scope =>
    'sandbox:create sandbox:exec sandbox:files sandbox:network');
my $noscope = $n->token(sub => 'agent-1', scope =>
    'sandbox:create sandbox:exec sandbox:files');
my $narrow = $n->token(sub => 'agent-narrow', scope =>
    'sandbox:create sandbox:exec sandbox:network');
my $globex = $n->token(sub => 'agent-9', tenant => 'globex', scope =>
    'sandbox:create sandbox:exec sandbox:network');
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review');
my $auditor = $n->token(sub => 'auditor-1', scope => 'audit:read');

my $seen = '';     # every response body, searched for the value at the end

sub req
{
    my @r = $n->request(@_);
    $seen .= ($r[2] // '') . "\n";
    return @r;
}

{
    my $t = time + 20;
    my $hj;
    while (time < $t) {
        (undef, undef, undef, $hj) = req(GET => '/v1/health');
        last if $hj && $hj->{egress}{available} && ($hj->{redis} // '') eq 'up';
        sleep 0.1;
    }
    ok($hj && $hj->{egress}{available}, 'health: egress available') or diag explain $hj;
}

sub create { my ($tok, $body, $hdr) = @_; return req(POST => '/v1/sandboxes', $tok, $body, $hdr) }

sub sh
{
    my ($sb, $cmd) = @_;
    my ($st, $h, $b, $j) = req(POST => "/v1/sandboxes/$sb/exec", $agent,
                               { argv => ['sh', '-c', $cmd], timeout_s => 40 });
    is($st, 200, "exec in $sb") or diag $b;
    return ($j, $j->{stdout} // '');
}

my ($st, $h, $b, $j, $x, $o);

# ---- create with an allowed credential -------------------------------------
($st, $h, $b, $j) = create($agent, { network => { allow => ['registry.example.test'] },
                                     credentials => ['git-deploy'] });
is($st, 201, 'create with credentials ["git-deploy"]: 201') or diag $b;
my $sb1 = $j->{id};
is_deeply($j->{network}{credentials},
    [ { name => 'git-deploy', host => 'a.example.test', header => 'Authorization',
        env => 'GIT_TOKEN', path => '/private/' } ],
    'the sandbox names the credential, the host it brings and its variable');

($st, $h, $b, $j) = req(GET => "/v1/sandboxes/$sb1", $agent);
is($st, 200, 'GET the sandbox');
is_deeply([ map { "$_->{name} $_->{env} $_->{host}" } @{ $j->{network}{credentials} // [] } ],
          ['git-deploy GIT_TOKEN a.example.test'],
          "its view names the credential, its env variable and host");

($x, $o) = sh($sb1, 'echo "ph=$GIT_TOKEN"; curl -sS -m 10 -H "Authorization: Bearer $GIT_TOKEN" https://a.example.test/private/one');
like($o, qr/^ph=veto-cred-[0-9a-f]{32}$/m, 'the workload holds a placeholder');
like($o, qr{^private-ok /private/one 0$}m,
     'its request to the bound host carried the real token (the server checked it)');
my ($att) = grep { ($_->{credential} // '') eq 'git-deploy' } @{ $x->{network}{attempts} // [] };
ok($att && $att->{injections} >= 1, "the exec's network names the credential") or diag explain $x->{network};

($x, $o) = sh($sb1, 'curl -sS -m 10 -o /dev/null -w "%{http_code}\n" -H "Authorization: Bearer $GIT_TOKEN" http://registry.example.test/leak');
like($o, qr/^403$/m, 'the placeholder to another allowed host is refused');
my ($ex) = grep { $_->{exfiltration} } @{ $x->{network}{attempts} // [] };
is($ex && $ex->{credential}, 'git-deploy', '... and recorded as an exfiltration attempt');

# a workload's own variable named "credentials" is no credential name:
# the audit still hides its value (the kept keys are the gateway's only)
($st, $h, $b, $j) = create($agent, { env => { credentials => 'plain-env-value-42' },
                                     credentials => ['git-deploy'] });
is($st, 201, 'a sandbox with an env variable named "credentials"') or diag $b;
my $sbenv = $j->{id};

# ---- refused ---------------------------------------------------------------
($st, $h, $b, $j) = create($agent, { credentials => ['other-token'] });
is($st, 403, 'a credential the policy does not list: 403');
is($j->{type}, 'urn:veto-sandbox:problem:credential_not_allowed', '... credential_not_allowed');
is($j->{credential}, 'other-token', '... naming it');
is($j->{field}, 'credentials[0]', '... and where');
like($j->{detail}, qr/credential "other-token" is not one the policy lets this agent attach/, '... saying why');

($st, $h, $b, $j) = create($narrow, { credentials => ['git-deploy'] });
is($st, 403, "an agent whose rule narrows the tenant's: 403");
($st, $h, $b, $j) = create($globex, { network => { allow => [] }, credentials => ['git-deploy'] });
is($st, 403, 'a tenant without a credentials section attaches none');

# the agent cannot say where a secret goes: no field takes a host
for my $c ([ { credentials => [ { name => 'git-deploy', host => 'evil.test' } ] },
             400, 'bad_type', 'credentials[0]' ],
           [ { credentials => { 'git-deploy' => 'evil.test' } }, 400, 'bad_type', 'credentials' ],
           [ { credentials => ['git-deploy@evil.test'] }, 400, 'bad_value', 'credentials[0]' ],
           [ { network => { allow => ['registry.example.test'],
                            credentials => [ 'git-deploy' ] } },
             400, 'unknown_field', 'network.credentials' ],
           [ { credentials => ['git-deploy'], credential_hosts => { 'git-deploy' => 'evil.test' } },
             400, 'unknown_field', 'credential_hosts' ],
           [ { credentials => ['git-deploy', 'git-deploy'] }, 400, 'bad_value', 'credentials[1]' ],
           [ { credentials => [] }, 400, 'bad_value', 'credentials' ],
           [ { network => 'none', credentials => ['git-deploy'] }, 400, 'bad_value', 'credentials' ]) {
    ($st, $h, $b, $j) = create($agent, $c->[0]);
    my $what = substr(JSON::PP->new->canonical->encode($c->[0]), 0, 70);
    is($st, $c->[1], "create $what: $c->[1]");
    is($j->{type}, "urn:veto-sandbox:problem:$c->[2]", "... $c->[2]") or diag $b;
    is($j->{field}, $c->[3], "... field $c->[3]");
}

($st, $h, $b, $j) = create($agent, { credentials => ['crlf-token'] });
is($st, 422, 'a credential the proxy refused at load: 422') or diag $b;
is($j->{type}, 'urn:veto-sandbox:problem:credential_unavailable', '... credential_unavailable');
like($j->{detail}, qr/crlf-token.*CR or LF/, '... naming it and why');
is($j->{field}, 'credentials', '... field credentials (a create names the top-level field)') or diag $b;
($st, $h, $b, $j) = create($agent, { credentials => ['unbound'] });
is($st, 422, 'a credential the helper has no binding for: 422') or diag $b;
is($j->{type}, 'urn:veto-sandbox:problem:credential_unavailable', '... credential_unavailable');
is($j->{field}, 'credentials', '... field credentials');

# ---- askable: a human approves, the summary names the secret -----------------
my $askbody = { credentials => ['api-token'] };
($st, $h, $b, $j) = create($agent, $askbody);
is($st, 202, 'create with a credential under "ask": 202') or diag $b;
my $apr = $j->{approval_id};
is_deeply($j->{summary}{credentials}{attach}, ['api-token'], 'the summary names the secret');
is_deeply($j->{summary}{credentials}{needs_approval}, ['api-token'], '... as needing approval');
is_deeply($j->{summary}{credentials}{hosts}, ['b.a.example.test'],
          '... and the host the operator binds it to (the helper said it)') or diag $b;
is_deeply($j->{summary}{credentials}{bindings},
          [ { name => 'api-token', host => 'b.a.example.test', header => 'Authorization',
              env => 'API_TOKEN' } ],
          '... with its header and variable, never a value') or diag $b;
($st, $h, $b, $j) = req(GET => "/v1/approvals/$apr", $rev);
is_deeply($j->{summary}{credentials}{attach}, ['api-token'], 'the reviewer reads the secret');
is_deeply($j->{summary}{credentials}{hosts}, ['b.a.example.test'], '... and its host');

# two at once, one of them with a path, one the helper does not bind
($st, $h, $b, $j) = create($agent, { credentials => ['api-token', 'git-deploy', 'unbound'] });
is($st, 202, 'create with an askable credential among others: 202') or diag $b;
is_deeply($j->{summary}{credentials}{hosts}, ['b.a.example.test', 'a.example.test'],
          'the summary names each host once');
is_deeply($j->{summary}{credentials}{bindings},
          [ { name => 'api-token', host => 'b.a.example.test', header => 'Authorization', env => 'API_TOKEN' },
            { name => 'git-deploy', host => 'a.example.test', header => 'Authorization', env => 'GIT_TOKEN',
              path => '/private/' },
            { name => 'unbound', bound => JSON::PP::false } ],
          '... each binding, its path, and that one is bound nowhere') or diag $b;
($st) = req(POST => "/v1/approvals/$apr/approve", $rev, { reason => 'the API' });
is($st, 200, 'a reviewer approves');
($st, $h, $b, $j) = create($agent, $askbody, { 'Veto-Approval' => $apr });
is($st, 201, 'the repeat with the approval creates the sandbox') or diag $b;
my $sb2 = $j->{id};
is($j->{network}{credentials}[0]{host}, 'b.a.example.test', '... with the credential attached');
($x, $o) = sh($sb2, 'curl -sS -m 10 https://b.a.example.test/private/two');
like($o, qr{^private-ok /private/two 0$}m, 'the approved credential is added');

# ---- PATCH: attach to a live sandbox -----------------------------------------
($st, $h, $b, $j) = create($agent, { network => { allow => ['registry.example.test'] } });
is($st, 201, 'a sandbox without credentials');
my $sb3 = $j->{id};
($x, $o) = sh($sb3, 'curl -sS -m 10 -o /dev/null -w "%{http_code}\n" https://a.example.test/private/x 2>&1; true');
unlike($o, qr/^200$/m, 'before attaching: the bound host is not reachable');

($st, $h, $b, $j) = req(PATCH => "/v1/sandboxes/$sb3", $noscope,
                        { credentials => { add => ['git-deploy'] } });
is($st, 403, 'PATCH credentials without sandbox:network: 403');
for my $c ([ { credentials => { add => ['git-deploy'], host => 'evil.test' } },
             'unknown_field', 'credentials.host' ],
           [ { credentials => ['git-deploy'] }, 'bad_type', 'credentials' ],
           [ { credentials => { add => ['git-deploy'] }, network => { add => ['a.example.test'] } },
             'bad_value', 'credentials' ],
           [ { network => { add => ['a.example.test'] }, credentials => { add => ['git-deploy'] } },
             'bad_value', 'credentials' ],
           [ { secret => { name => 'x' }, credentials => { add => ['git-deploy'] } },
             'bad_value', 'secret' ],
           [ { credentials => { add => ['git-deploy'] }, ttl_s => 60 }, 'bad_value', 'credentials' ]) {
    ($st, $h, $b, $j) = req(PATCH => "/v1/sandboxes/$sb3", $agent, $c->[0]);
    is($st, 400, 'PATCH ' . JSON::PP->new->canonical->encode($c->[0]) . ': 400');
    is($j->{type}, "urn:veto-sandbox:problem:$c->[1]", "... $c->[1]") or diag $b;
    is($j->{field}, $c->[2], "... field $c->[2]");
}
($st, $h, $b, $j) = req(PATCH => "/v1/sandboxes/$sb3", $agent,
                        { credentials => { add => ['other-token'] } });
is($st, 403, 'PATCH a credential the policy does not list: 403');
is($j->{field}, 'credentials.add[0]', '... naming where');
($st, $h, $b, $j) = req(PATCH => "/v1/sandboxes/$sb3", $agent,
                        { credentials => { add => ['crlf-token'] } });
is($st, 422, 'PATCH a credential the proxy refused at load: 422') or diag $b;
is($j->{type}, 'urn:veto-sandbox:problem:credential_unavailable', '... credential_unavailable');
is($j->{field}, 'credentials.add', '... field credentials.add (a PATCH names where it came)');

($st, $h, $b, $j) = req(PATCH => "/v1/sandboxes/$sb3", $agent,
                        { credentials => { add => ['git-deploy'] } });
is($st, 200, 'PATCH {"credentials": {"add": ["git-deploy"]}}: 200') or diag $b;
is($j->{network}{credentials}[0]{name}, 'git-deploy', '... the network names it');
($x, $o) = sh($sb3, 'curl -sS -m 10 https://a.example.test/private/three');
like($o, qr{^private-ok /private/three 0$}m, 'the next exec gets the header added');

($st, $h, $b, $j) = req(PATCH => "/v1/sandboxes/$sb3", $agent,
                        { credentials => { add => ['api-token'] } });
is($st, 202, 'PATCH a credential under "ask": 202') or diag $b;
my $apr2 = $j->{approval_id};
is_deeply($j->{summary}{credentials}{needs_approval}, ['api-token'], '... naming it');
is($j->{summary}{sandbox}, $sb3, '... and the sandbox');
($st) = req(POST => "/v1/approvals/$apr2/approve", $rev, {});
is($st, 200, 'a reviewer approves');
($st, $h, $b, $j) = req(PATCH => "/v1/sandboxes/$sb3", $agent,
                        { credentials => { add => ['api-token'] } },
                        { 'Veto-Approval' => $apr2 });
is($st, 200, 'the PATCH repeated with the approval: 200') or diag $b;
is(scalar @{ $j->{network}{credentials} // [] }, 2, '... the sandbox holds both');

# ---- PATCH: detach ---------------------------------------------------------
($x, $o) = sh($sb3, 'echo "ph=$GIT_TOKEN"');
my ($ph) = $o =~ /^ph=(veto-cred-[0-9a-f]{32})$/m;
ok($ph, "the sandbox holds git-deploy's placeholder");
for my $c ([ { credentials => { remove => 'git-deploy' } }, 400, 'bad_type', 'credentials.remove' ],
           [ { credentials => { remove => [] } }, 400, 'bad_value', 'credentials.remove' ],
           [ { credentials => { remove => ['Bad Name'] } }, 400, 'bad_value', 'credentials.remove[0]' ],
           [ { credentials => { remove => ['git-deploy', 'git-deploy'] } }, 400, 'bad_value', 'credentials.remove[1]' ],
           [ { credentials => { remove => ['git-deploy'], add => ['api-token'] } }, 400, 'bad_value', 'credentials' ],
           [ { credentials => { remove => ['other-token'] } }, 404, 'not_found', 'credentials.remove' ]) {
    ($st, $h, $b, $j) = req(PATCH => "/v1/sandboxes/$sb3", $agent, $c->[0]);
    is($st, $c->[1], 'PATCH ' . JSON::PP->new->canonical->encode($c->[0]) . ": $c->[1]") or diag $b;
    is($j->{type}, "urn:veto-sandbox:problem:$c->[2]", "... $c->[2]") or diag $b;
    is($j->{field}, $c->[3], "... field $c->[3]");
}
($st) = req(PATCH => "/v1/sandboxes/$sb3", $noscope, { credentials => { remove => ['git-deploy'] } });
is($st, 403, 'PATCH credentials.remove without sandbox:network: 403');

($st, $h, $b, $j) = req(PATCH => "/v1/sandboxes/$sb3", $agent,
                        { credentials => { remove => ['git-deploy'] } });
is($st, 200, 'PATCH {"credentials": {"remove": ["git-deploy"]}}: 200 (no human needed)') or diag $b;
is_deeply([ map { $_->{name} } @{ $j->{network}{credentials} // [] } ], ['api-token'],
          '... the sandbox holds the other one only');
($x, $o) = sh($sb3, 'echo "ph=$GIT_TOKEN."; '
    . "curl -sS -m 10 -H 'Authorization: Bearer $ph' https://a.example.test/private/four 2>&1; "
    . "curl -sS -m 10 -o /dev/null -w 'plain=%{http_code}\n' -H 'Authorization: Bearer $ph' http://registry.example.test/leak; "
    . "curl -sS -m 10 -o /dev/null -w 'bound=%{http_code}\n' -H 'X-Leak: $ph' https://b.a.example.test/private/five; "
    . 'curl -sS -m 10 https://b.a.example.test/private/six');
like($o, qr/^ph=\.$/m, "the next exec's environment lacks the variable");
unlike($o, qr{private-ok /private/four}, 'the detached credential is added nowhere: its host is gone from the allowlist');
like($o, qr/^plain=403$/m, 'its placeholder over plain HTTP is refused');
like($o, qr/^bound=403$/m, '... and on an intercepted connection to another bound host');
like($o, qr{^private-ok /private/six 0$}m, 'the credential still attached still works');
my @gone = grep { ($_->{credential} // '') eq 'git-deploy' && $_->{exfiltration} }
           @{ $x->{network}{attempts} // [] };
is(scalar @gone, 2, "the exec's network records both refusals, naming the credential")
    or diag explain $x->{network};

# ---- records ---------------------------------------------------------------
my (@recs, $created, @upd);
for (1 .. 40) {
    @recs = ();
    for my $sb ($sb1, $sb3, '') {
        ($st, $h, $b, $j) = req(GET => "/v1/audit?limit=100" . ($sb ? "&sandbox=$sb" : ''), $auditor);
        is($st, 200, 'audit read') or diag $b if $st != 200;
        push @recs, @{ $j->{records} // [] };
    }
    ($created) = grep { ($_->{outcome} // '') eq 'sandbox_created'
                        && ($_->{sandbox} // '') eq $sb1 } @recs;
    @upd = grep { ($_->{outcome} // '') eq 'network_updated'
                  && ($_->{sandbox} // '') eq $sb3 } @recs;
    last if $created && @upd >= 3
             && grep { ($_->{outcome} // '') eq 'approval_requested' } @recs;
    sleep 0.1;
}
is_deeply($created && $created->{detail}{credentials_requested}, ['git-deploy'],
          "the create's audit record names the credential attached") or diag explain $created;
is($created && $created->{detail}{credentials}[0]{host}, 'a.example.test', '... and its host');
my ($u1) = grep { !$_->{detail}{credentials_needed_approval} && $_->{detail}{credentials_requested} } @upd;
my ($u2) = grep { $_->{detail}{credentials_needed_approval} } @upd;
is_deeply($u1 && $u1->{detail}{credentials_requested}, ['git-deploy'], 'the attach to a live sandbox is audited');
is_deeply($u2 && $u2->{detail}{credentials_needed_approval}, ['api-token'],
          '... and the approved one says so') or diag explain \@upd;
is($u2 && $u2->{approval}, $apr2, '... with its approval');
my ($u3) = grep { $_->{detail}{credentials_detached} } @upd;
is_deeply($u3 && $u3->{detail}{credentials_detached}, ['git-deploy'], 'the detach is audited')
    or diag explain \@upd;
is_deeply([ map { $_->{name} } @{ ($u3 && $u3->{detail}{credentials}) // [] } ], ['api-token'],
          '... with what the sandbox holds after it');
{
    my ($er) = grep { ($_->{outcome} // '') eq 'sandbox_created' && ($_->{sandbox} // '') eq $sbenv }
               map { @{ (req(GET => "/v1/audit?limit=100&sandbox=$sbenv", $auditor))[3]{records} // [] } } 1;
    ok($er && exists $er->{detail}{env}{credentials}, 'its create is on record, with the variable')
        or diag explain $er;
    unlike(JSON::PP->new->encode($er // {}), qr/plain-env-value-42/,
           "... whose value the audit hides (env's \"credentials\" is not the gateway's key)");
    is_deeply($er && $er->{detail}{credentials_requested}, ['git-deploy'], '... while the attach is named');
    req(DELETE => "/v1/sandboxes/$sbenv", $agent);
}
my @used = grep { ($_->{credential} // '') eq 'git-deploy' }
           map { @{ $_->{detail}{network}{attempts} // [] } }
           grep { ($_->{outcome} // '') eq 'exec_finished'
                  && ($_->{sandbox} // '') eq $sb1 } @recs;
ok(scalar(grep { $_->{injections} } @used), "the exec's audit entry names the credential it used");
ok(scalar(grep { $_->{exfiltration} } @used), '... and the refused placeholder, as an exfiltration attempt');
my ($asked) = grep { ($_->{outcome} // '') eq 'approval_requested'
                     && ($_->{approval} // '') eq $apr } @recs;
is_deeply($asked && $asked->{detail}{credentials}{attach}, ['api-token'],
          "the approval's audit entry names the secret it attaches")
    or diag explain $asked;
is_deeply($asked && $asked->{detail}{credentials}{hosts}, ['b.a.example.test'],
          '... and the host it goes to') or diag explain $asked;
my ($refused) = grep { ($_->{outcome} // '') eq 'denied'
                       && ($_->{reason} // '') eq 'credential_not_allowed'
                       && ($_->{detail}{why} // '') =~ /other-token/ } @recs;
ok($refused, 'a refused attach is on record too, naming the secret')
    or diag explain [ grep { ($_->{outcome} // '') eq 'denied' } @recs ];

# ---- metrics ---------------------------------------------------------------
($st, $h, $b) = req(GET => '/metrics');
is($st, 200, 'metrics scrape');
my ($inj) = $b =~ /^veto_sandbox_egress_credential_injections_total (\d+)$/m;
my ($ref) = $b =~ /^veto_sandbox_egress_placeholders_refused_total (\d+)$/m;
ok(defined $inj && $inj >= 3, "metrics count the headers added ($inj)") or diag $b;
ok(defined $ref && $ref >= 1, "... and the placeholders refused ($ref)");

# ---- the value is nowhere ----------------------------------------------------
unlike($seen, qr/\Q$TOKEN\E/, 'no response held the value');
my $dump = $n->redis_dump;
like($dump, qr/git-deploy/, 'Redis was read (it names the credential)');
like($dump, qr/api-token/, '... and the approved one');
unlike($dump, qr/\Q$TOKEN\E/, 'no Redis key, approval or audit entry holds the value');
unlike($n->error_log . $n->access_log, qr/\Q$TOKEN\E/, "nor the gateway's logs");

for my $sb ($sb1, $sb2, $sb3) {
    ($st) = req(DELETE => "/v1/sandboxes/$sb", $agent);
    is($st, 200, "delete $sb");
}
$n->stop;
$e->finish_hosts;
done_testing;
