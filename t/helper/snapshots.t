# Snapshots, forks, pause and resume, and change sets, spoken to the
# helper directly: a snapshot holds the sandbox's files (workspace and
# root layer) under a digest, owned by its tenant and agent (another
# tenant's or agent's is not_found, as an unknown one); two forks of one
# snapshot see the snapshot and never each other's writes; a snapshot
# with live forks is not deleted, and a deletion is confirmed (its files
# gone); per-tenant count and byte quotas (helper ceilings a request may
# only lower) and retention (ttl_s) refuse or expire; pause freezes every
# process (a running loop's output stops growing, execs and file ops
# answer paused) and resume continues it; the changes of a known edit
# are exactly added, modified, deleted and mode changed, with sizes and
# sha256; a hostile workload (rewritten mtimes, a same-size same-mtime
# replacement, symlinks out, a fifo) hides no change and makes the helper
# follow no link, in the list, the diff, the tar and the snapshot; over
# an image profile, deletions and replaced directories (whiteouts,
# opaque directories) are kept and resolved, and a fork of a snapshot
# whose profile is gone is refused by name; a sandbox destroyed while its
# snapshot is made, or a helper killed meanwhile, leaves nothing half
# made in the store.
use strict;
use warnings;
use Digest::SHA qw(sha256_hex);
use File::Temp qw(tempdir);
use Test::More;
use lib 't/lib';
use Eventually qw(eventually);
use VetoImage;
use VetoTest;

my $T = JSON::PP::true;

# A fork mounts a snapshot's tree idmapped: the store's file system must
# support that (the helper checks at start, and otherwise answers a fork
# with unavailable).  /tmp may be a tmpfs that does not (Linux < 6.3: the
# cgroup v2 VM); /var/tmp is on the root file system.
my $var = tempdir('veto-snap-XXXXXX', DIR => '/var/tmp', CLEANUP => 1);
chmod 0755, $var or die "chmod $var: $!";

my $h = VetoTest->start(state_dir => "$var/state1",
                        snapshot_max_count => 4,
                        snapshot_max_bytes => 1024 * 1024,
                        snapshot_max_ttl_s => 3600,
                        snapshot_default_ttl_s => 600);
my $sd = $h->state_dir;

sub op
{
    my ($op, %a) = @_;
    my ($r, $p) = $h->call({ op => $op, tenant => 't1', agent => 'a1', %a },
                           undef, timeout => 60);
    return wantarray ? ($r, $p) : $r;
}

sub sh_ok
{
    my ($id, $script, $what) = @_;
    my ($r, $out, $err) = $h->sh($id, $script);
    ok($r->{ok} && defined $r->{exit_code} && $r->{exit_code} == 0, $what)
        or diag explain [ $r, $out, $err ];
    return $out // '';
}

sub changes
{
    my ($id, %a) = @_;
    my ($r, $p) = op('changes', id => $id, %a);
    ok($r->{ok}, "changes of $id" . ($a{format} ? " ($a{format})" : ''))
        or diag explain $r;
    return ($r, $p) if ($a{format} // 'json') ne 'json';
    my $doc = eval { $h->json->decode($p) } // { changes => [] };
    return ($r, { map { $_->{path} => $_ } @{ $doc->{changes} } });
}

# ---- a snapshot of a sandbox's files ----------------------------------

my $a = $h->create_ok;
sh_ok($a, 'cd /workspace && printf "keep\n" > keep.txt && '
    . 'printf "hello\nworld\n" > edit.txt && printf "bye\n" > gone.txt && '
    . 'printf "#!/bin/sh\n" > run.sh && chmod 644 run.sh && '
    . 'mkdir -p dir/sub && printf "deep\n" > dir/sub/x && '
    . 'ln -s keep.txt link', 'the workload lays out a tree');

my $s1 = op('snapshot_create', id => $a, metadata => { purpose => 'base' });
ok($s1->{ok}, 'snapshot_create') or diag explain $s1;
my $S1 = $s1->{snapshot} // {};
like($S1->{id} // '', qr/^snap-[0-9a-f]{24}\z/, '... an id');
like($S1->{digest} // '', qr/^sha256:[0-9a-f]{64}\z/, '... a digest');
is($S1->{sandbox}, $a, '... of the sandbox');
is_deeply([ @$S1{qw(tenant agent profile)} ], [ qw(t1 a1 default) ],
          '... owned by the tenant and agent, with the profile');
is_deeply($S1->{metadata}, { purpose => 'base' }, '... with its metadata');
is($S1->{ttl_s}, 600, '... kept the default ttl_s');
ok(-d "$sd/snapshots/$S1->{id}/tree", '... in the store');

{
    my ($g, $m) = op('snapshot_get', snapshot => $S1->{id}, manifest => $T);
    ok($g->{ok}, 'snapshot_get with its manifest') or diag explain $g;
    my $mf = eval { $h->json->decode($m) } // { entries => [] };
    my %e = map { $_->{path} => $_ } @{ $mf->{entries} };
    is($e{'workspace/keep.txt'}{sha256}, sha256_hex("keep\n"),
       'the manifest: a file with the sha256 of its content');
    is($e{'workspace/keep.txt'}{uid}, 1000,
       '... owned as the sandbox saw it (uid 1000)');
    is($e{'workspace/link'}{type}, 'symlink', '... a symlink as a symlink');
    is($e{'workspace/link'}{target}, 'keep.txt', '... with its target');
    is($e{'workspace/run.sh'}{mode}, 0644, '... modes kept');
    my $sum = 0;
    $sum += $_->{size} for grep { $_->{type} eq 'file' } @{ $mf->{entries} };
    is($g->{snapshot}{bytes}, $sum, 'bytes: the sum of its files\' sizes');
    is($g->{snapshot}{files}, scalar @{ $mf->{entries} },
       'files: the manifest\'s entries');
}

# ---- another owner sees nothing ----------------------------------------

for my $who ([ 't2', 'a1' ], [ 't1', 'a2' ]) {
    my ($t, $ag) = @$who;
    my ($g) = $h->call({ op => 'snapshot_get', tenant => $t, agent => $ag,
                         snapshot => $S1->{id} });
    is($g->{error}, 'not_found', "tenant $t agent $ag: get is not_found");
    my ($d) = $h->call({ op => 'snapshot_delete', tenant => $t,
                         agent => $ag, snapshot => $S1->{id} });
    is($d->{error}, 'not_found', '... delete is not_found');
    my $f = $h->create(tenant => $t, agent => $ag,
                       from_snapshot => $S1->{id});
    is($f->{error}, 'not_found', '... a fork of it is not_found');
    is($f->{field}, 'from_snapshot', '... naming from_snapshot');
    my ($l) = $h->call({ op => 'snapshot_list', tenant => $t,
                         agent => $ag });
    is_deeply($l->{snapshots}, [], '... and its list is empty');
}

# ---- two forks diverge independently ------------------------------------

my $f1 = $h->create_ok(from_snapshot => $S1->{id});
my $f2 = $h->create_ok(from_snapshot => $S1->{id});
sh_ok($a, 'echo later > /workspace/after.txt', 'the original writes on');

is(sh_ok($f1, 'cat /workspace/keep.txt /workspace/dir/sub/x'),
   "keep\ndeep\n", 'fork 1 sees the snapshot\'s files');
sh_ok($f1, 'echo one > /workspace/f1 && echo changed > /workspace/edit.txt '
      . '&& rm /workspace/gone.txt', 'fork 1 writes, edits and deletes');
sh_ok($f2, 'echo two > /workspace/f2', 'fork 2 writes');
is(sh_ok($f2, 'ls /workspace; cat /workspace/edit.txt'),
   "dir\nedit.txt\nf2\ngone.txt\nkeep.txt\nlink\nrun.sh\nhello\nworld\n",
   'fork 2 sees neither fork 1\'s writes nor the original\'s later one');
is(sh_ok($f1, 'ls /workspace; cat /workspace/edit.txt'),
   "dir\nedit.txt\nf1\nkeep.txt\nlink\nrun.sh\nchanged\n",
   'fork 1 sees its own, not fork 2\'s');
{
    my $st = op('status', id => $f1);
    is($st->{sandbox}{from_snapshot}, $S1->{id},
       'status names the snapshot a fork is of');
    my ($g) = op('snapshot_get', snapshot => $S1->{id});
    is($g->{snapshot}{forks}, 2, 'the snapshot counts its live forks');
}

{
    my $d = op('snapshot_delete', snapshot => $S1->{id});
    is($d->{error}, 'busy', 'a snapshot with live forks is not deleted');
    is($d->{limit}, 'forks', '... naming its forks');
}

# a snapshot of a fork: the fork's layer over the snapshot, merged
my $s2 = op('snapshot_create', id => $f1);
ok($s2->{ok}, 'a snapshot of a fork') or diag explain $s2;
my $f3 = $h->create_ok(from_snapshot => $s2->{snapshot}{id});
is(sh_ok($f3, 'ls /workspace; cat /workspace/edit.txt /workspace/f1'),
   "dir\nedit.txt\nf1\nkeep.txt\nlink\nrun.sh\nchanged\none\n",
   '... whose fork has the fork\'s state (its deletion too)');

for my $id ($f1, $f2, $f3) {
    ok($h->destroy($id)->{ok}, "fork $id destroyed");
}

{
    my $d = op('snapshot_delete', snapshot => $S1->{id});
    ok($d->{ok}, 'with its forks gone, the snapshot is deleted')
        or diag explain $d;
    ok($d->{confirmed}{files}, '... its files confirmed gone');
    ok(!-e "$sd/snapshots/$S1->{id}", '... its directory is gone');
    opendir(my $dh, "$sd/snapshots") or die "$sd/snapshots: $!";
    is_deeply([ grep { /^\.(?:del|new)-/ } readdir $dh ], [],
              '... and nothing of it is left in the store');
    is(op('snapshot_get', snapshot => $S1->{id})->{error}, 'not_found',
       '... get: not_found');
    is($h->create(from_snapshot => $S1->{id})->{error}, 'not_found',
       '... a fork of it: not_found');
    ok(op('snapshot_delete', snapshot => $s2->{snapshot}{id})->{ok},
       'the fork\'s snapshot deleted too');
}

# ---- quotas and retention -----------------------------------------------

{
    my $r = op('snapshot_create', id => $a, max_snapshots => 5);
    is($r->{error}, 'over_ceiling', 'a request cannot raise the count '
       . 'ceiling');
    is($r->{limit}, 'snapshots', '... limit snapshots');
    $r = op('snapshot_create', id => $a, max_bytes => 2 * 1024 * 1024);
    is($r->{limit}, 'snapshot_bytes', '... nor the byte ceiling');
    $r = op('snapshot_create', id => $a, ttl_s => 3601);
    is($r->{limit}, 'snapshot_ttl_s', '... nor the ttl_s ceiling');
    $r = op('snapshot_create', id => $a, bogus => 1);
    is($r->{error}, 'unknown_field', 'an unknown field is refused');

    # metadata: the rule create holds it to (vsb_req_metadata), here too
    $r = op('snapshot_create', id => $a, metadata => 'base');
    is($r->{error}, 'bad_type', 'metadata that is not an object is refused');
    is($r->{field}, 'metadata', '... naming metadata');
    $r = op('snapshot_create', id => $a, metadata => { k => 'x' x 4100 });
    is($r->{error}, 'bad_value', 'metadata over 4096 bytes is refused');
    is($r->{field}, 'metadata', '... naming metadata');
    $r = $h->create(metadata => { k => 'x' x 4100 });
    is($r->{error}, 'bad_value', 'so is create\'s');

    $r = op('snapshot_create', id => $a, max_bytes => 40);
    is($r->{error}, 'over_ceiling', 'a tree over the request\'s max_bytes '
       . 'is refused');
    is($r->{limit}, 'snapshot_bytes', '... limit snapshot_bytes');

    sh_ok($a, 'head -c 1200000 /dev/zero > /workspace/big',
          'a file over the tenant\'s byte ceiling');
    $r = op('snapshot_create', id => $a);
    is($r->{limit}, 'snapshot_bytes', '... the snapshot is refused');
    sh_ok($a, 'rm /workspace/big', 'the big file removed');

    my @ids;
    for my $i (1 .. 4) {
        my $s = op('snapshot_create', id => $a, ttl_s => 60 + $i);
        ok($s->{ok}, "snapshot $i of 4") or diag explain $s;
        push @ids, $s->{snapshot}{id};
    }
    $r = op('snapshot_create', id => $a);
    is($r->{error}, 'over_ceiling', 'a fifth is over the tenant\'s count');
    is($r->{limit}, 'snapshots', '... limit snapshots');
    my ($l) = $h->call({ op => 'snapshot_list', tenant => 't1' });
    is($l->{tenant_snapshots}, 4, 'the list counts four');

    ok(op('snapshot_delete', snapshot => $_)->{ok}, "snapshot $_ deleted")
        for @ids[1 .. 3];
    $r = op('snapshot_create', id => $a, max_snapshots => 1);
    is($r->{limit}, 'snapshots', 'a request may lower the count: with one '
       . 'kept, max_snapshots 1 refuses another');
    ok(op('snapshot_delete', snapshot => $ids[0])->{ok}, 'the last deleted');

    my $s = op('snapshot_create', id => $a, ttl_s => 1);
    ok($s->{ok}, 'a snapshot with ttl_s 1') or diag explain $s;
    my $sid = $s->{snapshot}{id};
    eventually('the snapshot expires', 10, sub {
        op('snapshot_get', snapshot => $sid)->{error} // '' eq 'not_found'
            and !-e "$sd/snapshots/$sid";
    });
    ok(!-e "$sd/snapshots/$sid", '... and its files are gone');
}

# ---- the changes of a known edit, exactly ----------------------------------

my $s3 = op('snapshot_create', id => $a);
ok($s3->{ok}, 'a snapshot to fork the edit from') or diag explain $s3;
my $S3 = $s3->{snapshot}{id};
my $b = $h->create_ok(from_snapshot => $S3);
{
    my ($r, $c) = changes($b);
    is($r->{changes}, 0, 'a fresh fork: no changes since created');

    sh_ok($b, 'cd /workspace && printf "hello\nWORLD\n" > edit.txt && '
        . 'rm gone.txt && chmod 755 run.sh && printf "new\n" > new.txt',
          'the known edit');

    for my $since ('created', $S3) {
        ($r, $c) = changes($b, since => $since);
        is_deeply([ @$r{qw(added modified deleted mode_changed)} ],
                  [ 1, 1, 1, 1 ], "since $since: one of each kind")
            or diag explain $c;
        is_deeply([ sort keys %$c ], [ map { "workspace/$_" }
                  qw(edit.txt gone.txt new.txt run.sh) ],
                  '... exactly the four paths');
        is($c->{'workspace/new.txt'}{change}, 'added', 'new.txt: added');
        is($c->{'workspace/new.txt'}{sha256}, sha256_hex("new\n"),
           '... with its sha256');
        is($c->{'workspace/new.txt'}{size}, 4, '... and size');
        is($c->{'workspace/edit.txt'}{change}, 'modified',
           'edit.txt: modified');
        is($c->{'workspace/edit.txt'}{sha256}, sha256_hex("hello\nWORLD\n"),
           '... its new sha256');
        is($c->{'workspace/edit.txt'}{old_sha256},
           sha256_hex("hello\nworld\n"), '... and its old one');
        is($c->{'workspace/gone.txt'}{change}, 'deleted',
           'gone.txt: deleted');
        is($c->{'workspace/run.sh'}{change}, 'mode_changed',
           'run.sh: mode changed');
        is_deeply([ @{ $c->{'workspace/run.sh'} }{qw(old_mode mode)} ],
                  [ 0644, 0755 ], '... from 0644 to 0755');
    }

    my ($d, $text) = changes($b, format => 'diff');
    like($text, qr{^--- a/workspace/edit\.txt\n\+\+\+ b/workspace/edit\.txt\n\@\@ [^\n]* \@\@\n hello\n-world\n\+WORLD\n}m,
         'the diff: a unified diff of the edit');
    like($text, qr{^--- /dev/null\n\+\+\+ b/workspace/new\.txt\n}m,
         '... the added file against /dev/null');
    like($text, qr{^--- a/workspace/gone\.txt\n\+\+\+ /dev/null\n}m,
         '... the deleted one to /dev/null');
    unlike($text, qr/run\.sh/, '... a mode change has no text diff');

    sh_ok($b, 'head -c 100 /dev/urandom > /workspace/bin.dat && '
          . 'printf "\0" >> /workspace/bin.dat', 'a binary file');
    ($d, $text) = changes($b, format => 'diff');
    like($text, qr{^Binary files /dev/null and b/workspace/bin\.dat differ$}m,
         'a binary file is named, not diffed');
}

# ---- a hostile workload hides nothing and is never followed ------------

{
    sh_ok($b, 'cd /workspace && touch -d "2001-01-01 00:00" keep.txt && '
        . 'touch -r keep.txt dir/sub/x', 'the workload rewrites mtimes');
    my ($r, $c) = changes($b, since => $S3);
    ok(!exists $c->{'workspace/keep.txt'}
       && !exists $c->{'workspace/dir/sub/x'},
       'an mtime alone is no change') or diag explain $c;

    # same size, same mtime, other bytes
    sh_ok($b, 'cd /workspace && touch -r keep.txt /tmp/ref && '
        . 'printf "KEEP\n" > keep.txt && touch -r /tmp/ref keep.txt',
          'a file replaced by one of the same size and mtime');
    ($r, $c) = changes($b, since => $S3);
    is($c->{'workspace/keep.txt'}{change}, 'modified',
       '... is modified all the same');
    is($c->{'workspace/keep.txt'}{sha256}, sha256_hex("KEEP\n"),
       '... with the sha256 of what it holds');

    sh_ok($b, 'cd /workspace && ln -s /etc/shadow shadow && ln -s / root && '
        . 'ln -s ../../../../../../../../etc/passwd up && mkfifo pipe && '
        . 'ln -sf /proc/1/root/etc keep2', 'links out and a fifo');
    ($r, $c) = changes($b, since => $S3);
    is($c->{'workspace/shadow'}{type}, 'symlink',
       'a link to /etc/shadow is listed as a link');
    is($c->{'workspace/shadow'}{target}, '/etc/shadow', '... its target');
    ok(!exists $c->{'workspace/root/etc'}, '... / is not walked into');
    is($c->{'workspace/pipe'}{type}, 'fifo', 'the fifo is listed, unopened');

    sh_ok($b, q{cd /workspace && d="$(printf 'n\n+++ b')" && mkdir "$d" && }
          . q{printf 'evil\n' > "$d/passwd"},
          'a file whose path holds a newline and a diff header');
    my ($dr, $dt) = changes($b, since => $S3, format => 'diff');
    unlike($dt, qr{^\+\+\+ b/passwd}m,
           'the diff: a name cannot forge a header line');
    like($dt, qr{^Files /dev/null and b/workspace/n\?\+\+\+ b/passwd differ }m,
         '... it is named with ? for its control characters');

    my ($t, $tar) = changes($b, since => $S3, format => 'tar');
    unlike($tar, qr/root:[^:\n]*:\d+:\d+:/,
           'the tar holds no host file\'s content');
    my %m;
    for (my $o = 0; $o + 512 <= length $tar; ) {
        my $hd = substr($tar, $o, 512);
        last if $hd eq "\0" x 512;
        my ($name) = unpack('Z100', $hd);
        my $size = oct(unpack('x124 Z12', $hd));
        my $type = substr($hd, 156, 1);
        my ($link) = unpack('x157 Z100', $hd);
        $m{$name} = [ $type, $link, substr($tar, $o + 512, $size) ];
        $o += 512 + int(($size + 511) / 512) * 512;
    }
    is_deeply($m{'workspace/shadow'}, [ '2', '/etc/shadow', '' ],
              'the tar: the link as a link');
    is($m{'workspace/keep.txt'}[2], "KEEP\n", '... a changed file\'s bytes');
    is($m{'workspace/new.txt'}[2], "new\n", '... an added one\'s');
    ok(!exists $m{'workspace/gone.txt'}, '... no member for a deletion');

    my $s = op('snapshot_create', id => $b);
    ok($s->{ok}, 'the hostile tree snapshots') or diag explain $s;
    my $tree = "$sd/snapshots/$s->{snapshot}{id}/tree/workspace";
    ok(-l "$tree/shadow" && readlink("$tree/shadow") eq '/etc/shadow',
       '... its link to /etc/shadow a link in the store');
    ok(-p "$tree/pipe", '... its fifo a fifo');
    my $f = $h->create_ok(from_snapshot => $s->{snapshot}{id});
    is(sh_ok($f, 'cat /workspace/keep.txt; readlink /workspace/up'),
       "KEEP\n../../../../../../../../etc/passwd\n",
       '... and a fork of it has them as they were');
    ok($h->destroy($f)->{ok}, 'that fork destroyed');
    ok(op('snapshot_delete', snapshot => $s->{snapshot}{id})->{ok},
       'its snapshot deleted');
}

# ---- pause and resume ------------------------------------------------------

{
    my ($r) = op('exec', id => $b, argv => [ '/bin/sh', '-c',
                 'while :; do echo tick; sleep 0.02; done' ],
                 background => $T, timeout_s => 60);
    ok($r->{ok}, 'a loop runs in the background') or diag explain $r;
    my $ex = $r->{exec}{id};
    my $bytes = sub { op('exec_status', id => $b, exec => $ex)
                      ->{exec}{stdout_bytes} // 0 };
    my $n0 = $bytes->();
    eventually('the loop writes', 10, sub { $bytes->() > $n0 + 20 });

    my $p = op('pause', id => $b);
    ok($p->{ok} && $p->{paused}, 'pause') or diag explain $p;
    is(op('status', id => $b)->{sandbox}{paused}, $T, 'status says paused');

    my $cg = $h->ping->{cgroup};
    my ($dir) = split /\n/, `find /sys/fs/cgroup/@{[ $cg eq 'v2' ? '' :
        'freezer' ]} -maxdepth 6 -type d -name $b 2>/dev/null`;
    my $file = $cg eq 'v2' ? 'cgroup.freeze' : 'freezer.state';
    open(my $fh, '<', "$dir/$file") or die "$dir/$file: $!";
    my $state = <$fh>;
    close $fh;
    like($state, $cg eq 'v2' ? qr/^1$/ : qr/^FROZEN$/,
         "its cgroup is frozen ($cg: $file)");

    # what is asserted is an absence: a window of 25 of the loop's
    # periods (0.5 s) in which, running, it writes 25 lines
    my $frozen = $bytes->();
    window(0.5);
    is($bytes->(), $frozen, 'the loop\'s output stops growing (0.5 s, 25 '
       . 'of its periods)');

    ($r) = $h->exec($b, [ 'true' ]);
    is($r->{error}, 'paused', 'an exec while paused: paused');
    ($r) = $h->call({ op => 'write_file', tenant => 't1', agent => 'a1',
                      id => $b, path => 'w.txt' }, 'x');
    is($r->{error}, 'paused', 'a write_file while paused: paused');
    ($r) = op('read_file', id => $b, path => 'keep.txt');
    is($r->{error}, 'paused', 'a read_file while paused: paused');
    ($r) = op('changes', id => $b);
    ok($r->{ok}, 'changes while paused: served');

    $p = op('resume', id => $b);
    ok($p->{ok} && !$p->{paused}, 'resume') or diag explain $p;
    eventually('the loop writes again', 10, sub {
        $bytes->() > $frozen + 20 });
    ok(1, '... and the loop goes on');

    ok(op('pause', id => $b)->{ok}, 'paused again');
    my $d = $h->destroy($b);
    ok($d->{ok}, 'a paused sandbox is destroyed') or diag explain $d;
    is_deeply($d->{confirmed}, { map { $_ => $T } qw(processes cgroups
              network mounts files) }, '... everything confirmed gone');
}

# The one wait that is not for a condition: the window in which a
# frozen loop must write nothing.
sub window
{
    my ($s) = @_;
    select(undef, undef, undef, $s);
}

ok($h->destroy($a)->{ok}, 'the original destroyed');
ok(op('snapshot_delete', snapshot => $S3)->{ok}, 'the last snapshot deleted');
# ---- a snapshot under way when its sandbox ends, or the helper dies ----

sub big_sandbox
{
    my $id = $h->create_ok(limits => { disk_mb => 128 });
    sh_ok($id, 'mkdir /workspace/t && cd /workspace/t && '
          . 'seq 1 20000 | xargs touch', "$id: 20000 files");
    return $id;
}

sub new_dirs
{
    opendir(my $dh, "$sd/snapshots") or die "$sd/snapshots: $!";
    return grep { /^\.(?:new|del)-/ } readdir $dh;
}

{
    my $id = big_sandbox();
    my $s = $h->connect;
    VetoTest::write_all($s, VetoTest::frame({ op => 'snapshot_create',
        tenant => 't1', agent => 'a1', id => $id }));
    my $d = $h->destroy($id);
    ok($d->{ok}, 'a sandbox whose snapshot is being made is destroyed')
        or diag explain $d;
    is_deeply($d->{confirmed}, { map { $_ => $T } qw(processes cgroups
              network mounts files) }, '... everything confirmed gone');
    my ($r) = VetoTest::recv_frame($s, 60);
    ok($r->{ok} || ($r->{error} // '') eq 'busy',
       'the snapshot: made before the end, or busy (the sandbox ended)')
        or diag explain $r;
    note('the snapshot ' . ($r->{ok} ? 'was made first' : 'was cut short'));
    ok(op('snapshot_delete', snapshot => $r->{snapshot}{id})->{ok},
       '... and deleted') if $r->{ok};
    eventually('nothing half made is left in the store', 30,
               sub { !new_dirs() });

    $id = big_sandbox();
    $s = $h->connect;
    VetoTest::write_all($s, VetoTest::frame({ op => 'snapshot_create',
        tenant => 't1', agent => 'a1', id => $id }));
    eventually('the snapshot is being made', 10, sub { new_dirs() });
    $h->kill9;
    $h->launch;
    eventually('a restart removes what the dead helper was making', 30,
               sub { !new_dirs() });
    my ($l) = $h->call({ op => 'snapshot_list', tenant => 't1' });
    is($l->{tenant_snapshots}, 0, '... and lists nothing of it');
    is(op('status', id => $id)->{sandbox}{end_reason}, 'helper_restart',
       '... its sandbox ended on record');
}

$h->leaks_ok('after snapshots, forks and pauses');
is($h->stop, 0, 'the helper exits 0') or diag $h->log_text;
undef $h;       # its cleanup before the next helper of the same names

# ---- an image profile: whiteouts and opaque directories over the image ---

SKIP: {
    # the cgroup v2 VM copies t/ alone: no scripts/ to build a base with
    skip('no scripts/build-debian-base.sh here (the cgroup v2 VM): the '
         . 'image profile\'s part is not run', 1)
        unless -x VetoTest::repo_root() . '/scripts/build-debian-base.sh';

    my $img = VetoImage->new;
    my $digest = $img->debian_profile_base;
    $h = VetoTest->start(state_dir => "$var/state2",
                         image_store => $img->store,
                         image_profile => [ "deb $digest" ]);
    $sd = $h->state_dir;
    {
        my $i = $h->create_ok(profile => 'deb');
        sh_ok($i, 'cd /workspace && echo w > w && mkdir d && echo x > d/x',
              'an image sandbox\'s workload writes');
        my $s = op('snapshot_create', id => $i);
        ok($s->{ok}, 'a snapshot of an image sandbox') or diag explain $s;
        is($s->{snapshot}{image_digest}, $digest, '... naming the image');
        my $sid = $s->{snapshot}{id};
        ok(!-e "$sd/snapshots/$sid/tree/usr/bin",
           '... holding its upper layer, not the image');

        my $f = $h->create_ok(from_snapshot => $sid);
        sh_ok($f, 'cd /workspace && rm w && rm -r d && mkdir d && echo y > d/y',
              'a fork deletes a file and replaces a directory of the snapshot');
        my ($r, $c) = changes($f);
        is_deeply({ map { $_ => $c->{$_}{change} } keys %$c },
                  { 'workspace/w' => 'deleted', 'workspace/d/x' => 'deleted',
                    'workspace/d/y' => 'added' },
                  'its changes: the whiteout and the opaque directory resolved')
            or diag explain $c;
        my $s2 = op('snapshot_create', id => $f);
        ok($s2->{ok}, 'a snapshot of the fork') or diag explain $s2;
        my $g = $h->create_ok(from_snapshot => $s2->{snapshot}{id});
        is(sh_ok($g, 'ls -A /workspace /workspace/d; head -1 /etc/os-release'),
           "/workspace:\nd\n\n/workspace/d:\ny\nPRETTY_NAME=\"Debian GNU/Linux "
           . "12 (bookworm)\"\n",
           '... whose fork has the deletions, the new directory alone, and '
           . 'the image beneath');
        ok($h->destroy($_)->{ok}, "$_ destroyed") for ($g, $f, $i);
        ok(op('snapshot_delete', snapshot => $s2->{snapshot}{id})->{ok},
           'the fork\'s snapshot deleted');

        # the snapshot outlives the helper; its profile may not
        $h->stop;
        my $conf = $h->conf_path;
        open(my $in, '<', $conf) or die "$conf: $!";
        my $text = join '', grep { !/^image_profile\b/ } <$in>;
        close $in;
        open(my $out, '>', $conf) or die "$conf: $!";
        print $out $text;
        close $out or die "$conf: $!";
        $h->launch;
        is(op('snapshot_get', snapshot => $sid)->{snapshot}{id}, $sid,
           'after a restart the snapshot is still there');
        my $x = $h->create(from_snapshot => $sid);
        is($x->{error}, 'snapshot_profile_gone',
           'a fork of a snapshot whose profile is gone: snapshot_profile_gone');
        is($x->{field}, 'from_snapshot', '... naming from_snapshot');
        ok(op('snapshot_delete', snapshot => $sid)->{ok}, 'deleted');
    }
    $h->leaks_ok('after the image profile\'s snapshots');
    is($h->stop, 0, 'the helper exits 0') or diag $h->log_text;
}
done_testing;
