"""The ``otel-loopguard analyze`` command, run as a real subprocess of the console script."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from .traces import Recorder, agent_run, batches, gzip_file, jaeger_export, jsonl_text, write_otlp

SCRIPT = Path(sys.executable).with_name("otel-loopguard")
HERE = Path(__file__).parent
STOP_POLICY = "replay_policies:stop_at_third_tool_call"
WARN_POLICY = "replay_policies:warn_on_model_turns"
SECRET = "sk-live-4242-do-not-print"


def cli(*args: str, stdin: bytes | None = None, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_LOOPGUARD_")}
    environment["PYTHONPATH"] = str(HERE)
    environment.update(env)
    return subprocess.run(
        [str(SCRIPT), *args],
        input=stdin,
        capture_output=True,
        env=environment,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def looping_export(tmp_path_factory) -> Path:
    """A looping run (5 calls with a secret argument, model turns between) and a calm one."""
    recorder = Recorder()
    agent_run(recorder, "looper", [("search", {"token": SECRET}, "")] * 5, tokens_per_turn=100)
    agent_run(recorder, "helper", [("lookup", {"id": 1}, "found")])
    path = tmp_path_factory.mktemp("exports") / "export.jsonl"
    path.write_text(jsonl_text(batches(recorder.spans(), 4)))
    return path


@pytest.fixture(scope="module")
def calm_export(tmp_path_factory) -> Path:
    recorder = Recorder()
    agent_run(recorder, "helper", [("lookup", {"id": 1}, "found"), ("reply", {}, "ok")])
    return write_otlp(tmp_path_factory.mktemp("exports") / "calm.json", recorder.spans())


def test_no_arguments_prints_help() -> None:
    result = cli()
    assert result.returncode == 0
    assert b"analyze" in result.stdout and b"usage: otel-loopguard" in result.stdout


def test_clean_input_exits_0_with_a_text_report(calm_export: Path) -> None:
    result = cli("analyze", str(calm_export), "--policy", STOP_POLICY)
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    assert "(helper): ok, 2 tool calls" in text
    assert "summary: 1 run (" in text and "0 would have stopped" in text
    assert result.stderr == b""  # small input on a pipe: no progress


def test_a_run_that_stops_exits_1_and_the_text_report_says_where(looping_export: Path) -> None:
    result = cli("analyze", str(looping_export), "--policy", STOP_POLICY)
    assert result.returncode == 1, result.stderr
    text = result.stdout.decode()
    assert "(looper): STOP" in text
    assert "STOP would have fired at tool call #3" in text
    assert "After it the run made 2 tool calls, 2 model calls, 220 tokens" in text
    assert "third tool call of the run" in text  # the reason
    assert "(helper): ok" in text
    assert "2 runs" in text and "1 would have stopped" in text
    assert SECRET not in text


def test_json_report_has_the_documented_shape(looping_export: Path) -> None:
    result = cli("analyze", "--format", "json", str(looping_export), "--policy", STOP_POLICY)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert set(report) >= {"runs", "summary"}
    assert report["summary"]["runs"] == 2 and report["summary"]["stopped"] == 1
    assert report["summary"]["spans"] == 5 + 5 + 1 + 1 + 1
    runs = {run["agent"]: run for run in report["runs"]}
    for run in runs.values():
        assert isinstance(run["run_id"], str)
        assert all(len(t) == 32 and int(t, 16) for t in run["trace_ids"])
        assert isinstance(run["tool_calls"], int) and isinstance(run["events"], int)
        assert run["final_action"] in {"continue", "warn", "replan", "pause", "stop"}
        assert isinstance(run["max_risk"], float)
        for decision in run["decisions"]:
            assert set(decision) >= {
                "action",
                "risk",
                "tool_call_index",
                "span_id",
                "detectors",
                "reason",
            }
    loop = runs["looper"]
    assert (loop["tool_calls"], loop["events"], loop["final_action"]) == (5, 15, "stop")
    stop = loop["first_stop"]
    assert set(stop) >= {"tool_call_index", "trace_id", "span_id", "risk", "detectors", "reasons"}
    assert stop["tool_call_index"] == 3 and stop["trace_id"] == loop["trace_ids"][0]
    assert stop["detectors"] == ["test_policy"] and stop["reasons"] == [
        "third tool call of the run"
    ]
    assert loop["decisions"][0]["tool_call_index"] == 3
    assert loop["decisions"][0]["span_id"] == stop["span_id"]
    assert runs["helper"]["first_stop"] is None and runs["helper"]["decisions"] == []
    assert SECRET not in result.stdout.decode()


def test_content_capture_shows_the_arguments_of_the_stopping_call(looping_export: Path) -> None:
    result = cli(
        "analyze",
        str(looping_export),
        "--policy",
        STOP_POLICY,
        OTEL_LOOPGUARD_CAPTURE_CONTENT="true",
    )
    assert result.returncode == 1
    assert SECRET in result.stdout.decode()


@pytest.mark.parametrize(
    ("fail_on", "policy", "code"),
    [
        ("never", STOP_POLICY, 0),
        ("stop", WARN_POLICY, 0),
        ("warn", WARN_POLICY, 1),
        ("pause", STOP_POLICY, 1),  # stop is more severe than pause
    ],
)
def test_fail_on(looping_export: Path, fail_on: str, policy: str, code: int) -> None:
    result = cli("analyze", str(looping_export), "--fail-on", fail_on, "--policy", policy)
    assert result.returncode == code, result.stderr


def test_policy_and_mode_come_from_the_environment_too(looping_export: Path) -> None:
    result = cli(
        "analyze",
        str(looping_export),
        OTEL_LOOPGUARD_POLICY=STOP_POLICY,
        OTEL_LOOPGUARD_MODE="enforce",
    )
    assert result.returncode == 1
    assert b"mode enforce" in result.stdout and b"what stopping it saved" in result.stdout
    overridden = cli(
        "analyze", str(looping_export), "--policy", "observe", OTEL_LOOPGUARD_POLICY=STOP_POLICY
    )
    assert overridden.returncode == 0


def test_stdin_gzip_and_jaeger(tmp_path: Path, looping_export: Path) -> None:
    compressed = gzip.compress(looping_export.read_bytes())
    piped = cli("analyze", "-", "--policy", STOP_POLICY, "--format", "json", stdin=compressed)
    assert piped.returncode == 1, piped.stderr
    assert json.loads(piped.stdout)["summary"]["stopped"] == 1

    recorder = Recorder()
    agent_run(recorder, "looper", [("search", {"q": 1}, "")] * 4)
    jaeger = gzip_file(tmp_path / "jaeger-export", json.dumps(jaeger_export(recorder.spans())))
    result = cli("analyze", str(jaeger), "--policy", STOP_POLICY, "--format", "json")
    assert result.returncode == 1, result.stderr
    (run,) = json.loads(result.stdout)["runs"]
    assert run["agent"] == "looper" and run["first_stop"]["tool_call_index"] == 3


def test_valid_export_without_spans_is_clean(tmp_path: Path) -> None:
    path = tmp_path / "nothing.json"
    path.write_text('{"resourceSpans": []}')
    result = cli("analyze", str(path), "--format", "json")
    assert result.returncode == 0
    assert json.loads(result.stdout)["summary"] == {
        **json.loads(result.stdout)["summary"],
        "runs": 0,
        "spans": 0,
        "stopped": 0,
    }


def test_forced_progress_goes_to_stderr(calm_export: Path) -> None:
    result = cli("analyze", str(calm_export), "--progress")
    assert result.returncode == 0
    assert b"analyze: 3 spans" in result.stderr and b"runs finished" in result.stderr


def _bad_inputs(tmp: Path) -> dict[str, list[str]]:
    recorder = Recorder()
    agent_run(recorder, "a", [("t", {}, "r")] * 2)
    good_lines = jsonl_text(batches(recorder.spans(), 1))
    pretty = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"a": 1}] * 20}]}]}, indent=2)
    files = {
        "not JSON": ("text.json", b"hello, this is not json\n"),
        "JSON that is not traces": ("metrics.json", b'{"resourceMetrics": []}'),
        "a JSON array": ("array.json", b"[1, 2, 3]\n"),
        "a JSON string": ("string.json", b'"traces"\n'),
        "truncated JSON lines": ("cut.jsonl", good_lines.encode()[:-25]),
        "truncated document": ("cut.json", pretty.encode()[: len(pretty) // 2]),
        "a bad line in JSON lines": ("bad.jsonl", (good_lines + "{oops}\n" + good_lines).encode()),
        "binary garbage": ("garbage.bin", bytes(range(256)) * 8),
        "empty file": ("empty.json", b""),
        "whitespace only": ("blank.json", b" \n\n \n"),
        "bad gzip": ("bad.gz", b"\x1f\x8b\x08\x00garbage garbage garbage"),
        "truncated gzip": ("cut.json.gz", gzip.compress(good_lines.encode())[:-30]),
        "zstd": ("trace.json.zst", b"\x28\xb5\x2f\xfd" + b"\x00" * 16),
    }
    out: dict[str, list[str]] = {}
    for label, (name, data) in files.items():
        (tmp / name).write_bytes(data)
        out[label] = ["analyze", str(tmp / name)]
    out["missing path"] = ["analyze", str(tmp / "does-not-exist.json")]
    out["a directory"] = ["analyze", str(tmp)]
    out["bad --policy"] = ["analyze", str(tmp / "metrics.json"), "--policy", "no.such.module:f"]
    return out


def test_every_bad_input_exits_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    cases = _bad_inputs(tmp_path)
    with ThreadPoolExecutor(max_workers=4) as pool:  # each run starts an interpreter
        results = dict(zip(cases, pool.map(lambda args: cli(*args), cases.values()), strict=True))
    failures = []
    for label, result in results.items():
        lines = result.stderr.decode().splitlines()
        if (
            result.returncode != 2
            or len(lines) != 1
            or not lines[0].startswith("otel-loopguard analyze: error: ")
            or b"Traceback" in result.stderr
            or result.stdout
        ):
            failures.append((label, result.returncode, result.stderr.decode(), result.stdout[:200]))
    assert not failures


def test_bad_stdin_exits_2() -> None:
    result = cli("analyze", "-", stdin=b"\x00\x01\x02 not traces")
    assert result.returncode == 2 and b"<stdin>" in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_the_report_lists_the_recommendations_an_enforcing_plugin_would_have_delivered(
    tmp_path: Path,
) -> None:
    """A run that only reads: the read-only nudge, once per threshold, is what an enforcing
    plugin would have added to the model's next request; a run that acts gets none."""
    recorder = Recorder()
    reads = [("read_file", {"path": f"src/f{i}.py"}, f"contents {i}") for i in range(7)]
    agent_run(recorder, "reader", reads, tokens_per_turn=50)
    agent_run(recorder, "writer", [("write_file", {"path": "a.py"}, "ok")], tokens_per_turn=50)
    export = write_otlp(tmp_path / "reads.json", recorder.spans())
    env = {"OTEL_LOOPGUARD_READ_ONLY_LOOP_THRESHOLD": "3"}
    text = cli("analyze", str(export), **env)
    assert text.returncode == 0, text.stderr
    assert (
        "In enforce mode 2 recommendations would have gone to the model's next request: "
        "read_only_loop at #3, read_only_loop at #6." in text.stdout.decode()
    )
    report = json.loads(cli("analyze", "--format", "json", str(export), **env).stdout)
    runs = {run["agent"]: run for run in report["runs"]}
    nudges = runs["reader"]["deliveries"]
    assert [(n["tool_call_index"], n["detectors"]) for n in nudges] == [
        (3, ["read_only_loop"]),
        (6, ["read_only_loop"]),
    ]
    assert all("Act on what you found" in n["recommendation"] for n in nudges)
    assert runs["writer"]["deliveries"] == []
