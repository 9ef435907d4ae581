#!/usr/bin/perl
# Each worker's Redis connection loads the module's scripts as it
# connects, before any request: through a real nginx (two workers) and
# Redis, once both workers say they are connected and before a single
# request, Redis has the scripts a create's and an exec's bookkeeping
# run (quota_acquire, approval_create, sandbox_extend) under the SHA-1 the
# module sends, and SCRIPT FLUSH then a reconnect (Redis restarted)
# loads them again.  Without it, the first EVALSHA of a script went back
# as EVAL only when NOSCRIPT came, after its request had answered: a
# create's ownership record and env were not yet in Redis when the next
# request, on the other worker, read them (409 sandbox_env_unknown, in
# t/approval/race.t about once in fifty runs).

use strict;
use warnings;

use Test::More;
use Digest::SHA qw(sha1_hex);
use lib 't/lib';
use VetoNginx;
use VetoRedisTest qw(scripts);
use Eventually qw(eventually);

VetoNginx::need(qw(redis));

my $n = VetoNginx->new;
$n->start_redis;
$n->start(redis => 1, workers => 2);

eventually('both workers connected to Redis', 10, sub {
    my @c = $n->error_log =~ /redis "[^"]*": connected/g;
    @c >= 2;
});

my $s = scripts();
my $r = $n->redis;
for my $name (qw(quota_acquire approval_create sandbox_extend)) {
    ok(exists $s->{$name}, "$name is a script of the module") or next;
    my ($have) = $r->script_exists(sha1_hex($s->{$name}));
    is($have, 1, "$name is in Redis before any request");
}

# a Redis that lost them (restarted, or flushed): loaded on the next
# connection
$r->script_flush;
my ($gone) = $r->script_exists(sha1_hex($s->{quota_acquire}));
is($gone, 0, 'SCRIPT FLUSH: gone');
my $before = () = $n->error_log =~ /redis "[^"]*": connected/g;
$r->client_kill('TYPE', 'normal', 'SKIPME', 'yes');
eventually('both workers connected again', 15, sub {
    my @c = $n->error_log =~ /redis "[^"]*": connected/g;
    @c >= $before + 2;
});
my ($back) = $r->script_exists(sha1_hex($s->{quota_acquire}));
is($back, 1, 'loaded again by the new connections');

done_testing;
