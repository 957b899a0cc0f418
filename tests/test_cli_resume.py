"""``modelwire run --resume [ID]``: a stopped run goes on from the runs kept beside the log.

Each test runs the real command against MockServers on loopback. The tools are
functions of a file written here that append to a file, so how many times a call
really ran is read from the disk; what the model was told is read from the requests
the resumed run sent.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from modelwire.testing import MockServer, Reply, tool_call
from test_cli import assert_one_line_error, cli
from test_cli_conventions import _data_env

TOOLS = '''\
import os
import time
from pathlib import Path


def stamp(label: str) -> str:
    """Append a label to the ledger file.

    Args:
        label: what to append
    """
    with open(os.environ["STAMPS"], "a", encoding="utf-8") as f:
        f.write(label + "\\n")
    if label == "hang":
        time.sleep(120)  # the test kills the process here
    return f"stamped {label}"
'''

RESUMED = re.compile(r"modelwire run --resume ([0-9a-f]{12})")


def _setup(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    tools, stamps = tmp_path / "tools.py", tmp_path / "stamps.txt"
    tools.write_text(TOOLS, encoding="utf-8")
    return tools, stamps, {**_data_env(tmp_path), "STAMPS": str(stamps)}


def _args(srv: MockServer, tools: Path) -> list[str]:
    return ["--base-url", srv.model().base_url, "--functions", str(tools), "--ta"]


def _stamps(stamps: Path) -> list[str]:
    return stamps.read_text(encoding="utf-8").split() if stamps.exists() else []


def _tool_results(srv: MockServer, n: int = 0) -> list[str]:
    return [m["content"] for m in srv.requests[n].json()["messages"] if m["role"] == "tool"]


def _failed_run(tmp_path: Path, env: dict[str, str], tools: Path) -> str:
    """A run whose tool call completes and whose next model response fails: its id."""
    script: list[Any] = [tool_call("stamp", {"label": "one"}), Reply(status=500, error="down")]
    with MockServer(script) as srv:
        proc = cli("run", "-m", "local/m", *_args(srv, tools), "--root", str(tmp_path),
                   "stamp one", cwd=tmp_path, env=env)  # fmt: skip
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    found = RESUMED.findall(proc.stderr)
    assert len(found) == 1, proc.stderr
    return str(found[0])


def test_a_failed_run_resumes_without_running_its_finished_call_again(tmp_path: Path) -> None:
    tools, stamps, env = _setup(tmp_path)
    run_id = _failed_run(tmp_path, env, tools)
    assert _stamps(stamps) == ["one"]
    # Resumed from another directory: the model and --root come from the record.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with MockServer(["Stamped."]) as srv:
        proc = cli("run", "--resume", run_id, *_args(srv, tools), cwd=elsewhere, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Stamped." in proc.stdout
    assert _stamps(stamps) == ["one"]  # replayed from the ledger, not run again
    assert _tool_results(srv) == ["stamped one"]
    assert srv.requests[0].json()["model"] == "m"
    # Finished now: nothing left to continue.
    proc = cli("run", "--resume", run_id[:6], cwd=tmp_path, env=env)
    assert_one_line_error(proc, "usage", run_id, "finished")


def _hanging_run(
    tmp_path: Path, srv: MockServer, tools: Path, stamps: Path, env: dict[str, str]
) -> subprocess.Popen[str]:
    """``run`` started in a process that is inside its tool call once this returns."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "modelwire", "run", "-m", "local/m", *_args(srv, tools),
         "--root", str(tmp_path), "stamp hang"],
        cwd=tmp_path, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while _stamps(stamps) != ["hang"]:
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise AssertionError(f"the tool never started: {proc.communicate()[1]}")
        time.sleep(0.05)
    return proc


def test_a_run_killed_inside_a_tool_answers_that_call_in_doubt(tmp_path: Path) -> None:
    tools, stamps, env = _setup(tmp_path)
    with MockServer([tool_call("stamp", {"label": "hang"}), "never asked"]) as srv:
        proc = _hanging_run(tmp_path, srv, tools, stamps, env)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
    # No id at hand after a kill: --resume alone takes the latest run.
    with MockServer(["I could not tell whether it was stamped."]) as srv:
        resumed = cli("run", "--resume", *_args(srv, tools), cwd=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert _stamps(stamps) == ["hang"]  # not run a second time
    (result,) = _tool_results(srv)
    assert "in_doubt" in result and "not known whether it ran" in result


def test_ctrl_c_names_the_run_to_resume(tmp_path: Path) -> None:
    tools, stamps, env = _setup(tmp_path)
    with MockServer([tool_call("stamp", {"label": "hang"}), "never asked"]) as srv:
        proc = _hanging_run(tmp_path, srv, tools, stamps, env)
        proc.send_signal(signal.SIGINT)
        try:  # the tool sleeps for 120 s: Ctrl-C must not wait for it
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "modelwire: error [interrupted]" in err
    assert len(RESUMED.findall(err)) == 1, err


def test_resume_refuses_what_it_cannot_continue(tmp_path: Path) -> None:
    tools, _, env = _setup(tmp_path)
    proc = cli("run", "--resume", "abc", "-m", "local/m", cwd=tmp_path, env=env)
    assert_one_line_error(proc, "usage", "no run", "abc")
    run_id = _failed_run(tmp_path, env, tools)
    proc = cli("run", "--resume", "0" if run_id[0] != "0" else "1", cwd=tmp_path, env=env)
    assert_one_line_error(proc, "usage", "no run", run_id)  # names the runs there are
    proc = cli("run", "--resume", run_id, "a new task", cwd=tmp_path, env=env)
    assert_one_line_error(proc, "usage", "--resume", "no task")
    proc = cli("run", "--resume", run_id, "--no-log", cwd=tmp_path, env=env)
    assert_one_line_error(proc, "usage", "--no-log")


def test_no_log_keeps_no_run(tmp_path: Path) -> None:
    tools, _, env = _setup(tmp_path)
    script: list[Any] = [tool_call("stamp", {"label": "one"}), Reply(status=500, error="down")]
    with MockServer(script) as srv:
        proc = cli("run", "-m", "local/m", *_args(srv, tools), "--no-log", "stamp one",
                   cwd=tmp_path, env=env)  # fmt: skip
    assert proc.returncode != 0
    assert "--resume" not in proc.stderr
    assert not (tmp_path / "data" / "modelwire" / "runs.db").exists()


def test_a_base_url_with_a_credential_is_not_kept(tmp_path: Path) -> None:
    tools, _, env = _setup(tmp_path)
    script: list[Any] = [tool_call("stamp", {"label": "one"}), Reply(status=500, error="down")]
    with MockServer(script) as srv:
        url = srv.model().base_url.replace("http://", "http://user:pw-0f9e8d7c@")
        proc = cli("run", "-m", "local/m", "--base-url", url, "--functions", str(tools), "--ta",
                   "stamp one", cwd=tmp_path, env=env)  # fmt: skip
    assert proc.returncode != 0 and RESUMED.search(proc.stderr), proc.stderr
    kept = (tmp_path / "data" / "modelwire" / "runs.db").read_bytes()
    assert b"pw-0f9e8d7c" not in kept
    assert b"stamp one" in kept  # the run itself is kept
