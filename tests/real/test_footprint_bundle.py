"""footprint (strace parsing, real trace), bundle (isolated run, same output), safe unpacking."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import textwrap

import pytest

from perflab.model import Workload
from perflab.errors import PerflabError
from perflab.measure.executor import RealExecutor
from perflab.platform import strace
from perflab.store import open_store
from perflab.platform.files import resolve_links
from perflab.studies.bundle import study as bd
from perflab.studies.bundle import archive as ba
from perflab.studies.footprint import study as fp

PROG = r"""
#include <stdio.h>
#include <math.h>
int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "data/input.txt";
    FILE *f = fopen(path, "r");
    if (!f) { perror(path); return 1; }
    unsigned long sum = 0; int c; long n = 0;
    while ((c = fgetc(f)) != EOF) { sum = sum * 31 + (unsigned)c; n++; }
    fclose(f);
    printf("bytes %ld checksum %lu sqrt %.3f\n", n, sum % 1000003, sqrt((double)n));
    return 0;
}
"""

needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")


@pytest.fixture(scope="module")
def prog_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("prog")
    (d / "prog.c").write_text(PROG)
    subprocess.run(["gcc", "-O2", "-o", str(d / "prog"), str(d / "prog.c"), "-lm"], check=True)
    (d / "data").mkdir()
    (d / "data" / "input.txt").write_text("".join(f"{i}\n" for i in range(5000)))
    return d


def _workload(prog_dir) -> Workload:
    return Workload(name="prog", argv=("./prog",), cwd=str(prog_dir))


# --- parser ----------------------------------------------------------------------------------

TRACE = textwrap.dedent(r'''
    100 execve("/usr/bin/sh", ["sh", "-c", "x"], 0x7ffd /* 3 vars */) = 0
    100 openat(AT_FDCWD</work>, "/etc/ld.so.cache", O_RDONLY|O_CLOEXEC) = 3</etc/ld.so.cache>
    100 newfstatat(3</etc/ld.so.cache>, "", {st_mode=S_IFREG|0644, st_size=41923, ...}, AT_EMPTY_PATH) = 0
    100 vfork( <unfinished ...>
    101 openat(AT_FDCWD</work>, "data/we ird\"q\\uote\n\303\251", O_RDONLY <unfinished ...>
    100 <... vfork resumed>)              = 101
    101 <... openat resumed>)             = 3</work/data/we ird"q\uote\n\303\251>
    101 access("/etc/ld.so.preload", R_OK) = -1 ENOENT (No such file or directory)
    101 chdir("sub")                       = 0
    101 stat("rel.txt", {st_mode=S_IFREG|0644, st_size=1, ...}) = 0
    101 readlinkat(AT_FDCWD</work/sub>, "/lib64", "usr/lib64", 4095) = 9
    101 openat(AT_FDCWD</work/sub>, "out,put.log", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 4</work/sub/out,put.log>
    101 execve("/nonexistent/bin/x", ["x"], 0x5 /* 1 var */) = -1 ENOENT (No such file or directory)
    101 +++ exited with 0 +++
    100 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=101} ---
''').lstrip()


def test_parser_joins_unfinished_calls_and_decodes_strings():
    calls = strace.parse(TRACE)
    names = [c.name for c in calls]
    assert names == ["execve", "openat", "newfstatat", "vfork", "openat", "access", "chdir", "stat",
                     "readlinkat", "openat", "execve"]
    weird = calls[4]
    assert weird.pid == 101 and weird.string_arg(1) == 'data/we ird"q\\uote\né'
    assert weird.fd_path(0) == "/work" and weird.ret.startswith("3<")
    assert calls[3].ret_int == 101
    assert calls[5].failed and calls[5].errno == "ENOENT"
    assert calls[9].args[1] == '"out,put.log"'  # commas inside quotes do not split


def test_analyse_tracks_cwd_writes_and_failures():
    files, failed = fp.analyse(strace.parse(TRACE), "/work")
    by_path = {f.path: f for f in files}
    assert 'data/we ird"q\\uote\né' not in by_path
    assert '/work/data/we ird"q\\uote\né' in by_path
    assert by_path["/work/sub/rel.txt"].uses == ("stat",)  # relative to the chdir'd cwd
    assert by_path["/work/sub/out,put.log"].written
    assert by_path["/lib64"].uses == ("readlink",)
    assert by_path["/usr/bin/sh"].uses == ("exec",)
    assert {f.path: f.errno for f in failed} == {"/etc/ld.so.preload": "ENOENT", "/nonexistent/bin/x": "ENOENT"}


def test_resolve_links_keeps_each_link(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f").write_text("x")
    os.symlink("real", tmp_path / "dirlink")
    os.symlink(str(tmp_path / "dirlink" / "f"), tmp_path / "abs")
    real, links = resolve_links(str(tmp_path / "abs"))
    assert real == str(tmp_path / "real" / "f")
    assert links == [(str(tmp_path / "abs"), str(tmp_path / "dirlink" / "f")),
                     (str(tmp_path / "dirlink"), "real")]


# --- real trace and bundle ---------------------------------------------------------------------

@needs_strace
def test_footprint_finds_data_file_and_libc(prog_dir, tmp_path):
    with open_store(str(tmp_path / "s.db")) as store:
        res = fp.run_footprint(fp.FootprintConfig(_workload(prog_dir), reps=2), RealExecutor(), store)
        paths = {f.path: f for f in res.files}
        data = paths[str(prog_dir / "data" / "input.txt")]
        assert data.uses == ("open",) and data.kind == "file" and data.size == (prog_dir / "data" / "input.txt").stat().st_size
        assert paths[str(prog_dir / "prog")].uses == ("exec",)
        libc = [f for f in res.files if os.path.basename(f.real_path).startswith("libc.so")]
        assert libc and libc[0].kind == "file"
        interp = [f for f in res.files if "interp" in f.uses]
        assert interp and "ld-linux" in interp[0].path  # the kernel's open, added from PT_INTERP
        assert res.total_bytes == sum(t.bytes for t in res.by_top) > libc[0].size
        assert res.overhead is not None and res.overhead > 0.5 and len(res.traced_wall_s) == 2
        camp = store.campaign(res.campaign_id)
        assert camp.status == "done" and camp.n_measurements == 4
        assert "needed" in camp.summary["verdict"]


@needs_strace
def test_bundle_runs_isolated_with_same_output(prog_dir, tmp_path):
    if bd.isolation_available() is None:
        pytest.skip("no bwrap, unshare or chroot usable here")
    out = tmp_path / "prog.tar.gz"
    with open_store(str(tmp_path / "s.db")) as store:
        b = bd.run_bundle(bd.BundleConfig(_workload(prog_dir), str(out)), RealExecutor(), store)
        assert b.files >= 5 and out.exists()
        names = tarfile.open(out).getnames()
        assert f"root{prog_dir}/data/input.txt" in names and "run.sh" in names
        # run the bundle by hand, isolated, and compare with a normal run
        dest = tmp_path / "unpacked"
        ba.safe_unpack(str(out), str(dest))
        bundled = subprocess.run(["sh", str(dest / "run.sh")], capture_output=True, text=True, timeout=60)
        normal = subprocess.run(["./prog"], cwd=prog_dir, capture_output=True, text=True, timeout=60)
        assert bundled.returncode == 0, bundled.stderr
        assert bundled.stdout == normal.stdout and "checksum" in normal.stdout
        assert "isolating with" in bundled.stderr
        v = bd.run_verify(bd.VerifyConfig(str(out)), store)
        assert v.same and v.normal_source == "normal run on this machine"
        # the isolation is real: the bundle cannot see a file outside its root
        os.rename(prog_dir / "data" / "input.txt", prog_dir / "data" / "moved.txt")
        try:
            res = subprocess.run(["sh", str(dest / "run.sh"), "data/moved.txt"], capture_output=True,
                                 text=True, timeout=60)
            assert res.returncode != 0 and "moved.txt" in res.stderr
        finally:
            os.rename(prog_dir / "data" / "moved.txt", prog_dir / "data" / "input.txt")


@needs_strace
def test_bundle_budget_fails_clearly(prog_dir, tmp_path):
    out = tmp_path / "b.tar.gz"
    with open_store(str(tmp_path / "s.db")) as store:
        with pytest.raises(PerflabError, match=r"bundle needs .* over the budget of 1.0 MiB; raise --budget"):
            bd.run_bundle(bd.BundleConfig(_workload(prog_dir), str(out), budget_bytes=2**20), RealExecutor(), store)
        assert not out.exists()
        assert store.campaigns(study="bundle")[-1].status == "failed"


# --- hostile archives --------------------------------------------------------------------------

def _tar(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for name, kind, arg in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                data = arg.encode()
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            elif kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif kind == "sym":
                info.type, info.linkname = tarfile.SYMTYPE, arg
                tar.addfile(info)
            elif kind == "hard":
                info.type, info.linkname = tarfile.LNKTYPE, arg
                tar.addfile(info)
            elif kind == "chr":
                info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
                tar.addfile(info)


@pytest.mark.parametrize("members,why", [
    ([("ok.txt", "file", "x"), ("/tmp/perflab-evil-abs", "file", "x")], "absolute path"),
    ([("ok.txt", "file", "x"), ("a/../../perflab-evil-dotdot", "file", "x")], "contains '..'"),
    ([("ok.txt", "file", "x"), ("esc", "sym", "/etc")], "absolute"),
    ([("ok.txt", "file", "x"), ("esc", "sym", "../../outside")], "points outside"),
    # b -> . makes "b/.." the parent of the target although it looks like "." as text
    ([("b", "sym", "."), ("esc", "sym", "b/..")], "points outside"),
    ([("d", "sym", "sub"), ("sub", "dir", None), ("d/x", "file", "x")], "lies under symlink"),
    ([("ok.txt", "file", "x"), ("h", "hard", "/etc/passwd")], "hard link"),
    ([("ok.txt", "file", "x"), ("null", "chr", None)], "device"),
])
def test_hostile_archives_rejected_before_writing(tmp_path, members, why):
    archive = tmp_path / "evil.tar.gz"
    _tar(archive, members)
    dest = tmp_path / "dest"
    before = set(os.listdir(tmp_path)) | set(os.listdir("/tmp"))
    with pytest.raises(ba.UnsafeArchive, match=why):
        ba.safe_unpack(str(archive), str(dest))
    assert not dest.exists()  # nothing written, not even the target directory
    assert set(os.listdir(tmp_path)) | set(os.listdir("/tmp")) <= before | {"dest"}
    assert not os.path.exists("/tmp/perflab-evil-abs")


def test_safe_unpack_accepts_inner_links(tmp_path):
    archive = tmp_path / "ok.tar.gz"
    _tar(archive, [("root/usr/lib/f", "file", "hello"), ("root/lib", "sym", "usr/lib"),
                   ("root/usr/lib64", "dir", None), ("root/usr/lib64/g", "sym", "../../lib/f")])
    dest = tmp_path / "d"
    ba.safe_unpack(str(archive), str(dest))
    assert (dest / "root" / "usr" / "lib64" / "g").read_text() == "hello"
