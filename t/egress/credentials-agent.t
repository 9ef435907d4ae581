#!/usr/bin/perl
# An agent's own secret (PATCH {"secret": {...}}): real nginx with the
# module, Redis, the helper with the egress proxy and the test TLS server
# of credentials-api.t.
#
#   policy: credentials.agent_hosts per tenant and agent; nginx -t names
#           a bad entry and an agent's host beyond its tenant's
#   works:  the agent hands over a value for a host the policy lists: the
#           workload holds a placeholder in the variable the agent named,
#           its request to that host carries the real header (the server
#           checks the token), the placeholder sent elsewhere is refused
#           and recorded; the sandbox's view lists the secret's name, host
#           and variable, never the value; a second PUT of the name
#           replaces the value
#   refused: a host outside agent_hosts (or a tenant with none) 403
#           secret_host_not_allowed; a value with a control byte 400; a
#           header the operator's bindings may not use 400; the name of an
#           operator's credential 400; where the policy would ask a human,
#           403 secret_needs_no_approval (the value never waits in Redis)
#   detach: {"credentials": {"remove": [name]}}: the placeholder is then
#           refused and recorded
#   the value is in no response, audit record, Redis key or value (every
#   key dumped), nginx log, helper log, proxy log, helper state file,
#   nor the sandbox's environment or files
use strict;
use warnings;

use Test::More;
use JSON::PP ();
use File::Find ();
use lib 't/lib';
use Eventually qw(eventually);
use VetoEgress;
use VetoNginx;

VetoNginx::need(qw(helper redis));

my $TOKEN = 'tok-' . join('', map { sprintf '%02x', int(rand(256)) } 1 .. 16);
my $HALF = substr($TOKEN, 0, 20);      # searched for inside the sandbox
my $e = VetoEgress->start(helper => 1, token => $TOKEN);
my $dir = $e->{dir};
my $n = VetoNginx->new;

# the operator's credentials: one, whose name an agent may not take
$e->write_credentials(
    ['op-token host=b.a.example.test template="Bearer {{secret}}" env=OP_TOKEN'],
    'op-token' => "operator-value-not-the-agents\n");

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 60, ttl_s => 3600 },
            network => { allow => ['registry.example.test'] },
            credentials => { allow => ['op-token'], agent_hosts => ['a.example.test', '*.x.example.test'] },
            agents => {
                'agent-asked' => { approvals => { always => ['sandbox.update'] } },
            },
        },
        globex => { ceilings => { memory_mb => 512, timeout_s => 60 },
                    network => { allow => ['registry.example.test'] } },
    },
};

sub copy { JSON::PP->new->decode(JSON::PP->new->encode($_[0])) }

# ---- nginx -t: bad agent_hosts are named -------------------------------------
$n->start_redis;
for my $b ([ sub { $_[0]{tenants}{acme}{credentials}{agent_hosts} = 'a.example.test' },
             qr/tenants\.acme: credentials\.agent_hosts must be an array/ ],
           [ sub { $_[0]{tenants}{acme}{credentials}{agent_hosts} = ['a.example.test:8443'] },
             qr/tenants\.acme: credentials\.agent_hosts\[0\]: a secret is added on port 443 only/ ],
           [ sub { $_[0]{tenants}{acme}{credentials}{agent_hosts} = ['bad host'] },
             qr/tenants\.acme: credentials\.agent_hosts\[0\]: / ],
           [ sub { $_[0]{tenants}{acme}{agents}{'agent-asked'}{credentials} = { agent_hosts => ['evil.test'] } },
             qr/tenants\.acme\.agents\.agent-asked: credentials\.agent_hosts\[0\] "evil\.test" is outside the tenant's credentials\.agent_hosts/ ],
           [ sub { $_[0]{tenants}{acme}{agents}{'agent-asked'}{credentials} = { agent_hosts => ['*.example.test'] } },
             qr/credentials\.agent_hosts\[0\] "\*\.example\.test" is outside/ ]) {
    my $p = copy($policy);
    $b->[0]->($p);
    $n->write_policy($p);
    $n->render(redis => 1);
    my ($ok, $out) = $n->test_config;
    ok(!$ok, 'nginx -t refuses a bad credentials.agent_hosts');
    like($out, $b->[1], '... naming it') or diag $out;
}

# ---- the stack -------------------------------------------------------------
$n->start_helper($e->helper_conf, max_sandboxes => 8,
                 egress_credentials => "$dir/creds",
                 egress_upstream_ca => $e->{ca});
$n->start(redis => 1, policy => $policy);

my $agent = $n->token(sub => 'agent-1', scope =>
    'sandbox:create sandbox:exec sandbox:files sandbox:network');
my $noscope = $n->token(sub => 'agent-1', scope => 'sandbox:create sandbox:exec');
my $asked = $n->token(sub => 'agent-asked', scope =>
    'sandbox:create sandbox:exec sandbox:network');
my $globex = $n->token(sub => 'agent-9', tenant => 'globex', scope =>
    'sandbox:create sandbox:exec sandbox:network');
my $auditor = $n->token(sub => 'auditor-1', scope => 'audit:read');

my $seen = '';     # every response body, searched for the value at the end

sub req
{
    my @r = $n->request(@_);
    $seen .= ($r[2] // '') . "\n";
    return @r;
}

ok(eventually('egress and Redis available', 20, sub {
    my (undef, undef, undef, $hj) = req(GET => '/v1/health');
    $hj && $hj->{egress}{available} && ($hj->{redis} // '') eq 'up';
}), 'health: egress available');

sub sh
{
    my ($sb, $cmd, $tok) = @_;
    my ($st, $h, $b, $j) = req(POST => "/v1/sandboxes/$sb/exec", $tok // $agent,
                               { argv => ['sh', '-c', $cmd], timeout_s => 40 });
    is($st, 200, "exec in $sb") or diag $b;
    return ($j, $j->{stdout} // '');
}

sub secret { my ($sb, $s, $tok) = @_; return req(PATCH => "/v1/sandboxes/$sb", $tok // $agent, { secret => $s }) }

my ($st, $h, $b, $j, $x, $o);

($st, $h, $b, $j) = req(POST => '/v1/sandboxes', $agent, { network => { allow => ['registry.example.test'] } });
is($st, 201, 'a sandbox with an allowlist') or diag $b;
my $sb = $j->{id};

my %good = (name => 'my-api', value => $TOKEN, host => 'a.example.test',
            env => 'MY_API_TOKEN', path => '/private/');

# ---- refused -----------------------------------------------------------------
($st, $h, $b, $j) = secret($sb, { %good }, $noscope);
is($st, 403, 'without sandbox:network: 403');
for my $c ([ { %good, host => 'b.a.example.test' }, 403, 'secret_host_not_allowed', 'secret.host' ],
           [ { %good, host => 'x.example.test' }, 403, 'secret_host_not_allowed', 'secret.host' ],
           [ { %good, host => '*.example.test' }, 403, 'secret_host_not_allowed', 'secret.host' ],
           [ { %good, host => 'evil.test' }, 403, 'secret_host_not_allowed', 'secret.host' ],
           [ { %good, value => "$TOKEN\r\nX-Injected: 1" }, 400, 'bad_value', 'secret.value' ],
           [ { %good, value => "a\tb$TOKEN" }, 400, 'bad_value', 'secret.value' ],
           [ { %good, value => 'v' x 4097 }, 400, 'bad_value', 'secret.value' ],
           [ { %good, value => '' }, 400, 'bad_value', 'secret.value' ],
           [ { %good, name => 'Bad Name' }, 400, 'bad_value', 'secret.name' ],
           [ { %good, colour => 'red' }, 400, 'unknown_field', 'secret.colour' ],
           [ { %good, value => 42 }, 400, 'bad_type', 'secret.value' ],
           [ { map { $_ => $good{$_} } qw(name value host) }, 400, 'missing_field', 'secret' ]) {
    ($st, $h, $b, $j) = secret($sb, $c->[0]);
    my %shown = %{ $c->[0] };
    $shown{value} = length($shown{value} // '') . ' bytes' if exists $shown{value};
    my $what = substr(JSON::PP->new->canonical->encode(\%shown), 0, 90);
    is($st, $c->[1], "secret $what: $c->[1]") or diag $b;
    is($j->{type}, "urn:veto-sandbox:problem:$c->[2]", "... $c->[2]") or diag $b;
    is($j->{field}, $c->[3], "... field $c->[3]");
}
# the helper's rules for a binding: the operator's (header, name, env)
for my $c ([ { %good, header => 'Host' }, qr/header "Host"/ ],
           [ { %good, header => 'Cookie' }, qr/header "Cookie"/ ],
           [ { %good, env => 'PATH' }, qr/env "PATH"/ ],
           [ { %good, template => 'Bearer' }, qr/\{\{secret\}\}/ ],
           [ { %good, name => 'op-token' }, qr/operator's credential/ ]) {
    ($st, $h, $b, $j) = secret($sb, $c->[0]);
    is($st, 400, "secret with " . join(',', map { "$_=$c->[0]{$_}" } grep { $_ ne 'value' && ($c->[0]{$_} // '') ne ($good{$_} // '') } sort keys %{ $c->[0] }) . ': 400') or diag $b;
    like($j->{detail} // '', $c->[1], '... saying why') or diag $b;
}
($st, $h, $b, $j) = req(POST => '/v1/sandboxes', $globex, { network => { allow => ['registry.example.test'] } });
is($st, 201, "a sandbox of a tenant without agent_hosts") or diag $b;
my $gsb = $j->{id};
($st, $h, $b, $j) = secret($gsb, { %good }, $globex);
is($st, 403, '... takes no agent secret: 403');
is($j->{type}, 'urn:veto-sandbox:problem:secret_host_not_allowed', '... secret_host_not_allowed');

($st, $h, $b, $j) = req(POST => '/v1/sandboxes', $asked, { network => { allow => ['registry.example.test'] } });
is($st, 201, "a sandbox of an agent whose PATCHes need a human") or diag $b;
my $asb = $j->{id};
($st, $h, $b, $j) = secret($asb, { %good }, $asked);
is($st, 403, '... an agent secret there is refused, not held pending: 403') or diag $b;
is($j->{type}, 'urn:veto-sandbox:problem:secret_needs_no_approval', '... secret_needs_no_approval');
ok(!defined $j->{approval_id}, '... and no approval was made');

# ---- works ---------------------------------------------------------------------
($st, $h, $b, $j) = secret($sb, { %good });
is($st, 200, 'PATCH {"secret": {...}} for a host in agent_hosts: 200') or diag $b;
is_deeply($j->{network}{credentials},
    [ { name => 'my-api', host => 'a.example.test', header => 'Authorization',
        template => 'Bearer {{secret}}', env => 'MY_API_TOKEN', path => '/private/',
        agent => JSON::PP::true } ],
    'the sandbox lists the secret: name, host, header, variable; never the value') or diag $b;
($st, $h, $b, $j) = req(GET => "/v1/sandboxes/$sb", $agent);
is($j->{network}{credentials}[0]{name}, 'my-api', 'GET the sandbox lists it too');

($x, $o) = sh($sb, 'echo "ph=$MY_API_TOKEN"; env; tr "\0" "\n" < /proc/self/environ; '
    . 'curl -sS -m 10 -H "Authorization: Bearer $MY_API_TOKEN" https://a.example.test/private/one; '
    . 'curl -sS -m 10 -o /dev/null -w "plain=%{http_code}\n" -H "Authorization: Bearer $MY_API_TOKEN" http://registry.example.test/leak');
my ($ph) = $o =~ /^ph=(veto-cred-[0-9a-f]{32})$/m;
ok($ph, 'the workload holds a placeholder in the variable the agent named') or diag $o;
like($o, qr{^private-ok /private/one 0$}m,
     'its request to the host carried the real token (the server checked it)');
like($o, qr/^plain=403$/m, 'the placeholder sent to another host is refused');
my ($att) = grep { ($_->{credential} // '') eq 'my-api' && $_->{injections} } @{ $x->{network}{attempts} // [] };
ok($att, "the exec's network names the secret it used") or diag explain $x->{network};
my ($ex) = grep { ($_->{credential} // '') eq 'my-api' && $_->{exfiltration} } @{ $x->{network}{attempts} // [] };
ok($ex, '... and the refused placeholder, as an exfiltration attempt');
unlike($o, qr/\Q$HALF\E/, 'env and /proc/self/environ hold the placeholder, not the value');

# the sandbox's files (searched for the value's first 20 bytes, which the
# exec's record may hold: the whole value is searched for everywhere else)
# (a canary holding them shows the search finds what is there): every
# file but the host's read-only /usr (a whole distribution: a 28 s grep
# idle, past the exec's timeout under ASan and a parallel test) and the
# kernel's /proc and /sys; /dev's one writable directory is searched
($x, $o) = sh($sb, "printf %s '$HALF' > /tmp/canary; grep -rlsF '$HALF' / /dev/shm --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr 2>/dev/null; echo searched");
like($o, qr/^searched$/m, "the sandbox's files were searched") or diag $o;
is_deeply([ grep { m{^/} } split /\n/, $o ], ['/tmp/canary'],
          '... and none but the canary holds the value') or diag $o;

# a second PUT replaces the value, keeping the placeholder
($st, $h, $b, $j) = secret($sb, { %good, value => 'wrong-value-now' });
is($st, 200, 'the same name again replaces the value: 200') or diag $b;
($x, $o) = sh($sb, 'echo "ph=$MY_API_TOKEN"; curl -sS -m 10 -o /dev/null -w "code=%{http_code}\n" https://a.example.test/private/two');
like($o, qr/^ph=\Q$ph\E$/m, '... the placeholder is the same');
like($o, qr/^code=401$/m, '... and the server now sees the new (wrong) value');
($st, $h, $b, $j) = secret($sb, { %good });
is($st, 200, '... and back');

# ---- detach ------------------------------------------------------------------
($st, $h, $b, $j) = req(PATCH => "/v1/sandboxes/$sb", $agent, { credentials => { remove => ['my-api'] } });
is($st, 200, 'PATCH {"credentials": {"remove": ["my-api"]}}: 200') or diag $b;
is_deeply($j->{network}{credentials} // [], [], '... the sandbox holds no secret');
($x, $o) = sh($sb, 'echo "ph=$MY_API_TOKEN."; '
    . "curl -sS -m 10 -o /dev/null -w 'plain=%{http_code}\\n' -H 'Authorization: Bearer $ph' http://registry.example.test/leak");
like($o, qr/^ph=\.$/m, "the next exec's environment lacks the variable");
like($o, qr/^plain=403$/m, 'the old placeholder is refused');
($ex) = grep { ($_->{credential} // '') eq 'my-api' && $_->{exfiltration} } @{ $x->{network}{attempts} // [] };
ok($ex, '... and recorded, naming the secret') or diag explain $x->{network};

# ---- records -------------------------------------------------------------------
my @upd = @{ eventually('the PATCHes on record', 20, sub {
    my (undef, undef, undef, $aj) = req(GET => "/v1/audit?limit=200&sandbox=$sb", $auditor);
    my @u = grep { ($_->{outcome} // '') eq 'network_updated' } @{ $aj->{records} // [] };
    (grep { $_->{detail}{credentials_detached} } @u) ? \@u : undef;
}) // [] };
my ($put) = grep { $_->{detail}{credentials_agent} } @upd;
is_deeply($put && $put->{detail}{credentials_agent},
          { name => 'my-api', host => 'a.example.test', header => 'Authorization' },
          "the attach's audit record names the secret, its host and header") or diag explain \@upd;
my ($det) = grep { $_->{detail}{credentials_detached} } @upd;
is_deeply($det && $det->{detail}{credentials_detached}, ['my-api'], 'the detach is audited');
my ($denied) = grep { ($_->{outcome} // '') eq 'denied' && ($_->{reason} // '') eq 'secret_host_not_allowed' }
               @{ (req(GET => "/v1/audit?limit=200", $auditor))[3]{records} // [] };
ok($denied, 'a refused host is on record') or diag explain $denied;

# ---- the value is nowhere ----------------------------------------------------
unlike($seen, qr/\Q$TOKEN\E/, 'no response held the value');
my $dump = $n->redis_dump;
like($dump, qr/my-api/, 'Redis was read (it names the secret)');
unlike($dump, qr/\Q$TOKEN\E/, 'no Redis key or value holds the value');
unlike($n->error_log . $n->access_log, qr/\Q$TOKEN\E/, "nor nginx's logs");
for my $d ([ $sb, $agent ], [ $gsb, $globex ], [ $asb, $asked ]) {
    ($st) = req(DELETE => "/v1/sandboxes/$d->[0]", $d->[1]);
    is($st, 200, "delete $d->[0]");
}
ok(eventually("the ENDED records on disk", 20, sub { grep { $_ eq $sb } $n->helper->ended_files }),
   'the sandbox ended: its ENDED record is on disk');
my $hlog = $n->helper->log_text;
like($hlog, qr/sandbox \Q$sb\E: \d+ credentials attached/,
     "the helper's log holds the proxy's lines too");
unlike($hlog, qr/\Q$TOKEN\E/, "nor do the helper's and the proxy's logs");
{
    # (the sandboxes' own trees, under sb/, were searched from inside)
    my $top = $n->helper->state_dir;
    my (@held, $files);
    File::Find::find({ no_chdir => 1,
        preprocess => sub { $File::Find::dir eq $top ? grep { $_ ne 'sb' } @_ : @_ },
        wanted => sub {
            return if -l $_ || !-f _ || -s _ > 4 << 20;
            open(my $fh, '<', $_) or return;
            local $/;
            my $t = <$fh> // '';
            $files++;
            push @held, $File::Find::name if index($t, $TOKEN) >= 0;
        } }, $top);
    ok($files, "the helper's state directory holds files ($files), its ENDED records among them");
    is_deeply(\@held, [], "... none of them the value");
}

$n->stop;
$e->finish_hosts;
done_testing;
