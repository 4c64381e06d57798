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


def _fake_streams(tmp_path, monkeypatch, statuses):
    """`ray job submit` streams two log lines, then its stream closes with the job RUNNING; `ray job logs -f`
    streams the log from its start (three lines); the Jobs API answers ``statuses`` in turn."""
    script = tmp_path / "ray"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$2" = submit ]; then echo "Job submitted"; echo "Tailing logs until the job exits (disable with '
        '--no-wait):"; echo "log 1"; echo "log 2"; echo "INFO sdk.py -- WebSocket closed for job s1 with close '
        "code 1000\"; echo \"Status for job 's1': RUNNING\"; exit 0; fi\n"
        'echo "INFO cli.py:42 -- Job submission server address: http://127.0.0.1:1"; echo "log 1"; echo "log 2"; '
        'echo "log 3"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(jobs, "exe", lambda name: str(script))
    monkeypatch.setattr(jobs.time, "sleep", lambda s: None)
    answers = iter(statuses)
    monkeypatch.setattr(jobs, "job_status", lambda address, sid: next(answers))


def test_a_log_stream_that_closes_while_the_job_runs_is_followed_again_without_repeating_lines(
    tmp_path, monkeypatch
):
    _fake_streams(tmp_path, monkeypatch, ["RUNNING", "SUCCEEDED"])
    out = io.StringIO()
    assert jobs.submit_job("http://127.0.0.1:1", ["python", "x.py"], submission_id="s1", stream=out) == 0
    text = out.getvalue()
    assert "[railsweep] the log stream closed while Ray job s1 is RUNNING: following it again" in text
    assert [text.count(f"log {i}\n") for i in (1, 2, 3)] == [1, 1, 1]
    assert text.index("log 2") < text.index("following it again") < text.index("log 3")


def test_a_job_stopped_before_it_finished_exits_130_though_ray_job_submit_said_0(tmp_path, monkeypatch):
    _fake_streams(tmp_path, monkeypatch, ["STOPPED"])
    out = io.StringIO()
    assert jobs.submit_job("http://127.0.0.1:1", ["python", "x.py"], submission_id="s1", stream=out) == 130
    assert "[railsweep] Ray job s1 was stopped before it finished" in out.getvalue()


def test_a_job_that_failed_after_its_stream_closed_exits_1(tmp_path, monkeypatch):
    _fake_streams(tmp_path, monkeypatch, ["RUNNING", "FAILED"])
    assert jobs.submit_job("http://127.0.0.1:1", ["x"], submission_id="s1", stream=io.StringIO()) == 1
