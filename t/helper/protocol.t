# The wire: peer credentials, malformed frames (each gets its named error
# and the helper keeps serving), strict schemas, ceilings that refuse
# (never clamp) oversize requests, and pipelining: replies in order, and
# every op vsb_protocol.h declares answered at once (as the docs name
# them) answered so.
use strict;
use warnings;
use Test::More;
use POSIX ();
use lib 't/lib';
use VetoTest;
use Eventually qw(eventually);

# The helper refuses world-accessible sockets, so the stranger reaches the
# socket through its group: nogroup (65534), uid 65534 not allowed.
my $h = VetoTest->start(socket_mode => '0660', socket_group => 65534);

sub still_serving
{
    my ($what) = @_;
    my $p = $h->ping;
    ok($p->{ok}, "helper still serves after $what") or diag explain $p;
}

# --- a peer whose uid is not allowed -----------------------------------
pipe(my $rd, my $wr) or die "pipe: $!";
my $pid = fork() // die "fork: $!";
if ($pid == 0) {
    close $rd;
    POSIX::setgid(65534) or POSIX::_exit(2);
    POSIX::setuid(65534) or POSIX::_exit(3);
    my $res = eval {
        my ($r, undef) = $h->call({ op => 'ping' }, undef, timeout => 10);
        $r->{error} // ($r->{ok} ? 'OK' : 'none');
    } // "die: $@";
    print $wr "$<:$res\n";
    close $wr;
    POSIX::_exit(0);
}
close $wr;
my $line = <$rd> // '';
waitpid($pid, 0);
chomp $line;
like($line, qr/^65534:(not_permitted|<eof>|<read: .*>)$/,
     "uid 65534 refused ($line)");
still_serving('a refused peer');
like($h->log_text, qr/65534/, 'the refusal is logged with the uid');

# --- malformed frames ---------------------------------------------------
my $ping = '{"op":"ping"}';
my @cases = (
    # name, bytes, expected error, connection closed after?
    [ 'bad magic', pack('a4NN', 'XSB1', length $ping, 0) . $ping, 'bad_frame', 1 ],
    [ 'zero json length', pack('a4NN', 'VSB1', 0, 0), 'bad_frame', 1 ],
    [ 'oversize json length', pack('a4NN', 'VSB1', 64 * 1024 + 1, 0),
      'frame_too_large', 1 ],
    [ 'oversize payload length', pack('a4NN', 'VSB1', length $ping,
      64 * 1024 * 1024 + 1) . $ping, 'frame_too_large', 1 ],
    [ 'invalid JSON', VetoTest::frame('{"op":"ping",'), 'bad_json', 0 ],
    [ 'not UTF-8', VetoTest::frame(qq({"op":"ping","request_id":"\xff\xfe"})),
      'bad_json', 0 ],
    [ 'trailing garbage', VetoTest::frame('{"op":"ping"} x'), 'bad_json', 0 ],
    [ 'unknown op', VetoTest::frame('{"op":"format_disk"}'), 'unknown_op', 0 ],
    [ 'op missing', VetoTest::frame('{}'), 'missing_field', 0 ],
    [ 'op not a string', VetoTest::frame('{"op":1}'), 'bad_type', 0 ],
    [ 'unknown field', VetoTest::frame('{"op":"ping","frob":1}'),
      'unknown_field', 0 ],
    [ 'unknown field in create',
      VetoTest::frame('{"op":"create","tenant":"t","agent":"a","frob":1}'),
      'unknown_field', 0 ],
    [ 'unknown limit',
      VetoTest::frame('{"op":"create","tenant":"t","agent":"a","limits":{"gpus":1}}'),
      'unknown_field', 0 ],
    [ 'wrong type', VetoTest::frame('{"op":"create","tenant":5,"agent":"a"}'),
      'bad_type', 0 ],
    [ 'limit wrong type',
      VetoTest::frame('{"op":"create","tenant":"t","agent":"a","limits":{"memory_mb":"64"}}'),
      'bad_type', 0 ],
    [ 'missing tenant', VetoTest::frame('{"op":"create","agent":"a"}'),
      'missing_field', 0 ],
    [ 'missing agent', VetoTest::frame('{"op":"create","tenant":"t"}'),
      'missing_field', 0 ],
    [ 'tenant with a space',
      VetoTest::frame('{"op":"create","tenant":"a b","agent":"a"}'),
      'bad_value', 0 ],
    [ 'tenant too long',
      VetoTest::frame('{"op":"create","tenant":"' . ('t' x 129) . '","agent":"a"}'),
      'bad_value', 0 ],
    [ 'bad id', VetoTest::frame('{"op":"status","tenant":"t","agent":"a","id":"sb-../../x"}'),
      'bad_value', 0 ],
    [ 'payload on ping', VetoTest::frame($ping, 'unexpected'), 'bad_value', 0 ],
    [ 'stats names no owner',
      VetoTest::frame('{"op":"stats","tenant":"t"}'), 'unknown_field', 0 ],
    [ 'payload on stats', VetoTest::frame('{"op":"stats"}', 'x'), 'bad_value', 0 ],
    [ 'network allowlist not available',
      VetoTest::frame('{"op":"create","tenant":"t","agent":"a","network":"allowlist"}'),
      'bad_value', 0 ],
    [ 'negative limit',
      VetoTest::frame('{"op":"create","tenant":"t","agent":"a","limits":{"pids":-1}}'),
      qr/^(bad_value|bad_type)$/, 0 ],
    # the background and archive ops: strict schemas too
    [ 'exec stream not a boolean',
      VetoTest::frame('{"op":"exec","tenant":"t","agent":"a","id":"sb-000000000000000000000000","argv":["x"],"stream":1}'),
      'bad_type', 0 ],
    [ 'exec output_bytes 0',
      VetoTest::frame('{"op":"exec","tenant":"t","agent":"a","id":"sb-000000000000000000000000","argv":["x"],"output_bytes":0}'),
      'bad_value', 0 ],
    [ 'exec_status without exec',
      VetoTest::frame('{"op":"exec_status","tenant":"t","agent":"a","id":"sb-000000000000000000000000"}'),
      'missing_field', 0 ],
    [ 'exec_status exec id with a path',
      VetoTest::frame('{"op":"exec_status","tenant":"t","agent":"a","id":"sb-000000000000000000000000","exec":"ex-../../../etc/x"}'),
      'bad_value', 0 ],
    [ 'exec_kill unknown field',
      VetoTest::frame('{"op":"exec_kill","tenant":"t","agent":"a","id":"sb-000000000000000000000000","exec":"ex-0000000000000000","signal":9}'),
      'unknown_field', 0 ],
    [ 'exec_output negative offset',
      VetoTest::frame('{"op":"exec_output","tenant":"t","agent":"a","id":"sb-000000000000000000000000","exec":"ex-0000000000000000","stream":"stdout","offset":-1}'),
      'bad_value', 0 ],
    [ 'exec_output without stream',
      VetoTest::frame('{"op":"exec_output","tenant":"t","agent":"a","id":"sb-000000000000000000000000","exec":"ex-0000000000000000"}'),
      'missing_field', 0 ],
    [ 'export_archive with a payload',
      VetoTest::frame('{"op":"export_archive","tenant":"t","agent":"a","id":"sb-000000000000000000000000"}', 'x'),
      'bad_value', 0 ],
    [ 'export_archive unknown format',
      VetoTest::frame('{"op":"export_archive","tenant":"t","agent":"a","id":"sb-000000000000000000000000","format":"zip"}'),
      'bad_value', 0 ],
    [ 'extract_archive path outside',
      VetoTest::frame('{"op":"extract_archive","tenant":"t","agent":"a","id":"sb-000000000000000000000000","path":"/etc"}', 'xyz'),
      'bad_path', 0 ],
    [ 'extract_archive unknown field',
      VetoTest::frame('{"op":"extract_archive","tenant":"t","agent":"a","id":"sb-000000000000000000000000","mode":420}', 'xyz'),
      'unknown_field', 0 ],
    [ 'update_lifetime with nothing to change',
      VetoTest::frame('{"op":"update_lifetime","tenant":"t","agent":"a","id":"sb-000000000000000000000000"}'),
      'missing_field', 0 ],
    [ 'update_lifetime extend_s (ttl_s is the lifetime from creation)',
      VetoTest::frame('{"op":"update_lifetime","tenant":"t","agent":"a","id":"sb-000000000000000000000000","extend_s":60}'),
      'unknown_field', 0 ],
    [ 'update_lifetime ttl_s a string',
      VetoTest::frame('{"op":"update_lifetime","tenant":"t","agent":"a","id":"sb-000000000000000000000000","ttl_s":"60"}'),
      'bad_type', 0 ],
    [ 'usage with a field it does not take',
      VetoTest::frame('{"op":"usage","tenant":"t","agent":"a","id":"sb-000000000000000000000000","stream":"stdout"}'),
      'unknown_field', 0 ],
    [ 'usage without an owner',
      VetoTest::frame('{"op":"usage","id":"sb-000000000000000000000000"}'),
      'missing_field', 0 ],
    [ 'usage bad id',
      VetoTest::frame('{"op":"usage","tenant":"t","agent":"a","id":"sb-../../x"}'),
      'bad_value', 0 ],
    [ 'usage with a payload',
      VetoTest::frame('{"op":"usage","tenant":"t","agent":"a","id":"sb-000000000000000000000000"}', 'x'),
      'bad_value', 0 ],
    [ 'usage of no sandbox',
      VetoTest::frame('{"op":"usage","tenant":"t","agent":"a","id":"sb-000000000000000000000000"}'),
      'not_found', 0 ],
    [ 'destroy reason expired (the helper says that itself)',
      VetoTest::frame('{"op":"destroy","tenant":"t","agent":"a","id":"sb-000000000000000000000000","reason":"expired"}'),
      'bad_value', 0 ],
    [ 'ended with an owner (it is every tenant\'s)',
      VetoTest::frame('{"op":"ended","tenant":"t"}'),
      'unknown_field', 0 ],
    [ 'ended negative cursor',
      VetoTest::frame('{"op":"ended","after":-1}'),
      'bad_value', 0 ],
    [ 'list ended not a boolean',
      VetoTest::frame('{"op":"list","tenant":"t","ended":1}'),
      'bad_type', 0 ],
);
for my $c (@cases) {
    my ($name, $bytes, $want, $closes) = @$c;
    my ($r, $p, $eof, $sock) = $h->raw_send($bytes, eof_wait => $closes ? 2 : 0);
    if (ref $want) {
        like($r->{error} // 'ok', $want, "$name: $r->{error}");
    } else {
        is($r->{error} // 'ok', $want, "$name: $want") or diag explain $r;
    }
    is($r->{ok}, JSON::PP::false, "$name: ok false");
    ok(defined $r->{detail} && length $r->{detail}, "$name: has a detail");
    if ($closes) {
        is($eof, 1, "$name: connection closed after the reply");
    } else {
        # the same connection goes on serving
        my ($r2) = $h->call({ op => 'ping' }, undef, sock => $sock, timeout => 10);
        ok($r2->{ok}, "$name: the same connection still serves");
    }
    still_serving($name);
}

# JSON array instead of object: a JSON error or a type error, named.
my ($r) = $h->raw_send(VetoTest::frame('[{"op":"ping"}]'));
like($r->{error} // 'ok', qr/^(bad_json|bad_type)$/, "JSON array refused ($r->{error})");
still_serving('a JSON array');

# field names the culprit
($r) = $h->raw_send(VetoTest::frame('{"op":"create","tenant":5,"agent":"a"}'));
is($r->{field}, 'tenant', 'bad_type names the field');
($r) = $h->raw_send(VetoTest::frame('{"op":"ping","frob":1}'));
is($r->{field}, 'frob', 'unknown_field names the field');
($r) = $h->raw_send(VetoTest::frame('{"op":"create","agent":"a","request_id":"r1"}'));
is($r->{field}, 'tenant', 'missing_field names the field');
is($r->{request_id}, 'r1', 'request_id echoed on errors');

# Truncated frames: the helper closes, nothing else.
for my $t ([ 'header only', pack('a4NN', 'VSB1', 100, 0) ],
           [ 'half a header', 'VSB1' . "\0\0" ],
           [ 'json cut short', pack('a4NN', 'VSB1', 100, 0) . '{"op":"pi' ],
           [ 'payload cut short', pack('a4NN', 'VSB1', length $ping, 1000) . $ping . 'abc' ]) {
    my ($rt, $pt, $eof) = $h->raw_send($t->[1], shutdown => 1);
    ok($eof, "truncated ($t->[0]) then close: connection closed");
    still_serving("a truncated frame ($t->[0])");
}

# A client that sends half a frame and keeps the socket open does not
# block anyone else.
my $lazy = $h->connect;
VetoTest::write_all($lazy, pack('a4NN', 'VSB1', 100, 0) . '{"op"');
still_serving('a stalled client');
close $lazy;

# Payload just over max_file_bytes on write_file, body never sent.
my $mf = $h->cf('max_file_bytes');
my $wf = '{"op":"write_file","tenant":"t1","agent":"a1","id":"sb-000000000000000000000000","path":"x"}';
($r) = $h->raw_send(pack('a4NN', 'VSB1', length $wf, $mf + 1) . $wf);
like($r->{error} // 'none', qr/^(frame_too_large|file_too_large)$/,
     "payload over max_file_bytes refused up front ($r->{error})");
still_serving('an oversize payload');

# --- many clients, and the per-sandbox exec limit ----------------------
{
    my @c = map { $h->connect } 1 .. 50;
    VetoTest::write_all($_, VetoTest::frame({ op => 'ping' })) for @c;
    my $okc = grep { my ($x) = VetoTest::recv_frame($_, 10); $x && $x->{ok} } @c;
    is($okc, 50, '50 clients at once all answered');

    my $idb = $h->create_ok;
    my $max = $h->cf('max_execs_per_sandbox');
    my @busy = map { $h->connect } 1 .. $max;
    VetoTest::write_all($_, VetoTest::frame({ op => 'exec', tenant => 't1',
        agent => 'a1', id => $idb, argv => [ 'sleep', '3' ] })) for @busy;
    eventually("$max execs run", 3, sub { $h->count_procs >= $max });
    my ($x) = $h->exec($idb, ['true']);
    is($x->{error}, 'busy', "exec number " . ($max + 1) . " while $max run: busy")
        or diag explain $x;
    ($x) = $h->call({ op => 'status', tenant => 't1', agent => 'a1', id => $idb });
    is($x->{sandbox}{execs_running}, $max, "status shows $max execs running");
    ok(($x->{sandbox}{usage}{pids} // 0) >= $max, 'status usage counts their pids');
    my $done = grep { my ($y) = VetoTest::recv_frame($_, 20); $y && ($y->{exit_code} // -1) == 0 } @busy;
    is($done, $max, "the $max execs all finished normally");
    is($h->destroy($idb)->{state}, 'terminated', 'destroy');
}

# --- pipelined requests: several frames written before a reply is read --
# The helper answers them one at a time, in order, each with its own
# request_id; those answered at once go out together.
{
    my $idp = $h->create_ok;
    my @reqs;
    for my $i (1 .. 24) {
        my $k = $i % 4;
        push @reqs, $k == 0 ? { op => 'ping', brief => JSON::PP::true }
                  : $k == 1 ? { op => 'status', tenant => 't1', agent => 'a1', id => $idp }
                  : $k == 2 ? { op => 'list', tenant => 't1' }
                  :           { op => 'status', tenant => 't1', agent => 'a1',
                                id => 'sb-000000000000000000000000' };
        $reqs[-1]{request_id} = "p$i";
    }
    my $s = $h->connect;
    VetoTest::write_all($s, join('', map { VetoTest::frame($_) } @reqs));
    my @got = map { my ($x) = VetoTest::recv_frame($s, 20); $x } @reqs;
    is(join(',', map { $_ ? $_->{request_id} // '?' : '<none>' } @got),
       join(',', map { "p$_" } 1 .. 24),
       '24 pipelined requests: 24 replies, in order');
    is(scalar(grep { $_ && $_->{ok} } @got), 18, '... 18 of them ok');
    is(scalar(grep { $_ && ($_->{error} // '') eq 'not_found' } @got), 6,
       '... the 6 naming no sandbox not_found');
    is($got[0]{sandbox}{id}, $idp, '... a status names its own sandbox');
    ok($got[3]{version}, '... a ping is a ping');
    my ($again) = $h->call({ op => 'ping', request_id => 'after' }, undef,
                           sock => $s, timeout => 10);
    is($again->{request_id}, 'after', 'the connection serves on after them');

    # every op the protocol declares answered at once (VSB_OPS_AT_ONCE in
    # vsb_protocol.h, which the gateway pipelines; docs/helper-protocol.md
    # names the same), pipelined: each answered in order, without a
    # payload, and none is one the helper finds did not reply at once
    {
        open(my $fh, '<', 'sandbox-helper/vsb_protocol.h') or die "$!";
        my $hdr = do { local $/; <$fh> };
        my ($list) = $hdr =~ /#define VSB_OPS_AT_ONCE\(X\)((?:[^\n]*\\\n)*[^\n]*)/;
        my @at_once = ($list // '') =~ /X\((\w+)\)/g;
        open($fh, '<', 'docs/helper-protocol.md') or die "$!";
        my $doc = do { local $/; <$fh> };
        my ($named) = $doc =~ /`VSB_OPS_AT_ONCE` in `vsb_protocol.h` declares:((?:\s*`\w+`[,;])+)/;
        is(join(',', sort(($named // '') =~ /`(\w+)`/g)),
           join(',', sort @at_once),
           'docs/helper-protocol.md names the ops VSB_OPS_AT_ONCE declares')
            or diag "header: @at_once";
        my %req = (
            ping        => { op => 'ping' },
            status      => { op => 'status', tenant => 't1', agent => 'a1', id => $idp },
            list        => { op => 'list', tenant => 't1' },
            profiles    => { op => 'profiles' },
            exec_status => { op => 'exec_status', tenant => 't1', agent => 'a1',
                             id => $idp, exec => 'ex-0000000000000000' },
            stats       => { op => 'stats' },
            ended       => { op => 'ended' },
            usage       => { op => 'usage', tenant => 't1', agent => 'a1', id => $idp },
        );
        my @ops = grep { $req{$_} } @at_once;
        is(scalar(@ops), scalar(@at_once), 'a request for each of them here')
            or diag "@at_once";
        my $ps = $h->connect;
        VetoTest::write_all($ps, join('', map {
            VetoTest::frame({ %{ $req{$_} }, request_id => "at-$_" }) } @ops));
        my @r = map { [ VetoTest::recv_frame($ps, 20) ] } @ops;
        close $ps;
        is(join(',', map { $_->[0] ? $_->[0]{request_id} // '?' : '<none>' } @r),
           join(',', map { "at-$_" } @ops),
           scalar(@ops) . ' ops answered at once, pipelined: replies in order');
        is(scalar(grep { length($_->[1] // '') } @r), 0, '... none with a payload');
        is(scalar(grep { $_->[0] && $_->[0]{ok} } @r), scalar(@ops) - 1,
           '... each ok but the exec_status of no such exec')
            or diag explain [ map { $_->[0] } @r ];
        unlike($h->log_text, qr/declared answered at once/,
               '... and the helper found each answered at once');
    }

    # an op that answers later (an exec) between quick ones: the frame
    # after it is read once it has answered, and the order holds
    VetoTest::write_all($s, join('',
        VetoTest::frame({ op => 'ping', request_id => 'a' }),
        VetoTest::frame({ op => 'exec', tenant => 't1', agent => 'a1',
                          id => $idp, request_id => 'b',
                          argv => [ 'sh', '-c', 'sleep 0.3; echo slow' ] }),
        VetoTest::frame({ op => 'ping', request_id => 'c' })));
    @got = map { my ($x, $p) = VetoTest::recv_frame($s, 20); [ $x, $p ] } 1 .. 3;
    is(join(',', map { $_->[0] ? $_->[0]{request_id} // '?' : '<none>' } @got),
       'a,b,c', 'ping, exec, ping pipelined: replies in order');
    is($got[1][0]{exit_code}, 0, '... the exec ran');
    like($got[1][1], qr/^slow/, '... its output is its own');
    close $s;

    # a JSON error in the middle is that request's answer; framing holds
    $s = $h->connect;
    VetoTest::write_all($s, join('',
        VetoTest::frame({ op => 'ping', request_id => 'x1' }),
        VetoTest::frame('{"op":"ping",'),
        VetoTest::frame({ op => 'ping', request_id => 'x3' })));
    @got = map { my ($x) = VetoTest::recv_frame($s, 10); $x } 1 .. 3;
    is(join(',', map { $_ ? ($_->{request_id} // $_->{error}) : '<none>' } @got),
       'x1,bad_json,x3', 'bad JSON between two pipelined pings: its own error');
    close $s;

    # a bad frame in the middle: the replies before it, its bad_frame,
    # then the connection is closed (framing is lost): nothing after it
    # is handled
    $s = $h->connect;
    VetoTest::write_all($s, join('',
        VetoTest::frame({ op => 'ping', request_id => 'y1' }),
        VetoTest::frame({ op => 'ping', request_id => 'y2' }),
        pack('a4NN', 'XSB1', length $ping, 0) . $ping,
        VetoTest::frame({ op => 'ping', request_id => 'y4' })));
    @got = map { my ($x) = VetoTest::recv_frame($s, 10); $x } 1 .. 3;
    is(join(',', map { $_ ? ($_->{request_id} // $_->{error}) : '<none>' } @got),
       'y1,y2,bad_frame', 'a bad frame after two pings: both answered, then bad_frame');
    my ($none) = VetoTest::recv_frame($s, 10);
    # (unread bytes at its close: a reset, or EOF)
    ok(!$none && $VetoTest::ERR =~ /^(eof|read: Connection reset)/,
       '... and the connection closed without handling the frame after it')
        or diag explain [ $none, $VetoTest::ERR ];
    close $s;

    # the client shuts its side after its last request: every reply owed
    # is still written, then the helper closes
    $s = $h->connect;
    VetoTest::write_all($s, join('', map { VetoTest::frame({ op => 'ping',
        request_id => "z$_" }) } 1 .. 5));
    shutdown($s, 1);
    @got = map { my ($x) = VetoTest::recv_frame($s, 10); $x } 1 .. 5;
    is(join(',', map { $_ ? $_->{request_id} : '<none>' } @got),
       'z1,z2,z3,z4,z5', 'five pings then a half-close: five replies');
    ($none) = VetoTest::recv_frame($s, 10);
    ok(!$none && $VetoTest::ERR eq 'eof', '... then EOF');
    close $s;

    # a client that pipelines far more than it reads: the helper stops
    # reading it once its replies fill the socket, holds little for it,
    # and serves others meanwhile; every reply arrives once it reads
    my $n = 20000;
    $s = $h->connect;
    my $wpid = fork() // die "fork: $!";
    if ($wpid == 0) {
        VetoTest::write_all($s, join('', map { VetoTest::frame({ op => 'ping',
            brief => JSON::PP::true, request_id => "q$_" }) } 1 .. $n));
        POSIX::_exit(0);
    }
    select(undef, undef, undef, 1);    # on purpose: the flood is under way
    still_serving('a client that pipelines 20000 requests and reads none');
    my ($stats) = $h->call({ op => 'stats' });
    ok($stats->{buffered_bytes} <= 2 * 256 * 1024 + 65536,
       "... the helper holds $stats->{buffered_bytes} bytes for it")
        or diag explain $stats;
    my ($bad, $i) = (0, 0);
    for $i (1 .. $n) {
        my ($x) = VetoTest::recv_frame($s, 20);
        if (!$x || ($x->{request_id} // '') ne "q$i") { $bad = $i; last }
    }
    is($bad, 0, "... once it reads: $n replies, in order");
    waitpid($wpid, 0);
    close $s;

    is($h->destroy($idp)->{state}, 'terminated', 'destroy');
}

# --- ceilings -------------------------------------------------------------
for my $l (qw(memory_mb pids cpu_percent disk_mb timeout_s output_bytes)) {
    my $max = $h->cf("max_$l");
    $r = $h->create(limits => { $l => $max + 1 });
    is($r->{error}, 'over_ceiling', "$l over max: over_ceiling");
    is($r->{limit}, $l, "limit names $l");
}
$r = $h->create(ttl_s => $h->cf('max_ttl_s') + 1);
is($r->{error}, 'over_ceiling', 'ttl_s over max: over_ceiling');
is($r->{limit}, 'ttl_s', 'limit names ttl_s');
$r = $h->create(idle_s => 86401);
is($r->{error}, 'over_ceiling', 'idle_s over max: over_ceiling');
is($r->{limit}, 'idle_s', 'limit names idle_s');
($r) = $h->call({ op => 'ping' });
is($r->{sandboxes}, 0, 'nothing was created by refused requests');

# at the ceiling: accepted exactly, not clamped
my %at = map { $_ => $h->cf("max_$_") }
    qw(memory_mb pids cpu_percent disk_mb timeout_s output_bytes);
$r = $h->create(limits => \%at, ttl_s => $h->cf('max_ttl_s'));
ok($r->{ok}, 'create at every ceiling accepted') or diag explain $r;
is_deeply($r->{sandbox}{limits}, \%at, 'effective limits are exactly the request');
my $id = $r->{sandbox}{id};
my ($e) = $h->exec($id, ['true'], timeout_s => $h->cf('max_timeout_s') + 1);
is($e->{error}, 'over_ceiling', 'exec timeout_s over max: over_ceiling');
is($e->{limit}, 'timeout_s', 'limit names timeout_s');
($e) = $h->exec($id, ['true'], output_bytes => $h->cf('max_output_bytes') + 1);
is($e->{error}, 'over_ceiling', 'exec output_bytes over max: over_ceiling');
is($e->{limit}, 'output_bytes', 'limit names output_bytes');
($e) = $h->exec($id, ['true'], output_bytes => $h->cf('max_output_bytes'));
ok($e->{ok}, 'exec output_bytes at max: accepted');
($e) = $h->call({ op => 'exec_output', tenant => 't1', agent => 'a1',
                  id => $id, exec => 'ex-0000000000000000', stream => 'stdout',
                  max_bytes => $h->cf('max_file_bytes') + 1 });
is($e->{error}, 'over_ceiling', 'exec_output max_bytes over max_file_bytes');
is($e->{limit}, 'file_bytes', 'limit names file_bytes');
is($h->destroy($id)->{state}, 'terminated', 'destroy');

# --- epoch: a gateway names the helper run it believes holds the sandbox --
{
    my $ep = $h->ping->{epoch};
    like($ep, qr/^[0-9a-f]{32}$/, 'ping reports the run\'s epoch');
    my $other = $ep =~ tr/0-9a-f/1-9a-f0/r;
    isnt($other, $ep, 'a different epoch of the same form');
    my $ide = $h->create_ok;

    my ($x, $out) = $h->exec($ide, ['echo', 'same-run'], epoch => $ep);
    ok($x->{ok} && ($out // '') eq "same-run\n", 'exec with the right epoch runs')
        or diag explain $x;
    ($x) = $h->exec($ide, ['sh', '-c', 'echo ran > /workspace/ran'],
                    epoch => $other);
    is($x->{error}, 'epoch_mismatch', 'exec with another epoch: epoch_mismatch')
        or diag explain $x;
    is($x->{epoch}, $ep, 'the refusal carries the helper\'s own epoch');
    is($x->{field}, 'epoch', 'and names the field');
    $x = $h->write_file($ide, 'w', 'data', epoch => $other);
    is($x->{error}, 'epoch_mismatch', 'write_file with another epoch refused');
    $x = $h->destroy($ide, epoch => $other);
    is($x->{error}, 'epoch_mismatch', 'destroy with another epoch refused');
    ($x) = $h->call({ op => 'status', tenant => 't1', agent => 'a1',
                      id => 'sb-000000000000000000000000', epoch => $other });
    is($x->{error}, 'epoch_mismatch',
       'a sandbox this run never held: epoch_mismatch, not not_found');
    ($x) = $h->read_file($ide, 'ran');
    is("$x->{error}:$x->{field}", 'not_found:path',
       'the refused exec ran nothing');
    ($x) = $h->read_file($ide, 'w');
    is("$x->{error}:$x->{field}", 'not_found:path',
       'the refused write_file wrote nothing');
    ($x) = $h->call({ op => 'status', tenant => 't1', agent => 'a1',
                      id => $ide, epoch => $ep });
    is($x->{sandbox}{state}, 'ready', 'the refused destroy left it ready');
    for my $bad ([ 'upper case', uc $ep, 'bad_value' ],
                 [ 'short', substr($ep, 1), 'bad_value' ],
                 [ 'long', $ep . '0', 'bad_value' ],
                 [ 'not hex', 'g' . substr($ep, 1), 'bad_value' ],
                 [ 'a number', 7, 'bad_type' ],
                 [ 'null', undef, 'bad_type' ]) {
        ($x) = $h->call({ op => 'status', tenant => 't1', agent => 'a1',
                          id => $ide, epoch => $bad->[1] });
        is($x->{error}, $bad->[2], "epoch $bad->[0]: $bad->[2]");
        is($x->{field}, 'epoch', "epoch $bad->[0]: names the field");
    }
    ($x) = $h->call({ op => 'ping', epoch => $ep });
    is($x->{error}, 'unknown_field', 'epoch on a request naming no sandbox: '
       . 'unknown_field');
    is($h->destroy($ide, epoch => $ep)->{state}, 'terminated',
       'destroy with the right epoch');
}

# --- caps: the gateway's ceilings for what a request leaves out -----------
{
    my $r = $h->create(caps => { timeout_s => 1, memory_mb => 100,
                                 output_bytes => 64, ttl_s => 120 });
    ok($r->{ok}, 'create with caps') or diag explain $r;
    my $sb = $r->{sandbox} // {};
    is($sb->{limits}{timeout_s}, 1, "a default over its cap is the cap (timeout_s)");
    is($sb->{limits}{memory_mb}, 100, '... (memory_mb)');
    is($sb->{ttl_s}, 120, '... (ttl_s)');
    my $def = $h->ping->{limits_default} // {};
    ok($def->{pids}, "the helper's default pids") or diag explain $def;
    is($sb->{limits}{pids}, $def->{pids}, 'a limit without a cap keeps the default');
    $h->destroy($sb->{id}) if $sb->{id};
    $r = $h->create(limits => { timeout_s => 3 }, caps => { timeout_s => 1 });
    is($r->{sandbox}{limits}{timeout_s}, 3, 'a value the request names is not capped');
    my $id = $r->{sandbox}{id};
    my ($x, $out) = $h->exec($id, ['sh', '-c', 'sleep 2; echo done'],
                             caps => { timeout_s => 1 });
    ok($x->{timed_out}, "an exec without timeout_s: the sandbox's, at most its cap")
        or diag explain $x;
    ($x, $out) = $h->exec($id, ['sh', '-c', 'sleep 2; echo done'],
                          timeout_s => 3, caps => { timeout_s => 1 });
    is($out, "done\n", '... one that names timeout_s is not capped') or diag explain $x;
    ($x, $out) = $h->exec($id, ['sh', '-c', 'head -c 1000 /dev/zero | tr "\\0" x'],
                          caps => { output_bytes => 10 });
    ok($x->{stdout_truncated}, 'output_bytes capped likewise') or diag explain $x;
    for my $bad ([ { cpu => 1 }, 'unknown_field', 'caps.cpu' ],
                 [ { timeout_s => 0 }, 'bad_value', 'caps.timeout_s' ],
                 [ { timeout_s => 'x' }, 'bad_type', 'caps.timeout_s' ],
                 [ { memory_mb => 5 }, 'unknown_field', 'caps.memory_mb' ]) {
        ($x) = $h->exec($id, ['true'], caps => $bad->[0]);
        is("$x->{error}:$x->{field}", "$bad->[1]:$bad->[2]",
           "exec caps $bad->[2]: $bad->[1]");
    }
    ($x) = $h->call({ op => 'create', tenant => 't1', agent => 'a1', caps => [] });
    is("$x->{error}:$x->{field}", 'bad_type:caps', 'create caps not an object: bad_type');
    $h->destroy($id);
}

# --- an administrator's destroy: reason "admin" may name no agent -------
{
    my $ida = $h->create_ok(agent => 'a2');
    my ($x) = $h->call({ op => 'destroy', tenant => 't1', id => $ida });
    is("$x->{error}:$x->{field}", 'missing_field:agent',
       'destroy without an agent, not an admin\'s: missing_field agent');
    ($x) = $h->call({ op => 'destroy', tenant => 't2', id => $ida,
                     reason => 'admin' });
    is($x->{error}, 'not_found', "an admin's destroy of another tenant's: not_found");
    ($x) = $h->call({ op => 'status', tenant => 't1', agent => 'a2', id => $ida });
    is($x->{sandbox}{state}, 'ready', '... which lives on');
    ($x) = $h->call({ op => 'destroy', tenant => 't1', id => $ida,
                     reason => 'admin' }, undef, timeout => 60);
    is($x->{state}, 'terminated', "an admin's destroy, no agent named: terminated")
        or diag explain $x;
    is($x->{ended}{agent}, 'a2', '... its ENDED record names the owner');
    is($x->{ended}{end_reason}, 'admin', '... and the administrator');
    ($x) = $h->call({ op => 'destroy', tenant => 't1', id => $ida,
                     reason => 'admin' });
    is($x->{error}, 'not_found', '... again: not_found');
}

# capacity
my @ids;
for (1 .. $h->cf('max_sandboxes')) {
    my $c = $h->create(limits => { disk_mb => 8 });
    last unless $c->{ok};
    push @ids, $c->{sandbox}{id};
}
is(scalar @ids, $h->cf('max_sandboxes'), 'max_sandboxes sandboxes created');
$r = $h->create;
is($r->{error}, 'capacity', 'one more: capacity');
my @bad = grep { $_->{state} ne 'terminated' } map { $h->destroy($_) } @ids;
is(scalar @bad, 0, 'all destroyed');

$h->leaks_ok('after destroy');
my $st = $h->stop;
is($st, 0, 'helper exits 0 on SIGTERM') or diag $h->log_text;
# --- pipelined frames and the buffer budget (a helper of its own) ------
{
    my ($s, @got, $none);
    # the budget counts every pipelined frame: with the frames of stalled
    # clients holding most of it, a pipelined frame that does not fit is
    # refused with busy after the replies before it (and the connection
    # closed: its payload is not read)
    my $hb = VetoTest->start(max_file_bytes => 1024 * 1024);
    my $wfj = '{"op":"write_file","tenant":"t1","agent":"a1","id":"sb-000000000000000000000000","path":"x"}';
    my @stall = map { my $c = $hb->connect;
        VetoTest::write_all($c, pack('a4NN', 'VSB1', length $wfj, 1024 * 1024) . $wfj);
        $c } 1 .. 8;
    my $hs;
    eventually('8 stalled frames are held', 5, sub {
        ($hs) = $hb->call({ op => 'stats' });
        $hs->{buffered_bytes} >= 8 * 1024 * 1024;
    });
    ok($hs->{buffered_bytes} >= 8 * 1024 * 1024, "8 stalled frames hold "
       . "$hs->{buffered_bytes} of $hs->{buffer_limit_bytes} bytes");
    $s = $hb->connect;
    VetoTest::write_all($s, join('',
        VetoTest::frame({ op => 'ping', request_id => 'b1' }),
        pack('a4NN', 'VSB1', length $wfj, 1024 * 1024) . $wfj,
        VetoTest::frame({ op => 'ping', request_id => 'b3' })));
    @got = map { my ($x) = VetoTest::recv_frame($s, 10); $x } 1 .. 2;
    is(join(',', map { $_ ? ($_->{request_id} // $_->{error}) : '<none>' } @got),
       'b1,busy', 'pipelined: ping answered, the frame over budget busy');
    ($none) = VetoTest::recv_frame($s, 10);
    ok(!$none && $VetoTest::ERR =~ /^(eof|read: Connection reset)/,
       '... and the connection closed') or diag explain [ $none, $VetoTest::ERR ];
    close $_ for @stall, $s;
    # (but the stats request itself, held while it is handled)
    eventually('the stalled clients gone: nothing held', 5, sub {
        ($hs) = $hb->call({ op => 'stats' });
        $hs->{buffered_bytes} == length('{"op":"stats"}') + 1;
    }) or diag "buffered_bytes: $hs->{buffered_bytes}";
    is($hb->stop, 0, 'that helper exits 0');

}

done_testing;
