package VetoNode;

# The node test scripts a prove file runs (t/mcp/mcp-client.test.mjs from
# t/module/mcp-client.t, t/browser/approval-page.test.mjs from
# t/ui/approval-page.t): their tooling installed from the folder's
# package-lock.json, and their "ok - name" / "not ok - name" lines (what
# t/lib/tap.mjs prints) turned into the prove file's own results.
#
#   VetoNode::need("$ROOT/t/mcp", '@modelcontextprotocol/sdk');
#   my ($status, $results) = VetoNode::run("$ROOT/t/mcp/x.test.mjs",
#       $fixture_file, name => 'mcp client', timeout => 300);
#
# A test that cannot run fails: no node, or npm ci failing, dies.

use strict;
use warnings;

use POSIX ();
use Test::More ();

sub need
{
    my ($dir, $package) = @_;
    die "node is not installed: run scripts/install-deps.sh\n"
        unless system('node --version >/dev/null 2>&1') == 0;
    unless (-f "$dir/node_modules/$package/package.json") {
        system("cd '$dir' && npm ci --no-audit --no-fund >&2") == 0
            or die "npm ci in $dir failed\n";
    }
}

# Runs node on the script with the fixture file as its argument, in its
# own process group (killed whole when it outlives the timeout, seconds);
# each "ok - name" line becomes ok(..., "<name>: name"), "# " lines are
# diagnostics, the rest notes.  Returns the script's exit status ($?) and
# how many results it reported.
sub run
{
    my ($script, $fixture, %o) = @_;
    my $name = $o{name};
    my $pid = open(my $fh, '-|');
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        open STDERR, '>&', \*STDOUT or die;
        POSIX::setpgid(0, 0);
        exec 'node', $script, $fixture;
        die "exec node: $!";
    }
    my $results = 0;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    {
        local $SIG{ALRM} = sub { kill 'KILL', -$pid; die "$name test timed out\n" };
        alarm $o{timeout};
        while (my $l = <$fh>) {
            chomp $l;
            if ($l =~ /^(not )?ok - (.*)$/) {
                Test::More::ok(!$1, "$name: $2");
                $results++;
            } elsif ($l =~ /^# (.*)$/) {
                Test::More::diag($1);
            } else {
                Test::More::note($l);
            }
        }
        alarm 0;
    }
    close $fh;
    return ($?, $results);
}

1;
