#!/usr/bin/perl
# Errors that said less than what happened, each now saying it: an
# archive tar refused carries tar's words ("stderr"); a profile this host
# does not have is 404 unknown_profile with the names the caller may use
# (one it has but the policy forbids stays 403); an unknown field names
# the one likely meant; a cwd that is not there is 422 bad_cwd before
# anything runs (plain, streamed, background); the sandbox list has the
# metadata GET has; an upload to the workspace itself names it ".".

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use File::Temp qw(tempdir);
use JSON::PP;
use Eventually qw(eventually);

VetoNginx::need(qw(helper));

my $n = VetoNginx->new;
$n->start_helper;
$n->start(policy => VetoNginx::default_policy());

my $t = $n->token;                            # acme: profiles ["default"]
my $g = $n->token(tenant => 'globex');        # globex: any profile
my ($st, $h, $b, $j);

sub problem_is
{
    my ($name, $status, $code) = @_;
    is($st, $status, "$name: $status") or diag $b;
    is($j->{type} // '', "urn:veto-sandbox:problem:$code", "$name: $code")
        or diag $b;
}

# ---- metadata in the list, as GET has it
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t,
                                { metadata => { task => 'fix-123' } });
is($st, 201, 'create with metadata') or BAIL_OUT($b);
my $sb = $j->{id};
($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb", $t);
is_deeply($j->{metadata}, { task => 'fix-123' }, 'GET has the metadata');
($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes', $t);
my ($row) = grep { $_->{id} eq $sb } @{ $j->{sandboxes} // [] };
is_deeply($row->{metadata}, { task => 'fix-123' }, 'the list has it too')
    or diag $b;

# the list's metadata are bounded (16 KiB): past that a sandbox says so
my @big;
for my $i (1 .. 5) {
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $g,
                                    { metadata => { note => "$i" x 4000 } });
    is($st, 201, "globex create $i, 4 KB of metadata") or diag $b;
    push @big, $j->{id};
}
($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes', $g);
my @with = grep { $_->{metadata} } @{ $j->{sandboxes} // [] };
my @omitted = grep { $_->{metadata_omitted} } @{ $j->{sandboxes} // [] };
is(scalar @with, 4, 'the list has 4 of them with their metadata (16 KiB)');
is(scalar @omitted, 1, '... the fifth says metadata_omitted');
($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$omitted[0]{id}", $g);
is(length($j->{metadata}{note} // ''), 4000, '... which GET has');
$n->request(DELETE => "/v1/sandboxes/$_", $g) for @big;

# ---- unknown fields: the one likely meant, and the known ones
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                { cmd => ['true'] });
problem_is('exec with cmd', 400, 'unknown_field');
is($j->{field}, 'cmd', '... naming cmd');
like($j->{detail}, qr/did you mean "argv"\?/, '... did you mean argv');
like($j->{detail}, qr/known: argv, cwd, env/, '... the known fields');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                { argv => ['true'], timout_s => 5 });
like($j->{detail} // '', qr/did you mean "timeout_s"\?/,
     'timout_s: did you mean timeout_s');
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t,
                                { profle => 'default' });
like($j->{detail} // '', qr/did you mean "profile"\?/,
     'a create: profle, did you mean profile');
# a long name of two-byte characters is cut at a character's start: the
# detail, which repeats it, stays (UTF-8)
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                { argv => ['true'], ("\x{e9}" x 40) => 1 });
problem_is('a long non-ASCII name', 400, 'unknown_field');
is($j->{field}, "\x{e9}" x 31, '... cut at a character (62 bytes)');
like($j->{detail} // '', qr/^unknown field "\x{e9}{31}"/, '... and in the detail');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                { argv => ['true'], zzzzzzzz => 1 });
problem_is('far from any field', 400, 'unknown_field');
unlike($j->{detail}, qr/did you mean/, '... no guess');

# ---- a cwd that is not there: nothing runs, for every kind of exec
my $marker = '/workspace/ran-' . $$;
for my $kind ('plain', 'streamed', 'background') {
    my %body = (argv => ['sh', '-c', "touch $marker"],
                cwd => '/workspace/no/such/dir');
    $body{background} = JSON::PP::true() if $kind eq 'background';
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                    \%body,
                                    $kind eq 'streamed'
                                    ? { Accept => 'application/x-ndjson' }
                                    : undef);
    problem_is("$kind exec, cwd missing", 422, 'bad_cwd');
    is($j->{field}, 'cwd', "$kind: field cwd");
    is($j->{path}, '/workspace/no/such/dir', "$kind: the path");
    like($j->{detail}, qr{/workspace/no/such/dir}, "$kind: the detail names it");
}
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                { argv => ['true'], cwd => 'no-dir' });
problem_is('a relative cwd missing', 422, 'bad_cwd');
# a file is not a directory
($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$sb/files?path=afile",
                                $t, 'x');
is($st, 200, 'a file') or diag $b;
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                { argv => ['true'], cwd => '/workspace/afile' });
problem_is('cwd a file', 422, 'bad_cwd');
like($j->{detail}, qr/not a directory/, '... not a directory');
# outside the workspace: the workload's chdir says it
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                { argv => ['true'], cwd => '/no-such-root-dir' });
problem_is('cwd outside the workspace, missing', 422, 'bad_cwd');
like($j->{detail}, qr{/no-such-root-dir}, '... naming it');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                { argv => ['true'], cwd => '/no-such-root-dir' },
                                { Accept => 'application/x-ndjson' });
problem_is('... streamed', 422, 'bad_cwd');
# a background exec's chdir: it ends failed, saying so
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                { argv => ['true'], cwd => '/no-such-root-dir',
                                  background => JSON::PP::true() });
is($st, 202, 'background exec, cwd outside the workspace: started') or diag $b;
my $ex = $j->{id} // '';
eventually('the background exec ended', 10, sub {
    ($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb/execs/$ex", $t);
    return ($j->{state} // '') ne 'running';
});
is($j->{state}, 'failed', '... failed');
is($j->{result}{error}, 'bad_cwd', '... bad_cwd');
# and none of them ran
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                { argv => ['sh', '-c', "test -e $marker; echo \$?"] });
is($j->{stdout}, "1\n", 'no exec with a missing cwd ran');
# a cwd that is there still works
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                { argv => ['pwd'], cwd => '/tmp' });
is($st, 200, 'cwd /tmp: 200') or diag $b;
is($j->{stdout}, "/tmp\n", '... ran there');

# ---- profiles: unknown 404, forbidden 403
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t,
                                { profile => 'no-such-profile' });
problem_is('a profile no host has, policy lists others', 404,
           'unknown_profile');
is($j->{profile}, 'no-such-profile', '... naming it');
is_deeply($j->{profiles}, ['default'], '... and those the caller may use');
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $g,
                                { profile => 'no-such-profile' });
problem_is('a profile no host has, policy allows any', 404,
           'unknown_profile');
# (one the host has but the policy forbids stays 403: t/module/discovery.t)

# ---- archives: tar's words, the workspace named "."
my $tmp = tempdir(CLEANUP => 1);
my $dotdot = `python3 t/lib/archives.py dotdot M $tmp`;
die 'archives.py failed' if $?;
($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$sb/archive", $t,
                                $dotdot);
problem_is('a refused archive', 422, 'bad_archive');
like($j->{stderr} // '', qr/tar: /, "... with tar's words") or diag $b;
unlike($j->{stderr} // '', qr/[\x00-\x08\x0b-\x1f\x7f]/,
       '... no control bytes');
ok(length($j->{stderr} // '') <= 2048 + 6, '... bounded');

system("mkdir -p $tmp/in && echo hi > $tmp/in/a.txt && tar -C $tmp/in -cf $tmp/a.tar a.txt") == 0
    or die 'tar';
open(my $fh, '<:raw', "$tmp/a.tar") or die;
my $tar = do { local $/; <$fh> };
close $fh;
($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$sb/archive", $t, $tar);
is($st, 200, 'an upload to the workspace') or diag $b;
is($j->{path}, '.', '... named "."');

done_testing;
