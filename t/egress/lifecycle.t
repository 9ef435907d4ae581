#!/usr/bin/perl
# The egress proxy's life under the helper: killed, it is restarted and
# the live allowlist sandboxes work again (their sockets handed over
# anew); stuck, the helper does not wait on it (execs end with "complete":
# false, other requests are served) and replaces it; a helper killed with
# -9 leaves a proxy that the next start removes with every stale thing;
# 100 create/destroy cycles in allowlist mode leave no link, namespace,
# rule, descriptor or process.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use Time::HiRes qw(time sleep);
use VetoEgress;
use VetoTest;
use Eventually qw(eventually);

my $e = VetoEgress->start(helper => 1);
my $h = VetoTest->start($e->helper_conf, max_sandboxes => 8);

sub egress_up
{
    return scalar eventually('the helper says egress is available', 30, sub {
        my $p = $h->ping;
        $p->{egress} && $p->{egress}{available} ? $p->{egress} : undef;
    }) // $h->ping->{egress};
}

sub log_has
{
    my ($re) = @_;
    return $h->log_text(1) =~ $re;
}

sub proxy_pids
{
    return $h->log_text(1) =~ /started the egress proxy .* \(pid (\d+)\)/g;
}

sub host_view
{
    # the links other tests' VetoHosts make while this one runs (vtb<pid>,
    # vt<pid><name>0) are theirs, not the helper's
    my ($rc1, $links) =
        VetoEgress::sh(q{ip -o link | grep -Evc '^[0-9]+: vtb?[0-9]+'});
    my ($rc2, $tables) = VetoEgress::sh('nft list tables');
    my ($rc3, $wlinks) = VetoEgress::sh("ip -n $e->{world} -o link | wc -l");
    my ($rc4, $wrules) = VetoEgress::sh("ip netns exec $e->{world} nft list ruleset");
    return "links $links tables $tables world links $wlinks world rules $wrules";
}

ok(egress_up()->{available}, 'egress is up');
my $before = host_view();
my $id = $h->create_ok(network => { allow => ['registry.example.test'] });
my ($x, $out) = $h->sh($id, 'curl -sS http://registry.example.test/one');
like($out, qr{registry-ok http registry.example.test /one}, 'the sandbox reaches its host');

# --- the proxy is killed: restarted, the sandbox works again ---------------
my ($p1) = proxy_pids();
ok(kill('KILL', $p1), "proxy $p1 killed");
my $t0 = time;
eventually('the helper sees it die', 30,
           sub { log_has(qr/the egress proxy \(pid $p1\) was killed by signal 9/) });
eventually('and a new one come up', 30,
           sub { log_has(qr/egress proxy \(pid (?!$p1)\d+\) is up/) });
my $eg = egress_up();
ok($eg->{available}, sprintf('egress is available again after %.1f s', time - $t0))
    or diag explain $eg;
ok($eg->{restarts} >= 1, 'ping counts the restart');
my @pids = proxy_pids();
is(scalar @pids, 2, 'a second proxy was started');
like($h->log_text, qr/the egress proxy \(pid $p1\) was killed by signal 9/, 'the helper says what happened');
like($h->log_text, qr/handing 1 sandboxes to the proxy again/, 'and hands the live sandbox over again');
($x, $out) = $h->sh($id, 'curl -sS http://registry.example.test/two; curl -sS http://notallowed.test/');
like($out, qr{registry-ok http registry.example.test /two}, 'the same sandbox reaches its host again');
like($out, qr/notallowed.test:80 is not allowed/, 'and its allowlist still holds');
ok($x->{network}{complete}, 'the exec\'s attempts are complete again');

# --- the proxy is stuck: the helper does not wait on it --------------------
my $p2 = $pids[-1];
ok(kill('STOP', $p2), "proxy $p2 stopped (SIGSTOP)");
my $bg = $h->connect;
VetoTest::write_all($bg, VetoTest::frame({ op => 'exec', tenant => 't1',
    agent => 'a1', id => $id, argv => ['echo', 'hi'] })) or die;
sleep 0.3;    # on purpose: the exec meets the stuck proxy
my $tp = time;
my $ping = $h->ping;
ok($ping->{ok} && time - $tp < 2, 'ping is answered while an exec waits on the stuck proxy');
my ($br, $bp) = VetoTest::recv_frame($bg, 30);
is($bp, "hi\n", 'the exec ends');
ok(!$br->{network}{complete}, 'its network field says it is not complete') or diag explain $br->{network};
eventually('the stuck proxy was killed', 30,
           sub { log_has(qr/egress proxy \(pid $p2\) was killed by signal 9/) });
$eg = egress_up();
ok($eg->{available}, 'the stuck proxy was replaced');
like($h->log_text, qr/killing the egress proxy \(pid $p2\): the proxy did not answer in time/,
    'the helper killed it, saying why');
kill 'CONT', $p2;
($x, $out) = $h->sh($id, 'curl -sS http://registry.example.test/three');
like($out, qr{registry-ok http registry.example.test /three}, 'the sandbox works with the third proxy');

# --- a create while the proxy restarts fails fast, with a named error -------
@pids = proxy_pids();
kill 'KILL', $pids[-1];
eventually('the helper saw the proxy killed', 30,
           sub { log_has(qr/the egress proxy \(pid $pids[-1]\) was killed/) });
my $rc = $h->create(network => { allow => ['registry.example.test'] });
ok($rc->{ok} || $rc->{error} eq 'unavailable',
   'a create during the restart works or says unavailable') or diag explain $rc;
like($rc->{detail} // '', qr/egress proxy/, '... naming the egress proxy') unless $rc->{ok};
$h->destroy($rc->{sandbox}{id}) if $rc->{ok};
ok(egress_up()->{available}, 'up again');

# --- 100 create/destroy cycles ----------------------------------------------
is($h->destroy($id)->{state}, 'terminated', 'destroy the first sandbox');
@pids = proxy_pids();
my $pp = $pids[-1];
my $fds0 = () = glob("/proc/$pp/fd/*");
my (@fail, @ns);
$t0 = time;
for my $i (1 .. 100) {
    my $r = $h->create(network => { allow => ['registry.example.test'] });
    if (!$r->{ok}) {
        push @fail, "create $i: $r->{error}: $r->{detail}";
        next;
    }
    my $sid = $r->{sandbox}{id};
    push @ns, $h->sandbox_netns($sid);
    if ($i % 25 == 0) {
        ($x, $out) = $h->sh($sid, 'curl -sS http://registry.example.test/c');
        push @fail, "exec $i: $out" unless $out =~ /registry-ok/;
    }
    my $d = $h->destroy($sid);
    push @fail, "destroy $i: " . $h->json->encode($d)
        unless ($d->{state} // '') eq 'terminated' && $d->{confirmed}{network};
}
my $took = time - $t0;
is(scalar @fail, 0, sprintf('100 allowlist create/destroy cycles (%.1f s)', $took))
    or diag(join("\n", @fail[0 .. ($#fail > 9 ? 9 : $#fail)]));
$h->live_ok(0, 'after 100 cycles');
my @held = grep { defined && $h->netns_holders($_) } @ns;
is(scalar @held, 0, 'none of the 100 namespaces is held');
my $fds1 = () = glob("/proc/$pp/fd/*");
is($fds1, $fds0, 'the proxy holds no descriptor of them');
is($h->count_procs, 0, 'no sandbox process left');
is(host_view(), $before, 'no link, table or rule appeared on the host or in the proxy\'s namespace');
my @after = proxy_pids();
is(scalar @after, scalar @pids, 'the proxy was not restarted by the cycles');

# --- helper kill -9 and restart ---------------------------------------------
my @live = map { $h->create_ok(network => { allow => ['registry.example.test'] }) } 1 .. 2;
my @oldns = map { $h->sandbox_netns($_) } @live;
$h->kill9;
ok(kill(0, $pp), 'the proxy outlives a helper killed with -9');
$h->launch;
$eg = egress_up();
ok($eg->{available}, 'the restarted helper has egress');
$h->reap;
ok(!kill(0, $pp), 'the restart killed the old proxy');
my @newp = $h->log_text =~ /started the egress proxy .* \(pid (\d+)\)/g;
isnt($newp[0], $pp, 'and started a new one');
$h->live_ok(0, 'after the restart');
@held = grep { defined && $h->netns_holders($_) } @oldns;
is(scalar @held, 0, 'nothing holds the old sandboxes\' namespaces');
is(host_view(), $before, 'no link, table or rule left');
my $id3 = $h->create_ok(network => { allow => ['registry.example.test'] });
($x, $out) = $h->sh($id3, 'curl -sS http://registry.example.test/after');
like($out, qr{registry-ok http registry.example.test /after}, 'a new sandbox has egress');
is($h->destroy($id3)->{state}, 'terminated', 'destroy');

is($e->trapped, 0, 'no packet reached an address that is not a test host');
is($h->stop, 0, 'helper exits 0') or diag $h->log_text;
$h->reap;
ok(!kill(0, $newp[0]), 'the proxy stopped with the helper');
unlike($h->log_text(1), qr/ERROR: AddressSanitizer|runtime error:|LeakSanitizer/,
    'no sanitizer report');
$h->leaks_ok('at the end');
$e->finish_hosts;
done_testing;
