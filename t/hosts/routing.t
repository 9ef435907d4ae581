#!/usr/bin/perl
# Routing between gateway hosts (issue 20): three hosts, each an nginx
# in its own network namespace with its own address on a bridge this
# test makes, with its own helper; one Redis under Sentinel on the
# bridge's address; the same JWT keys and the same veto_sandbox_peer_key.  A
# sandbox made on a is used through b and c: exec, files, a streamed exec
# (ndjson), a background exec and its output, a gated exec (asked through b,
# approved through c, used through b: run once on a, the approval consumed
# once, one record of it), delete. The receiving host runs a forwarded request
# only with a good credential: none (the gate decides), a wrong key, another
# body, another identity, an expired one, a replayed one, a malformed one, two
# headers are refused with peer_credential_invalid naming why.  The owner's own
# errors pass the hop unchanged; an owner whose nginx died before its
# lease ran out is 503 host_unavailable (problem+json, request_sent,
# Retry-After only when nothing was sent), and nothing ran twice.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use VetoSentinel;
use VetoHosts qw(up hosts_ready);
use Eventually qw(eventually);
use JSON::PP;
use Digest::SHA qw(hmac_sha256_hex sha256_hex);
use Time::HiRes qw(sleep time);
use POSIX ();

VetoNginx::need(qw(helper redis));
VetoSentinel::need();

my $policy = VetoHosts::acme_policy(
    approvals => { exec_argv => ['sh -c *gated*'] },
    quotas => { concurrent_sandboxes => 4 });

my $peer_key = unpack('H*', join '', map { chr int rand 256 } 1 .. 32);

# ---- nginx -t
{
    my $t = VetoNginx->new;
    $t->write_policy($policy);
    VetoNginx::spew($t->dir . '/short.key', "abc\n");
    for my $c (["veto_sandbox_peer_key short.key;", qr/at least 32 bytes/,
                'a short key'],
               ["veto_sandbox_peer_pass veto_peer;", qr/named location/,
                'a pass that is not a named location'],
               ["veto_sandbox_redis 127.0.0.1:1; veto_sandbox_peer_pass \@p;",
                qr/routing between hosts needs/, 'a pass without a key'])
    {
        $t->render(http_extra => $c->[0]);
        my ($ok, $out) = $t->test_config;
        ok(!$ok, "nginx -t refuses $c->[2]");
        like($out, $c->[1], "... naming why: $c->[2]");
    }
}

# ---- the network: a bridge, one namespace and address per host
my $hosts = VetoHosts->new(qw(a b c));
my %host_addr = map { $_ => $hosts->addr($_) } qw(a b c);

# ---- three hosts
my $s = VetoSentinel->new(addr => $hosts->gateway);
# c's helper holds one sandbox at most: the next create is placed
my %gw = VetoHosts::gateways(
    names => [qw(a b c)], sentinel => $s, policy => $policy, net => $hosts,
    address => 1, routing => 1, peer_key => $peer_key, read_timeout => '60s',
    check => 1,
    helper => sub { (max_sandboxes => $_[0] eq 'c' ? 1 : 8) });
my ($A, $B, $C) = @gw{qw(a b c)};

hosts_ready($s, %gw);
# the master, asked again whenever its connection went (a failover, or
# Sentinel's CLIENT KILL when it turns a server into a replica)
sub M { $s->live_master }
is(M()->hget('veto:{:hosts}:lease:gw-a', 'addr'), "$host_addr{a}:" . $A->port,
   "a's lease names its address in its namespace");

my $agent = $A->token(sub => 'agent-1');
my $rev = $A->token(sub => 'human-1', scope => 'approvals:review');
my $auditor = $A->token(sub => 'carol', scope => 'audit:read');
my ($st, $h, $b, $j);

($st, $h, $b, $j) = $A->request(POST => '/v1/sandboxes', $agent, {});
is($st, 201, 'create on a') or diag $b;
my $sa = $j->{id};
eventually('owned by a', 5,
           sub { (M()->hget("veto:{acme}:sbx:own:$sa", 'gateway') // '') eq 'gw-a' });

# ---- exec, files through b and c
($st, $h, $b, $j) = $B->request(POST => "/v1/sandboxes/$sa/exec", $agent,
                                { argv => ['sh', '-c', 'echo from $(cat /etc/hostname 2>/dev/null || echo a); echo ran >> /workspace/runs'] });
is($st, 200, 'exec through b') or diag $b;
like($j->{stdout} // '', qr/^from /, '... its output');
($st, $h, $b, $j) = $C->request(PUT => "/v1/sandboxes/$sa/files?path=hello.txt",
                                $agent, "hello through c\n");
is($st, 200, 'a file written through c') or diag $b;
is($j->{sha256}, sha256_hex("hello through c\n"), '... the bytes sent');
($st, $h, $b) = $B->request(GET => "/v1/sandboxes/$sa/files?path=hello.txt",
                            $agent);
is($st, 200, 'read through b');
is($b, "hello through c\n", '... the same bytes');
($st, $h, $b) = $A->request(GET => "/v1/sandboxes/$sa/files?path=runs", $agent);
is($b, "ran\n", 'the exec ran once, on a');

# ---- a streamed exec through b
($st, $h, $b) = $B->request(POST => "/v1/sandboxes/$sa/exec", $agent,
                            { argv => ['sh', '-c', 'echo one; echo two >&2; echo three'] },
                            { Accept => 'application/x-ndjson' });
is($st, 200, 'a streamed exec through b') or diag $b;
like($h->{'content-type'} // '', qr{application/x-ndjson}, '... ndjson');
my @lines = map { decode_json($_) } grep { length } split /\n/, $b;
my $out = join '', map { $_->{data} } grep { ($_->{stream} // '') eq 'stdout' } @lines;
is($out, "one\nthree\n", '... stdout events');
ok((grep { exists(($_->{result} // {})->{exit_code}) } @lines),
   '... and the result')
    or diag explain \@lines;

# ---- a background exec through c, its output through b
($st, $h, $b, $j) = $C->request(POST => "/v1/sandboxes/$sa/exec", $agent,
                                { argv => ['sh', '-c', 'echo bg; sleep 0.3; echo end'],
                                  background => JSON::PP::true });
is($st, 202, 'a background exec through c') or diag $b;
my $ex = $j->{id};
is($h->{location}, "/v1/sandboxes/$sa/execs/$ex", '... its Location');
eventually('... it ends (status through b)', 10, sub {
    my (undef, undef, undef, $e) = $B->request(GET => "/v1/sandboxes/$sa/execs/$ex", $agent);
    ($e->{state} // '') ne 'running' ? $e : undef
});
($st, $h, $b, $j) = $B->request(GET => "/v1/sandboxes/$sa/execs/$ex/output?stream=stdout", $agent);
is($st, 200, '... its output through b') or diag $b;
is($j->{data}, "bg\nend\n", '... all of it');

# ---- a gated exec: asked through b, approved through c, used through b
my $gated = { argv => ['sh', '-c', 'echo gated >> /workspace/gated'] };
($st, $h, $b, $j) = $B->request(POST => "/v1/sandboxes/$sa/exec", $agent, $gated);
is($st, 202, 'a gated exec through b: an approval asked') or diag $b;
my $apr = $j->{approval_id};
($st) = $C->request(POST => "/v1/approvals/$apr/approve", $rev, {});
is($st, 200, 'approved through c');
($st, $h, $b, $j) = $B->request(POST => "/v1/sandboxes/$sa/exec", $agent, $gated,
                                { 'Veto-Approval' => $apr });
is($st, 200, 'used through b: runs on a') or diag $b;
($st, $h, $b, $j) = $C->request(POST => "/v1/sandboxes/$sa/exec", $agent, $gated,
                                { 'Veto-Approval' => $apr });
is($st, 403, 'used again through c: refused');
is($j->{state}, 'consumed', '... consumed');
($st, $h, $b) = $A->request(GET => "/v1/sandboxes/$sa/files?path=gated", $agent);
is($b, "gated\n", 'it ran once');
my $audit = M()->xrange('veto:{acme}:audit', '-', '+');
my @consumed = grep { my %f = @{ $_->[1] };
                      ($f{action} // '') =~ /approval/ && ($f{outcome} // '') eq 'approval_consumed'
                      || (($f{outcome} // '') eq 'approval_consumed') } @$audit;
my @byapr = grep { my %f = @{ $_->[1] }; join(' ', values %f) =~ /\Q$apr\E/ } @$audit;
my @cons = grep { my %f = @{ $_->[1] }; ($f{outcome} // '') eq 'approval_consumed' }
           @byapr;
is(scalar @cons, 1, 'one record of the approval consumed')
    or diag explain \@byapr;

# ---- forged requests, straight to a
sub cred
{
    my (%o) = @_;
    my $t = $o{t} // int(time * 1000);
    my $n = $o{n} // unpack('H*', join '', map { chr int rand 256 } 1 .. 16);
    my $body = $o{body} // '';
    my $bd = sha256_hex($body);
    my $jwt = $o{jwt};
    my ($payload) = (split /\./, $jwt)[1];
    $payload =~ tr{-_}{+/};
    $payload .= '=' x ((4 - length($payload) % 4) % 4);
    require MIME::Base64;
    my $claims = decode_json(MIME::Base64::decode_base64($payload));
    my $text = "veto-peer-v1\n" . ($o{h} // 'gw-b') . "\n$t\n$n\n$o{method}\n$o{uri}\n"
             . ($o{bd} // $bd) . "\n$claims->{tenant}\n$claims->{sub}\n"
             . ($claims->{jti} // '') . "\n\n"      # no quota slot (q)
             . (defined $o{e} ? "$o{e}\n" : '');    # the owner's helper run
    my $sig = hmac_sha256_hex($text, $o{key} // $peer_key);
    return "v1;h=" . ($o{h} // 'gw-b') . ";t=$t;n=$n;b=" . ($o{bd} // $bd)
         . (defined $o{e} ? ";e=$o{e}" : '') . ";s=$sig";
}

my $uri = "/v1/sandboxes/$sa/exec";
my $body = encode_json($gated);
sub forged
{
    my ($cred, %o) = @_;
    return $A->request(POST => $uri, $o{jwt} // $agent, $o{body} // $body,
                       { 'Content-Type' => 'application/json',
                         ($cred ? ('Veto-Peer-Credential' => $cred) : ()),
                         %{ $o{headers} // {} } });
}

($st, $h, $b, $j) = forged(undef);
is($st, 202, 'no credential: the gate decides (an approval is asked)') or diag $b;

my %bad = (
    'a wrong key'   => [cred(method => 'POST', uri => $uri, body => $body, jwt => $agent,
                             key => 'f' x 64), 'signature'],
    'another body'  => [cred(method => 'POST', uri => $uri, body => '{"argv":["true"]}',
                             jwt => $agent), 'body'],
    'an expired one'=> [cred(method => 'POST', uri => $uri, body => $body, jwt => $agent,
                             t => int(time * 1000) - 60_000), 'expired'],
    'a malformed one' => ['v1;h=gw-b;t=1;n=zz', 'malformed'],
    'another identity' => [cred(method => 'POST', uri => $uri, body => $body,
                                jwt => $A->token(sub => 'agent-2')), 'signature'],
    'another URI'   => [cred(method => 'POST', uri => "$uri?x=1", body => $body,
                             jwt => $agent), 'signature'],
);
for my $k (sort keys %bad) {
    ($st, $h, $b, $j) = forged($bad{$k}[0]);
    is($st, 403, "$k: 403") or diag $b;
    is($j->{type}, 'urn:veto-sandbox:problem:peer_credential_invalid',
       "... peer_credential_invalid");
    is($j->{reason}, $bad{$k}[1], "... reason $bad{$k}[1]");
}

my $good = cred(method => 'POST', uri => $uri, body => $body, jwt => $agent);
($st, $h, $b, $j) = forged($good);
is($st, 200, 'a good credential: a runs the gated exec without asking') or diag $b;
($st, $h, $b, $j) = forged($good);
is($st, 403, 'the same credential again: 403') or diag $b;
is($j->{reason}, 'replayed', '... replayed');
($st, $h, $b, $j) = forged($good);
is($st, 403, 'and a third time: 403') or diag $b;
($st, $h, $b) = $A->request(GET => "/v1/sandboxes/$sa/files?path=gated", $agent);
is($b, "gated\ngated\n", 'the good credential ran once');
($st, $h, $b, $j) = $A->request(POST => $uri, $agent, $body,
    { 'Content-Type' => 'application/json',
      'Veto-Peer-Credential' => [cred(method => 'POST', uri => $uri, body => $body, jwt => $agent),
                                 cred(method => 'POST', uri => $uri, body => $body, jwt => $agent)] });
is($st, 403, 'two credentials: 403') or diag $b;
is($j->{reason}, 'malformed', '... malformed');
($st, $h, $b) = $A->request(GET => "/v1/sandboxes/$sa/files?path=gated", $agent);
is($b, "gated\ngated\n", 'only the good credential ran');

# ---- the epoch fence across the hop: b reads the ownership record to
# route, and the run of a's helper it names is signed into the
# credential; a's helper refuses a run that is not its own
my $own = "veto:{acme}:sbx:own:$sa";
my $run = M()->hget($own, 'epoch') // '';
like($run, qr/^[0-9a-f]{32}\z/, "the record names a run of a's helper");
my $other = $run =~ tr/0-9a-f/1-9a-f0/r;
my $fenced = { argv => ['sh', '-c', 'echo fenced >> /workspace/fenced'] };

M()->hset($own, 'epoch', $other);
($st, $h, $b, $j) = $B->request(POST => "/v1/sandboxes/$sa/exec", $agent, $fenced);
is($st, 404, "exec through b, the record naming another run of a's helper: 404")
    or diag $b;
is($j->{type}, 'urn:veto-sandbox:problem:not_found', '... not_found');
($st, $h, $b, $j) = $C->request(PUT => "/v1/sandboxes/$sa/files?path=fenced-w",
                                $agent, "no\n");
is($st, 404, '... a write through c: 404') or diag $b;
like($A->error_log // '',
     qr/ownership record's epoch $other is not the helper's $run/,
     '... a logs the disagreement, naming both runs');

# a credential signed for the wrong run, sent straight to a: fenced too
my $fbody = encode_json($fenced);
($st, $h, $b, $j) = forged(cred(method => 'POST', uri => $uri, body => $fbody,
                                jwt => $agent, e => $other), body => $fbody);
is($st, 404, 'a good credential naming another run, straight to a: 404')
    or diag $b;

# put right: through b it runs, and nothing ran before
M()->hset($own, 'epoch', $run);
($st, $h, $b, $j) = $B->request(POST => "/v1/sandboxes/$sa/exec", $agent,
    { argv => ['sh', '-c', 'cat /workspace/fenced /workspace/fenced-w 2>&1; echo right'] });
is($st, 200, 'the record put right: exec through b runs') or diag $b;
unlike($j->{stdout} // '', qr/^(fenced|no)$/m, '... nothing fenced had run or been written');
like($j->{stdout} // '', qr/right\n\z/, '... this one ran');

# the epoch is signed: changed, the credential is refused; malformed too
my $signed = cred(method => 'POST', uri => $uri, body => $fbody, jwt => $agent,
                  e => $run);
(my $changed = $signed) =~ s/;e=$run;/;e=$other;/;
isnt($changed, $signed, 'a credential with its epoch changed');
($st, $h, $b, $j) = forged($changed, body => $fbody);
is($st, 403, '... refused: 403') or diag $b;
is($j->{reason}, 'signature', '... reason signature');
for my $bad (uc($run), substr($run, 1), "${run}0", '') {
    ($st, $h, $b, $j) = forged(cred(method => 'POST', uri => $uri, body => $fbody,
                                    jwt => $agent, e => $bad), body => $fbody);
    is($st, 403, "an epoch \"$bad\": 403") or diag $b;
    is($j->{type}, 'urn:veto-sandbox:problem:peer_credential_invalid',
       '... peer_credential_invalid');
    is($j->{reason}, 'malformed', '... reason malformed');
}
($st, $h, $b, $j) = forged($signed, body => $fbody);
is($st, 200, 'the credential as signed, naming the right run: runs') or diag $b;
($st, $h, $b, $j) = $A->request(GET => "/v1/sandboxes/$sa/files?path=fenced", $agent);
is($b, "fenced\n", '... once');

# ---- the Redis master killed (kill -9) while execs go through b to a:
# only 200 and 503 during the switch, each 200 ran once and no 503 ran,
# service resumes by itself, the hosts' leases are renewed on the new
# master
{
    my $old = $s->kill_master;
    my (%seen, $ok_after, $n200);
    my $t0 = time;
    my $resumed;
    while (time - $t0 < 45) {
        my ($st2, undef, $b2) = $B->request(POST => "/v1/sandboxes/$sa/exec", $agent,
            { argv => ['sh', '-c', 'echo x >> /workspace/failover'] });
        $seen{$st2}++;
        $n200++ if $st2 == 200;
        if ($st2 == 200 && $seen{503}) { $resumed //= time - $t0; last if ++$ok_after >= 5 }
        elsif ($st2 != 200) { $ok_after = 0 }
        sleep 0.05;
    }
    ok($seen{503}, 'the switch was seen: 503 while there was no master')
        or diag explain \%seen;
    is_deeply([sort { $::a <=> $::b } keys %seen], [200, 503],
              'only 200 and 503 during the switch') or diag explain \%seen;
    ok(defined $resumed, 'service resumed by itself' . (defined $resumed
       ? sprintf(' (%.1f s after the kill)', $resumed) : ''));
    my $new = $s->wait_failover($old, 30);
    ($st, $h, $b) = $A->request(GET => "/v1/sandboxes/$sa/files?path=failover", $agent);
    my $lines = () = ($b // '') =~ /x\n/g;
    is($lines, $n200, "each 200 ran once, no 503 ran ($n200)");
    eventually('the leases are renewed on the new master', 15, sub {
        M()->exists('veto:{:hosts}:lease:gw-a')
            && M()->exists('veto:{:hosts}:lease:gw-b')
            && M()->exists('veto:{:hosts}:lease:gw-c') });
    ($st, $h, $b) = $C->request(POST => "/v1/sandboxes/$sa/exec", $agent,
                                { argv => ['true'] });
    is($st, 200, 'through c too') or diag $b;
}

# ---- delete through c
($st, $h, $b, $j) = $C->request(DELETE => "/v1/sandboxes/$sa", $agent);
is($st, 200, 'delete through c') or diag $b;
($st, $h, $b, $j) = $A->request(GET => "/v1/sandboxes/$sa", $agent);
is($j->{state}, 'ended', 'ended on a') or diag $b;
is($j->{end_reason}, 'deleted', '... deleted');
eventually('its quota slot is free', 5,
           sub { !defined M()->zscore('veto:{acme}:sbx:live', $sa) });

# the ended sandbox, its record forged back naming another run of a's
# helper: through b, the helper's ENDED record (410), nothing freed twice
my $fence_re = qr/sandbox "$sa": the ownership record's epoch $other is not/;
my $fences = () = ($A->error_log // '') =~ /$fence_re/g;
M()->hset($own, 'agent', 'agent-1', 'gateway', 'gw-a', 'epoch', $other);
($st, $h, $b, $j) = $B->request(POST => "/v1/sandboxes/$sa/exec", $agent,
                                { argv => ['true'] });
is($st, 410, 'exec through b of the ended sandbox, the record naming another run: 410')
    or diag $b;
is($j->{type}, 'urn:veto-sandbox:problem:ended', '... ended');
is($j->{end_reason}, 'deleted', "... with a's helper's end_reason") or diag $b;
# (a's log line is written around its answer: waited for, not raced)
ok(eventually('the fence on a logged its answer', 5, sub {
       my $n = () = ($A->error_log // '') =~ /$fence_re/g;
       $n == $fences + 1 }),
   '... the answer of the fence on a (the epoch came with it)');
M()->del($own);

# ---- placement: c is full, a create landing on c goes elsewhere
($st, $h, $b, $j) = $C->request(POST => '/v1/sandboxes', $agent, {});
is($st, 201, 'a create on c, empty: made on c') or diag $b;
my $sc = $j->{id};
eventually('... owned by c', 5,
           sub { (M()->hget("veto:{acme}:sbx:own:$sc", 'gateway') // '') eq 'gw-c' });
eventually("c's lease says it is full (1 of 1)", 30,
           sub { (M()->hget('veto:{:hosts}:lease:gw-c', 'sandboxes') // '') eq '1' });
($st, $h, $b, $j) = $C->request(POST => '/v1/sandboxes', $agent, {});
is($st, 201, 'another create on c: 201') or diag $b;
my $sp = $j->{id};
my $placed = eventually('the sandbox made through c has an owner', 5,
    sub { M()->hget("veto:{acme}:sbx:own:$sp", 'gateway') }) // '';
like($placed, qr/^gw-[ab]$/, "... made on a host with room ($placed)");
($st, $h, $b, $j) = $C->request(POST => "/v1/sandboxes/$sp/exec", $agent,
                                { argv => ['true'] });
is($st, 200, '... and used through c') or diag $b;
my @live = @{ M()->zrange('veto:{acme}:sbx:live', 0, -1) };
is_deeply([sort @live], [sort $sc, $sp],
          'the quota counts the two sandboxes, no provisional slot left');
for my $id ($sc, $sp) {
    ($st) = $C->request(DELETE => "/v1/sandboxes/$id", $agent);
    is($st, 200, "delete $id through c");
}

# ---- the owner dies before its lease runs out (its nginx, kill -9; its
# helper lives): the lease still names a, so b routes to it and the hop
# fails.  The agent hears 503 host_unavailable naming a (problem+json,
# never nginx's HTML 502), Retry-After (nothing was sent); nothing ran.
($st, $h, $b, $j) = $A->request(POST => '/v1/sandboxes', $agent, {});
is($st, 201, 'a sandbox made on a') or diag $b;
my $sd = $j->{id};
eventually('... owned by a', 5,
           sub { (M()->hget("veto:{acme}:sbx:own:$sd", 'gateway') // '') eq 'gw-a' });
# the owner's own error answers pass through the hop as they are
my ($dst, undef, undef, $dj) = $A->request(GET => "/v1/sandboxes/$sd/files?path=missing",
                                           $agent);
($st, $h, $b, $j) = $B->request(GET => "/v1/sandboxes/$sd/files?path=missing", $agent);
is($st, $dst, "a's own error through b: its status ($dst)") or diag $b;
like($h->{'content-type'} // '', qr{^application/problem\+json}, '... problem+json');
is_deeply($j, $dj, '... the owner\'s problem, unchanged') or diag $b;

# an exec that reached a when a died: it may have run (request_sent
# true, no Retry-After)
my $inflight = $B->dir . '/inflight.json';
my $kid = fork // die "fork: $!";
if (!$kid) {
    my ($cst, $ch, $cb) = $B->request(POST => "/v1/sandboxes/$sd/exec", $agent,
        { argv => ['sleep', '1'] });
    VetoNginx::spew($inflight, encode_json({ status => $cst, body => $cb // '',
                                             retry => $ch->{'retry-after'} }));
    POSIX::_exit(0);
}
sleep 0.5;    # on purpose: the exec reaches a, then a dies
my @apids = ($A->master_pid, $A->worker_pids);
kill 'KILL', @apids;
$A->{running} = 0;
waitpid($kid, 0);
my $fl = decode_json(do { local (@ARGV, $/) = $inflight; <> });
my $flj = eval { decode_json($fl->{body}) } // {};
is($fl->{status}, 503, 'a dies while it runs an exec routed through b: 503')
    or diag $fl->{body};
is($flj->{type}, 'urn:veto-sandbox:problem:host_unavailable', '... host_unavailable');
is($flj->{host}, 'gw-a', '... naming host a');
ok($flj->{request_sent}, '... the request had reached a: it may have run');
ok(!defined $fl->{retry}, '... no Retry-After: repeating it is the agent\'s call');
# gone (kill returns before the kernel closed their sockets), and b and c
# have seen their kept-alive connections to a close: a request written
# into one before that would have reached a dying a (request_sent true)
sub alive
{
    my ($pid) = @_;
    open(my $f, '<', "/proc/$pid/stat") or return 0;
    my $stat = <$f> // '';
    return $stat !~ /^\d+ \(.*\) [ZX] /s;     # a zombie holds no socket
}
eventually("a's nginx is gone", 5, sub { !grep { alive($_) } @apids });
sleep 0.2;    # b and c see their kept connections to a close
for my $via ([b => $B], [c => $C]) {
    my ($name, $n) = @$via;
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sd/exec", $agent,
                                    { argv => ['sh', '-c', 'echo ran >> /workspace/dead'] });
    is($st, 503, "a's nginx dead, its lease not run out: 503 through $name")
        or diag $b;
    like($h->{'content-type'} // '', qr{^application/problem\+json},
         '... problem+json');
    unlike($b // '', qr/<html/i, '... not nginx\'s HTML page');
    is($j->{type}, 'urn:veto-sandbox:problem:host_unavailable',
       '... host_unavailable');
    is($j->{host}, 'gw-a', '... naming host a');
    ok(defined $j->{request_sent} && !$j->{request_sent},
       '... the request never reached a');
    is($h->{'retry-after'}, '1', '... Retry-After: waiting helps');
}
ok(M()->exists('veto:{:hosts}:lease:gw-a'),
   "a's lease had not run out: the hop failed, not the lease check");
$A->start(keep_conf => 1);
eventually("a's nginx is back (its helper lived)", 15, sub { up($A) });
($st, $h, $b) = $A->request(GET => "/v1/sandboxes/$sd/files?path=dead", $agent);
is($st, 404, 'nothing ran on a while it was away') or diag $b;
($st, $h, $b) = $B->request(POST => "/v1/sandboxes/$sd/exec", $agent,
                            { argv => ['sh', '-c', 'echo ran >> /workspace/dead'] });
is($st, 200, 'through b again: it runs on a') or diag $b;
($st, $h, $b) = $A->request(GET => "/v1/sandboxes/$sd/files?path=dead", $agent);
is($b, "ran\n", '... once');
($st) = $B->request(DELETE => "/v1/sandboxes/$sd", $agent);
is($st, 200, "delete $sd through b");

for my $name (qw(a b c)) {
    my $n = $gw{$name};
    $n->stop;
    my @bad = grep { /\[(alert|crit|emerg)\]/ } split /\n/, $n->error_log;
    ok(!@bad, "no alert in ${name}'s log") or diag join("\n", @bad);
    $n->helper->leaks_ok("host $name");
}

done_testing;
