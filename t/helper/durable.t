# The sandbox life's records on disk (sandbox-helper/durable.c): a
# destroy answers once its ENDED record is written (the page cache: a
# helper crash loses nothing), a child fsyncs it, and only then does the
# sandbox's state file go.  A crash between the two leaves both: the next
# start keeps the ENDED record (the sandbox's real end) and removes the
# state file.  And 1,000 create/exec/destroy cycles leave nothing behind:
# no cgroup, mount, network namespace, state file, process or file
# descriptor, and one flush process at most.
use strict;
use warnings;
use Test::More;
use Time::HiRes qw(time sleep);
use JSON::PP;
use lib 't/lib';
use VetoTest;
use Eventually qw(eventually);

my $h = VetoTest->start(ended_max => 2000);

sub status
{
    my ($id) = @_;
    my ($r) = $h->call({ op => 'status', tenant => 't1', agent => 'a1',
                         id => $id });
    return $r;
}

sub slurp
{
    my ($f) = @_;
    open(my $fh, '<', $f) or return undef;
    local $/;
    return scalar <$fh>;
}

# --- a crash between the ENDED record and the state file's removal ------
my $id = $h->create_ok;
my $run = $h->state_dir . "/run/$id.json";
my $rec = slurp($run);
ok(defined $rec && $rec =~ /"id":"\Q$id\E"/, 'a live sandbox has its state file');
my $r = $h->destroy($id);
is($r->{state}, 'terminated', 'destroyed');
is($r->{ended}{end_reason}, 'deleted', 'ENDED: deleted');
eventually('its state file goes after the ENDED record is on disk', 10,
           sub { !-e $h->state_file($id) });
ok(-f $h->state_dir . "/ended/$id.json", 'the ENDED record is on disk');

# what a crash (or a host crash that lost the removal) leaves: both; and
# a sandbox live at the crash, which ends as helper_restart
my $live = $h->create_ok;
$h->kill9;
open(my $fh, '>', $run) or die "write $run: $!";
print $fh $rec;
close $fh or die "close $run: $!";
chmod 0600, $run;
$h->launch;
$r = status($id);
is($r->{sandbox}{state}, 'ended', 'after the restart: ended') or diag explain $r;
is($r->{sandbox}{end_reason}, 'deleted',
   'the ENDED record kept: deleted, not helper_restart');
ok(!-e $run, 'the state file removed at start');
like($h->log_text, qr/\Q$id\E ended already \(deleted\)/, 'the start logs it');
$r = status($live);
is($r->{sandbox}{end_reason}, 'helper_restart', 'the live one: helper_restart');
ok(!-e $h->state_dir . "/run/$live.json", 'its state file removed at start');

# a kill right after the answer, the flush perhaps not done: the same end
my $id2 = $h->create_ok;
$r = $h->destroy($id2);
is($r->{ended}{end_reason}, 'deleted', 'destroyed');
$h->kill9;
$h->launch;
$r = status($id2);
is($r->{sandbox}{end_reason}, 'deleted', 'killed right after: still deleted')
    or diag explain $r;
ok(!-e $h->state_dir . "/run/$id2.json", 'no state file after the start');
$h->leaks_ok('after the restarts');

# --- many cycles ---------------------------------------------------------
# VETO_DURABLE_CYCLES: fewer cycles while working on this file
my $n = $ENV{VETO_DURABLE_CYCLES} // 1000;
$h->destroy($h->create_ok);     # the flush process started, as it stays
$h->leaks_ok('before the cycles');   # (and the last connection closed)
my $fds = $h->count_fds;
my $bad = 0;
my @ids;
for my $i (1 .. $n) {
    my $sid = $h->create_ok;
    my ($e, $out) = $h->exec($sid, ['true']);
    $bad++ unless $e->{ok} && ($e->{exit_code} // -1) == 0;
    my $d = $h->destroy($sid);
    $bad++ unless ($d->{state} // '') eq 'terminated';
    push @ids, $sid;
}
is($bad, 0, "$n cycles of create, exec true, destroy");
$h->leaks_ok("after $n cycles");
eventually('no sandbox process left', 5, sub { !$h->count_procs });
my $hp = $h->pid;
my @kids = grep { (slurp("/proc/$_/stat") // '') =~ /^\d+ \(vsb-sync\) \S+ $hp / }
           do { opendir(my $dh, '/proc') or die "/proc: $!"; grep { /^\d+$/ } readdir $dh };
ok(@kids <= 1, 'one flush process at most (it stays)') or diag("@kids");
ok($h->count_fds <= $fds, sprintf('no descriptor leaked (%d before, %d after)',
                                   $fds, $h->count_fds));
my %on_disk = map { $_ => 1 } $h->ended_files;
is(scalar(grep { !$on_disk{$_} } @ids), 0, "all $n ENDED records on disk");
my $ok = 0;
for my $sid (@ids[0, $#ids]) {
    my $j = eval { decode_json(slurp($h->state_dir . "/ended/$sid.json")) };
    $ok++ if $j && $j->{id} eq $sid && $j->{end_reason} eq 'deleted';
}
is($ok, 2, 'the first and the last read back whole');

is($h->stop, 0, 'helper exits 0');
$h->leaks_ok('at the end');
my @left = grep { (slurp("/proc/$_/stat") // '') =~ /^\d+ \(vsb-sync\) \S+ (?:$hp|$$) / }
           do { opendir(my $dh, '/proc') or die "/proc: $!"; grep { /^\d+$/ } readdir $dh };
is(scalar @left, 0, 'the flush process ended with the helper') or diag("@left");
done_testing;
