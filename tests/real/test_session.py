"""A real perflab sent SIGTERM names the campaign to resume."""

from __future__ import annotations

import signal

from perflab.store import open_store


def test_sigterm_names_the_campaign_to_resume(tmp_path):
    """A batch system's SIGTERM: the campaign is interrupted, its runs kept, the last line says how to finish."""
    import subprocess
    import sys

    from tests.conftest import Hold

    db = tmp_path / "s.db"
    # The 5th copy started waits until the test has sent SIGTERM: the rounds before it (3 or 4
    # copies: a round has 1 or 2) are stored and 9 copies in all cannot have finished first.
    hold = Hold(tmp_path, 4)
    proc = subprocess.Popen([sys.executable, "-m", "perflab", "instances", "--n", "1,2", "--policy", "none",
                             "--reps", "3", "--db", str(db), "--", *hold.wrap(["sleep", "0.05"])],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        hold.wait_held(proc, timeout=60)
    except AssertionError as exc:
        proc.kill()
        raise AssertionError(f"{exc}: {proc.communicate()[1][-2000:]}") from None
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    hold.release()
    assert proc.returncode == 130, err
    with open_store(str(db)) as store:
        camp = store.campaigns()[-1]
    assert camp.status == "interrupted" and 3 <= camp.n_measurements <= 4
    assert err.strip().splitlines()[-1] == (f"perflab: interrupted; campaign {camp.id} keeps every finished "
                                            f"run: finish it with 'perflab resume {camp.id}'")
