# Real build and test tooling under the seccomp allowlist and Landlock:
# a C project built with make and gcc and its tests run, a Python project
# installed into a venv and tested with pytest, a node script and node's
# test runner, git, tar, a loopback server and client, and curl failing
# cleanly in network mode "none".  Each exec must also report that the
# filter refused nothing it needed (refused_syscalls).
use strict;
use warnings;
use Test::More;
use lib 't/lib';
use VetoTest;

my $h = VetoTest->start(max_timeout_s => 120, default_timeout_s => 120);
my $id = $h->create_ok(limits => { memory_mb => 768, disk_mb => 256,
                                   pids => 128 });

# Runs a shell script; checks exit 0, the output and that nothing was
# refused (a refusal a tool shrugs off still shows here, and the table
# in seccomp_table.c is where it gets reviewed).
sub tool_ok
{
    my ($name, $script, $like, %o) = @_;
    my ($e, $out, $err) = $h->sh($id, "set -e\n$script", timeout_s => 120);
    ok($e->{ok}, "$name: exec replied") or diag explain $e;
    is($e->{exit_code}, $o{exit} // 0, "$name: exit code")
        or diag "stdout:\n$out\nstderr:\n$err";
    like(($out // '') . ($err // ''), $like, "$name: output");
    is_deeply($e->{refused_syscalls}, $o{refused} // [],
              "$name: no syscall refused")
        or diag explain $e->{refused_syscalls};
    return ($e, $out, $err);
}

tool_ok('C project: make, gcc, its tests', <<'SH', qr/^3 tests passed$/m);
mkdir -p c/src c/tests && cd c
cat > src/calc.h <<'EOF'
int add(int a, int b);
int mul(int a, int b);
EOF
cat > src/calc.c <<'EOF'
#include "calc.h"
int add(int a, int b) { return a + b; }
int mul(int a, int b) { return a * b; }
EOF
cat > tests/test_calc.c <<'EOF'
#include <stdio.h>
#include <pthread.h>
#include "calc.h"
static void *worker(void *p) { *(int *) p = mul(6, 7); return NULL; }
int main(void)
{
    int r = 0, n = 0;
    pthread_t t;
    n += add(2, 3) == 5;
    n += mul(4, 5) == 20;
    n += pthread_create(&t, NULL, worker, &r) == 0
         && pthread_join(t, NULL) == 0 && r == 42;
    printf("%d tests passed\n", n);
    return n == 3 ? 0 : 1;
}
EOF
printf 'CFLAGS = -O2 -Wall -Werror -Isrc -pthread\n' > Makefile
printf 'all: libcalc.a\n' >> Makefile
printf 'libcalc.a: src/calc.o\n\t$(AR) rcs $@ $^\n' >> Makefile
printf 'test_calc: tests/test_calc.c libcalc.a\n\t$(CC) $(CFLAGS) -o $@ $^\n' >> Makefile
printf 'test: test_calc\n\t./test_calc\n' >> Makefile
printf '.PHONY: all test\n' >> Makefile
make -j2 -s all
make -s test
SH

tool_ok('Python project: venv, pip install, pytest', <<'SH', qr/3 passed/);
mkdir -p py/src/calc py/tests && cd py
cat > pyproject.toml <<'EOF'
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"
[project]
name = "calc"
version = "0.1"
EOF
cat > src/calc/__init__.py <<'EOF'
def add(a, b):
    return a + b
EOF
cat > tests/test_calc.py <<'EOF'
import subprocess, sys, threading
from calc import add
def test_add():
    assert add(2, 3) == 5
def test_subprocess_and_thread():
    out = []
    t = threading.Thread(target=lambda: out.append(add(1, 1)))
    t.start(); t.join()
    r = subprocess.run([sys.executable, "-c", "print(6*7)"], capture_output=True, text=True)
    assert out == [2] and r.stdout == "42\n"
def test_multiprocessing():
    # a pool of processes and POSIX semaphores in /dev/shm
    import multiprocessing
    with multiprocessing.Pool(2) as p:
        assert sum(p.starmap(add, zip(range(4), range(4)))) == 12
EOF
python3 -m venv --system-site-packages venv
venv/bin/pip install -q --no-index --no-build-isolation . 2>&1
venv/bin/python -m pytest -q -p no:cacheprovider tests
SH

tool_ok('node: a script and node --test', <<'SH', qr/sum 10.*# pass 2/s);
mkdir -p js && cd js
cat > sum.js <<'EOF'
const fs = require('fs'), os = require('os');
fs.writeFileSync('data.json', JSON.stringify([1, 2, 3, 4]));
const xs = JSON.parse(fs.readFileSync('data.json'));
console.log('sum', xs.reduce((a, b) => a + b, 0), os.cpus().length > 0);
EOF
cat > sum.test.js <<'EOF'
const test = require('node:test'), assert = require('node:assert');
const { execFileSync } = require('node:child_process');
test('adds', () => assert.strictEqual(1 + 2, 3));
test('child process', () =>
  assert.strictEqual(execFileSync(process.execPath, ['-e', 'process.stdout.write("ok")']).toString(), 'ok'));
EOF
node sum.js
node --test sum.test.js
SH

tool_ok('git init, commit, diff', <<'SH', qr/^\+second line$/m);
export HOME=/home/sandbox
git config --global user.email agent@example.invalid
git config --global user.name agent
git config --global init.defaultBranch main
mkdir -p repo && cd repo
git init -q
echo 'first line' > f.txt
git add f.txt
git commit -q -m first
echo 'second line' >> f.txt
git diff
git commit -q -am second
git log --oneline | wc -l | grep -qx 2
SH

tool_ok('tar: create, list, extract, compare', <<'SH', qr/^same$/m);
mkdir -p t1/a/b && cd t1
seq 1 10000 > a/b/n.txt && ln -s b/n.txt a/link
tar czf /tmp/t.tgz a
tar tzf /tmp/t.tgz | grep -q a/link
mkdir -p /tmp/x && tar xzf /tmp/t.tgz -C /tmp/x
cmp a/b/n.txt /tmp/x/a/b/n.txt && echo same
SH

# Servers and clients on the sandbox's own loopback keep working
# (Landlock does not restrict TCP in mode "none": docs/isolation.md).
tool_ok('loopback server and client', <<'SH', qr/^hello over loopback$/m);
mkdir -p www && cd www && echo 'hello over loopback' > index.html
python3 -m http.server 18080 --bind 127.0.0.1 > /tmp/srv.log 2>&1 &
i=0; until curl -s -o /dev/null http://127.0.0.1:18080/; do
    i=$((i+1)); [ $i -lt 100 ] || exit 9; sleep 0.1; done
curl -sS http://127.0.0.1:18080/index.html
kill $!
SH

# Network mode "none": names do not resolve, addresses are refused or
# unreachable, and curl says so (exit 6 / 7), no crash.
tool_ok('curl in mode none: name', 'curl -sS --max-time 20 http://example.com/',
        qr/Could not resolve host/, exit => 6);
tool_ok('curl in mode none: loopback port nobody listens on',
        'curl -sS --max-time 20 http://127.0.0.1:9/',
        qr/Couldn't connect to server|Connection refused/, exit => 7);

is($h->destroy($id)->{state}, 'terminated', 'destroy');
$h->leaks_ok('after destroy');
$h->stop;
done_testing;
