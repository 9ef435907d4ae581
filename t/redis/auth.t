#!/usr/bin/perl
# Redis over TCP on loopback with AUTH (password, and an ACL user) and a
# database number: the worker authenticates, selects, and serves; a wrong
# password leaves Redis "down" and decisions refused (503).

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);
use IO::Socket::INET;
use POSIX ();
use Time::HiRes qw(sleep time);

VetoNginx::need(qw(helper redis));

# a free port in 6400-6499
my $port;
for my $p (map { 6400 + ($$ + $_) % 100 } 0 .. 99) {
    my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1',
                                  LocalPort => $p, ReuseAddr => 1) or next;
    close $s;
    $port = $p;
    last;
}
die "no free port in 6400-6499\n" unless $port;

my $n = VetoNginx->new;
my $d = $n->dir;

my $pid = fork() // die "fork: $!";
if ($pid == 0) {
    open STDOUT, '>>', "$d/logs/redis-tcp.log" or die;
    open STDERR, '>&', \*STDOUT or die;
    exec 'redis-server', '--port', $port, '--bind', '127.0.0.1',
         '--save', '', '--appendonly', 'no', '--dir', $d,
         '--requirepass', 'main-secret',
         '--user', 'veto', 'on', '>acl-secret', '~veto:*', '+@all';
    die "exec: $!";
}
my $owner = $$;
END { if ($pid && $$ == $owner) { kill 'TERM', $pid; waitpid $pid, 0; } }

eventually('redis-server listens', 5, sub {
    IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port");
});

require Redis;
my $r = Redis->new(server => "127.0.0.1:$port", password => 'main-secret',
                   reconnect => 0);
$r->select(5);

my $policy = { version => 1, tenants => { acme => {
    ceilings => { memory_mb => 512, timeout_s => 30 },
    approvals => { always => ['sandbox.delete'] } } } };

$n->start_helper;

my $agent = $n->token(sub => 'agent-1');

sub health_redis
{
    my $state = '';
    eventually('Redis is up', 10, sub {
        my (undef, undef, undef, $j) = $n->request(GET => '/v1/health');
        $state = $j->{redis} // '';
        $state eq 'up';
    });
    return $state;
}

for my $case (["password", "veto_sandbox_redis_password main-secret;"],
              ["ACL user", "veto_sandbox_redis_user veto;\n"
                           . "veto_sandbox_redis_password acl-secret;"]) {
    my ($name, $auth) = @$case;
    $n->render(veto => $n->default_veto,
               http_extra => "veto_sandbox_redis 127.0.0.1:$port;\n"
                             . "veto_sandbox_redis_db 5;\n$auth");
    $n->start(keep_conf => 1, policy => $policy);
    is(health_redis(), 'up', "$name: authenticated and ready");
    my ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, { ttl_s => 60 });
    is($st, 201, "$name: create") or diag $b;
    ($st, $h, $b, $j) = $n->request(DELETE => "/v1/sandboxes/$j->{id}", $agent);
    is($st, 202, "$name: delete needs approval: 202");
    eventually("$name: record in db 5", 5,
               sub { $r->exists("veto:{acme}:appr:$j->{approval_id}") });
    $n->stop;
}

$n->render(veto => $n->default_veto,
           http_extra => "veto_sandbox_redis 127.0.0.1:$port;\n"
                         . "veto_sandbox_redis_password wrong;\n"
                         . "veto_sandbox_redis_timeout 300ms;");
$n->start(keep_conf => 1, policy => $policy);
sleep 0.5;    # on purpose: time for a wrong connect to succeed
my ($st, $h, $b, $j) = $n->request(GET => '/v1/health');
is($j->{redis}, 'down', 'wrong password: redis down');
($st) = $n->request(GET => '/v1/sandboxes', $agent);
is($st, 503, 'wrong password: decisions refused');
like($n->error_log, qr/WRONGPASS|invalid password|AUTH/i, 'the log says why');
$n->stop;

done_testing;
