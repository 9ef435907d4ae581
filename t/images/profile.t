# Image profiles: an image built here with umoci init/new/insert (no
# registry), carrying a marker and a shell and C library of its own,
# becomes a profile ("image_profile = NAME sha256:..."); a sandbox created
# with it runs in that root, not the host's (the host's /usr is not
# there), the profiles op lists it with its digest, SANDBOX objects name
# the digest; the helper refuses to start when an image is missing, a
# create fails with profile_unavailable when the image has gone since,
# and the store refuses to remove an image a sandbox holds.
use strict;
use warnings;
use Test::More;
use lib 't/lib';
use VetoImage;
use VetoTest;

my $s = VetoImage->new;
my $marker = 'veto-profile-marker-' . VetoTest::random_hex(8);

# a root of its own: dash, its C library and loader, a marker, a script
my $lay = $s->umoci_image({
    VetoImage::dash_root(),
    '/etc/veto-marker' => "$marker\n",
    '/usr/local/bin/hello' => [ "#!/bin/sh\necho hello from the image\n",
                                0755 ],
    '/opt/owned-by-1000/.keep' => '',
});
my ($rc, $meta, $err) = $s->import_json('--description', 'marker image',
                                        $lay->{dir}, $lay->{digest});
is($rc, 0, 'the umoci image imports') or diag $err;
my $digest = $lay->{digest};

# the same root with what a hostile image could carry where the helper
# adds its files: /etc/passwd and /home/sandbox as symlinks to
# a host directory by absolute path, /etc/group over 1 MiB.  Followed on
# the host they would write the sentinel; resolved in the sandbox's root
# they only ever meet the image's own tree.
my $sent = $s->sentinel;
my $lay2 = $s->umoci_image({
    VetoImage::dash_root(),
    '/etc/group' => "root:x:0:\n" . ("#" x 80 . "\n") x 14000,
    '/home/.keep' => '',
});
$lay2 = $s->add_layer($lay2, VetoImage::tar(
    { name => 'etc/passwd', type => '2', link => "$sent/victim" },
    { name => 'home/sandbox', type => '2', link => $sent },
));
($rc, $meta, $err) = $s->import_json($lay2->{dir}, $lay2->{digest});
is($rc, 0, 'the image with symlinks at the helper\'s paths imports')
    or diag $err;

# a helper whose store is the test's, with the image as profile "mark"
my $h = VetoTest->start(image_store => $s->store,
                        image_profile => [ "mark $digest",
                                           "links $lay2->{digest}" ]);

{
    my $c = $h->create(profile => 'links');
    ok($c->{ok}, 'create with the symlinked image') or diag explain $c;
    my $id = $c->{sandbox}{id};
    my ($x, $out, $err) = $h->sh($id, 'while IFS=: read n p u rest; do '
        . 'echo "$n:$u"; done < /etc/passwd; read l < /etc/hosts; '
        . 'echo "$l"; echo x > ~/in-home && echo home-ok; '
        . 'n=0; while read l; do n=$((n+1)); done < /etc/group; echo $n');
    is($out, "root:0\nsandbox:1000\nnobody:65534\n127.0.0.1\tlocalhost "
             . "sandbox\nhome-ok\n3\n",
       'passwd, a 1 MiB group and /home/sandbox replaced by ours')
        or diag $err;
    ok($s->sentinel_intact, 'nothing written through the symlinks on the '
       . 'host');
    ok(!-e "$sent/in-home", 'the home directory is not the sentinel');
    ok($h->destroy($id)->{ok}, 'destroy it');
    ok($s->sentinel_intact, 'the sentinel is intact after the destroy');
}

my ($r) = $h->call({ op => 'profiles' });
ok($r->{ok}, 'profiles op answers') or diag explain $r;
my %p = map { $_->{name} => $_ } @{ $r->{profiles} // [] };
is_deeply([ sort keys %p ], [ 'default', 'links', 'mark' ],
          'every profile listed');
is($p{mark}{kind}, 'image', 'mark: an image');
is($p{mark}{digest}, $digest, 'mark: its digest');
is($p{mark}{description}, 'marker image', 'mark: its description');
ok($p{mark}{available}, 'mark: available');
ok(!$p{mark}{default}, 'mark: not the default');
is($p{default}{kind}, 'directory', 'default: a directory');
ok(!defined $p{default}{digest}, 'default: no digest');
ok($p{default}{default}, 'default: the default');
like($p{default}{tools}{libc6} // '', qr/^2\./,
     'default: the host\'s tool versions (libc6)');
is($p{default}{os_release}{id}, 'debian', 'default: os-release of the host');

# unknown fields are refused as for every op
($r) = $h->call({ op => 'profiles', tenant => 't1' });
is($r->{error}, 'unknown_field', 'profiles takes no tenant');

# a sandbox of the image
my $c = $h->create(profile => 'mark');
ok($c->{ok}, 'create with the image profile') or diag explain $c;
my $id = $c->{sandbox}{id};
is($c->{sandbox}{profile}, 'mark', 'SANDBOX: profile');
is($c->{sandbox}{profile_digest}, $digest, 'SANDBOX: profile_digest');

my ($x, $out, $eout) = $h->sh($id, 'read m < /etc/veto-marker; echo "$m"');
is($x->{exit_code}, 0, 'the image\'s shell runs') or diag $eout;
is($out, "$marker\n", 'the sandbox sees the image\'s marker');

($x, $out) = $h->exec($id, ['hello']);
is($out, "hello from the image\n", 'the image\'s own program on PATH');

($x, $out) = $h->sh($id, 'for f in /usr/bin/perl /usr/bin/python3 '
                         . '/usr/lib/x86_64-linux-gnu/libperl.so.5.36 '
                         . '/etc/debian_version; do '
                         . '[ -e $f ] && echo "present $f"; done; echo done');
is($out, "done\n", 'the host\'s /usr and /etc are not there');

($x, $out) = $h->sh($id, 'cd /usr; set -- *; echo "$@"');
is($out, "local\n", '/usr is the image\'s: only local/');

# the sandbox user: the image's passwd had none; ours is there
($x, $out) = $h->sh($id, 'while IFS=: read n p u g rest; do '
                         . '[ "$u" = 1000 ] && echo "$n"; done < /etc/passwd');
is($out, "sandbox\n", '/etc/passwd names uid 1000');
($x, $out) = $h->sh($id, 'read l < /etc/hostname; echo "$l"; '
                         . 'echo "$HOME $(pwd)"; echo x > ~/f && echo home-ok;'
                         . 'echo y > /workspace/f && echo ws-ok;'
                         . 'echo z > /tmp/f && echo tmp-ok');
is($out, "sandbox\n/home/sandbox /workspace\nhome-ok\nws-ok\ntmp-ok\n",
   'hostname, HOME, workspace and tmp as in every sandbox');

# write_file and read_file reach the workspace through the overlay
my $w = $h->write_file($id, 'from-helper.txt', "via the helper\n");
ok($w->{ok}, 'write_file into an image root') or diag explain $w;
($x, $out) = $h->sh($id, 'read l < /workspace/from-helper.txt; echo "$l"');
is($out, "via the helper\n", 'the workload reads it');
my ($rf, $data) = $h->read_file($id, 'f');
is($data, "y\n", 'read_file reads what the workload wrote');

# the image's tree is read-only underneath: writes by the sandbox's root
# user are not possible (the workload is uid 1000), and nothing of the
# sandbox reaches the store
($x, $out) = $h->sh($id, 'echo evil > /etc/veto-marker 2>/dev/null '
                         . '|| echo refused');
is($out, "refused\n", 'the image\'s root-owned files stay unwritable');
is($s->read_file($s->tree($digest) . '/etc/veto-marker'), "$marker\n",
   'the store\'s tree is untouched');
ok(!-e $s->tree($digest) . '/workspace/f', 'no sandbox file in the store');

# list and status carry the digest too
my ($l) = $h->call({ op => 'list', tenant => 't1' });
is($l->{sandboxes}[0]{profile_digest}, $digest, 'list: profile_digest');
my $def = $h->create_ok;
($l) = $h->call({ op => 'status', tenant => 't1', agent => 'a1',
                  id => $def });
ok(exists $l->{sandbox}{profile_digest}
   && !defined $l->{sandbox}{profile_digest},
   'a directory profile\'s sandbox: profile_digest null');
ok($h->destroy($def)->{ok}, 'destroy the default sandbox');

# the store refuses to remove an image a sandbox holds
my ($rrc, $rout, $rerr) = $s->ctl('remove', $digest);
is($rrc, 1, 'remove refused while a sandbox uses the image');
like($rerr, qr/in use by a sandbox/, 'and says why');
ok(-d $s->tree($digest), 'the image is still there');

my $d = $h->destroy($id);
ok($d->{ok}, 'destroy the image sandbox') or diag explain $d;
is($d->{state}, 'terminated', 'terminated, confirmed');
$h->leaks_ok('after the image sandboxes');

# removed while the helper runs: the profile is unavailable, creates say so
($rrc, $rout, $rerr) = $s->ctl('remove', $digest);
is($rrc, 0, 'remove succeeds once no sandbox holds it') or diag $rerr;
($r) = $h->call({ op => 'profiles' });
%p = map { $_->{name} => $_ } @{ $r->{profiles} // [] };
ok(!$p{mark}{available}, 'profiles: mark no longer available');
$c = $h->create(profile => 'mark');
is($c->{error}, 'profile_unavailable', 'create: profile_unavailable');
is($c->{field}, 'profile', 'naming the profile field');
like($c->{detail} // '', qr/\Q$digest\E.*not in the store/,
     'the detail names the digest');
$h->leaks_ok('after the refused create');
is($h->stop, 0, 'helper stops cleanly');

# and a helper will not start with a profile whose image is missing
my $h2 = eval {
    VetoTest->start(image_store => $s->store,
                    image_profile => [ "mark $digest" ]);
};
ok(!$h2, 'the helper refuses to start without the image');
like($@, qr/profile "mark": image \Q$digest\E: not in the store \(store /s,
     'naming the profile and the digest');

done_testing;
