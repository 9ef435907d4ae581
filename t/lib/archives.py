"""Test archives for t/helper/archive.t, written to stdout.

    python3 archives.py CASE MARKER [HOST_DIR]

Every name a hostile archive tries to plant carries MARKER, so the test
can look for it anywhere it must not be.  HOST_DIR is a directory of the
host (the test's own) that a link tries to reach.
"""
import gzip
import io
import sys
import tarfile

MTIME = 1700000000


def info(name, typ=tarfile.REGTYPE, mode=0o644, size=0, link="",
         dev=(0, 0)):
    ti = tarfile.TarInfo(name)
    ti.type = typ
    ti.mode = mode
    ti.size = size
    ti.linkname = link
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = "root"
    ti.mtime = MTIME
    ti.devmajor, ti.devminor = dev
    return ti


def tar(entries):
    """entries: (name, bytes) for files, (TarInfo, None) for the rest,
    (TarInfo, bytes) for a file of its own mode."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        for name, data in entries:
            if not isinstance(name, tarfile.TarInfo):
                name = info(name)
            if data is None:
                t.addfile(name)
            else:
                name.size = len(data)
                t.addfile(name, io.BytesIO(data))
    return buf.getvalue()


def header(name, size):
    return info(name, size=size).tobuf(format=tarfile.GNU_FORMAT)


def ustar_header(name):
    """A plain empty-file ustar header, fast (a million of them)."""
    h = bytearray(512)
    h[0:len(name)] = name
    h[100:108] = b"0000644\0"
    h[108:116] = b"0000000\0"
    h[116:124] = b"0000000\0"
    h[124:136] = b"00000000000\0"
    h[136:148] = b"%011o\0" % MTIME
    h[148:156] = b"        "
    h[156:157] = b"0"
    h[257:263] = b"ustar\0"
    h[263:265] = b"00"
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


def main():
    case, m = sys.argv[1], sys.argv[2]
    host = sys.argv[3] if len(sys.argv) > 3 else "/nonexistent"
    out = sys.stdout.buffer

    if case == "dotdot":
        out.write(tar([("ok-before.txt", b"ok\n"),
                       ("../escape-%s.txt" % m, b"x"),
                       ("sub/../../escape2-%s.txt" % m, b"x")]))
    elif case == "absolute":
        out.write(tar([("/tmp/abs-%s.txt" % m, b"x"),
                       ("/etc/abs-%s.conf" % m, b"x"),
                       (host + "/abs-%s.txt" % m, b"x")]))
    elif case == "symlink":
        out.write(tar([
            (info("evil", tarfile.SYMTYPE, 0o777, link="/etc"), None),
            ("evil/through-%s.txt" % m, b"x"),
            (info("up", tarfile.SYMTYPE, 0o777, link="../../../../tmp"),
             None),
            ("up/through-%s.txt" % m, b"x"),
            (info("host", tarfile.SYMTYPE, 0o777, link=host), None),
            ("host/through-%s.txt" % m, b"x"),
            (info("in", tarfile.SYMTYPE, 0o777, link="real"), None),
            (info("real", tarfile.DIRTYPE, 0o755), None),
            ("in/inside.txt", b"inside\n")]))
    elif case == "hardlink":
        out.write(tar([
            (info("shadow-" + m, tarfile.LNKTYPE, link="/etc/shadow"), None),
            (info("passwd-" + m, tarfile.LNKTYPE,
                  link="../../../../etc/passwd"), None),
            (info("hostfile-" + m, tarfile.LNKTYPE,
                  link=host + "/helper.conf"), None)]))
    elif case == "devices":
        out.write(tar([
            (info("null-" + m, tarfile.CHRTYPE, 0o666, dev=(1, 3)), None),
            (info("mem-" + m, tarfile.CHRTYPE, 0o666, dev=(1, 1)), None),
            (info("disk-" + m, tarfile.BLKTYPE, 0o666, dev=(8, 0)), None),
            (info("whiteout-" + m, tarfile.CHRTYPE, 0o666, dev=(0, 0)),
             None)]))
    elif case == "fifo":
        out.write(tar([(info("fifo-" + m, tarfile.FIFOTYPE), None),
                       ("after.txt", b"after\n")]))
    elif case == "modes":
        out.write(tar([
            (info("suid", mode=0o4755), b"#!/bin/sh\nid -u\n"),
            (info("sgid", mode=0o2755), b"#!/bin/sh\nid -g\n"),
            (info("sticky", tarfile.DIRTYPE, 0o1777), None),
            (info("world", mode=0o777), b"w\n"),
            (info("private", mode=0o600), b"p\n"),
            (info("script.sh", mode=0o755), b"#!/bin/sh\necho script\n")]))
    elif case == "zero-bomb":
        # 10 GiB of zeros: one gzip member for the header, then the same
        # 1 MiB member of zeros over and over (a gzip stream may be many)
        out.write(gzip.compress(header("bomb.bin", 10 << 30)))
        zeros = gzip.compress(b"\0" * (1 << 20), compresslevel=9)
        for _ in range(10 << 10):
            out.write(zeros)
    elif case == "million":
        # a million empty files: a plain ustar stream (the test
        # compresses it)
        for i in range(1000000):
            out.write(ustar_header(b"m/%07d" % i))
        out.write(b"\0" * 1024)
    else:
        sys.exit("unknown case " + case)


if __name__ == "__main__":
    main()
