#!/usr/bin/perl
# The documentation's examples against the real stack: every
# fenced block with a `curl` in README.md and docs/*.md (today those of
# api.md and operations.md) runs, one doc after the other,
# in one bash session per doc on a real stack (nginx
# with the module, Redis, the helper with egress on, MCP, metrics and the
# approval page), with the demo's environment exported (API, TOKEN,
# REVIEWER, AUDITOR, ADMIN).  Each curl's status is checked (2xx unless
# the example documents another), and a reply written under a command
# (`# 201 {...}`, `# HTTP/1.1 202 ...`, `# {...}`) is held to what the
# server sent: its status, its headers, and every field it names, with
# `…` for what varies.  The convention is docs/testing.md's "Runnable
# examples".  One test per block (file:line); a failure shows the
# command, what the doc says and what came back.
#   VETO_DOC_FILES=a.md,b.md   run these files instead (to check the check)

use strict;
use warnings;
use utf8;

use Test::More;
use JSON::PP ();
use File::Temp qw(tempdir);
use lib 't/lib';
use VetoNginx;
use VetoEgress;
use Eventually qw(eventually);

VetoNginx::need(qw(helper redis));
binmode(Test::More->builder->$_, ':encoding(UTF-8)')
    for qw(output failure_output todo_output);
die "jq is not installed: run scripts/install-deps.sh\n"
    unless system('jq --version >/dev/null 2>&1') == 0;

my $ROOT = $VetoNginx::ROOT;
# README.md, docs/api.md (its sandboxes are there for the operator's
# examples after it), then every other doc
my @DOCS = $ENV{VETO_DOC_FILES}
         ? split(/,/, $ENV{VETO_DOC_FILES})
         : ("$ROOT/README.md", "$ROOT/docs/api.md",
            grep { !m{/api\.md$} } sort glob("$ROOT/docs/*.md"));
my $ELL = "\x{2026}";           # …, the placeholder
my $JSON = JSON::PP->new->utf8(1)->canonical(1)->allow_nonref(1);

# ---- the blocks --------------------------------------------------------

# blocks(file) -> ({line, skip, steps => [{line, cmd, expect}]}): the fenced
# sh blocks with a curl command, or marked "run"
sub blocks
{
    my ($file) = @_;
    open(my $f, '<:encoding(UTF-8)', $file) or die "$file: $!";
    my @l = <$f>;
    close $f;
    chomp @l;
    my (@out, $i);
    for ($i = 0; $i < @l; $i++) {
        next unless $l[$i] =~ /^```\s*(\w*)/;
        my $lang = $1;
        my $start = $i;
        my @body;
        for ($i++; $i < @l && $l[$i] !~ /^```\s*$/; $i++) {
            push @body, $l[$i];
        }
        my ($prev) = grep { $_ =~ /\S/ } reverse @l[0 .. $start - 1];
        my $mark = defined $prev && $prev =~ /^<!--\s*doc-test:\s*(.*?)\s*-->/
                 ? $1 : '';
        next if $lang ne '' && $lang !~ /^(sh|bash|shell|console)$/;
        next unless $mark eq 'run'
                    || grep { my $x = $_; $x =~ s/(?:^|\s)#.*//;
                              $x =~ /\bcurl\b/ } @body;
        my $skip;
        $skip = $1 if $mark =~ /^skip:\s*(\S.*)/;
        die "$file:" . ($start + 1) . ": a doc-test marker must be "
            . "'run' or 'skip: <reason>', not '$mark'\n"
            if $mark ne '' && $mark ne 'run' && !defined $skip;
        push @out, { line => $start + 1, skip => $skip,
                     steps => steps(\@body, $start + 2) };
    }
    return @out;
}

# a quote still open at the end of this line (single or double)
sub open_quote
{
    my ($text) = @_;
    my ($q, $prev) = ('', ' ');
    for my $c (split //, $text) {
        if ($q eq '') {
            last if $c eq '#' && $prev =~ /\s/;
            $q = $c if $c eq "'" || $c eq '"';
        } elsif ($c eq $q) {
            $q = '';
        }
        $prev = $c;
    }
    return $q ne '';
}

sub steps
{
    my ($body, $line0) = @_;
    my (@st, $cmd, $exp);
    for my $k (0 .. $#$body) {
        my $l = $body->[$k];
        my $n = $line0 + $k;
        if ($cmd && ($cmd->{cmd} =~ /\\\n$/ || open_quote($cmd->{cmd}))) {
            $cmd->{cmd} .= "$l\n";
            next;
        }
        if ($l =~ /^\s*#\s?(.*)$/) {
            my $c = $1;
            if ($exp) {
                if ($c =~ /^\s*(?:[{}\[\]"]|[\w-]+: )/ || $exp->{open}) {
                    $exp->{text} .= "$c\n";
                    $exp->{open} = depth($exp->{text}) > 0;
                    next;
                }
                undef $exp;
            }
            if ($cmd && !$cmd->{expect}
                && $c =~ /^(?:\d{3}\b|HTTP\/[\d.]+ \d{3}|[{\[])/)
            {
                $exp = $cmd->{expect} = { text => "$c\n", line => $n };
                $exp->{open} = depth($c) > 0;
            }
            next;
        }
        undef $exp;
        next unless $l =~ /\S/;
        $cmd = { line => $n, cmd => "$l\n" };
        # an inline "# 201" after the command
        if ($l =~ /\s#\s*(\d{3})\b[^'"]*$/ && !open_quote($`)) {
            $cmd->{expect} = { text => "$1\n", line => $n };
        }
        push @st, $cmd;
    }
    # a quote the reader of this test took as open would have swallowed
    # the rest of the block, documented replies included
    $cmd->{parse_error} = 'a quote is still open at the end of the block'
        if $cmd && open_quote($cmd->{cmd});
    return \@st;
}

# how many brackets are open (outside strings)
sub depth
{
    my ($t) = @_;
    my ($d, $s, $esc) = (0, 0, 0);
    for my $c (split //, $t) {
        if ($s) {
            if ($esc) { $esc = 0 } elsif ($c eq '\\') { $esc = 1 }
            elsif ($c eq '"') { $s = 0 }
            next;
        }
        if ($c eq '"') { $s = 1 }
        elsif ($c eq '{' || $c eq '[') { $d++ }
        elsif ($c eq '}' || $c eq ']') { $d-- }
    }
    return $d;
}

# ---- the documented reply: status, headers, JSON with placeholders -----

# expectation(text) -> {status, headers => {name => pattern}, json => [...]}
sub expectation
{
    my ($t) = @_;
    my %e = (headers => {}, json => []);
    $t =~ s/^\s*HTTP\/[\d.]+ (\d{3})[^\n]*\n// and $e{status} = $1;
    $t =~ s/^\s*(\d{3})\b[ ,]*// and $e{status} = $1;
    while ($t =~ s/^\s*([A-Za-z][\w-]*): ([^\n]*)\n//) {
        $e{headers}{lc $1} = $2;
    }
    while ($t =~ /\S/) {
        $t =~ s/^\s+//;
        last unless $t =~ /^[{\[]/;
        my $pos = 0;
        my $v = eval { lenient(\$t, \$pos) };
        die "the documented reply does not parse: $@ in: $t\n" if $@;
        push @{ $e{json} }, $v;
        $t = substr($t, $pos);
        $t =~ s/^[ \t]*(?:#[^\n]*)?//;
    }
    return \%e;
}

# JSON where … stands for: any value, more members or elements, or any
# text inside a string ("sb-…": a string starting "sb-")
sub lenient
{
    my ($t, $p) = @_;
    my $ws = sub { $$p++ while $$p < length($$t) && substr($$t, $$p, 1) =~ /\s/ };
    $ws->();
    my $c = substr($$t, $$p, 1);
    if ($c eq $ELL) { $$p++; return { ANY => 1 } }
    if ($c eq '{' || $c eq '[') {
        my $obj = $c eq '{';
        my (%h, @a, $more);
        $$p++;
        while (1) {
            $ws->();
            my $d = substr($$t, $$p, 1);
            if ($d eq ($obj ? '}' : ']')) { $$p++; last }
            if ($d eq ',') { $$p++; next }
            if ($d eq $ELL && $$p + 1 < length($$t)
                && substr($$t, $$p + 1) =~ /^\s*[,}\]]/)
            {
                $$p++;
                $more = 1;
                next;
            }
            if ($obj) {
                my $k = lenient($t, $p);
                die "key expected at $$p\n" unless ref $k eq 'HASH'
                                                  && exists $k->{STR};
                $ws->();
                substr($$t, $$p, 1) eq ':' or die "':' expected at $$p\n";
                $$p++;
                $h{ $k->{STR} } = lenient($t, $p);
            } else {
                push @a, lenient($t, $p);
            }
        }
        return $obj ? { OBJ => \%h } : { ARR => \@a, MORE => $more };
    }
    if ($c eq '"') {
        my $s = '';
        $$p++;
        while ($$p < length($$t)) {
            my $d = substr($$t, $$p++, 1);
            last if $d eq '"';
            if ($d eq '\\') {
                my $e = substr($$t, $$p++, 1);
                if ($e eq 'u') {
                    $s .= chr(hex(substr($$t, $$p, 4)));
                    $$p += 4;
                } else {
                    $s .= { n => "\n", t => "\t", r => "\r", b => "\b",
                            f => "\f" }->{$e} // $e;
                }
            } else {
                $s .= $d;
            }
        }
        return { STR => $s };
    }
    if (substr($$t, $$p) =~ /^(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null)/) {
        $$p += length($1);
        return { LIT => $1 };
    }
    die "unexpected '" . substr($$t, $$p, 20) . "' at $$p\n";
}

# match(doc, real, where) -> list of differences
sub match
{
    my ($d, $r, $w) = @_;
    return () if $d->{ANY};
    if (exists $d->{OBJ}) {
        return ("$w: an object is documented, the reply has "
                . $JSON->encode($r)) unless ref $r eq 'HASH';
        my @diff;
        for my $k (sort keys %{ $d->{OBJ} }) {
            if (!exists $r->{$k}) {
                push @diff, "$w.$k: documented, not in the reply";
                next;
            }
            push @diff, match($d->{OBJ}{$k}, $r->{$k}, "$w.$k");
        }
        return @diff;
    }
    if (exists $d->{ARR}) {
        return ("$w: an array is documented, the reply has "
                . $JSON->encode($r)) unless ref $r eq 'ARRAY';
        my @da = @{ $d->{ARR} };
        if (!$d->{MORE}) {
            return ("$w: " . scalar(@da) . " elements documented, the reply has "
                    . scalar(@$r) . ": " . $JSON->encode($r))
                if @da != @$r;
            return map { match($da[$_], $r->[$_], "$w\[$_]") } 0 .. $#da;
        }
        my $j = 0;      # the documented ones in order, others between
        for my $i (0 .. $#da) {
            $j++ while $j < @$r && match($da[$i], $r->[$j], '');
            return ("$w\[$i]: not in the reply's " . $JSON->encode($r))
                if $j >= @$r;
            $j++;
        }
        return ();
    }
    if (exists $d->{STR}) {
        return ("$w: a string is documented, the reply has "
                . $JSON->encode($r)) if ref $r || !defined $r
                                        || JSON::PP::is_bool($r);
        return () if smatch($d->{STR}, "$r");
        return ("$w: documented \"$d->{STR}\", the reply has \"$r\"");
    }
    my $lit = $d->{LIT};
    my $ok = $lit eq 'null' ? !defined $r
           : $lit eq 'true' ? JSON::PP::is_bool($r) && $r
           : $lit eq 'false' ? JSON::PP::is_bool($r) && !$r
           : defined $r && !ref $r && !JSON::PP::is_bool($r)
             && $r =~ /^-?\d/ && $r == $lit;
    return $ok ? () : ("$w: documented $lit, the reply has "
                       . (defined $r ? $JSON->encode($r) : 'null'));
}

# a documented string with … in it: the parts in order, the first at the
# start and the last at the end
sub smatch
{
    my ($d, $r) = @_;
    return $d eq $r unless index($d, $ELL) >= 0;
    my @p = split(/\Q$ELL\E/, $d, -1);
    my $re = join('.*?', map { quotemeta } @p);
    return $r =~ /^$re$/s;
}

# ---- the stack, as the demo runs it ------------------------------------

my $policy = {
    version => 1,
    tenants => {
        acme => {
            profiles => ['default'],
            default_profile => 'default',
            ceilings => { memory_mb => 1024, pids => 256, cpu_percent => 200,
                          disk_mb => 1024, timeout_s => 600,
                          output_bytes => 4194304, ttl_s => 7200,
                          file_bytes => 16777216 },
            defaults => { memory_mb => 256, pids => 128, cpu_percent => 100,
                          disk_mb => 256, timeout_s => 60, ttl_s => 1800 },
            network => { allow => ['registry.example.com',
                                   '*.mirror.example.com'],
                         ask => ['git.example.com'], default => 'none' },
            approvals => { exec_argv => ['git push*'], ttl_s => 3600 },
            quotas => { concurrent_sandboxes => 10, execs_per_minute => 120 },
            credentials => { agent_hosts => ['api.example.com'] },
        },
    },
};

my $e = VetoEgress->start(helper => 1);
# the demo's credentials directory: no operator secret, the proxy's CA
# and interception on (agents' own secrets)
my $creds = $e->write_credentials([]);
my $n = VetoNginx->new;
$n->{issuer} = 'veto-dev';      # the demo's; its audience is the harness's
$n->start_redis;
# the helper's own defaults, as the demo runs it (VetoTest's are smaller)
$n->start_helper($e->helper_conf, max_memory_mb => 4096, max_pids => 1024,
                 max_disk_mb => 2048, max_timeout_s => 3600,
                 max_output_bytes => 16 * 1024 * 1024, max_ttl_s => 86400,
                 default_memory_mb => 512, default_pids => 256,
                 default_disk_mb => 256, default_timeout_s => 60,
                 default_ttl_s => 3600, egress_credentials => $creds);
my $veto = $n->default_veto . <<"EOF";
        veto_sandbox_mcp on;
        veto_sandbox_mcp_sessions zone=veto_mcp:1m max=64 per_agent=8;
EOF
$n->start(redis => 1, veto => $veto, policy => $policy, workers => 2,
          approval_page => 1,
          server_extra => "location = /metrics { veto_sandbox_metrics; "
                          . "allow 127.0.0.1; deny all; }");
my $ready;
eventually('Redis is up and egress available', 10, sub {
    my (undef, undef, undef, $j) = $n->request(GET => '/v1/health');
    $ready = ($j->{redis} // '') eq 'up' && $j->{egress}{available};
    $ready;
});
ok($ready, 'the stack is up: helper, Redis, egress');

my %env = (
    API      => $n->url(''),     # the demo's http://127.0.0.1:8080
    TOKEN    => $n->token(sub => 'agent-1', alg => 'HS256', exp => time + 3600,
                          scope => 'sandbox:create sandbox:exec '
                                   . 'sandbox:files sandbox:network'),
    REVIEWER => $n->token(sub => 'alice', alg => 'HS256', exp => time + 3600,
                          scope => 'approvals:review'),
    AUDITOR  => $n->token(sub => 'carol', alg => 'HS256', exp => time + 3600,
                          scope => 'audit:read'),
    ADMIN    => $n->token(sub => 'admin-1', alg => 'HS256', exp => time + 3600,
                          scope => 'admin:revoke'),
);

# the files the examples upload, in the session's directory
my $work = tempdir('veto-doc-XXXXXX', TMPDIR => 1, CLEANUP => 1);
VetoNginx::spew("$work/main.py", "import sys\nprint(sys.stdin.read().upper())\n");
VetoNginx::spew("$work/run.sh", "#!/bin/sh\necho run\n");
mkdir "$work/proj";
mkdir "$work/proj/src";
VetoNginx::spew("$work/proj/Makefile",
                "test:\n\t\@sh -c 'cat src/calc.c >/dev/null && echo PASS'\n");
VetoNginx::spew("$work/proj/src/calc.c", "int add(int a, int b) { return a + b; }\n");
VetoNginx::spew("$work/calc.c", "int add(int a, int b) { return b + a; }\n");

my $WRAP = <<'EOF';
cd "$VETO_CWD" || exit 99
# every curl: its status and headers beside its reply (VETO_ST)
curl() {
    local c rc
    c=$(mktemp "$VETO_ST.c.XXXXXX") || return 99
    echo "$c" >> "$VETO_ST.calls"
    command curl -m 60 -D "$c.h" -w '%{stderr}\nVETO-STATUS %{http_code}\n' \
        "$@" 2>"$c.st" | tee "$c.b"
    rc=${PIPESTATUS[0]}
    return $rc
}
EOF

sub shq { my $s = shift; $s =~ s/'/'\\''/g; "'$s'" }

# run one doc's blocks in one bash; the results per step
sub run_doc
{
    my ($file, $blocks) = @_;
    my $w = tempdir('veto-docrun-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $sh = $WRAP;
    my $i = 0;
    for my $b (@$blocks) {
        next if $b->{skip};
        for my $s (@{ $b->{steps} }) {
            $s->{id} = ++$i;
            my $st = "$w/s$i";
            $s->{st} = $st;
            $s->{w} = $w;
            (my $cmd = $s->{cmd}) =~ s{http://127\.0\.0\.1:8080\b}{$env{API}}g;
            $sh .= "VETO_ST=$st; : > $st.calls\n{\n$cmd\n} > $st.out 2> $st.err\n"
                 . "echo \$? > $st.rc\n";
        }
    }
    VetoNginx::spew("$w/doc.sh", Encode::encode('UTF-8', $sh));
    my $env = join(' ', map { "$_=" . shq($env{$_}) } sort keys %env);
    system("cd $work && env $env VETO_CWD=$work timeout 120 bash $w/doc.sh "
           . ">$w/doc.out 2>&1");
    return $w;
}

sub slurp_or { my $f = shift; -e $f ? VetoNginx::slurp($f) : '' }

# check(step) -> list of findings
sub check
{
    my ($s) = @_;
    my @f;
    push @f, $s->{parse_error} if $s->{parse_error};
    my $rc = slurp_or("$s->{st}.rc");
    chomp $rc;
    return ('it did not run (an earlier step hung, or bash stopped): '
            . substr(slurp_or("$s->{w}/doc.out"), -2000)) if $rc eq '';
    my @calls = grep { length } split /\n/, slurp_or("$s->{st}.calls");
    push @f, "exit status $rc; stderr: " . slurp_or("$s->{st}.err") if $rc ne '0';
    my $exp = $s->{expect} ? eval { expectation($s->{expect}{text}) } : undef;
    push @f, $@ if $s->{expect} && !$exp;
    push @f, 'a reply is documented, but the command ran no curl'
        if $exp && !@calls;
    for my $k (0 .. $#calls) {
        my $c = $calls[$k];
        my ($status) = slurp_or("$c.st") =~ /VETO-STATUS (\d+)/;
        $status //= '(none)';
        my $last = $k == $#calls;
        my $want = $last && $exp ? $exp->{status} : undef;
        if (defined $want) {
            push @f, "status $status, documented $want" if $status ne $want;
        } elsif ($status !~ /^[23]\d\d$/) {
            push @f, "status $status (an example without a documented "
                     . "status must succeed): " . slurp_or("$c.b");
        }
        if ($status eq '000' || $status eq '(none)') {
            (my $err = slurp_or("$c.st")) =~ s/\n?VETO-STATUS.*//s;
            push @f, "curl: $err";
        }
        next unless $last && $exp;
        my $hdr = slurp_or("$c.h");
        for my $h (sort keys %{ $exp->{headers} }) {
            my ($v) = $hdr =~ /^\Q$h\E:[ \t]*([^\r\n]*)/mi;
            push @f, "header $h: documented \"$exp->{headers}{$h}\", "
                     . "the reply has " . ($v // 'none')
                unless defined $v && smatch($exp->{headers}{$h}, $v);
        }
        next unless @{ $exp->{json} };
        my $body = Encode::decode('UTF-8', slurp_or("$c.b"));
        $body =~ s/^HTTP\/.*?\r?\n\r?\n//s;
        my @real = map { my $x = eval { $JSON->decode(Encode::encode('UTF-8', $_)) };
                         defined $x ? ($x) : () }
                   grep { /\S/ } split /\n/, $body;
        @real = grep { defined } (eval { $JSON->decode(Encode::encode('UTF-8', $body)) })
            if @real == 0;
        for my $d (@{ $exp->{json} }) {
            my @best;
            # the lines with the documented members, if any (ndjson)
            my @cand = grep { my $r = $_; !exists $d->{OBJ} || ref $r ne 'HASH'
                              || !grep { !exists $r->{$_} } keys %{ $d->{OBJ} } }
                       @real;
            @cand = @real unless @cand;
            for my $r (@cand) {
                my @m = match($d, $r, '$');
                @best = @m, last if !@m;
                @best = @m if !@best || @m < @best;
            }
            @best = ('no JSON in the reply') if !@real;
            push @f, @best;
        }
    }
    return @f;
}

use Encode ();
for my $file (@DOCS) {
    my @b = blocks($file);
    (my $name = $file) =~ s{^\Q$ROOT\E/}{};
    my $w = run_doc($file, \@b);
    for my $b (@b) {
        if ($b->{skip}) {
          SKIP: { skip("$name:$b->{line}: $b->{skip}", 1) }
            next;
        }
        my @diag;
        for my $s (@{ $b->{steps} }) {
            my @f = check($s);
            next unless @f;
            my @calls = grep { length } split /\n/, slurp_or("$s->{st}.calls");
            push @diag, "line $s->{line}: $s->{cmd}"
                . ($s->{expect} ? "documented: $s->{expect}{text}" : '')
                . "got: " . (@calls ? substr(slurp_or("$calls[-1].b"), 0, 3000)
                                    : slurp_or("$s->{st}.out"))
                . "\n" . join("\n", map { "  - $_" } @f);
        }
        ok(!@diag, "$name:$b->{line}: " . scalar(@{ $b->{steps} }) . ' commands')
            or diag(join("\n\n", @diag));
    }
}

done_testing();
