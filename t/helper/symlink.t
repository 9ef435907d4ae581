# Symlink attacks on write_file/read_file: links planted by the workload,
# a directory swapped for a link, and the swap raced in a loop.  The root
# helper must never follow a link out of the workspace.
use strict;
use warnings;
use Test::More;
use Digest::SHA qw(sha256_hex);
use lib 't/lib';
use VetoTest;

sub file_sha { open(my $f, '<:raw', $_[0]) or return ''; local $/; sha256_hex(<$f> // '') }

my $h = VetoTest->start;
my $id = $h->create_ok;
my $tag = "veto-pwned-$$";
my $passwd_sha = file_sha('/etc/passwd');
my $shadow_sha = file_sha('/etc/shadow');

my ($e, $out, $err) = $h->sh($id, join('; ',
    'cd /workspace',
    'ln -s /etc/passwd evil',
    'ln -s / rootlink',
    'ln -s /etc etclink',
    'mkdir -p real/sub && echo inner > real/sub/f',
    'ln -s real/sub/f innerlink',          # even a link inside the workspace
    'ln -s ../../../../../../etc/shadow dotdot',
    'ls -l'));
is($e->{exit_code}, 0, 'links planted inside the sandbox') or diag $err;

my %refused = (bad_path => 1, not_a_file => 1);
for my $p (qw(evil rootlink/etc/shadow rootlink/etc/passwd etclink/passwd
              innerlink dotdot rootlink)) {
    my ($r, $data) = $h->read_file($id, $p);
    ok(!$r->{ok} && $refused{ $r->{error} // '' },
       "read_file $p refused (" . ($r->{error} // 'ok') . ')')
        or diag explain $r;
    is($data, '', "read_file $p returned no data");
}
my ($r) = $h->read_file($id, 'real/sub/f');
ok($r->{ok}, 'a plain file next to the links still reads');

for my $p ("rootlink/tmp/$tag", "etclink/$tag", "rootlink/root/$tag",
           "rootlink/etc/cron.d/$tag") {
    $r = $h->write_file($id, $p, "pwned\n");
    ok(!$r->{ok} && $refused{ $r->{error} // '' },
       "write_file $p refused (" . ($r->{error} // 'ok') . ')')
        or diag explain $r;
}
ok(!-e "/tmp/$tag" && !-e "/etc/$tag" && !-e "/root/$tag"
   && !-e "/etc/cron.d/$tag", 'no host file created');

# Writing onto a link name must not write through it.
$r = $h->write_file($id, 'evil', "pwned\n");
diag("write_file onto the 'evil' link: " . ($r->{ok} ? 'replaced the link' : $r->{error}));
is(file_sha('/etc/passwd'), $passwd_sha, 'host /etc/passwd unchanged');
is(file_sha('/etc/shadow'), $shadow_sha, 'host /etc/shadow unchanged');

# A directory swapped for a link after the helper has seen it.
ok($h->write_file($id, 'sub/dir/f.txt', "ok\n")->{ok}, 'sub/dir/f.txt written');
($r, my $d) = $h->read_file($id, 'sub/dir/f.txt');
is($d, "ok\n", 'and read back');
($e) = $h->sh($id, 'rm -rf /workspace/sub/dir && ln -s /etc /workspace/sub/dir && '
                 . 'rm -rf /workspace/sub2 && ln -s / /workspace/sub2');
is($e->{exit_code}, 0, 'directory swapped for a link');
for my $p ('sub/dir/passwd', 'sub/dir/shadow', 'sub2/etc/passwd') {
    ($r, $d) = $h->read_file($id, $p);
    ok(!$r->{ok} && $refused{ $r->{error} // '' }, "read_file $p refused")
        or diag explain $r;
}
for my $p ("sub/dir/$tag", "sub/dir/new/$tag", "sub2/tmp/$tag") {
    $r = $h->write_file($id, $p, "pwned\n");
    ok(!$r->{ok} && $refused{ $r->{error} // '' }, "write_file $p refused")
        or diag explain $r;
}
ok(!-e "/etc/$tag" && !-e "/etc/new" && !-e "/tmp/$tag", 'no host file created');

# The same swap raced: the workload flips race/ between a directory and a
# link to /tmp while we write and read through it.
my $s = $h->connect;
VetoTest::write_all($s, VetoTest::frame({ op => 'exec', tenant => 't1',
    agent => 'a1', id => $id, timeout_s => 4, argv => [ '/bin/bash', '-c',
    'cd /workspace; while :; do rm -rf race; mkdir race; echo in > race/f; '
  . 'rm -rf race; ln -s /tmp race; done' ] }));
my $bait = "veto-bait-$$.txt";
open(my $bf, '>', "/tmp/$bait") or die "write /tmp/$bait: $!";
print $bf "host secret\n";
close $bf;
my ($writes_ok, $writes, $leaked_read) = (0, 0, 0);
my $t_end = time + 3;
while (time < $t_end) {
    $writes++;
    my $w = $h->write_file($id, "race/$tag", "pwned\n");
    $writes_ok++ if $w->{ok};
    my ($rr, $data) = $h->read_file($id, "race/$bait");
    $leaked_read++ if $rr->{ok};
}
my ($rx) = VetoTest::recv_frame($s, 30);
ok($rx && $rx->{timed_out}, 'the swapping loop ran until its deadline');
ok($writes > 10, "raced $writes writes ($writes_ok landed inside)");
ok(!-e "/tmp/$tag", 'no write went through the link to host /tmp');
is($leaked_read, 0, 'no read went through the link to host /tmp');
is(file_sha('/etc/passwd'), $passwd_sha, 'host /etc/passwd unchanged');

is($h->destroy($id)->{state}, 'terminated', 'destroy');
$h->leaks_ok('after destroy');
$h->stop;
unlink "/tmp/$tag", "/tmp/$bait";
done_testing;
