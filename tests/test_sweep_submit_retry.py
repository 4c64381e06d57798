"""`ray job submit` against a head whose job agent is not up yet is retried; other failures are not; Ctrl-C
while a sweep streams says how to resume."""

import io
import stat

from railsweep.services import jobs


def _fake_ray(tmp_path, refusals: int, final_rc: int = 0):
    counter = tmp_path / "calls"
    script = tmp_path / "ray"
    script.write_text(
        "#!/bin/sh\n"
        f'n=$(cat "{counter}" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "{counter}"\n'
        f'if [ $n -le {refusals} ]; then echo "RuntimeError: Request failed with status code 500: '
        'No available agent to submit job, please try again later.."; exit 1; fi\n'
        f'echo "Job submitted"; exit {final_rc}\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script, counter


def test_submission_refused_for_want_of_an_agent_is_retried_until_it_goes_through(tmp_path, monkeypatch):
    script, counter = _fake_ray(tmp_path, refusals=2)
    monkeypatch.setattr(jobs, "exe", lambda name: str(script))
    monkeypatch.setattr(jobs.time, "sleep", lambda s: None)
    out = io.StringIO()
    assert jobs.submit_job("http://127.0.0.1:1", ["python", "x.py"], working_dir=tmp_path, stream=out) == 0
    assert counter.read_text().strip() == "3" and "Job submitted" in out.getvalue()


def test_a_job_that_fails_for_another_reason_is_not_resubmitted(tmp_path, monkeypatch):
    script, counter = _fake_ray(tmp_path, refusals=0, final_rc=1)
    monkeypatch.setattr(jobs, "exe", lambda name: str(script))
    assert (
        jobs.submit_job("http://127.0.0.1:1", ["python", "x.py"], working_dir=tmp_path, stream=io.StringIO())
        == 1
    )
    assert counter.read_text().strip() == "1"


def test_ctrl_c_while_a_sweep_streams_says_how_to_resume_and_exits_130(monkeypatch, capsys):
    from railsweep import cli
    from railsweep.commands import sweep

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep, "submit", interrupted)
    assert cli.main(["sweep", "--preset", "smoke"]) == 130
    out = capsys.readouterr()
    assert "[railsweep] every cell FINISHED in MLflow is kept: run the same command again with --resume" in out.out
    assert out.err.strip() == "railsweep: interrupted"
