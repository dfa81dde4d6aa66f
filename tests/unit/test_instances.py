"""What the instances study reads without running copies: a copy tree's PSS from a /proc fixture tree."""

from __future__ import annotations


def test_pss_sample_of_a_tree_that_changed_is_dropped(tmp_path):
    """A master read before it forks, then its new worker: the sample would count pages twice."""
    from perflab.measure.memory import tree_pss_kb
    from perflab.platform.sysfs import Root

    def proc(pid, pss, kids=()):
        d = tmp_path / "proc" / str(pid)
        (d / "task" / str(pid)).mkdir(parents=True)
        (d / "task" / str(pid) / "children").write_text(" ".join(map(str, kids)) + " ")
        (d / "smaps_rollup").write_text(f"Rss: {pss} kB\nPss: {pss} kB\n")
        (d / "comm").write_text("minihlt\n")
        (d / "stat").write_text(f"{pid} (minihlt) S 1 {pid} {pid} 0 -1 4194304 0 0\n")

    proc(10, 0, (11,))  # the trampoline
    proc(11, 1000)  # the master, not yet forked

    class Forking(Root):
        def read(self, rel, default=None):
            text = super().read(rel, default)
            if rel == "proc/11/smaps_rollup":  # the master forks right after being read
                proc(12, 500)
                (tmp_path / "proc/11/task/11/children").write_text("12 ")
                (tmp_path / "proc/11/smaps_rollup").write_text("Pss: 500 kB\n")
            return text

    assert tree_pss_kb(Forking(str(tmp_path)), 10, include_self=False) is None
    assert tree_pss_kb(Root(str(tmp_path)), 10, include_self=False) == 1000  # settled: 500 + 500
    # a worker on its way out (PF_EXITING in the flags field) unmaps pages: no sample then
    (tmp_path / "proc/12/stat").write_text("12 (minihlt) R 11 10 10 0 -1 4194308 0 0\n")
    assert tree_pss_kb(Root(str(tmp_path)), 10, include_self=False) is None
