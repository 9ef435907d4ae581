# Archives in and out of a sandbox, parsed only inside it by the
# profile's GNU tar.  A real project (C with its tests, a script that
# needs its executable bit, a tree of thousands of files) goes in as one
# tar.gz, is built and tested, and the workspace comes back as one
# archive.  Hostile archives (.. and absolute names, links out, a hard
# link to /etc/shadow, device nodes, a FIFO, setuid bits, a 10 GiB zero
# bomb, a sparse one, a million entries, corrupt compression) neither
# escape nor stall the helper, and each is answered clearly.
use strict;
use warnings;
use Digest::SHA qw(sha256_hex);
use File::Path qw(make_path);
use IO::Select;
use POSIX qw(:sys_wait_h);
use Test::More;
use Time::HiRes qw(time sleep);
use lib 't/lib';
use VetoTest;
use Eventually qw(eventually);

my $MFB = 1024 * 1024;
my $h = VetoTest->start(max_timeout_s => 120, default_timeout_s => 90,
                        max_file_bytes => $MFB,
                        max_archive_bytes => 48 * 1024 * 1024);
my $M = 'M' . VetoTest::random_hex(6);
my $tmp = $h->dir . '/archives';
make_path($tmp);
my $GEN = VetoTest::repo_root() . '/t/lib/archives.py';

sub slurp
{
    my ($f) = @_;
    open(my $fh, '<:raw', $f) or die "open $f: $!";
    local $/;
    return scalar <$fh>;
}

sub gen
{
    my ($case, $filter) = @_;
    my $out = "$tmp/$case";
    my $cmd = "python3 '$GEN' $case $M '" . $h->dir . "'"
        . ($filter ? " | $filter" : '') . " > '$out'";
    system($cmd) == 0 or die "$cmd: $?";
    return slurp($out);
}

# The names a hostile archive planted, wherever they are.  Inside the
# sandbox only under /workspace/<dir>/ is fine; on the host, nowhere.
my $CASES = qr{^/workspace/(?:dotdot|absolute|symlink|hardlink|devices|fifo|modes)/};

sub planted_ok
{
    my ($id, $what) = @_;
    my ($e, $out) = $h->sh($id, "find / -xdev -name '*$M*' 2>/dev/null; true");
    my @bad = grep { !/$CASES/ } split /\n/, $out // '';
    is_deeply(\@bad, [], "$what: nothing planted outside the directory "
              . "extracted to, in the sandbox") or diag $out;
    my @host = grep { -e $_ } map { glob("$_/*$M*") }
        ('/tmp', '/etc', '/', $h->dir, $h->dir . '/state', $tmp);
    is_deeply(\@host, [], "$what: nothing planted on the host");
}

# --- a real project: one upload, build, test, fix, export -------------
my $proj = "$tmp/project";
make_path("$proj/src", "$proj/tests");
{
    my %files = (
        'src/calc.h' => "int add(int a, int b);\nint mul(int a, int b);\n",
        'src/calc.c' => "#include \"calc.h\"\nint add(int a, int b) { return a + b; }\n"
                      . "int mul(int a, int b) { return a + b; }   /* bug */\n",
        'tests/test_calc.c' => <<'C',
#include <stdio.h>
#include "../src/calc.h"
int main(void)
{
    int fail = 0;
    if (add(2, 3) != 5) { printf("FAIL add\n"); fail++; }
    if (mul(4, 5) != 20) { printf("FAIL mul\n"); fail++; }
    printf("%s: %d failed\n", fail ? "TESTS FAILED" : "ALL TESTS PASSED", fail);
    return fail != 0;
}
C
        'Makefile' => "test: tests/test_calc\n\t./tests/test_calc\n"
                    . "tests/test_calc: src/calc.c tests/test_calc.c\n"
                    . "\tcc -Wall -o \$@ src/calc.c tests/test_calc.c\n",
        'run-tests.sh' => "#!/bin/sh\nset -e\nmake -s test\n",
    );
    for my $f (keys %files) {
        open(my $fh, '>', "$proj/$f") or die "$proj/$f: $!";
        print $fh $files{$f};
        close $fh;
    }
    chmod 0755, "$proj/run-tests.sh";
    # a nested tree of 3000 files
    for my $i (0 .. 2999) {
        my $d = sprintf('%s/data/%02d/%02d', $proj, $i % 30, int($i / 30) % 10);
        make_path($d) unless -d $d;
        open(my $fh, '>', "$d/f$i.txt") or die "$d: $!";
        print $fh "file $i\n";
        close $fh;
    }
}
system("tar -czf '$tmp/project.tgz' -C '$proj' .") == 0 or die 'tar';
my $tgz = slurp("$tmp/project.tgz");

my $id = $h->create_ok(limits => { disk_mb => 128 });
my $requests = 0;
my $r = $h->extract_archive($id, 'proj', $tgz);
$requests++;
ok($r->{ok}, 'the project, one tar.gz, extracted') or diag explain $r;
is($r->{path}, 'proj', 'reply: path, workspace-relative');
is($r->{format}, 'tar.gz', 'reply: format, told by its bytes');
is($r->{size}, length $tgz, 'reply: size of the upload');
is($r->{sha256}, sha256_hex($tgz), 'reply: its sha256');

my ($e, $out, $err) = $h->exec($id, ['./run-tests.sh'], cwd => 'proj');
$requests++;
is($e->{exit_code}, 2, 'the script ran (its executable bit kept): make '
   . 'fails on the bug') or diag "$out\n$err";
like($out, qr/FAIL mul/, 'the test suite found the bug');
($e, $out) = $h->sh($id, 'find /workspace/proj/data -type f | wc -l; '
                    . 'stat -c %a /workspace/proj/run-tests.sh /workspace/proj/src/calc.c; '
                    . 'stat -c %U /workspace/proj/src/calc.c');
is($out, "3000\n755\n644\nsandbox\n",
   'all 3000 files, modes kept, owned by the sandbox user');

# fix a file, run the tests again, export the workspace
$r = $h->write_file($id, '/workspace/proj/src/calc.c',
                    "#include \"calc.h\"\nint add(int a, int b) { return a + b; }\n"
                    . "int mul(int a, int b) { return a * b; }\n");
$requests++;
ok($r->{ok}, 'a fix written by its /workspace path');
($e, $out) = $h->exec($id, ['/workspace/proj/run-tests.sh'],
                      cwd => '/workspace/proj');
$requests++;
is($e->{exit_code}, 0, 'the tests pass now');
like($out, qr/ALL TESTS PASSED/, '... says the suite');

my ($x, $data, $ev) = $h->export_archive($id, '/workspace/proj',
                                         format => 'tar.gz');
$requests++;
ok($x->{ok}, 'the project exported as tar.gz') or diag explain $x;
is($x->{size}, length $data, 'export: size is what came');
is($x->{sha256}, sha256_hex($data), 'export: sha256 of what came');
ok(@$ev >= 1, 'export: streamed in ' . scalar(@$ev) . ' event frame(s)');
{
    open(my $fh, '>:raw', "$tmp/out.tgz") or die;
    print $fh $data;
    close $fh;
    make_path("$tmp/out");
    is(system("tar -xzf '$tmp/out.tgz' -C '$tmp/out'"), 0,
       'the export is a tar.gz the host reads');
    like(slurp("$tmp/out/src/calc.c"), qr/a \* b/, 'with the fix');
    is(scalar(() = glob("$tmp/out/data/*/*/*.txt")), 3000, 'and every file');
    is((stat "$tmp/out/run-tests.sh")[2] & 07777, 0755, 'and the script mode');
    my $listing = `tar -tvzf '$tmp/out.tgz' ./run-tests.sh`;
    like($listing, qr{^-rwxr-xr-x 0/0 }, 'owned by 0/0 in the archive');
}
$requests++ if $h->destroy($id)->{ok};
ok($requests <= 7, "the whole workflow took $requests requests");

# --- formats --------------------------------------------------------
$id = $h->create_ok;
for my $f ([ 'tar', '' ], [ 'tar.gz', 'gzip -c' ], [ 'tar.zst', 'zstd -q -c' ],
           [ 'tar.xz', 'xz -c' ]) {
    my ($fmt, $z) = @$f;
    system("tar -cf - -C '$proj' src" . ($z ? " | $z" : '')
           . " > '$tmp/src.$fmt'") == 0 or die;
    my $bytes = slurp("$tmp/src.$fmt");
    $r = $h->extract_archive($id, "fmt/$fmt", $bytes);
    is($r->{format}, $fmt, "$fmt: told by its bytes") or diag explain $r;
    $r = $h->extract_archive($id, "fmt2/$fmt", $bytes, format => $fmt);
    ok($r->{ok}, "$fmt: given explicitly");
    ($x, $data) = $h->export_archive($id, "fmt/$fmt", format => $fmt);
    ok($x->{ok} && length $data, "$fmt: exported");
    $r = $h->extract_archive($id, "back/$fmt", $data);
    is($r->{format}, $fmt, "$fmt: its export goes back in");
}
($e, $out) = $h->sh($id, 'cat /workspace/back/*/src/calc.h | sort -u | wc -l');
is($out, "2\n", 'every round trip kept the content');
$r = $h->extract_archive($id, 'x', slurp("$tmp/src.tar.gz"), format => 'tar');
is($r->{error}, 'bad_archive', 'the wrong format given: bad_archive');
like($r->{stderr}, qr/This does not look like a tar archive|compressed/,
     '... with what tar said');

# --- paths ----------------------------------------------------------
my $small = slurp("$tmp/src.tar");
for my $p ('/etc', '/workspace/../etc', '../x', 'a//b', '/tmp/x') {
    $r = $h->extract_archive($id, $p, $small);
    is($r->{error}, 'bad_path', "extract to \"$p\": bad_path");
    is($r->{field}, 'path', '... naming the field');
}
$r = $h->extract_archive($id, undef, $small);
ok($r->{ok} && $r->{path} eq '.', 'no path: the workspace itself');
$r = $h->extract_archive($id, '/workspace', $small);
ok($r->{ok}, '"/workspace": the workspace itself');
$h->sh($id, 'ln -s /etc /workspace/link; echo x > /workspace/afile');
$r = $h->extract_archive($id, 'link/sub', $small);
is($r->{error}, 'bad_path', 'a symlink on the way: bad_path');
$r = $h->extract_archive($id, 'afile', $small);
is($r->{error}, 'not_a_directory', 'a file as the directory: not_a_directory');
($x) = $h->export_archive($id, 'no/such');
is($x->{error}, 'not_found', 'export of a missing directory: not_found');
($x) = $h->export_archive($id, 'afile');
is($x->{error}, 'not_a_directory', 'export of a file: not_a_directory');
($x) = $h->export_archive($id, 'link');
is($x->{error}, 'bad_path', 'export through a symlink: bad_path');
($x) = $h->export_archive($id, undef, format => 'rar');
is($x->{error}, 'bad_value', 'an unknown format: bad_value');
$h->destroy($id);

# --- hostile archives ------------------------------------------------
$id = $h->create_ok;

$r = $h->extract_archive($id, 'dotdot', gen('dotdot'));
is($r->{error}, 'bad_archive', '"..": bad_archive') or diag explain $r;
like($r->{stderr}, qr/Member name contains '\.\.'/, '... tar names the member');
($e, $out) = $h->sh($id, 'cat /workspace/dotdot/ok-before.txt');
is($out, "ok\n", '... what came before is extracted');
planted_ok($id, '".."');

$r = $h->extract_archive($id, 'absolute', gen('absolute'));
ok($r->{ok}, 'absolute names: extracted under the directory')
    or diag explain $r;
like($r->{stderr}, qr/Removing leading .\/' from member names/,
     '... and tar says it made them relative');
($e, $out) = $h->sh($id, "ls /workspace/absolute/tmp /workspace/absolute/etc");
like($out, qr/abs-$M.txt/, '... /tmp/x became absolute/tmp/x');
planted_ok($id, 'absolute names');

$r = $h->extract_archive($id, 'symlink', gen('symlink'));
is($r->{error}, 'bad_archive', 'a file through a link out: bad_archive')
    or diag explain $r;
like($r->{stderr}, qr/through-$M.txt: Cannot open/, '... tar names it');
($e, $out) = $h->sh($id, 'cat /workspace/symlink/real/inside.txt');
is($out, "inside\n", '... a link inside the archive works');
planted_ok($id, 'links out');

$r = $h->extract_archive($id, 'hardlink', gen('hardlink'));
is($r->{error}, 'bad_archive', 'hard links to /etc/shadow, out: bad_archive');
like($r->{stderr}, qr/Cannot hard link/, '... tar says so');
($e, $out) = $h->sh($id, "ls /workspace/hardlink | wc -l");
is($out, "0\n", '... no link was made');
planted_ok($id, 'hard links');

$r = $h->extract_archive($id, 'devices', gen('devices'));
is($r->{error}, 'bad_archive', 'device nodes: bad_archive');
like($r->{stderr}, qr/Cannot mknod/, '... tar could not make them');
($e, $out) = $h->sh($id, "find /workspace/devices -type c -o -type b | wc -l");
is($out, "0\n", '... not one device node exists');
planted_ok($id, 'device nodes');

# a FIFO is what the workload could make itself; the helper never
# opens one
$r = $h->extract_archive($id, 'fifo', gen('fifo'));
ok($r->{ok}, 'a FIFO: extracted (a workload could make one)');
($e, $out) = $h->sh($id, "stat -c %F /workspace/fifo/fifo-$M; cat /workspace/fifo/after.txt");
is($out, "fifo\nafter\n", '... as a FIFO, and the rest too');
($r) = $h->read_file($id, "fifo/fifo-$M");
is($r->{error}, 'not_a_file', 'read_file of it: not_a_file, at once');
($x, $data) = $h->export_archive($id, 'fifo');
ok($x->{ok}, 'export of a directory holding it does not block');

$r = $h->extract_archive($id, 'modes', gen('modes'));
ok($r->{ok}, 'setuid, setgid, sticky: extracted') or diag explain $r;
($e, $out) = $h->sh($id, 'cd /workspace/modes && stat -c "%n %a" suid sgid '
                    . 'sticky world private script.sh && ./suid && ./script.sh');
is($out, "suid 755\nsgid 755\nsticky 755\nworld 755\nprivate 600\n"
   . "script.sh 755\n1000\nscript\n",
   '... without those bits, the rest of each mode kept, umask 022');

# bombs stop at the disk: no_space
my $bomb = gen('zero-bomb');
ok(length $bomb < 16 * 1024 * 1024, sprintf('a 10 GiB zero bomb in %.1f MiB',
   length($bomb) / 1048576));
my $t0 = time;
$r = $h->extract_archive($id, 'bomb', $bomb);
diag(sprintf('the zero bomb was stopped after %.1f s', time - $t0));
is($r->{error}, 'no_space', 'the zero bomb: no_space') or diag explain $r;
is($r->{limit}, 'disk_mb', '... naming disk_mb');
like($r->{stderr} // '', qr/No space left on device|Wrote only/,
     '... tar said so');
($e, $out) = $h->sh($id, 'rm -rf /workspace/bomb && echo cleared');
is($out, "cleared\n", 'the space comes back');

system("truncate -s 10G '$tmp/sparse.bin' && tar -cSf '$tmp/sparse.tar' "
       . "-C '$tmp' sparse.bin") == 0 or die 'sparse';
ok(-s "$tmp/sparse.tar" < 1024 * 1024, 'a sparse 10 GiB file in a small tar');
$r = $h->extract_archive($id, 'sparse', slurp("$tmp/sparse.tar"));
is($r->{error}, 'no_space', 'the sparse bomb: no_space (a file may not '
   . 'outgrow the disk)') or diag explain $r;
$h->sh($id, 'rm -rf /workspace/sparse');

# a million entries, the helper answering meanwhile: a child uploads,
# the test pings until the child has its answer
my $million = gen('million', 'zstd -1 -q -c');
{
    pipe(my $rd, my $wr) or die "pipe: $!";
    my $t1 = time;
    my $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        close $rd;
        my ($x) = $h->extract_archive($id, 'million', $million, timeout => 120);
        print $wr ($x->{error} // 'ok'), "\n";
        close $wr;
        POSIX::_exit(0);
    }
    close $wr;
    my $pings = 0;
    while (waitpid($pid, WNOHANG) == 0) {
        $pings++ if $h->ping->{ok};
        sleep 0.05;
    }
    my $answer = <$rd> // '';
    chomp $answer;
    diag(sprintf('a million entries: answered after %.1f s, %d pings '
                 . 'answered meanwhile', time - $t1, $pings));
    ok($pings > 0, "the helper answered $pings pings during the upload "
       . 'and extraction');
    is($answer, 'no_space', 'a million entries: no_space (inodes)');
}
($e, $out) = $h->sh($id, 'ls /workspace/million/m | wc -l; rm -rf /workspace/million');
ok($out > 1000 && $out < 1_000_000, "stopped at the inode limit ("
   . ($out =~ s/\n//r) . ' files)');
ok($h->ping->{ok}, 'helper still serving');

# corrupt compression, garbage
my $whole = slurp("$tmp/project.tgz");
$r = $h->extract_archive($id, 'trunc', substr($whole, 0, length($whole) / 2));
is($r->{error}, 'bad_archive', 'a truncated tar.gz: bad_archive');
like($r->{stderr}, qr/unexpected end of file|Unexpected EOF/i, '... says where');
# corrupt the deflate stream where it starts (after gzip's 10-byte
# header): 0xff is a block of the reserved type, which gzip refuses every
# time.  (Bytes changed deeper in, inside data deflate still decodes, are
# caught by gzip's CRC at the stream's end only if tar reads that far: it
# stops at the archive's end marker, so such damage can pass; docs/api.md.)
my $corrupt = $whole;
substr($corrupt, 10, 64) = "\xff" x 64;
$r = $h->extract_archive($id, 'corrupt', $corrupt);
is($r->{error}, 'bad_archive', 'a corrupt tar.gz: bad_archive');
ok(length($r->{stderr} // ''), '... with tar\'s words');
$r = $h->extract_archive($id, 'garbage', VetoTest::random_hex(5000));
is($r->{error}, 'bad_archive', 'not an archive: bad_archive');
like($r->{stderr}, qr/does not look like a tar archive/, '... says tar');
$r = $h->extract_archive($id, 'empty', '');
is($r->{error}, 'bad_archive', 'an empty upload: bad_archive');
planted_ok($id, 'after all of them');
ok($h->ping->{ok}, 'helper still serving');
$h->destroy($id);

# --- sizes: streamed past max_file_bytes, refused past max_archive_bytes
$id = $h->create_ok(limits => { disk_mb => 128 });
system("head -c 6000000 /dev/urandom > '$tmp/rand.bin' && "
       . "tar -cf '$tmp/rand.tar' -C '$tmp' rand.bin") == 0 or die;
my $big = slurp("$tmp/rand.tar");
ok(length $big > 5 * $MFB, 'an archive of ' . length($big)
   . ' bytes, over max_file_bytes');
$r = $h->extract_archive($id, 'big', $big);
ok($r->{ok}, '... extracted: the upload is streamed, not buffered')
    or diag explain $r;
is($r->{sha256}, sha256_hex($big), '... every byte of it');
($x, $data) = $h->export_archive($id, 'big');
ok($x->{ok} && $x->{size} > 5 * $MFB, 'and exported past max_file_bytes too');
($r) = $h->call({ op => 'extract_archive', tenant => 't1', agent => 'a1',
                  id => $id, path => 'huge' }, 'x' x (48 * 1024 * 1024 + 1));
is($r->{error}, 'file_too_large', 'over max_archive_bytes: file_too_large');
is($r->{limit}, 'archive_bytes', '... naming archive_bytes');
$h->sh($id, 'head -c 50000000 /dev/urandom > /workspace/big/r2; '
       . 'head -c 50000000 /dev/urandom > /workspace/big/r3');
($x, $data) = $h->export_archive($id, 'big');
is($x->{error}, 'file_too_large', 'an export over max_archive_bytes: stopped');
ok(length($data) <= 48 * 1024 * 1024, '... after at most that much');

# the operator client streams a file and writes what comes
(my $ctl = VetoTest::helper_bin()) =~ s{sandbox-helper$}{sandbox-helperctl};
my $json = $h->json->encode({ op => 'extract_archive', tenant => 't1',
                              agent => 'a1', id => $id, path => 'viactl' });
my $line = `'$ctl' -s '${\ $h->socket_path}' -i '$tmp/rand.tar' '$json'`;
like($line, qr/"ok":true/, 'sandbox-helperctl -i FILE streams an archive');
$json = $h->json->encode({ op => 'export_archive', tenant => 't1',
                           agent => 'a1', id => $id, path => 'viactl' });
$line = `'$ctl' -s '${\ $h->socket_path}' -o '$tmp/ctl.tar' '$json'`;
like($line, qr/"ok":true/, 'sandbox-helperctl -o FILE gets an export');
is(system("tar -xOf '$tmp/ctl.tar' ./rand.bin | cmp -s - '$tmp/rand.bin'"), 0,
   '... whole');
$h->destroy($id);

# --- the client leaves, the sandbox ends ------------------------------
$id = $h->create_ok;
{
    my $s = $h->connect;
    my $hdr = $h->json->encode({ op => 'extract_archive', tenant => 't1',
                                 agent => 'a1', id => $id, path => 'gone' });
    VetoTest::write_all($s, pack('a4NN', 'VSB1', length $hdr, 1000000)
                        . $hdr . substr($small, 0, 4096));
    sleep 0.5;    # on purpose: the upload is under way, then cut
    close $s;
    my ($st) = $h->call({ op => 'status', tenant => 't1', agent => 'a1',
                          id => $id });
    eventually('no exec running', 10, sub {
        ($st) = $h->call({ op => 'status', tenant => 't1', agent => 'a1',
                           id => $id });
        !$st->{sandbox}{execs_running};
    });
    is($st->{sandbox}{execs_running}, 0, 'a client gone mid-upload: tar ends');
    like($h->log_text, qr/closed with \d+ payload bytes unsent/,
         '... and the helper says so');
}
ok($h->destroy($id)->{ok}, 'destroy');

# the sandbox ends while an upload is still arriving (its tar killed, the
# upload's op outlives the sandbox and must not touch it)
for my $sent (3, 4096) {
    $id = $h->create_ok;
    my $s = $h->connect;
    my $hdr = $h->json->encode({ op => 'extract_archive', tenant => 't1',
                                 agent => 'a1', id => $id, path => 'late' });
    my $body = slurp("$tmp/src.tar");
    VetoTest::write_all($s, pack('a4NN', 'VSB1', length $hdr, length $body)
                        . $hdr . substr($body, 0, $sent));
    sleep 0.3;    # on purpose: the upload is under way
    ok($h->destroy($id)->{ok}, "destroyed with $sent bytes of an upload in");
    VetoTest::write_all($s, substr($body, $sent));
    ($r) = VetoTest::recv_frame($s, 30);
    is($r->{error}, 'busy', '... the upload then answers busy');
    like($r->{detail}, qr/being destroyed/, '... saying why');
    close $s;
}
ok($h->ping->{ok}, 'helper still serving');

$h->leaks_ok('after archives');
is($h->stop, 0, 'helper exits cleanly');
done_testing;
