# Long work an agent can watch.  Streamed execs: output as event frames
# while the command runs, a final reply equal to the non-streamed one, a
# slow reader that cannot make the helper buffer, a client that leaves
# and takes its exec with it.  Output bounds: the head and the tail, the
# middle counted.  Background execs: an id at once, output polled by
# offset or followed, a loopback server reached by a later exec, kill
# with confirmation, deadline, the sandbox's end, the bounds.
use strict;
use warnings;
use IO::Select;
use Test::More;
use Time::HiRes qw(time sleep);
use lib 't/lib';
use VetoTest qw(sandbox_uid_procs);
use Eventually qw(eventually);

# Under ASan the helper's RSS would include ASan's quarantine of freed
# buffers: without it, RSS means the same as in the normal build.
$ENV{ASAN_OPTIONS} = 'detect_leaks=1:abort_on_error=0:exitcode=66:'
                   . 'quarantine_size_mb=0';

my $T = JSON::PP::true;
my $h = VetoTest->start(max_background_execs => 2);
my $id = $h->create_ok;

sub rss_kb
{
    my ($pid) = @_;
    open(my $fh, '<', "/proc/$pid/status") or return -1;
    while (<$fh>) { return $1 if /^VmRSS:\s+(\d+)/ }
    return -1;
}

sub exec_frame
{
    my ($sid, $script, %a) = @_;
    return VetoTest::frame({ op => 'exec', tenant => 't1', agent => 'a1',
                             id => $sid, argv => [ '/bin/sh', '-c', $script ],
                             %a });
}

# Processes of ours whose command line holds $marker.
sub procs_with
{
    my ($marker) = @_;
    return grep { /\Q$marker\E/ } sandbox_uid_procs($h->uid_base, $h->uid_end);
}


# --- streamed: the first output long before the command ends ----------
{
    my $s = $h->connect;
    VetoTest::write_all($s, exec_frame($id, 'echo first; while [ ! -e '
        . '/workspace/go ]; do sleep 0.05; done; echo last', stream => $T,
        timeout_s => 30));
    my ($ev, $p) = VetoTest::recv_frame($s, 20);
    is($ev->{event}, 'output', 'an event frame comes while the command '
       . 'still waits') or diag explain $ev;
    is_deeply([ $ev->{stream}, $ev->{offset}, $p ], [ 'stdout', 0, "first\n" ],
              '... with its stream, offset and bytes');
    ok(!exists $ev->{ok}, '... and no "ok": it is not the reply');

    # only now may the command finish: the chunk came before its end
    ok($h->write_file($id, 'go', '')->{ok}, 'the test lets it finish');
    my (@ev, $r);
    while (my ($f, $b) = VetoTest::recv_frame($s, 20)) {
        if (exists $f->{event}) { push @ev, [ $f, $b ]; next }
        $r = $f;
        last;
    }
    is_deeply([ map { [ $_->[0]{offset}, $_->[1] ] } @ev ], [ [ 6, "last\n" ] ],
              'the rest as events, offsets in order');
    ok($r && $r->{ok}, 'then the reply') or diag explain $r;
    is($r->{exit_code}, 0, '... exit 0');
    ok(!$r->{timed_out}, '... not at its deadline');
    ok(!exists $r->{stdout_len}, '... describing no payload (it went as events)');
    is($r->{stdout_bytes}, 11, '... but counting every byte');
    close $s;
}

# --- the final reply equals the non-streamed one ----------------------
{
    my $cmd = 'printf "a\nb\n"; printf "err\n" >&2; seq 1 3000; exit 3';
    my ($n, $out, $err) = $h->sh($id, $cmd);
    my ($r, undef, $ev) = $h->call_stream({ op => 'exec', tenant => 't1',
        agent => 'a1', id => $id, argv => [ '/bin/sh', '-c', $cmd ],
        stream => $T });
    is(VetoTest::events_data($ev, 'stdout'), $out, 'streamed stdout = '
       . 'the reply payload\'s');
    is(VetoTest::events_data($ev, 'stderr'), $err, 'streamed stderr too');
    my %a = %$n;
    my %b = %$r;
    delete @a{qw(usage stdout_len stderr_len stdout_head_len stderr_head_len)};
    delete $b{usage};
    is_deeply(\%b, \%a, 'the streamed final reply equals the non-streamed '
              . 'one (payload lengths and usage aside)');
}

# --- a slow reader: the workload waits, the helper does not buffer -----
{
    my $hp = $h->pid;
    my $s = $h->connect;
    my $rss0 = rss_kb($hp);
    VetoTest::write_all($s, exec_frame($id, 'head -c 64M /dev/zero',
                                       stream => $T, timeout_s => 60));
    my ($ev, $b0) = VetoTest::recv_frame($s, 20);
    is($ev->{event}, 'output', 'a 64 MiB stream starts');
    sleep 3;                            # nobody reads
    my $grown = (rss_kb($hp) - $rss0) / 1024;
    ok($grown < 8, sprintf('the helper grew by %.1f MiB while nobody read',
                           $grown));
    my ($next, $gap, $r) = (length $b0, 0);
    while (my ($f, $b) = VetoTest::recv_frame($s, 30)) {
        if (exists $f->{event}) {
            $gap++ if $f->{offset} != $next;
            $next = $f->{offset} + length $b;
            next;
        }
        $r = $f;
        last;
    }
    is($r->{exit_code}, 0, 'then it ran to its end');
    is($r->{stdout_bytes}, 64 * 1024 * 1024, 'every byte counted');
    is($gap, 0, 'and sent, in order, without a gap');
    close $s;
}

# --- the client leaves: its streamed exec is killed -------------------
{
    my $mark = '1000.' . int(rand(1e6));
    my $s = $h->connect;
    VetoTest::write_all($s, exec_frame($id, "echo started; sleep $mark",
                                       stream => $T, timeout_s => 60));
    my ($ev) = VetoTest::recv_frame($s, 20);
    is($ev->{event}, 'output', 'a streamed exec started');
    eventually('... its sleep runs', 10, sub { procs_with("sleep $mark") });
    close $s;
    eventually('the client left: its processes are gone', 15,
               sub { !procs_with("sleep $mark") });
    like($h->log_text, qr/client gone, cancelling exec/, '... the helper '
         . 'says why');
    eventually('... and records that it killed it without a reply', 10, sub {
        $h->log_text =~ /client gone: killed, no reply/ });
}

# --- head and tail: seq 1 2000000; echo SUMMARY ------------------------
{
    my ($e, $out) = $h->sh($id, 'seq 1 2000000; echo SUMMARY');
    my $total = length(join('', map { "$_\n" } 1 .. 2000000)) + 8;
    ok($e->{ok}, 'a 14 MB output') or diag explain $e;
    is($e->{stdout_bytes}, $total, 'stdout_bytes: all of it');
    like($out, qr/\ASUMMARY\n\z|\n?SUMMARY\n\z/, 'it ends with SUMMARY');
    like($out, qr/\A1\n2\n3\n/, 'it starts with the first lines');
    ok(length $out <= $h->cf('default_output_bytes'), 'within output_bytes');
    is($e->{stdout_dropped_bytes}, $total - length $out,
       'stdout_dropped_bytes says how much was left out');
    ok($e->{stdout_truncated}, 'stdout_truncated');
    my $head = substr($out, 0, $e->{stdout_head_len});
    my $tail = substr($out, $e->{stdout_head_len});
    ok($head =~ /\A\d/ && $head =~ /\n\z/ && $head !~ /[^\d\n]|\n\n/,
       'the head is whole lines');
    (my $nums = $tail) =~ s/SUMMARY\n\z//;
    ok($nums =~ /\A\d/ && $nums =~ /\n\z/ && $nums !~ /[^\d\n]|\n\n/,
       'the tail is whole lines, then SUMMARY');
    my ($last) = $head =~ /(\d+)\n\z/;
    my ($after) = $tail =~ /\A(\d+)\n/;
    ok($after > $last + 1, "the middle left out: $last, then $after");
    is($tail =~ /\n1999999\n2000000\nSUMMARY\n\z/ ? 1 : 0, 1,
       'the last lines intact');
}

# --- background: an id at once, output by offset while it runs --------
my $bg = sub {
    my ($sid, $script, %a) = @_;
    my ($r) = $h->call({ op => 'exec', tenant => 't1', agent => 'a1',
                         id => $sid, argv => [ '/bin/sh', '-c', $script ],
                         background => $T, %a });
    return $r;
};
my $st = sub {
    my ($sid, $ex) = @_;
    my ($r) = $h->exec_op('exec_status', $sid, $ex);
    return $r;
};

{
    my $r = $bg->($id, 'for i in $(seq 1 30); do echo line $i; sleep 0.1; '
                  . 'done');
    ok($r->{ok}, 'a background exec: answered at once') or diag explain $r;
    my $ex = $r->{exec}{id};
    like($ex, qr/^ex-[0-9a-f]{16}$/, "its id, $ex");
    is($r->{exec}{state}, 'running', 'state running');

    my ($got, $off, $polls_running) = ('', 0, 0);
    my $deadline = time + 30;
    while (time < $deadline) {
        my ($o, $p) = $h->exec_op('exec_output', $id, $ex, stream => 'stdout',
                                  offset => $off);
        ok(0, 'exec_output failed') && diag explain $o unless $o->{ok};
        last unless $o->{ok};
        is($o->{offset}, $off, 'no gap') if length $p;
        $got .= $p;
        $off = $o->{next_offset};
        $polls_running++ if length $p && $o->{exec}{state} eq 'running';
        last if $o->{complete};
        sleep 0.3;
    }
    ok($polls_running >= 2, "output came by offset while it ran "
       . "($polls_running polls)");
    is($got, join('', map { "line $_\n" } 1 .. 30), 'all of it, in order');
    my $s = $st->($id, $ex);
    is($s->{exec}{state}, 'exited', 'then exited');
    is($s->{exec}{result}{exit_code}, 0, '... exit 0');
    ok(defined $s->{exec}{ended_at}, '... ended_at');
}

# --- a loopback server, a concurrent exec, kill with confirmation ------
{
    ok($h->write_file($id, 'www/hello.txt', "hello over loopback\n")->{ok},
       'a file to serve');
    my $r = $bg->($id, 'cd /workspace/www && exec python3 -u -m http.server '
                  . '8765 --bind 127.0.0.1');
    my $ex = $r->{exec}{id};
    eventually('the server says it listens', 20, sub {
        my (undef, $p) = $h->exec_op('exec_output', $id, $ex,
                                     stream => 'stdout');
        ($p // '') =~ /Serving HTTP/ });
    my ($e, $out) = $h->exec($id, [ 'python3', '-c',
        'import urllib.request as u; print(u.urlopen("http://127.0.0.1:8765'
        . '/hello.txt").read().decode(), end="")' ]);
    is($out, "hello over loopback\n", 'a later exec reaches it over loopback');

    my ($k) = $h->exec_op('exec_kill', $id, $ex);
    ok($k->{ok} && $k->{killed}, 'exec_kill: killed') or diag explain $k;
    is_deeply($k->{confirmed}, { processes => $T }, '... confirmed');
    is($k->{exec}{state}, 'killed', '... state killed');
    is($k->{exec}{result}{signal}, 9, '... by SIGKILL');
    ($e, $out) = $h->exec($id, [ 'python3', '-c',
        "import urllib.request as u\ntry:\n u.urlopen('http://127.0.0.1:8765/')"
        . "\nexcept Exception as x: print('refused')" ]);
    is($out, "refused\n", 'nothing listens any more');
    ($k) = $h->exec_op('exec_kill', $id, $ex);
    ok($k->{ok} && !$k->{killed}, 'a second kill: ok, nothing to kill');
    my ($o, $p) = $h->exec_op('exec_output', $id, $ex, stream => 'stderr');
    like($p, qr/GET \/hello.txt/, 'its output stays readable after the kill');
}

# --- the deadline --------------------------------------------------------
{
    my $r = $bg->($id, 'sleep 100', timeout_s => 2);
    my $ex = $r->{exec}{id};
    eventually('a background exec past its deadline ends', 20,
               sub { $st->($id, $ex)->{exec}{state} ne 'running' });
    my $s = $st->($id, $ex);
    is($s->{exec}{state}, 'timed_out', 'state timed_out');
    ok($s->{exec}{result}{timed_out}, 'result timed_out');
}

# --- following it live ---------------------------------------------------
{
    my $r = $bg->($id, 'for i in $(seq 1 20); do echo $i; sleep 0.05; done; '
                  . 'echo oops >&2');
    my $ex = $r->{exec}{id};
    my ($f, undef, $ev) = $h->call_stream({ op => 'exec_output', tenant => 't1',
        agent => 'a1', id => $id, exec => $ex, stream => 'stdout',
        follow => $T });
    ok($f->{ok} && $f->{complete}, 'followed to its end') or diag explain $f;
    is(VetoTest::events_data($ev, 'stdout'), join('', map { "$_\n" } 1 .. 20),
       'every line as events');
    is($f->{next_offset}, $f->{exec}{stdout_bytes}, 'next_offset: the end');
    ok(@$ev > 1, 'in ' . scalar(@$ev) . ' events as it came');
    ($f, undef, $ev) = $h->call_stream({ op => 'exec_output', tenant => 't1',
        agent => 'a1', id => $id, exec => $ex, stream => 'stdout',
        offset => 36, follow => $T });
    is(VetoTest::events_data($ev, 'stdout'), join('', map { "$_\n" } 16 .. 20),
       'a follow from an offset, after its end');
    ($f, undef, $ev) = $h->call_stream({ op => 'exec_output', tenant => 't1',
        agent => 'a1', id => $id, exec => $ex, stream => 'stderr',
        follow => $T });
    is(VetoTest::events_data($ev, 'stderr'), "oops\n", 'stderr followed too');
}

# --- retention: head and tail, by offset -------------------------------
{
    my $r = $bg->($id, 'seq 1 200000', output_bytes => 10000);
    my $ex = $r->{exec}{id};
    eventually('a big background output ended', 20,
               sub { $st->($id, $ex)->{exec}{state} ne 'running' });
    my ($o, $p) = $h->exec_op('exec_output', $id, $ex, stream => 'stdout',
                              max_bytes => 100000);
    is($o->{len}, 5000, 'the head: half of output_bytes');
    like($p, qr/\A1\n2\n3\n/, '... from the start');
    ok(!$o->{complete}, '... not complete');
    my $total = $o->{total};
    ($o, $p) = $h->exec_op('exec_output', $id, $ex, stream => 'stdout',
                           offset => $o->{next_offset});
    is($o->{offset}, $total - 5000, 'the next run: the tail');
    is($o->{skipped_bytes}, $total - 10000, 'skipped_bytes: the middle');
    like($p, qr/\n199999\n200000\n\z/, '... to the end');
    ok($o->{complete}, '... complete');
    is($o->{exec}{result}{stdout_dropped_bytes}, $total - 10000,
       'the result counts what was not retained');
    ($o) = $h->exec_op('exec_output', $id, $ex, stream => 'stdout',
                       offset => $total + 1);
    is($o->{error}, 'bad_value', 'an offset past the end: bad_value');
    is($o->{field}, 'offset', '... naming offset');
}

# --- no client needed; the bound on running ones -----------------------
{
    my $s = $h->connect;
    VetoTest::write_all($s, VetoTest::frame({ op => 'exec', tenant => 't1',
        agent => 'a1', id => $id, argv => [ '/bin/sh', '-c',
        'for i in $(seq 1 20); do echo $i; sleep 0.1; done' ],
        background => $T }));
    my ($r) = VetoTest::recv_frame($s, 20);
    close $s;
    my $ex = $r->{exec}{id};
    sleep 1;    # on purpose: its client is gone for a while
    is($st->($id, $ex)->{exec}{state}, 'running', 'it runs with no client');
    my $other = $bg->($id, 'sleep 30');
    ok($other->{ok}, 'a second one');
    my $third = $bg->($id, 'sleep 30');
    is($third->{error}, 'busy', 'a third with max_background_execs 2: busy');
    is($third->{limit}, 'background_execs', '... naming the limit');
    my ($e, $out) = $h->sh($id, 'echo foreground');
    is($out, "foreground\n", 'a foreground exec runs meanwhile');
    eventually('the one without a client ran to its end', 20,
               sub { $st->($id, $ex)->{exec}{state} eq 'exited' });
    my ($o, $p) = $h->exec_op('exec_output', $id, $ex, stream => 'stdout');
    is($p, join('', map { "$_\n" } 1 .. 20), 'its output kept');
    $h->exec_op('exec_kill', $id, $other->{exec}{id});
}

# --- errors --------------------------------------------------------------
{
    my $r = $bg->($id, 'true');
    my $ex = $r->{exec}{id};
    my ($o) = $h->exec_op('exec_status', $id, 'ex-0000000000000000');
    is($o->{error}, 'not_found', 'an unknown exec: not_found');
    is($o->{field}, 'exec', '... naming exec');
    ($o) = $h->exec_op('exec_status', $id, $ex, agent => 'a2');
    is($o->{error}, 'not_found', 'another agent: not_found');
    is($o->{field}, 'id', '... of the sandbox, as for any other op');
    ($o) = $h->exec_op('exec_status', $id, 'ex-XYZ');
    is($o->{error}, 'bad_value', 'a malformed exec id: bad_value');
    ($o) = $h->exec_op('exec_output', $id, $ex, stream => 'stdin');
    is($o->{error}, 'bad_value', 'stream stdin: bad_value');
    ($o) = $h->exec_op('exec_output', $id, $ex, stream => 'stdout',
                       follow => $T, max_bytes => 10);
    is($o->{error}, 'bad_value', 'follow with max_bytes: bad_value');
    ($o) = $h->call({ op => 'exec', tenant => 't1', agent => 'a1', id => $id,
                      argv => ['true'], stream => $T, background => $T });
    is($o->{error}, 'bad_value', 'stream and background: bad_value');
}

# --- ended ones are forgotten beyond the bound; the sandbox's end -------
{
    my $id2 = $h->create_ok;
    my @ex;
    for my $i (1 .. 3) {
        my $r = $bg->($id2, "echo $i");
        push @ex, $r->{exec}{id};
        eventually("background exec $i ends", 20,
                   sub { $st->($id2, $ex[-1])->{exec}{state} ne 'running' });
    }
    is($st->($id2, $ex[0])->{error}, 'not_found',
       'three ended, two kept: the oldest is forgotten');
    is($st->($id2, $ex[2])->{exec}{state}, 'exited', 'the newest is kept');

    my $mark = '1000.' . int(rand(1e6));
    my $r = $bg->($id2, "sleep $mark");
    eventually('a background exec runs', 10,
               sub { procs_with("sleep $mark") });
    my $d = $h->destroy($id2);
    ok($d->{ok}, 'the sandbox is destroyed') or diag explain $d;
    ok(!procs_with("sleep $mark"), '... its background exec with it');
    is($st->($id2, $r->{exec}{id})->{error}, 'ended',
       '... and its record: the sandbox has ended');
}

# --- retained output is on the sandbox's own disk ------------------------
{
    my $id3 = $h->create_ok;
    my $used = sub {
        my ($r) = $h->call({ op => 'status', tenant => 't1', agent => 'a1',
                             id => $id3 });
        return $r->{sandbox}{usage}{disk_used_bytes};
    };
    my $before = $used->();
    my $r = $bg->($id3, 'head -c 20000000 /dev/urandom',
                  output_bytes => 4 * 1024 * 1024);
    eventually('the big output ends', 20,
               sub { $st->($id3, $r->{exec}{id})->{exec}{state} ne 'running' });
    ok($used->() - $before >= 4 * 1000 * 1000,
       'its retained output counts against the sandbox\'s disk');
    $h->destroy($id3);
}

ok($h->destroy($id)->{ok}, 'destroy');
$h->leaks_ok('after streams and background execs');
is($h->stop, 0, 'helper exits cleanly');
done_testing;
