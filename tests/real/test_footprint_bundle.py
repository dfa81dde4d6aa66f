"""footprint (strace parsing, real trace), bundle (isolated run, same output), safe unpacking."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import textwrap

import pytest

from perflab.model import RunResult, Workload
from perflab.errors import PerflabError
from perflab.measure.executor import RealExecutor
from perflab.platform import strace
from perflab.store import open_store
from perflab.studies import run_study
from perflab.platform.files import resolve_links
from perflab.studies.bundle import study as bd
from perflab.studies.bundle import verify as bv
from perflab.studies.bundle import archive as ba
from perflab.studies.footprint import study as fp
from perflab.studies.footprint.files import files_used
from tests.conftest import kill_then_resume

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
    files, failed = files_used(strace.parse(TRACE), "/work")
    by_path = {f.path: f for f in files}
    assert 'data/we ird"q\\uote\né' not in by_path
    assert '/work/data/we ird"q\\uote\né' in by_path
    assert by_path["/work/sub/rel.txt"].uses == ("stat",)  # relative to the chdir'd cwd
    assert by_path["/work/sub/out,put.log"].written
    assert by_path["/lib64"].uses == ("readlink",)
    assert by_path["/usr/bin/sh"].uses == ("exec",)
    assert {f.path: f.errno for f in failed} == {"/etc/ld.so.preload": "ENOENT", "/nonexistent/bin/x": "ENOENT"}


def test_plan_interleaves_each_round_and_replans_the_same_order():
    cfg = fp.FootprintConfig(Workload(name="w", argv=("true",), cwd="/"), cpu=0, reps=6)
    planned = fp.plan(cfg)
    assert [(r, s.params["mode"]) for r, s in planned] == [(r, s.params["mode"]) for r, s in fp.plan(cfg)]
    assert all(sorted(s.params["mode"] for r, s in planned if r == rep) == ["traced", "untraced"] for rep in range(6))
    assert len({tuple(s.params["mode"] for r, s in planned if r == rep) for rep in range(6)}) == 2  # shuffled
    assert all(s.cpus == (0,) and s.cwd == "/" and s.argv == ("true",) for _, s in planned)


def _run(wall_ms: float, health=None) -> RunResult:
    return RunResult(wall_ns=int(wall_ms * 1e6), user_s=0, sys_s=0, maxrss_kb=0, minflt=0, majflt=0, nvcsw=0,
                     nivcsw=0, exit_code=0, health=health or {})


def test_analyse_reads_the_files_from_the_stored_traced_run():
    used = {"files": [{"path": "/a/x", "uses": ["open"], "real_path": "/b/x", "links": [["/a", "b"]], "kind": "file",
                       "size": 10, "written": False}],
            "failed": [{"path": "/nope", "uses": ["stat"], "errno": "ENOENT"}], "syscalls": 7, "seccomp": True}
    cfg = fp.FootprintConfig(Workload(name="w", argv=("true",), cwd="/"), cpu=0, reps=3)
    runs = [({"mode": "traced", "cpu": 0}, _run(20, {"trace": used} if k == 0 else None)) for k in range(3)] + \
           [({"mode": "untraced", "cpu": 0}, _run(10 + k)) for k in range(3)]
    res = fp.analyse(cfg, runs)
    assert [f.links for f in res.files] == [(("/a", "b"),)] and res.failed[0].errno == "ENOENT"
    assert (res.total_files, res.total_bytes, res.syscalls, res.seccomp, res.runs) == (1, 10, 7, True, 6)
    assert res.overhead == pytest.approx(20 / 11) and res.overhead_ci_level == pytest.approx(0.9)
    assert fp.FootprintResult.from_dict(res.as_dict()) == res and "1 files, 0.0 MiB needed" in res.as_dict()["verdict"]


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
        with RealExecutor() as executor:
            res = run_study(fp, fp.FootprintConfig(_workload(prog_dir), reps=2), store, executor)
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
def test_footprint_kill_9_then_resume(prog_dir, tmp_path):
    # the store holds 3 of the 6 runs (traced rep 0 among them: each round has one of each) when
    # perflab is killed; the resume stores the 3 missing and replays the trace it holds
    toml = tmp_path / "perflab.toml"
    toml.write_text(f'[workload.prog]\ncommand = ["./prog"]\ncwd = "{prog_dir}"\n')
    camp, before, stdout, result = kill_then_resume(
        ["footprint", "--config", str(toml), "-w", "prog", "--reps", "3", "--trace", str(tmp_path / "kept.txt")],
        tmp_path, 3)
    assert camp.status == "running" and len(before) == 3
    assert "needed files by top directory" in stdout and "tracing overhead" in stdout
    res = fp.FootprintResult.from_dict(result)
    with open_store(str(tmp_path / "k.db")) as store:
        after = store.measurements(camp.id)
        keys = [(m.label, str(m.params), m.rep) for m in after]
        assert len(keys) == len(set(keys)) == 6  # nothing measured twice
        assert all(dict(zip(keys, (m.id for m in after)))[k] == i for k, i in before.items())
        assert store.campaign(camp.id).status == "done"
        assert [a.kind for a in store.artifacts(camp.id)] == ["strace"]
    assert str(prog_dir / "data" / "input.txt") in {f.path for f in res.files}
    assert len(res.traced_wall_s) == len(res.untraced_wall_s) == 3 and res.overhead_ci_level is not None
    assert res.trace_path == str(tmp_path / "kept.txt") and (tmp_path / "kept.txt").stat().st_size > 0


def test_resume_of_a_config_it_cannot_plan_is_one_line(tmp_path):
    from perflab.studies import resume_study

    with open_store(str(tmp_path / "s.db")) as store:
        with pytest.raises(KeyboardInterrupt):
            with store.open_campaign("footprint", {"workload": "prog", "argv": ["./prog"], "cpu": 1}):
                raise KeyboardInterrupt
        assert store.campaigns()[-1].status == "interrupted"
        with pytest.raises(PerflabError, match=r"campaign 1 \(footprint\) holds a config this perflab cannot "
                                               r"plan again; rerun the study instead"):
            resume_study(store, None, executor=None)


def test_resumed_verify_never_reuses_what_it_unpacked_before(tmp_path):
    from perflab.studies.session import Session

    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "run.sh").write_text("partial")
    with open_store(str(tmp_path / "s.db")) as store:
        with store.open_campaign(bv.NAME, {}) as camp:
            session = Session(None, store, camp.id, resumed=True)  # no run is reached: no executor
            with pytest.raises(PerflabError, match=r"holds what the interrupted verify unpacked: remove it"):
                bv.execute(bv.VerifyConfig(str(tmp_path / "b.tgz"), workdir=str(tmp_path / "dir")), session)
    assert (tmp_path / "dir" / "run.sh").read_text() == "partial"


@needs_strace
def test_bundle_runs_isolated_with_same_output(prog_dir, tmp_path):
    if bd.isolation_available() is None:
        pytest.skip("no bwrap, unshare or chroot usable here")
    out = tmp_path / "prog.tar.gz"
    with open_store(str(tmp_path / "s.db")) as store:
        with RealExecutor() as executor:
            b = run_study(bd, bd.BundleConfig(_workload(prog_dir), str(out)), store, executor)
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
        with RealExecutor() as executor:
            v = run_study(bv, bv.VerifyConfig(str(out)), store, executor)
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
def test_bundle_and_verify_kill_9_then_resume(prog_dir, tmp_path):
    # killed with the traced run stored: the resume replays the trace, runs the reference, packs
    toml = tmp_path / "perflab.toml"
    toml.write_text(f'[workload.prog]\ncommand = ["./prog"]\ncwd = "{prog_dir}"\n')
    out = tmp_path / "prog.tar.gz"
    camp, before, stdout, result = kill_then_resume(
        ["bundle", "--config", str(toml), "-w", "prog", "-o", str(out)], tmp_path, 1)
    assert camp.status == "running" and [k[1] for k in before] == [str({"cpu": fp.default_cpu(), "mode": "traced"})]
    assert "check it: perflab bundle verify" in stdout
    res = bd.BundleResult.from_dict(result)
    assert res.output == res.given_output == str(out) and res.by_top[0].files >= 1
    with open_store(str(tmp_path / "k.db")) as store:
        after = store.measurements(camp.id)
        assert sorted(m.params["mode"] for m in after) == ["reference", "traced"]  # traced once
        assert all(m.id == before[(m.label, str(m.params), m.rep)] for m in after if m.params["mode"] == "traced")
        assert store.campaign(camp.id).status == "done"
    names = tarfile.open(out).getnames()
    assert f"root{prog_dir}/data/input.txt" in names and res.files >= 5 and "checksum" in res.reference["stdout_head"][0]
    # verify, killed with the bundle's isolated run stored: the resume runs the normal one only
    if bd.isolation_available() is None:
        return
    (tmp_path / "k.db").unlink()
    camp, before, stdout, result = kill_then_resume(["bundle", "verify", str(out)], tmp_path, 1)
    assert [k[1] for k in before] == [str({"mode": "bundle"})] and "OK: same output" in stdout
    v = bv.VerifyResult.from_dict(result)
    assert v.same and v.normal_source == "normal run on this machine" and v.runs == 2
    with open_store(str(tmp_path / "k.db")) as store:
        assert sorted(m.params["mode"] for m in store.measurements(camp.id)) == ["bundle", "normal"]


@needs_strace
def test_bundle_budget_fails_clearly(prog_dir, tmp_path):
    out = tmp_path / "b.tar.gz"
    with open_store(str(tmp_path / "s.db")) as store:
        with pytest.raises(PerflabError, match=r"bundle needs .* over the budget of 1.0 MiB; raise --budget"):
            with RealExecutor() as executor:
                run_study(bd, bd.BundleConfig(_workload(prog_dir), str(out), budget_bytes=2**20), store, executor)
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
