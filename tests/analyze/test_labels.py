"""``otel-loopguard analyze --labels``: a replay scored against the user's own labels.

Real SDK traces exported as OTLP JSON, the console script run as a subprocess. The policy
stops every run at its third tool call (``replay_policies``), so what is tested is the
scoring (matching, recall, false STOPs, early STOPs, savings, gates, exit codes), not the
detectors.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from .test_cli import STOP_POLICY, cli
from .traces import Recorder, agent_run, write_otlp

LOOP = [("search", {"q": "refund"}, "")] * 5  # stopped at call 3, two calls after it


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> tuple[Path, str]:
    """Four runs: a loop, a calm run, a longer clean run (stopped: a false STOP), and a run
    keyed by its trace (no conversation id); returns the file and that run's trace id."""
    recorder = Recorder()
    agent_run(recorder, "looper", LOOP, conversation="conv-loop")
    agent_run(recorder, "helper", [("lookup", {"id": 1}, "found")], conversation="conv-calm")
    agent_run(
        recorder,
        "worker",
        [("step", {"n": n}, f"done {n}") for n in range(4)],
        conversation="conv-long",
    )
    spans = agent_run(recorder, "anonymous", LOOP)
    trace_id = format(spans[0].context.trace_id, "032x")
    path = write_otlp(tmp_path_factory.mktemp("labels") / "export.json", recorder.spans())
    return path, trace_id


def write_labels(path: Path, runs: dict) -> Path:
    path.write_text(json.dumps({"version": 1, "runs": runs}), encoding="utf-8")
    return path


def analyze(export_path: Path, labels: Path, *flags: str, **env: str):
    """The console script's JSON report of ``export_path`` scored against ``labels``
    (``env``: OTEL_LOOPGUARD_* variables for the replay)."""
    return cli(
        "analyze",
        "--format",
        "json",
        "--policy",
        STOP_POLICY,
        str(export_path),
        "--labels",
        str(labels),
        *flags,
        **env,
    )


def test_scores_recall_false_stops_early_stops_and_savings(export, tmp_path) -> None:
    export_path, trace_id = export
    labels = write_labels(
        tmp_path / "labels.json",
        {
            "conv-loop": {"loop": True, "from_tool_call": 2, "set": "support"},
            "conv-calm": {"loop": False, "set": "support"},
            "conv-long": {"loop": False, "set": "batch"},
            trace_id: {"loop": True, "from_tool_call": 4, "set": "batch"},  # stopped at 3
        },
    )
    result = analyze(export_path, labels)
    assert result.returncode == 0, result.stderr  # no gate given: labels do not fail
    scored = json.loads(result.stdout)["summary"]["labels"]
    assert (scored["loop_runs"], scored["clean_runs"]) == (2, 2)
    assert (scored["caught"], scored["early_stops"], scored["false_stops"]) == (1, 1, 1)
    assert scored["recall"] == 0.5 and scored["false_stop_rate"] == 0.5
    assert scored["precision"] == pytest.approx(1 / 3, abs=1e-6)
    assert scored["saved_tool_calls"] == 2  # the loop's calls 4 and 5
    assert scored["cut_tool_calls"] == 1  # the clean run's 4th call
    assert scored["median_delay_tool_calls"] == 1  # stopped at 3, loop from 2
    assert scored["unlabelled_runs"] == 0 and scored["labels_without_run"] == 0
    assert scored["sets"]["support"]["recall"] == 1.0
    assert scored["sets"]["support"]["false_stops"] == 0
    assert (
        scored["sets"]["batch"]["false_stops"] == 1 and scored["sets"]["batch"]["early_stops"] == 1
    )
    assert scored["detectors"]["test_policy"]["caught"] == 1
    assert scored["detectors"]["test_policy"]["false_stops"] == 1
    assert scored["runs_to_look_at"] == {
        "missed": [],
        "early": [trace_id],
        "false_stops": ["conv-long"],
    }
    # a detector's recall is over all loop runs, not only the ones it stopped
    assert scored["detectors"]["test_policy"]["loop_runs"] == 2
    assert scored["detectors"]["test_policy"]["recall"] == 0.5


def test_a_conversation_split_by_the_run_ttl_is_scored_as_one_run(tmp_path) -> None:
    recorder = Recorder()
    agent_run(recorder, "looper", [("search", {"q": "a"}, "")] * 2, conversation="conv-split")
    time.sleep(0.05)  # idle past the TTL below, in trace time
    agent_run(recorder, "looper", [("search", {"q": "a"}, "")] * 4, conversation="conv-split")
    export_path = write_otlp(tmp_path / "split.json", recorder.spans())
    labels = write_labels(
        tmp_path / "labels.json", {"conv-split": {"loop": True, "from_tool_call": 4}}
    )
    result = analyze(export_path, labels, OTEL_LOOPGUARD_RUN_TTL="0.01")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [run["tool_calls"] for run in report["runs"]] == [2, 4]  # two runs, as on-line
    scored = report["summary"]["labels"]
    assert (scored["caught"], scored["early_stops"], scored["loop_runs"]) == (1, 0, 1)
    # the second part stopped at its 3rd call: the conversation's 5th, one after the loop began
    assert scored["median_delay_tool_calls"] == 1 and scored["saved_tool_calls"] == 1


def test_text_report_prints_the_figures_per_set_and_detector(export, tmp_path) -> None:
    export_path, _ = export
    labels = write_labels(
        tmp_path / "labels.json",
        {"conv-loop": {"loop": True, "set": "a"}, "conv-calm": {"loop": False, "set": "b"}},
    )
    result = cli("analyze", "--policy", STOP_POLICY, str(export_path), "--labels", str(labels))
    text = result.stdout.decode()
    assert "labels: 2 labelled runs (1 loop, 1 clean), 2 unlabelled" in text
    assert "  a: recall 1/1 (100.0%), false STOPs 0/0 (n/a)" in text
    assert "  b: recall 0/0 (n/a), false STOPs 0/1 (0.0%)" in text
    assert "test_policy  caught 1, early 0, false 0, precision 100.0%" in text  # labelled only
    assert result.returncode == 0
    assert "runs stopped" not in text and "not stopped" not in text  # nothing got wrong


def test_text_report_names_the_runs_it_got_wrong(export, tmp_path) -> None:
    export_path, _ = export
    labels = write_labels(
        tmp_path / "labels.json",
        {"conv-long": {"loop": False}, "conv-calm": {"loop": True}},
    )
    result = cli("analyze", "--policy", STOP_POLICY, str(export_path), "--labels", str(labels))
    text = result.stdout.decode()
    assert "  loop runs not stopped: conv-calm\n" in text
    assert "  clean runs stopped: conv-long\n" in text


def test_gates_fail_the_command_with_exit_1(export, tmp_path) -> None:
    export_path, _ = export
    labels = write_labels(
        tmp_path / "labels.json",
        {"conv-loop": {"loop": True}, "conv-long": {"loop": False}},  # one false STOP
    )
    assert analyze(export_path, labels, "--min-recall", "100%").returncode == 0
    failed = analyze(export_path, labels, "--max-false-stop-rate", "0")
    assert failed.returncode == 1
    gates = json.loads(failed.stdout)["summary"]["labels"]["gates"]
    assert gates["failed"] == ["false-STOP rate 100.0% > 0.0%"]
    assert analyze(export_path, labels, "--max-false-stop-rate", "100%").returncode == 0
    # --fail-on still works beside the labels when asked for
    assert analyze(export_path, labels, "--fail-on", "stop").returncode == 1


def test_a_label_that_matches_no_run_is_reported_on_stderr(export, tmp_path) -> None:
    export_path, _ = export
    labels = write_labels(tmp_path / "labels.json", {"conv-typo": {"loop": True}})
    result = analyze(export_path, labels, "--min-recall", "0.9")
    assert result.returncode == 0  # no labelled loop run replayed: recall is not gated
    assert b"1 labels matched no run, e.g. 'conv-typo'" in result.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ('{"runs": []}', 'expected {"version": 1, "runs": {id: label}}'),
        ('{"version": 2, "runs": {}}', "version 2 unknown"),
        ('{"runs": {"r1": {"loop": "yes"}}}', "run 'r1': expected {\"loop\": true|false}"),
        ('{"runs": {"r1": {"loop": true, "from_tool_call": 0}}}', "from_tool_call must be"),
        ('{"runs": {"r1": {"loop": false, "from_tool_call": 3}}}', "for a run that is no loop"),
    ],
)
def test_a_bad_labels_file_is_one_line_and_exit_2(export, tmp_path, content, message) -> None:
    export_path, _ = export
    labels = tmp_path / "labels.json"
    labels.write_text(content, encoding="utf-8")
    result = analyze(export_path, labels)
    assert result.returncode == 2
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in lines[0]
    assert result.stdout == b""


def test_missing_labels_file_and_gates_without_labels_exit_2(export, tmp_path) -> None:
    export_path, _ = export
    missing = analyze(export_path, tmp_path / "absent.json")
    assert missing.returncode == 2 and b"absent.json" in missing.stderr
    lonely = cli("analyze", str(export_path), "--min-recall", "0.9")
    assert lonely.returncode == 2 and b"need --labels" in lonely.stderr
    bad_number = cli("analyze", str(export_path), "--labels", "x", "--min-recall", "1.5")
    assert bad_number.returncode == 2
