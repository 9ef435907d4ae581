#!/usr/bin/perl
# Egress in the metrics, end to end: a sandbox with an allowlist (real
# nginx, Redis, the helper running the egress proxy in this test's world
# namespace, t/lib/VetoEgress.pm) fetches an allowed host and is refused
# another; the scrape counts both outcomes from the exec's network field,
# shows the proxy up, and passes promtool.
use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep time);
use lib 't/lib';
use VetoEgress;
use VetoNginx;
use Eventually qw(eventually);

VetoNginx::need(qw(helper redis));
die "promtool is not installed (Debian's prometheus package: "
    . "scripts/install-deps.sh test)\n"
    unless system('promtool --version >/dev/null 2>&1') == 0;

my $e = VetoEgress->start(helper => 1);
my $n = VetoNginx->new;

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 60, ttl_s => 3600 },
            network => { allow => ['registry.example.test'] },
        },
    },
};

$n->start_redis;
$n->start_helper($e->helper_conf, max_sandboxes => 4);
$n->start(redis => 1, policy => $policy,
          server_extra => 'location = /metrics { veto_sandbox_metrics; '
                          . 'allow 127.0.0.1; deny all; }');

my $agent = $n->token(sub => 'agent-1', scope =>
    'sandbox:create sandbox:exec sandbox:files sandbox:network');

sub metrics
{
    my ($st, $h, $b) = $n->request(GET => '/metrics');
    my %m;
    for my $l (split /\n/, $b // '') {
        next if $l =~ /^#/;
        my ($k, $v) = $l =~ /^(\S+(?:\{.*\})?) (\S+)$/ or next;
        $m{$k} = $v;
    }
    return (\%m, $b);
}

my $m;
eventually('the scrape says the egress proxy is up', 20, sub {
    ($m) = metrics();
    ($m->{veto_sandbox_egress_proxy_up} // 0) == 1;
});
is($m->{veto_sandbox_egress_proxy_up}, 1, 'the scrape shows the egress proxy up');
is($m->{'veto_sandbox_egress_proxy_state{state="up"}'}, 1, 'state up');

my ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent,
                                   { network => { allow => ['registry.example.test'] } });
is($st, 201, 'an allowlist sandbox') or diag $b;
my $sb = $j->{id};

my $base = $m;
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
    { argv => ['sh', '-c', 'curl -sS http://registry.example.test/m; '
                           . 'curl -sS http://notallowed.test/m; true'],
      timeout_s => 40 });
is($st, 200, 'an exec reaching one host, refused another') or diag $b;
like($j->{stdout} // '', qr{registry-ok http registry.example.test /m},
     'the allowed host answered');
my @att = @{ $j->{network}{attempts} // [] };
my $allowed = grep { $_->{decision} eq 'allowed' } @att;
my $refused = grep { $_->{decision} eq 'refused' } @att;
ok($allowed >= 1 && $refused >= 1, "the exec's network field: $allowed allowed, "
   . "$refused refused");

my $text;
sleep 0.2;    # the counts are taken in the log phase, after the reply
($m, $text) = metrics();
my $eg = sub { qq(veto_sandbox_egress_attempts_total{outcome="$_[0]"}) };
is($m->{$eg->('allowed')} - $base->{$eg->('allowed')}, $allowed,
   'egress attempts allowed: as the exec listed');
is($m->{$eg->('refused')} - $base->{$eg->('refused')}, $refused,
   'egress attempts refused: as the exec listed');

my $f = $n->dir . '/scrape.txt';
VetoNginx::spew($f, $text);
my $out = `promtool check metrics < $f 2>&1`;
is($?, 0, 'promtool check metrics passes') or diag $out;

($st) = $n->request(DELETE => "/v1/sandboxes/$sb", $agent);
is($st, 200, 'delete');
is($e->trapped, 0, 'no packet reached an address that is not a test host');
$n->stop;
is($n->helper->stop, 0, 'helper exits 0') or diag $n->helper->log_text;
$e->finish_hosts;
done_testing;
