#!/usr/bin/perl
# Workspaces in and out through nginx as archives.  A real workflow from
# a project this test makes (a C library with a test suite run by a shell
# script that needs its executable bit, a git history, a nested tree of
# 3000 files): upload it as one tar.gz, build and run its tests with a
# streamed exec (they fail), fix a file, run them again, take a patch and
# the workspace out as tar, delete: eight requests.  Then hostile
# archives over HTTP (each a clear problem+json; the helper's own tests
# cover the full list), the size bounds (the policy's archive_bytes and
# the helper's ceiling, 413 naming archive_bytes), an export cut off
# after its first byte, paths, and the approval kinds of archives.

use strict;
use warnings;

use Test::More;
use Digest::SHA qw(sha256_hex);
use File::Temp qw(tempdir);
use HTTP::Tiny;
use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use Time::HiRes qw(time sleep);
use lib 't/lib';
use VetoNginx;
use VetoStream;
use Eventually qw(eventually);

VetoNginx::need(qw(helper redis));
for my $tool (qw(cc make git tar python3)) {
    system("command -v $tool >/dev/null") == 0
        or die "this test needs $tool on the host (the default profile)\n";
}

my $policy = VetoNginx::default_policy();
my $acme = $policy->{tenants}{acme};
$acme->{ceilings}{disk_mb} = 256;
$acme->{ceilings}{timeout_s} = 60;
$acme->{agents}{'agent-small'}{ceilings}{archive_bytes} = 100_000;
$acme->{agents}{'agent-write'} = {
    approvals => { always => ['sandbox.files.write'] } };
$acme->{agents}{'agent-export'} = { approvals => { export => JSON::PP::true } };

my $n = VetoNginx->new;
$n->start_redis;
my $helper = $n->start_helper(max_archive_bytes => 8 * 1024 * 1024);
$n->start(redis => 1, policy => $policy, max_body => '300m');

my $t = $n->token;
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review audit:read');
my $tmp = tempdir(CLEANUP => 1);
my ($st, $h, $b, $j);

sub run_ok { system(@_) == 0 or die "@_: failed\n" }
sub slurp { local $/; open(my $f, '<', $_[0]) or die "$_[0]: $!"; <$f> }
sub spew
{
    my ($p, $c, $mode) = @_;
    (my $d = $p) =~ s{/[^/]*$}{};
    run_ok('mkdir', '-p', $d);
    open(my $f, '>', $p) or die "$p: $!";
    print $f $c;
    close $f;
    chmod $mode, $p if defined $mode;
}

sub random_bytes
{
    open(my $f, '<', '/dev/urandom') or die "/dev/urandom: $!";
    read($f, my $r, $_[0]) == $_[0] or die "/dev/urandom: short read";
    return $r;
}

sub audit_records
{
    my ($st, $h, $b, $j) = $n->request(GET => '/v1/audit?limit=300', $rev);
    return map { $_->{detail} = eval { decode_json($_->{detail}) }
                     // $_->{detail} unless ref $_->{detail}; $_ }
           @{ $j->{records} // [] };
}

# ---- the project
my $proj = "$tmp/proj";
spew("$proj/src/calc.h", "int add(int a, int b);\n");
spew("$proj/src/calc.c",
     "#include \"calc.h\"\n\nint\nadd(int a, int b)\n{\n    return a - b;\n}\n");
spew("$proj/tests/test_calc.c", <<'EOF');
#include <stdio.h>
#include "calc.h"

int
main(void)
{
    int  got = add(2, 3);

    if (got != 5) {
        printf("FAIL add(2, 3): got %d\n", got);
        return 1;
    }

    printf("PASS add(2, 3)\n");
    return 0;
}
EOF
spew("$proj/scripts/check.sh", <<'EOF', 0755);
#!/bin/sh
set -e
echo "building"
cc -Wall -Isrc -o tests/test_calc tests/test_calc.c src/calc.c
./tests/test_calc
echo "1 passed"
EOF
spew("$proj/Makefile", "test:\n\t./scripts/check.sh\n");
my $nfiles = 0;
for my $a (0 .. 9) {
    for my $c (0 .. 9) {
        for my $f (0 .. 29) {
            spew("$proj/data/a$a/b$c/f$f.txt", "data $a $c $f\n");
            $nfiles++;
        }
    }
}
run_ok("cd $proj && git init -q && git add -A && "
       . "git -c user.name=t -c user.email=t\@t commit -qm init");
run_ok("tar -C $tmp -czf $tmp/proj.tar.gz proj");
my $tgz = slurp("$tmp/proj.tar.gz");
diag sprintf('the project: %d files, %d bytes as tar.gz', $nfiles + 6,
             length $tgz);

# ---- the workflow, counting requests
my $requests = 0;
sub req { $requests++; return $n->request(@_) }
sub stream_exec
{
    my ($sb, $body) = @_;
    $requests++;
    my $s = VetoStream->open($n, POST => "/v1/sandboxes/$sb/exec", $t, $body,
                             { Accept => 'application/x-ndjson' });
    my @l = $s->lines(60);
    my $out = join '', map { $_->{data} // '' } @l;
    return ($s->status, $out, $l[-1]{result});
}

{
    ($st, $h, $b, $j) = req(POST => '/v1/sandboxes', $t,
                            { limits => { disk_mb => 256, timeout_s => 60 } });
    is($st, 201, '1. create') or BAIL_OUT($b);
    my $sb = $j->{id};

    ($st, $h, $b, $j) = req(PUT => "/v1/sandboxes/$sb/archive?path=/workspace",
                            $t, $tgz);
    is($st, 200, '2. the project in, one tar.gz') or diag $b;
    is($j->{format}, 'tar.gz', 'told gzip by its first bytes');
    is($j->{size}, length $tgz, 'size: the upload');
    is($j->{sha256}, sha256_hex($tgz), 'sha256: the upload');

    my ($s, $out, $r) = stream_exec($sb, { argv => ['make', 'test'],
                                           cwd => '/workspace/proj' });
    is($s, 200, '3. make test, streamed');
    like($out, qr/building\n.*FAIL add\(2, 3\): got -1/s,
         'the script ran (its mode was kept) and the test fails');
    isnt($r->{exit_code}, 0, 'make test fails');

    my $fixed = slurp("$proj/src/calc.c") =~ s/a - b/a + b/r;
    ($st) = req(PUT => "/v1/sandboxes/$sb/files?path=/workspace/proj/src/calc.c",
                $t, $fixed);
    is($st, 200, '4. the fix');

    ($s, $out, $r) = stream_exec($sb, { argv => ['sh', '-c',
        'make test && git diff > /workspace/fix.patch'], cwd => 'proj' });
    like($out, qr/PASS add\(2, 3\)\n1 passed\n/, '5. the tests pass');
    is($r->{exit_code}, 0, 'make test and the patch: exit 0');

    ($st, $h, $b) = req(GET => "/v1/sandboxes/$sb/files?path=fix.patch", $t);
    is($st, 200, '6. the patch out');
    like($b, qr/^-    return a - b;\n\+    return a \+ b;$/m, 'it is the fix');
    run_ok("cd $proj && git apply --check - <<'EOF'\n${b}EOF");
    pass('and it applies to the original');

    $requests++;
    my $g = VetoStream->open($n, GET => "/v1/sandboxes/$sb/archive?path=proj",
                             $t);
    is($g->status, 200, '7. the workspace out as tar');
    my $t0 = time;
    my $tar = $g->body(60);
    diag sprintf('the export: %d bytes in %.2f s', length $tar, time - $t0);
    ok($g->done, 'the archive ended with its last chunk');
    is($g->headers->{'content-type'}, 'application/x-tar', 'application/x-tar');
    is($g->headers->{'content-disposition'}, 'attachment', 'attachment');
    is($g->headers->{'x-content-type-options'}, 'nosniff', 'nosniff');
    spew("$tmp/out.tar", $tar);
    run_ok('mkdir', '-p', "$tmp/out");
    run_ok('tar', '-C', "$tmp/out", '-xf', "$tmp/out.tar");
    my $count = () = glob("$tmp/out/data/a*/b*/f*.txt");
    is($count, $nfiles, "all $nfiles files of the tree");
    is(slurp("$tmp/out/src/calc.c"), $fixed, 'the fixed file');
    is((stat "$tmp/out/scripts/check.sh")[2] & 07777, 0755,
       'the script is still executable');
    ok(-x "$tmp/out/tests/test_calc", 'and what the build made');

    ($st) = req(DELETE => "/v1/sandboxes/$sb", $t);
    is($st, 200, '8. delete');

    ok($requests <= 8, "$requests requests for a project of "
                       . ($nfiles + 6) . ' files');

    my @r;
    eventually('the archive upload and download are on record', 5, sub {
        @r = audit_records();
        (grep { $_->{action} eq 'sandbox.archive.write' } @r)
            && (grep { $_->{action} eq 'sandbox.archive.read' } @r);
    });
    my ($in) = grep { $_->{action} eq 'sandbox.archive.write' } @r;
    is($in->{detail}{sha256}, sha256_hex($tgz), 'record: the upload sha256');
    is($in->{detail}{size}, length $tgz, 'record: its size');
    is($in->{detail}{path}, '/workspace', 'record: its path');
    my ($out_rec) = grep { $_->{action} eq 'sandbox.archive.read' } @r;
    is($out_rec->{outcome}, 'allowed', 'record: the export');
    is($out_rec->{detail}{sha256}, sha256_hex($tar),
       'record: the sha256 of what went out');
    is($out_rec->{detail}{bytes_sent}, length $tar, 'record: its bytes');
}

# ---- hostile archives, formats, bounds, paths
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t, {});
my $sb = $j->{id};

sub case_tar
{
    my ($case) = @_;
    my $out = `python3 t/lib/archives.py $case M $tmp`;
    die "archives.py $case failed" if $?;
    return $out;
}

sub put
{
    my ($body, $q, $tok, $hdr) = @_;
    return $n->request(PUT => "/v1/sandboxes/$sb/archive" . ($q // ''),
                       $tok // $t, $body, $hdr);
}

for my $case (qw(dotdot hardlink devices)) {
    ($st, $h, $b, $j) = put(case_tar($case));
    is($st, 422, "$case: 422") or diag $b;
    like($h->{'content-type'}, qr{problem\+json}, "$case: problem+json");
    is($j->{type}, 'urn:veto-sandbox:problem:bad_archive', "$case: bad_archive");
    ok(length($j->{detail} // ''), "$case: a detail: $j->{detail}");
}

{
    ($st, $h, $b, $j) = put(substr($tgz, 0, int(length($tgz) / 2)));
    is($st, 422, 'a truncated tar.gz: 422');
    is($j->{type}, 'urn:veto-sandbox:problem:bad_archive', 'bad_archive');

    ($st, $h, $b, $j) = put(case_tar('modes'), '?path=m');
    is($st, 200, 'modes: 200');
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
        { argv => ['stat', '-c', '%n %a', 'suid', 'sgid', 'script.sh'],
          cwd => 'm' });
    is($j->{stdout}, "suid 755\nsgid 755\nscript.sh 755\n",
       'setuid and setgid dropped, the executable bit kept');

    # 200 MiB of zeros in about 200 KB: stops at the sandbox's 64 MiB
    my $bomb = `python3 -c 'import sys, gzip; sys.path.insert(0, "t/lib"); import archives; o = sys.stdout.buffer; o.write(gzip.compress(archives.header("bomb.bin", 200 << 20))); z = gzip.compress(bytes(1 << 20), 9); [o.write(z) for _ in range(200)]'`;
    ($st, $h, $b, $j) = put($bomb, '?path=bomb');
    is($st, 507, sprintf('a zero bomb (%d bytes): 507', length $bomb))
        or diag $b;
    is($j->{limit}, 'disk_mb', 'limit: disk_mb');
    $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                { argv => ['rm', '-rf', '/workspace/bomb'] });

    ($st, $h, $b, $j) = put('not an archive at all' x 20);
    is($st, 422, 'not an archive: 422');
    ($st, $h, $b, $j) = put('');
    is($st, 400, 'an empty body: 400');
    is($j->{field}, 'body', 'naming the body');
}

# ---- bounds: the policy's archive_bytes, before the body; the helper's
#      own ceiling
{
    my $big = random_bytes(200_000);
    my $small = $n->token(sub => 'agent-small');
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $small, {});
    my $ss = $j->{id};
    ($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$ss/archive",
                                    $small, $big);
    is($st, 413, 'over the policy archive_bytes: 413');
    is($j->{limit}, 'archive_bytes', 'limit: archive_bytes');
    is($j->{ceiling}, 100_000, 'ceiling: 100000');
    # refused from Content-Length, before a byte of the body is read
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . $n->port,
                                     Timeout => 5) or die "connect: $!";
    print $sock "PUT /v1/sandboxes/$ss/archive HTTP/1.1\r\nHost: x\r\n"
              . "Authorization: Bearer $small\r\n"
              . "Content-Length: 100000000\r\n\r\n";
    my $resp = '';
    my $sel = IO::Select->new($sock);
    while ($sel->can_read(5)) {
        last unless sysread($sock, $resp, 4096, length $resp);
        last if $resp =~ /\r\n\r\n/;
    }
    like($resp, qr{^HTTP/1\.1 413 }, '100 MB announced, none sent: 413 at once');
    close $sock;

    my $ua = HTTP::Tiny->new(timeout => 30);
    my @parts = ($big =~ /(.{1,20000})/gs);
    my $res = $ua->request(PUT => $n->url("/v1/sandboxes/$ss/archive"),
        { headers => { Authorization => "Bearer $small" },
          content => sub { shift @parts } });
    is($res->{status}, 413, 'chunked, no Content-Length: 413 as well');
    like($res->{content}, qr/archive_bytes/, 'naming archive_bytes');
    $n->request(DELETE => "/v1/sandboxes/$ss", $small);

    ($st, $h, $b, $j) = put(random_bytes(9 << 20));
    is($st, 413, "over the helper's max_archive_bytes (8 MiB): 413")
        or diag $b;
    is($j->{limit}, 'archive_bytes', 'limit: archive_bytes');
}

# ---- an export that fails after its first byte is cut off
{
    for my $i (1 .. 2) {
        ($st) = $n->request(PUT => "/v1/sandboxes/$sb/files?path=big/r$i.bin",
                            $t, random_bytes(5 << 20));
        is($st, 200, "a 5 MiB file ($i)");
    }
    my $g = VetoStream->open($n, GET => "/v1/sandboxes/$sb/archive?path=big",
                             $t);
    is($g->status, 200, 'export: 200 (the first bytes went out)');
    my $got = $g->body(30);
    ok(!$g->done, 'no last chunk: the client sees it cut off');
    ok($g->eof, 'the connection closed');
    ok(length($got) > 0 && length($got) <= (8 << 20) + 65536,
       'after ' . length($got) . ' bytes');
    my $rec = eventually('the cut download is on record', 5, sub {
        (grep { $_->{action} eq 'sandbox.archive.read'
                && $_->{outcome} eq 'error' } audit_records())[0];
    });
    is($rec->{reason}, 'file_too_large', 'record: why');
    ok($rec->{detail}{bytes_sent} > 0, 'record: what went out before');
    $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                { argv => ['rm', '-rf', '/workspace/big'] });
}

# ---- formats and encodings out
{
    $n->request(PUT => "/v1/sandboxes/$sb/files?path=f/a.txt", $t, "aaa\n");
    for my $c (['?path=f&format=tar.gz', {}, 'application/gzip', undef],
               ['?path=f&format=tar.zst', {}, 'application/zstd', undef],
               ['?path=f&format=tar.xz', {}, 'application/x-xz', undef],
               ['?path=f', { 'Accept-Encoding' => 'gzip, br' },
                'application/x-tar', 'gzip'],
               ['?path=f', { 'Accept-Encoding' => 'gzip;q=0' },
                'application/x-tar', undef]) {
        my ($q, $hdr, $type, $enc) = @$c;
        my $g = VetoStream->open($n, GET => "/v1/sandboxes/$sb/archive$q", $t,
                                 undef, $hdr);
        my $body = $g->body(20);
        is($g->headers->{'content-type'}, $type, "$q: $type");
        is($g->headers->{'content-encoding'}, $enc,
           "$q: Content-Encoding " . ($enc // 'none'));
        spew("$tmp/x.bin", $body);
        my $list = `tar -tf $tmp/x.bin 2>&1`;
        like($list, qr{^\./a\.txt$}m, "$q: a tar of it");
    }
}

# ---- paths and query errors name the field and the rule
{
    for my $c (['?path=/etc', 'path', qr/under it \(\/workspace/],
               ['?path=../x', 'path', qr/\.\./],
               ['?path=/workspace/a/../b', 'path', qr/\.\./],
               ['?path=a//b', 'path', qr/empty component/],
               ['?format=zip', 'format', qr/tar, tar\.gz/],
               ['?path=a&path=b', 'path', qr/more than once/],
               ['?size=1', 'size', qr/unknown/],
               ['?%zz=1', 'query', qr/not percent-encoded/]) {
        my ($q, $field, $why) = @$c;
        ($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb/archive$q",
                                        $t);
        is($st, 400, "GET archive$q: 400");
        is($j->{field}, $field, "naming $field");
        like($j->{detail}, $why, "the rule: $j->{detail}");
    }
    ($st, $h, $b, $j) = $n->request(GET =>
        "/v1/sandboxes/$sb/archive?path=nowhere", $t);
    is($st, 404, 'export of a missing directory: 404');
    is($j->{field}, 'path', 'naming path');
    like($j->{detail}, qr/no such file or directory/, 'not "no such sandbox"');
    ($st, $h, $b, $j) = $n->request(GET =>
        "/v1/sandboxes/$sb/archive?path=f/a.txt", $t);
    is($st, 400, 'export of a file: 400');
    is($j->{type}, 'urn:veto-sandbox:problem:not_a_directory',
       'not_a_directory');
    ($st, $h, $b, $j) = $n->request(GET =>
        "/v1/sandboxes/$sb/files?path=/workspace/f/a.txt", $t);
    is($b, "aaa\n", 'files take /workspace/... too');
    ($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb/files?path=/tmp/x",
                                    $t);
    is($st, 400, 'files: /tmp/x: 400');
    like($j->{detail}, qr/absolute under it/, 'the rule');
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                    { argv => ['pwd'], cwd => 'f' });
    is($j->{stdout}, "/workspace/f\n", 'cwd relative');
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                    { argv => ['pwd'], cwd => '/workspace/f' });
    is($j->{stdout}, "/workspace/f\n", 'cwd absolute');
}

# ---- approval kinds: an upload is a write, an export a read out
{
    my $tw = $n->token(sub => 'agent-write');
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $tw, {});
    my $sw = $j->{id};
    my $arch = case_tar('fifo');
    ($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$sw/archive?path=x",
                                    $tw, $arch);
    is($st, 202, 'archive upload under "always sandbox.files.write": 202');
    is($j->{action}, 'sandbox.archive.write', 'action');
    is($j->{summary}{sha256}, sha256_hex($arch), 'summary: sha256');
    is($j->{summary}{size}, length $arch, 'summary: size');
    is($j->{summary}{path}, 'x', 'summary: path');
    my $apr = $j->{approval_id};
    $n->request(POST => "/v1/approvals/$apr/approve", $rev, '');
    ($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$sw/archive?path=y",
                                    $tw, $arch, { 'Veto-Approval' => $apr });
    is($st, 403, 'the approval does not cover another path');
    ($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$sw/archive?path=x",
                                    $tw, $arch, { 'Veto-Approval' => $apr });
    is($st, 200, 'it covers the upload it was given for') or diag $b;
    $n->request(DELETE => "/v1/sandboxes/$sw", $tw);

    my $te = $n->token(sub => 'agent-export');
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $te, {});
    my $se = $j->{id};
    ($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$se/archive", $te);
    is($st, 202, 'export under "export": 202');
    is($j->{action}, 'sandbox.archive.read', 'action');
    $apr = $j->{approval_id};
    $n->request(POST => "/v1/approvals/$apr/approve", $rev, '');
    my $g = VetoStream->open($n, GET => "/v1/sandboxes/$se/archive", $te,
                             undef, { 'Veto-Approval' => $apr });
    is($g->status, 200, 'the export with its approval');
    $g->body(20);
    ok($g->done, 'whole');
    $n->request(DELETE => "/v1/sandboxes/$se", $te);
}

($st) = $n->request(DELETE => "/v1/sandboxes/$sb", $t);
is($st, 200, 'delete');

unlike($n->error_log, qr/\[(alert|emerg)\]|exited on signal/, 'no alerts');

done_testing;
