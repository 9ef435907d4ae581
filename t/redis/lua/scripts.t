#!/usr/bin/perl
# The module's Lua scripts as files: every ngx_veto_sandbox_module/lua/
# script is compiled in by exactly one NGX_HTTP_VSB_LUA() of the C sources
# and each of those has its file; each text (the prelude, then the script)
# loads in a real redis-server under the SHA-1 the module computes; the
# prelude alone sends Redis no command.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../../lib";
use Test::More;
use Digest::SHA qw(sha1_hex);
use VetoRedisTest qw(redis_conn scripts);

my $mod = "$FindBin::Bin/../../../ngx_veto_sandbox_module";
my $r = redis_conn();
my $s = scripts();

# the scripts the C sources compile in, and where
my %in;
for my $file (glob "$mod/ngx_http_veto_sandbox_*.c") {
    open my $fh, '<', $file or die "$file: $!";
    while (my $line = <$fh>) {
        push @{ $in{$1} }, $file =~ s{.*/}{}r
            if $line =~ /^NGX_HTTP_VSB_LUA\((\w+)\);/;
    }
}

ok(keys %$s >= 20, scalar(keys %$s) . ' scripts in lua/');
is_deeply([sort keys %in], [sort keys %$s],
          'the C sources compile in exactly the files of lua/');
for my $name (sort keys %in) {
    is(scalar @{ $in{$name} }, 1, "$name: compiled in once ($in{$name}[0])");
}

for my $name (sort keys %$s) {
    my $sha = eval { $r->script_load($s->{$name}) };
    is($sha, sha1_hex($s->{$name}), "$name: loads, under the module's SHA-1")
        or diag $@;
}

# Nothing in the prelude runs a command unless a script calls it: a
# script that is only the prelude makes Redis run no command for it.
my $prelude = $s->{audit_append} =~ s/-- audit_append:.*\z//sr;
like($prelude, qr/local function vsb_now\(\)/, 'the prelude, alone');
$r->config_resetstat;
is($r->eval($prelude . "return 1\n", 0), 1, 'the prelude alone runs');
my @cmds = sort grep { /^cmdstat_/ && !/^cmdstat_config/ }
           keys %{ $r->info('commandstats') };
is_deeply(\@cmds, ['cmdstat_eval'], 'and sends no command')
    or diag explain \@cmds;

done_testing();
