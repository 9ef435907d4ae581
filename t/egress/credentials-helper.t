#!/usr/bin/perl
# Credentials through the real helper: a private git repository served
# over HTTPS (git http-backend behind a TLS server with its own test CA,
# in the test's hosts namespace, requiring a token) is cloned from a
# sandbox that holds only the credential's placeholder: the helper's
# egress proxy adds the token on the way.  The sandbox trusts the proxy's
# CA through a bundle (system roots + CA) and the usual variables; its
# tests run and it returns a patch.  Ping names the bindings (never a
# value).  Attaching an unknown credential is a
# named error, a live sandbox gets one through update_network (and loses
# it through credentials_remove: its placeholder refused at once), and the
# token is in no exec output, environment, workspace file, record or log.
use strict;
use warnings;
use lib 't/lib';
use JSON::PP ();
use Test::More;
use Time::HiRes qw(time sleep);
use VetoEgress;
use VetoTest;

my $TOKEN = 'tok-' . join('', map { sprintf '%02x', int(rand(256)) } 1 .. 16);

my $e = VetoEgress->start(helper => 1, token => $TOKEN, git_root => 1);
my $dir = $e->{dir};

# the operator's credentials
# (crlf-token: a value the proxy refuses at load, attaching it is a named
# error)
$e->write_credentials([
    'git-deploy host=a.example.test path=/private/git/ template="Bearer {{secret}}" env=GIT_TOKEN',
    'api-token host=b.a.example.test template="Bearer {{secret}}" env=API_TOKEN',
    'crlf-token host=c.a.example.test template="Bearer {{secret}}" env=CRLF_TOKEN'],
    'crlf-token' => "part\r\nInjected: $TOKEN\n",
    map { $_ => "$TOKEN\n" } qw(git-deploy api-token));

# the private repository
VetoEgress::must(join(' && ',
    "mkdir -p $dir/git $dir/src",
    "git -C $dir/src init -q -b main",
    "printf 'def add(a, b):\\n    return a - b\\n' > $dir/src/calc.py",
    "printf 'from calc import add\\nassert add(2, 3) == 5, \"add is wrong\"\\nprint(\"tests pass\")\\n' > $dir/src/test_calc.py",
    "git -C $dir/src add .",
    "git -C $dir/src -c user.email=o\@example.invalid -c user.name=owner commit -q -m first",
    "git clone -q --bare $dir/src $dir/git/private.git"));

my $h = VetoTest->start($e->helper_conf,
    egress_credentials => "$dir/creds",
    egress_upstream_ca => $e->{ca},
    max_sandboxes => 4);

my $t = time + 20;
sleep 0.05 while time < $t && !($h->ping->{egress} // {})->{available};
ok($h->ping->{egress}{available}, 'the helper started the proxy with credentials');
{
    my $p = $h->ping;
    is_deeply([ map { join ' ', map { $_ // '-' } @$_{qw(name host header env path)} }
                @{ $p->{credentials} // [] } ],
              [ 'git-deploy a.example.test Authorization GIT_TOKEN /private/git/',
                'api-token b.a.example.test Authorization API_TOKEN -',
                'crlf-token c.a.example.test Authorization CRLF_TOKEN -' ],
              "ping names the operator's bindings (what a reviewer is shown)")
        or diag explain $p->{credentials};
    my ($b) = $h->call({ op => 'ping', brief => JSON::PP::true });
    ok($b->{ok} && !exists $b->{credentials}, '... a brief ping does not');
    unlike(JSON::PP->new->encode($p), qr/\Q$TOKEN\E|Injected/, '... and no value');
}

my $r = $h->create(network => { allow => [], credentials => ['nope'] });
is($r->{error}, 'not_found', 'an unknown credential: not_found');
is($r->{field}, 'network.credentials', '... naming the field');
$r = $h->create(network => { allow => [], credentials => ['git-deploy', 'git-deploy'] });
is($r->{error}, 'bad_value', 'a credential named twice: bad_value');

$r = $h->create(network => { allow => [], credentials => ['crlf-token'] });
is($r->{error}, 'credential_unavailable',
   'a credential the proxy refused at load: credential_unavailable');
like($r->{detail}, qr/crlf-token.*CR or LF/, '... naming it and why');
unlike($r->{detail}, qr/\Q$TOKEN\E/, '... without its value');

$r = $h->create(network => { allow => ['registry.example.test'],
                             credentials => ['git-deploy'] });
ok($r->{ok}, 'create with a credential') or diag explain $r;
my $id = $r->{sandbox}{id};
is_deeply($r->{sandbox}{network}{credentials},
    [ { name => 'git-deploy', host => 'a.example.test', header => 'Authorization',
        env => 'GIT_TOKEN', path => '/private/git/' } ],
    'SANDBOX.network names the credential, its host and variable (no value)');

my ($x, $out, $err) = $h->sh($id, 'echo "$GIT_TOKEN"; echo "$SSL_CERT_FILE $GIT_SSL_CAINFO $NODE_EXTRA_CA_CERTS $REQUESTS_CA_BUNDLE"; grep -c "BEGIN CERTIFICATE" "$SSL_CERT_FILE"');
like($out, qr/^veto-cred-[0-9a-f]{32}$/m, 'the sandbox holds a placeholder in GIT_TOKEN');
my ($ph) = $out =~ /^(veto-cred-[0-9a-f]{32})$/m;
like($out, qr{^/etc/veto-egress-ca.pem /etc/veto-egress-ca.pem /etc/veto-egress-ca.pem /etc/veto-egress-ca.pem$}m,
    'the CA variables name the bundle');
my ($ncert) = $out =~ /^(\d+)$/m;
ok($ncert && $ncert > 1, "the bundle holds the system roots and the proxy's CA ($ncert certificates)");

# the seed's first step: clone, test, patch
($x, $out, $err) = $h->sh($id, <<'SH', timeout_s => 60);
set -e
cd /tmp
git clone -q https://a.example.test/private/git/private.git work
cd work
python3 -B test_calc.py || echo "tests fail before the fix"
sed -i 's/a - b/a + b/' calc.py
python3 -B test_calc.py
git diff
SH
is($x->{exit_code}, 0, 'git clone of the private repository through the proxy')
    or diag("$out\n$err");
like($out, qr/tests fail before the fix/, 'the tests ran (and failed) on the clone');
like($out, qr/^tests pass$/m, 'the fix makes them pass');
like($out, qr/^-    return a - b\n\+    return a \+ b$/m, 'the patch');
my @att = @{ $x->{network}{attempts} // [] };
my @cred = grep { ($_->{credential} // '') eq 'git-deploy' } @att;
ok(@cred >= 1, "the exec's network names the credential used") or diag explain \@att;
ok((grep { ($_->{injections} // 0) >= 2 } @cred), 'with the requests it was added to');
my @git = grep { $_->{kind} eq 'git' } $e->host_log;
ok(@git >= 2, 'the git server served the clone (token checked)');

# the placeholder elsewhere is refused and recorded
($x, $out) = $h->sh($id, 'curl -sS -i -m 10 -H "Authorization: Bearer $GIT_TOKEN" http://registry.example.test/leak');
like($out, qr{^HTTP/1.1 403}m, 'the placeholder to another allowed host is refused');
my ($ex) = grep { $_->{exfiltration} } @{ $x->{network}{attempts} };
is($ex->{credential}, 'git-deploy', 'recorded as an exfiltration attempt of git-deploy');

# curl, python, node trust the proxy's leaf through the variables
($x, $out) = $h->sh($id, 'curl -sS -m 10 https://a.example.test/private/git/private.git/info/refs?service=git-upload-pack | head -c 40; echo; '
    . q{python3 -c 'import urllib.request; print(urllib.request.urlopen("https://a.example.test/private/git/private.git/HEAD").read().decode().strip())'; }
    . q{node -e 'fetch("https://a.example.test/private/git/private.git/HEAD").then(r => r.text()).then(t => console.log("node", t.trim())).catch(e => console.log("node error", e.cause ? e.cause.code : e))'});
like($out, qr/git-upload-pack/, 'curl trusts the bundle');
like($out, qr{^ref: refs/heads/main$}m, 'python trusts it');
like($out, qr{^node ref: refs/heads/main$}m, 'node trusts it (NODE_EXTRA_CA_CERTS)');

# a live sandbox gets a credential
my $r2 = $h->create(network => { allow => ['registry.example.test'] });
my $id2 = $r2->{sandbox}{id};
($x, $out) = $h->sh($id2, 'curl -sS -m 10 -o /dev/null -w "%{http_code}" https://b.a.example.test/private/x 2>&1');
unlike($out, qr/^200$/, 'before attaching: b.a.example.test is not reachable');
my ($u) = $h->call({ op => 'update_network', tenant => 't1', agent => 'a1',
    id => $id2, credentials => ['api-token'] });
ok($u->{ok}, 'update_network attaches a credential') or diag explain $u;
is($u->{network}{credentials}[0]{name}, 'api-token', '... shown in the network');
($x, $out) = $h->sh($id2, 'echo "$API_TOKEN"; curl -sS -m 10 https://b.a.example.test/private/x');
like($out, qr/^veto-cred-[0-9a-f]{32}\nprivate-ok \/private\/x 0$/m,
    'the next exec has the placeholder, and the token is added');
($u) = $h->call({ op => 'update_network', tenant => 't1', agent => 'a1',
    id => $id2, credentials => ['api-token'] });
is($u->{error}, 'bad_value', 'attaching it twice: bad_value');
($u) = $h->call({ op => 'update_network', tenant => 't1', agent => 'a1',
    id => $id2, credentials => ['crlf-token'] });
is($u->{error}, 'credential_unavailable',
   'update_network: a credential refused at load is credential_unavailable');

# detach: named errors first, then the placeholder is refused at once
($u) = $h->call({ op => 'update_network', tenant => 't1', agent => 'a1',
    id => $id2, credentials_remove => ['git-deploy'] });
is($u->{error}, 'not_found', 'detaching one the sandbox does not hold: not_found');
is($u->{field}, 'credentials_remove', '... naming the field');
($u) = $h->call({ op => 'update_network', tenant => 't1', agent => 'a1',
    id => $id2, credentials_remove => ['api-token'], add => ['c.test'] });
is($u->{error}, 'bad_value', 'a detach with another change: bad_value');
($x, $out) = $h->sh($id2, 'echo "$API_TOKEN"');
my ($ph2) = $out =~ /^(veto-cred-[0-9a-f]{32})$/m;
ok($ph2, 'the sandbox holds the placeholder');
($u) = $h->call({ op => 'update_network', tenant => 't1', agent => 'a1',
    id => $id2, credentials_remove => ['api-token'] });
ok($u->{ok}, 'update_network credentials_remove detaches it') or diag explain $u;
is_deeply($u->{detached}, ['api-token'], '... saying so');
ok(!@{ $u->{network}{credentials} // [] }, '... the network holds none');
($x, $out) = $h->sh($id2, 'echo "v=$API_TOKEN."; curl -sS -m 10 https://b.a.example.test/private/y 2>&1; '
    . "curl -sS -m 10 -o /dev/null -w 'code=%{http_code}\n' -H 'X-T: $ph2' http://registry.example.test/x");
like($out, qr/^v=\.$/m, 'the next exec lacks the variable');
unlike($out, qr{private-ok /private/y}, 'the bound host is no longer reached with the token');
like($out, qr/^code=403$/m, 'the detached placeholder is refused');
ok((grep { ($_->{credential} // '') eq 'api-token' && $_->{exfiltration} }
    @{ $x->{network}{attempts} // [] }), '... and recorded, naming the credential')
    or diag explain $x->{network};

# the proxy killed: its successor gets the sandboxes with their
# attachments (the same placeholders) and the same CA
my ($p1) = $h->log_text =~ /started the egress proxy .* \(pid (\d+)\)/;
ok(kill('KILL', $p1), "proxy $p1 killed");
$t = time + 20;
sleep 0.05 while time < $t && $h->log_text !~ /egress proxy \(pid (?!$p1)\d+\) is up/;
$t = time + 10;
sleep 0.05 while time < $t && $h->log_text !~ /handing 2 sandboxes to the proxy again/;
($x, $out) = $h->sh($id, 'curl -sS -m 10 https://a.example.test/private/git/private.git/HEAD; '
    . 'curl -sS -m 10 -o /dev/null -w "%{http_code}\n" -H "Authorization: Bearer $GIT_TOKEN" http://registry.example.test/again');
like($out, qr{^ref: refs/heads/main$}m, 'after a proxy restart the credential is added again (same CA)');
like($out, qr/^403$/m, '... and its placeholder still refused elsewhere');

my ($hs) = $h->call({ op => 'stats' });
ok($hs->{egress}{injections} >= 4, "the helper's stats count the headers added ($hs->{egress}{injections})")
    or diag explain $hs->{egress};
ok($hs->{egress}{placeholders_refused} >= 1, '... and the placeholders refused');

# ---- the value is nowhere ----------------------------------------------------
($x, $out, $err) = $h->sh($id, "env; cat /proc/self/environ | tr '\\0' '\\n'; grep -rl -- '$TOKEN' /tmp /home /etc 2>/dev/null; echo end");
unlike($out . $err, qr/\Q$TOKEN\E/, 'env, /proc/self/environ and the workspace hold no token');
like($out, qr/^GIT_TOKEN=veto-cred-/m, '(env was read)');
for my $f (glob("$h->{dir}/helper.*.log")) {
    unlike($e->slurp($f), qr/\Q$TOKEN\E/, "the helper and proxy log $f holds no token");
}
($x, $out) = VetoEgress::sh("grep -rl --exclude-dir=creds --exclude-dir=netns -- '$TOKEN' $h->{dir} $dir");
is($out, '', 'no file of the helper or the test but the secrets holds it');

ok($h->destroy($id)->{ok}, 'destroy');
ok($h->destroy($id2)->{ok}, 'destroy the second');
$h->stop;
my $logs = join('', map { $e->slurp($_) } glob("$h->{dir}/helper.*.log"));
unlike($logs, qr/ERROR: AddressSanitizer|runtime error:|LeakSanitizer/,
    'no sanitizer report from the helper or the proxy');
like($logs, qr/egress: the egress proxy stopped/, 'the proxy stopped with the helper');
$e->finish_hosts;
done_testing;
