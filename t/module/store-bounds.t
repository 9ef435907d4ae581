#!/usr/bin/perl
# Issue 7, item 1: nothing an agent sends makes what the gateway stores, or
# a reply it builds, unbounded.  500 execs with the largest argv a
# reviewer can be shown whole (31 KiB; each needs a human: git push) while
# another tenant works:
# Redis grows by a bounded amount (each request keeps one approval record
# with a summary of at most 32 KiB and one audit entry of at most 20 KiB),
# the summary shows the whole argv and pins it by its size and SHA-256; a
# larger one (63 KiB, the most the helper takes) is refused (422
# summary_too_large) with nothing stored; the reviewer's
# list and the audit query answer 200 in pages with a "next" cursor and a
# byte bound, and the other tenant's requests answer 200 throughout.  A
# 1 MiB argv, more than the helper's 64 KiB request takes, is refused
# (413) before any approval is stored for it.
# VETO_STORE_N changes the number of requests (500).

use strict;
use warnings;

use Test::More;
use Digest::SHA ();
use HTTP::Tiny;
use JSON::PP ();
use POSIX ();
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);
use Time::HiRes qw(sleep time);

VetoNginx::need(qw(helper redis));

my $N = $ENV{VETO_STORE_N} // 500;
my $WORKERS = 4;

# what one request may keep in Redis at most: its approval record (a
# summary of at most 32 KiB, the other fields, the index entry) and its
# audit entry (at most 20 KiB), with Redis' own overhead
my $PER_REQUEST = 60 * 1024;

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            approvals => { exec_argv => ['git push*'] },
        },
        globex => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
        },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;
$n->start(redis => 1, policy => $policy, max_body => '2m');

my $agent = $n->token(sub => 'agent-1');
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review audit:read');
my $other = $n->token(sub => 'agent-g', tenant => 'globex');

my ($st, $h, $b, $j);

eventually('Redis is up', 10, sub {
    ($st, $h, $b, $j) = $n->request(GET => '/v1/health');
    ($j->{redis} // '') eq 'up';
});
is($j->{redis}, 'up', 'redis up');

($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, { ttl_s => 600 });
is($st, 201, 'acme sandbox') or diag $b;
my $sb = $j->{id};
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $other, { ttl_s => 600 });
is($st, 201, 'globex sandbox') or diag $b;
my $gsb = $j->{id};

# a body just under the 1 MiB JSON limit: more than the helper takes,
# refused before the gate, nothing stored
my $huge = $VetoNginx::JSON->encode({ argv => ['git', 'push',
                                               'x' x (1024 * 1024 - 64)] });
ok(length($huge) <= 1024 * 1024, 'a 1 MiB body fits the JSON limit');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $huge,
                                { 'Content-Type' => 'application/json' });
is($st, 413, 'a 1 MiB argv: 413, the helper could never take it') or diag $b;
is($j->{limit}, 'request_json', '... naming the limit');
is($n->redis->zcard('veto:{acme}:appr:idx'), 0, '... and no approval stored');

# the largest argv an exec can carry (the helper's request header is
# 64 KiB): ["git", "push", 63 KiB of x]; a reviewer could not be shown it
# whole within the summary's 32 KiB
my $body = $VetoNginx::JSON->encode({ argv => ['git', 'push', 'x' x (63 * 1024)] });
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $body,
                                { 'Content-Type' => 'application/json' });
is($st, 422, 'a 63 KiB argv: 422, it cannot be shown whole') or diag substr($b, 0, 500);
is($j->{type}, 'urn:veto-sandbox:problem:summary_too_large', '... summary_too_large');
is($n->redis->zcard('veto:{acme}:appr:idx'), 0, '... and no approval stored');

# the largest that fits: ["git", "push", 31 KiB of x]
my $big = 'x' x (31 * 1024);
$body = $VetoNginx::JSON->encode({ argv => ['git', 'push', $big] });

# one to look at
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $body,
                                { 'Content-Type' => 'application/json' });
is($st, 202, 'a 31 KiB argv needs a human: 202') or diag substr($b, 0, 500);
my $s = $j->{summary} // {};
ok(length($b) < 36 * 1024, 'the 202 is bounded (' . length($b) . ' bytes)');
ok(!exists $s->{argv_truncated}, 'summary: nothing cut');
is($s->{argv_bytes}, 7 + length($big), 'summary: argv_bytes is the whole argv');
is($s->{argv_sha256}, Digest::SHA::sha256_hex("git\0push\0$big\0"),
   'summary: argv_sha256 pins the whole argv (each element NUL ended)');
is_deeply($s->{argv}, ['git', 'push', $big], 'summary: the whole argv');
is($s->{sandbox}, $sb, 'summary: the sandbox');

my $mem0 = $n->redis->info('memory')->{used_memory};

# the other tenant, all along: every request answers
my $flag = $n->dir . '/store-done';
pipe(my $mon_r, my $mon_w) or die;
my $mon = fork() // die;
if ($mon == 0) {
    close $mon_r;
    my $ua = HTTP::Tiny->new(timeout => 30, keep_alive => 1);
    my %hd = (Authorization => "Bearer $other",
              'Content-Type' => 'application/json');
    my ($ok, $bad, $last) = (0, 0, '');
    while (!-e $flag) {
        my $r1 = $ua->get($n->url("/v1/sandboxes/$gsb"), { headers => \%hd });
        my $r2 = $ua->post($n->url("/v1/sandboxes/$gsb/exec"),
                           { headers => \%hd, content => '{"argv":["echo","hi"]}' });
        for my $res ($r1, $r2) {
            if ($res->{status} == 200) { $ok++ } else { $bad++; $last = "$res->{status} $res->{content}" }
        }
        sleep 0.05;
    }
    print {$mon_w} "$ok $bad $last\n";
    close $mon_w;
    POSIX::_exit(0);
}
close $mon_w;

# N more, from WORKERS agents' connections at once
my $t0 = time;
my @kids;
for my $w (0 .. $WORKERS - 1) {
    pipe(my $rd, my $wr) or die;
    my $pid = fork() // die;
    if ($pid == 0) {
        close $rd;
        my $ua = HTTP::Tiny->new(timeout => 60, keep_alive => 1);
        my %c;
        my $count = int($N / $WORKERS) + ($w < $N % $WORKERS ? 1 : 0);
        $count-- if $w == 0;    # the one above
        for (1 .. $count) {
            my $res = $ua->post($n->url("/v1/sandboxes/$sb/exec"),
                { headers => { Authorization => "Bearer $agent",
                               'Content-Type' => 'application/json' },
                  content => $body });
            $c{$res->{status}}++;
        }
        print {$wr} join(' ', map { "$_=$c{$_}" } sort keys %c), "\n";
        close $wr;
        POSIX::_exit(0);
    }
    close $wr;
    push @kids, [$pid, $rd];
}

my %status;
for my $k (@kids) {
    my $fh = $k->[1];
    my $line = <$fh> // '';
    waitpid $k->[0], 0;
    $status{$1} += $2 while $line =~ /(\d+)=(\d+)/g;
}
my $took = time - $t0;
is($status{202} // 0, $N - 1, "the other " . ($N - 1) . " requests answered 202 ("
   . join(', ', map { "$_: $status{$_}" } sort keys %status)
   . sprintf(', %.1f s)', $took));

open(my $fh, '>', $flag) or die;
close $fh;
my $line = <$mon_r> // '';
waitpid $mon, 0;
my ($mok, $mbad, $mlast) = $line =~ /^(\d+) (\d+) ?(.*)$/;
ok(($mok // 0) > 0, "the other tenant was served throughout (" . ($mok // 0)
   . " answers)");
is($mbad, 0, 'and every one of its requests answered 200') or diag $mlast;

# what Redis holds
my $mem1 = $n->redis->info('memory')->{used_memory};
my $grew = $mem1 - $mem0;
ok($grew < $N * $PER_REQUEST, sprintf("Redis grew by %.1f MiB for %d requests "
   . "(bound %.1f MiB)", $grew / 1048576, $N, $N * $PER_REQUEST / 1048576));
diag(sprintf('Redis used_memory %.1f -> %.1f MiB', $mem0 / 1048576,
             $mem1 / 1048576));

my $r = $n->redis;
my @ids = $r->zrange('veto:{acme}:appr:idx', 0, -1);
is(scalar @ids, $N, "$N approval records");
my $max = 0;
for my $id (@ids) {
    my $l = $r->hstrlen("veto:{acme}:appr:$id", 'summary');
    $max = $l if $l > $max;
}
ok($max > 0 && $max <= 32768, "every summary at most 32 KiB (largest $max)");

my $emax = 0;
for my $e (@{ $r->xrange('veto:{acme}:audit', '-', '+') }) {
    my $l = 0;
    $l += length($_) for @{ $e->[1] };
    $emax = $l if $l > $emax;
}
ok($emax > 0 && $emax <= 20 * 1024, "every audit entry at most 20 KiB (largest $emax)");

# the reviewer's list: 200, in pages, each bounded
my (%seen, $pages, $largest);
my $path = '/v1/approvals?state=pending';
while ($path && ($pages // 0) < 50) {
    ($st, $h, $b, $j) = $n->request(GET => $path, $rev);
    is($st, 200, "list page " . ($pages // 0)) or last;
    $pages++;
    $largest = length($b) if length($b) > ($largest // 0);
    $seen{$_->{id}}++ for @{ $j->{approvals} };
    ok(@{ $j->{approvals} } <= 100, 'at most 100 a page') if $pages == 1;
    $path = defined $j->{next} ? '/v1/approvals?state=pending&cursor=' . $j->{next}
                               : undef;
}
is(scalar keys %seen, $N, "the pages list all $N, each once");
ok(!grep({ $_ > 1 } values %seen), 'no record twice');
ok($pages >= int($N / 100), "in pages ($pages)");
ok($largest < 2 * 1024 * 1024, "each page under 2 MiB (largest $largest bytes)");

($st, $h, $b, $j) = $n->request(GET => '/v1/approvals?state=pending&limit=201', $rev);
is($st, 400, 'limit over 200: 400');
is($j->{field}, 'limit', '... naming limit');
($st, $h, $b, $j) = $n->request(GET => '/v1/approvals?cursor=zzz', $rev);
is($st, 400, 'a cursor not from a page: 400');
is($j->{field}, 'cursor', '... naming cursor');

# the audit trail: 200, pages bounded in bytes, not only in entries
($st, $h, $b, $j) = $n->request(GET => '/v1/audit?limit=1000', $rev);
is($st, 200, 'audit query');
ok(length($b) < 3 * 1024 * 1024, 'an audit page is bounded in bytes ('
   . length($b) . ')');
ok(@{ $j->{records} } < 1000, 'so it holds fewer than the limit of these records ('
   . scalar(@{ $j->{records} }) . ')');
ok(defined $j->{next}, 'and says where the next page starts');
is(ref $j->{records}[0]{detail}, 'HASH', 'detail is a JSON object');
my $first = $j->{records}[-1]{id};
($st, $h, $b, $j) = $n->request(GET => '/v1/audit?limit=1000&cursor=' . $j->{next}, $rev);
is($st, 200, 'the next audit page');
ok(@{ $j->{records} } && $j->{records}[0]{id} lt $first,
   'it goes on below the last page');

done_testing();
