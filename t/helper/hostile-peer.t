# An allowed peer turned hostile (or driven by hostile agents): memory
# held for half-sent and unread frames is bounded for all connections
# together, a flood of connections neither exhausts the helper nor makes
# it spin when accept() fails, and hostile JSON is refused cleanly.
use strict;
use warnings;
use Test::More;
use IO::Select;
use Time::HiRes qw(time sleep);
use lib 't/lib';
use VetoTest;
use Eventually qw(eventually);

# Cumulative user+system CPU seconds of a process.
sub cpu_s
{
    my ($pid) = @_;
    open(my $fh, '<', "/proc/$pid/stat") or return -1;
    my $st = <$fh>;
    close $fh;
    $st =~ s/^.*\)\s+//;
    my @f = split / /, $st;
    return ($f[11] + $f[12]) / 100;     # utime, stime (fields 14, 15)
}

sub rss_kb
{
    my ($pid) = @_;
    open(my $fh, '<', "/proc/$pid/status") or return -1;
    while (<$fh>) { return $1 if /^VmRSS:\s+(\d+)/ }
    return -1;
}

my $MFB = 16 * 1024 * 1024;             # max_file_bytes of the test config
# Under ASan the helper's RSS would include ASan's quarantine of freed
# buffers (256 MiB by default): without it, RSS means the same as in the
# normal build, so the memory budget can be asserted under both.
$ENV{ASAN_OPTIONS} = 'detect_leaks=1:abort_on_error=0:exitcode=66:'
                   . 'quarantine_size_mb=0';
my $h = VetoTest->start;
my $id = $h->create_ok;
my $hp = $h->pid;

# --- frames announced but never finished: a global budget ----------------
# Each header announces a maximal write_file; only the JSON follows.  The
# helper may hold 8 such frames; the next one is refused as busy before
# any of its body is read.
my $json = $h->json->encode({ op => 'write_file', tenant => 't1',
    agent => 'a1', id => $id, path => 'big.bin' });
my $head = pack('a4NN', 'VSB1', length $json, $MFB) . $json;
my @held;
for my $i (1 .. 8) {
    my $s = $h->connect;
    VetoTest::write_all($s, $head . ('x' x 65536));
    push @held, $s;
}
sleep 0.3;    # on purpose: time for a reply that must not come
my @ready = IO::Select->new(@held)->can_read(0);
is(scalar @ready, 0, 'eight half-sent maximal frames are held, no reply yet');
my ($r, undef, $eof) = $h->raw_send($head, eof_wait => 3);
is($r->{error}, 'busy', 'the ninth maximal frame is refused: busy') or diag explain $r;
is($eof, 1, 'and that connection is closed (its body will not be read)');
ok($h->ping->{ok}, 'small requests are still served');
like($h->log_text, qr/refusing a frame of \d+ bytes/, 'the refusal is logged');

# One held frame completes: the write succeeds and frees its share.
VetoTest::write_all($held[0], 'y' x ($MFB - 65536));
my ($w) = VetoTest::recv_frame($held[0], 30);
ok($w && $w->{ok}, 'a held frame completed normally') or diag explain $w;
($r) = $h->raw_send($head . ('z' x $MFB), eof_wait => 0);
ok($r->{ok}, 'and a new maximal frame fits again') or diag explain $r;
close $_ for @held;
@held = ();
eventually('budget released when the holders went away', 5, sub {
    ($r) = $h->write_file($id, 'after.txt', "ok\n");
    $r->{ok};
});

# --- replies nobody reads: bounded the same way --------------------------
ok($h->write_file($id, 'big.bin', 'r' x $MFB)->{ok}, '16 MiB file written');
my $rss0 = rss_kb($hp);
my (@unread, %err);
for my $i (1 .. 16) {
    my $s = $h->connect;
    VetoTest::write_all($s, VetoTest::frame({ op => 'read_file',
        tenant => 't1', agent => 'a1', id => $id, path => 'big.bin' }));
    push @unread, $s;
}
sleep 1;    # on purpose: the replies are sent and sit unread
# busy replies are small: they arrive; the big ones sit in the helper
for my $s (@unread) {
    my $hd = VetoTest::read_exact($s, 12, 0.5);
    next unless defined $hd;
    my (undef, $jl, $pl) = unpack('a4NN', $hd);
    next if $pl > 0;
    my $j = VetoTest::read_exact($s, $jl, 2);
    my $o = eval { $h->json->decode($j) } || {};
    $err{ $o->{error} // 'ok' }++;
}
ok(($err{busy} // 0) >= 4, 'unread 16 MiB replies beyond the budget: busy ('
   . join(', ', map { "$_=$err{$_}" } sort keys %err) . ')');
my $grown = (rss_kb($hp) - $rss0) / 1024;
ok($grown < 9 * 16 + 40, sprintf('helper RSS grew by %.0f MiB only', $grown));
ok($h->ping->{ok}, 'ping served while replies sit unread');
close $_ for @unread;
eventually('read_file works again once they are gone', 5, sub {
    ($r, my $data) = $h->read_file($id, 'big.bin');
    $r->{ok} && length($data) == $MFB;
});

# --- a flood of connections, and accept() failing with EMFILE -------------
# 1100 connections > VSB_MAX_CONNS (1024): the excess is closed at once.
my @flood;
for (1 .. 1100) {
    my $s = IO::Socket::UNIX->new(Type => Socket::SOCK_STREAM(),
                                  Peer => $h->socket_path) or last;
    push @flood, $s;
}
is(scalar @flood, 1100, '1100 connections opened');
sleep 1;    # on purpose: the helper meets the flood
my $closed = 0;
for my $s (@flood) {
    my $sl = IO::Select->new($s);
    next unless $sl->can_read(0);
    my $n = sysread($s, my $b, 1);
    $closed++ if defined $n && $n == 0;
}
ok($closed >= 70, "connections beyond the limit were closed ($closed)");
close $_ for @flood;
@flood = ();
eventually('helper serves after the flood', 5, sub { $h->ping->{ok} });

# Now with a descriptor limit the flood can exceed: accept() fails with
# EMFILE while connections wait in the backlog; the helper must back off,
# not spin.
my $fds = $h->count_fds;
my ($soft) = `prlimit --pid=$hp --nofile --noheadings --raw --output=SOFT` =~ /(\d+)/;
system('prlimit', "--pid=$hp", '--nofile=' . ($fds + 40) . ':') == 0
    or BAIL_OUT('prlimit failed');
for (1 .. 150) {
    my $s = IO::Socket::UNIX->new(Type => Socket::SOCK_STREAM(),
                                  Peer => $h->socket_path) or last;
    push @flood, $s;
}
ok(@flood >= 100, scalar(@flood) . ' connections queued past the fd limit');
sleep 0.5;    # the accept loop meets EMFILE
my $c0 = cpu_s($hp);
sleep 2;      # on purpose: the window the CPU time is measured over
my $spent = cpu_s($hp) - $c0;
ok($spent < 0.5, sprintf('helper used %.2f s of CPU in 2 s at EMFILE (no spin)', $spent));
like($h->log_text, qr/accept4\(\).*(Too many open files|EMFILE)/, 'EMFILE logged');
close $_ for @flood;
@flood = ();
system('prlimit', "--pid=$hp", "--nofile=$soft:") == 0
    or diag('prlimit: cannot restore the soft limit');
ok(eventually('helper serves again once descriptors are free', 3,
              sub { $h->ping->{ok} }),
   'helper serves again once descriptors are free');

# --- hostile JSON -----------------------------------------------------------
my $base = { op => 'exec', tenant => 't1', agent => 'a1', id => $id };
my @bad = (
    [ 'deep nesting', '{"op":"ping","x":' . ('[' x 30000) . (']' x 30000) . '}',
      qr/^bad_json$/ ],
    [ 'duplicate keys', '{"op":"ping","op":"ping"}', qr/^bad_json$/ ],
    [ 'duplicate tenant', qq({"op":"status","tenant":"t1","tenant":"t2","agent":"a1","id":"$id"}),
      qr/^bad_json$/ ],
    [ '1e309', '{"op":"create","tenant":"t","agent":"a","ttl_s":1e309}',
      qr/^(bad_json|bad_type|bad_value)$/ ],
    [ '2^64', '{"op":"create","tenant":"t","agent":"a","ttl_s":18446744073709551616}',
      qr/^(bad_json|bad_type|bad_value)$/ ],
    [ '2^63', '{"op":"create","tenant":"t","agent":"a","ttl_s":9223372036854775808}',
      qr/^(bad_json|bad_type|bad_value)$/ ],
    [ '-0 timeout', '{"op":"create","tenant":"t","agent":"a","limits":{"timeout_s":-0.0}}',
      qr/^(bad_type|bad_value)$/ ],
    [ 'float limit', '{"op":"create","tenant":"t","agent":"a","limits":{"pids":1.5}}',
      qr/^(bad_type|bad_value)$/ ],
    [ 'NUL in a string', '{"op":"ping","request_id":"a\u0000b"}',
      qr/^(bad_json|bad_value)$/ ],
    [ 'overlong UTF-8', qq({"op":"ping","request_id":"\xc0\xaf"}), qr/^bad_json$/ ],
    [ 'UTF-16 surrogate', qq({"op":"ping","request_id":"\xed\xa0\x80"}), qr/^bad_json$/ ],
    [ 'argv of 1025', $h->json->encode({ %$base, argv => [ ('a') x 1025 ] }),
      qr/^bad_value$/ ],
    [ 'argv[0] empty', $h->json->encode({ %$base, argv => [ '' ] }), qr/^bad_value$/ ],
    [ 'argv with NUL', '{"op":"exec","tenant":"t1","agent":"a1","id":"' . $id
      . '","argv":["/bin/echo","a\u0000b"]}', qr/^(bad_json|bad_value)$/ ],
    [ 'env of 257', $h->json->encode({ %$base, argv => ['true'],
      env => { map { ("V$_" => 'x') } 1 .. 257 } }), qr/^bad_value$/ ],
    [ 'env name with =', $h->json->encode({ %$base, argv => ['true'],
      env => { 'A=B' => 'x' } }), qr/^bad_value$/ ],
    [ 'env value not a string', $h->json->encode({ %$base, argv => ['true'],
      env => { A => 1 } }), qr/^(bad_value|bad_type)$/ ],
);
for my $c (@bad) {
    my ($name, $json_text, $want) = @$c;
    ($r) = $h->raw_send(VetoTest::frame($json_text));
    like($r->{error} // 'ok', $want, "$name: " . ($r->{error} // 'ok'))
        or diag explain $r;
}
ok($h->ping->{ok}, 'helper alive after hostile JSON');

# The largest legal exec: argv filling the 64 KiB JSON limit.
my @argv = ('/bin/sh', '-c', 'echo $#', 'x');
push @argv, 'a' x 200 while length($h->json->encode({ %$base, argv => \@argv })) < 64 * 1024 - 400;
(my $e, my $out) = $h->exec($id, \@argv);
ok($e->{ok}, 'exec with a 64 KiB argv runs') or diag explain $e;
is($out, (scalar(@argv) - 4) . "\n", 'every argument arrived');
my $env = { map { ("V$_" => 'v' x 100) } 1 .. 256 };
($e, $out) = $h->exec($id, ['/bin/sh', '-c', 'env | grep -c "^V"'], env => $env);
is($out, "256\n", 'env with 256 names arrives whole');

is($h->destroy($id)->{state}, 'terminated', 'destroy');
$h->leaks_ok('after destroy');
my $st = $h->stop;
is($st, 0, 'helper exits 0') or diag $h->log_text;

# --- started with stdin, stdout and stderr closed ------------------------
# Its socket and first clients would take descriptors 0-2, and its log
# lines (stderr) would land in a client's frame stream.
$h->{closed_std} = 1;
$h->launch;
my @peers = map { $h->connect } 1 .. 3;     # idle: they get low fds
sleep 0.2;    # on purpose: the idle peers hold low fds
my $ok = 1;
for my $round (1 .. 3) {
    my $sid = $h->create_ok;                # logs "created sandbox ..."
    my ($x, $o) = $h->exec($sid, ['echo', "round$round"]);
    $ok &&= $x->{ok} && $o eq "round$round\n";
    $ok &&= $h->ping->{ok};
    $ok &&= ($h->destroy($sid)->{state} // '') eq 'terminated';
}
ok($ok, 'with stdin/stdout/stderr closed, every reply is a clean frame');
my $unsolicited = '';
for my $p (@peers) {
    $p->blocking(0);
    my $n = sysread($p, my $buf, 65536);
    $unsolicited .= $buf if $n;
}
is($unsolicited, '', 'idle peers received nothing (no log lines in a socket)');
$_->close for @peers;
$h->leaks_ok('after the closed-std run');
$st = $h->stop;
is($st, 0, 'helper started without std fds exits 0');
done_testing;
