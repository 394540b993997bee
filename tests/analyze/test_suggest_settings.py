"""``otel-loopguard analyze --labels FILE --suggest-settings``: settings fitted to labelled runs.

Real SDK traces exported as OTLP JSON, the console script run as a subprocess. The
current policy is a small one written here (``stop_on_repetition``: the repetition
detector's signal stops the run), so that one threshold, OTEL_LOOPGUARD_REPETITION_THRESHOLD,
decides where a run stops whatever the other detectors do: what is tested is the search
(which settings win, the figures before and after, the paste lines, exit codes), not the
detectors.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from otel_loopguard.analyze.suggest import SEARCHED_SETTINGS, candidate_values, searched_settings
from otel_loopguard.engine.config import LoopGuardConfig

from .test_cli import HERE, cli
from .traces import Recorder, agent_run, write_otlp

POLICY_MODULE = """
from otel_loopguard.engine.decisions import Action, Decision

def stop_on_repetition(policy_input):
    signals = [s for s in policy_input.new_signals if s.detector == "repetition"]
    if signals:
        return Decision(Action.STOP, risk=0.9, reasons=tuple(signals))
    return Decision(Action.CONTINUE)
"""
POLICY = "suggest_policies:stop_on_repetition"

#: a loop the default threshold (3) misses: the same failing lookup twice, then give-up
LOOP = [("search", {"q": "refund"}, "no results"), ("search", {"q": "refund"}, "no results")]
#: a clean run that checks the same thing twice on purpose (a status poll)
RECHECK = [("status", {"job": 7}, "running"), ("status", {"job": 7}, "done")]


def distinct(n: int) -> list:
    return [("step", {"n": i}, f"done {i}") for i in range(n)]


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("policies")
    (folder / "suggest_policies.py").write_text(POLICY_MODULE, encoding="utf-8")
    return folder


def export(path: Path, runs: dict[str, list]) -> Path:
    recorder = Recorder()
    for conversation, calls in runs.items():
        agent_run(recorder, "agent", calls, conversation=conversation)
    return write_otlp(path, recorder.spans())


def labels_file(path: Path, runs: dict[str, dict]) -> Path:
    path.write_text(json.dumps({"version": 1, "runs": runs}), encoding="utf-8")
    return path


def suggest(policy_dir: Path, trace_file: Path, labels: Path, *flags: str):
    return cli(
        "analyze",
        "--policy",
        POLICY,
        "--labels",
        str(labels),
        "--suggest-settings",
        str(trace_file),
        *flags,
        PYTHONPATH=os.pathsep.join([str(HERE), str(policy_dir)]),
    )


def test_a_lower_threshold_that_catches_a_missed_loop_is_suggested(policy_dir, tmp_path) -> None:
    trace_file = export(
        tmp_path / "runs.json",
        {"conv-loop": LOOP, "conv-a": distinct(3), "conv-b": distinct(5)},
    )
    labels = labels_file(
        tmp_path / "labels.json",
        {
            "conv-loop": {"loop": True, "from_tool_call": 2},
            "conv-a": {"loop": False},
            "conv-b": {"loop": False},
        },
    )
    result = suggest(policy_dir, trace_file, labels, "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    before, after = report["current"]["labels"], report["suggested"]["labels"]
    assert (before["caught"], before["loop_runs"], before["false_stops"]) == (0, 1, 0)
    assert report["suggested"]["env"] == ["OTEL_LOOPGUARD_REPETITION_THRESHOLD=2"]
    assert report["suggested"]["changes"] == {"OTEL_LOOPGUARD_REPETITION_THRESHOLD": 2}
    assert (after["caught"], after["false_stops"], after["recall"]) == (1, 0, 1.0)
    assert report["suggested"]["no_false_stop"] is True
    assert report["search"]["replays"] >= 2 and report["search"]["stopped_by"] is None
    assert "suggest-settings: pass 1, repetition_threshold: 3 -> 2" in result.stderr.decode()

    text = suggest(policy_dir, trace_file, labels, "--no-progress")
    assert text.returncode == 0 and text.stderr == b""
    out = text.stdout.decode()
    assert "3 labelled runs (1 loop, 2 clean)" in out
    current, suggested = out.split("suggested settings (paste; only those that differ):\n")
    assert "all: recall 0/1 (0.0%), false STOPs 0/2 (0.0%)" in current
    assert suggested.startswith("OTEL_LOOPGUARD_REPETITION_THRESHOLD=2\nwith them:\n")
    assert "all: recall 1/1 (100.0%), false STOPs 0/2 (0.0%)" in suggested


def test_a_threshold_that_would_stop_a_clean_run_is_not_suggested(policy_dir, tmp_path) -> None:
    trace_file = export(
        tmp_path / "runs.json",
        {"conv-loop": LOOP, "conv-poll": RECHECK, "conv-b": distinct(4)},
    )
    labels = labels_file(
        tmp_path / "labels.json",
        {
            "conv-loop": {"loop": True, "from_tool_call": 2},
            "conv-poll": {"loop": False},
            "conv-b": {"loop": False},
        },
    )
    result = suggest(policy_dir, trace_file, labels, "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert "OTEL_LOOPGUARD_REPETITION_THRESHOLD" not in report["suggested"]["changes"]
    assert report["suggested"]["labels"]["false_stops"] == 0
    assert report["suggested"]["settings"]["OTEL_LOOPGUARD_REPETITION_THRESHOLD"] == 3

    text = suggest(policy_dir, trace_file, labels, "--no-progress").stdout.decode()
    assert "OTEL_LOOPGUARD_REPETITION_THRESHOLD=" not in text


def test_settings_that_make_false_stops_are_raised_until_none_is_left(policy_dir, tmp_path) -> None:
    """Current settings that stop a clean run: the suggestion takes the false STOP away."""
    trace_file = export(tmp_path / "runs.json", {"conv-poll": RECHECK, "conv-b": distinct(3)})
    labels = labels_file(
        tmp_path / "labels.json", {"conv-poll": {"loop": False}, "conv-b": {"loop": False}}
    )
    result = cli(
        "analyze",
        "--policy",
        POLICY,
        "--labels",
        str(labels),
        "--suggest-settings",
        "--format",
        "json",
        str(trace_file),
        OTEL_LOOPGUARD_REPETITION_THRESHOLD="2",
        PYTHONPATH=os.pathsep.join([str(HERE), str(policy_dir)]),
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["current"]["labels"]["false_stops"] == 1
    assert report["suggested"]["labels"]["false_stops"] == 0
    assert report["suggested"]["changes"]["OTEL_LOOPGUARD_REPETITION_THRESHOLD"] > 2


def test_the_candidate_cap_ends_the_search_with_the_best_found(policy_dir, tmp_path) -> None:
    trace_file = export(tmp_path / "runs.json", {"conv-loop": LOOP, "conv-a": distinct(3)})
    labels = labels_file(
        tmp_path / "labels.json",
        {"conv-loop": {"loop": True}, "conv-a": {"loop": False}},
    )
    result = suggest(
        policy_dir, trace_file, labels, "--format", "json", "--suggest-max-candidates", "2"
    )
    assert result.returncode == 0, result.stderr
    search = json.loads(result.stdout)["search"]
    assert search["replays"] == 2 and search["stopped_by"] == "the cap of 2 candidates"
    text = suggest(policy_dir, trace_file, labels, "--no-progress", "--suggest-budget", "0.001")
    assert "(stopped by the budget of 0.001 s)" in text.stdout.decode()


@pytest.mark.parametrize(
    "content",
    ['{"runs": [1, 2]}', "not json", '{"version": 1, "runs": {"a": {"loop": "yes"}}}'],
)
def test_an_unusable_labels_file_is_one_line_and_exit_2(policy_dir, tmp_path, content) -> None:
    trace_file = export(tmp_path / "runs.json", {"conv-loop": LOOP})
    labels = tmp_path / "labels.json"
    labels.write_text(content, encoding="utf-8")
    result = suggest(policy_dir, trace_file, labels)
    assert result.returncode == 2
    assert result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("otel-loopguard analyze: error: labels")
    assert "Traceback" not in result.stderr.decode()


def test_unusable_input_and_misused_flags_exit_2_with_one_line(policy_dir, tmp_path) -> None:
    trace_file = export(tmp_path / "runs.json", {"conv-loop": LOOP})
    labels = labels_file(tmp_path / "labels.json", {"conv-loop": {"loop": True}})
    cases = [
        (suggest(policy_dir, trace_file, labels, "--suggest-max-spans", "2"), "more than 2 spans"),
        (suggest(policy_dir, tmp_path / "absent.json", labels), "absent.json"),
        (cli("analyze", "--suggest-settings", str(trace_file)), "needs --labels"),
        (cli("analyze", "--suggest-budget", "5", str(trace_file)), "need --suggest-settings"),
        (
            suggest(
                policy_dir,
                trace_file,
                labels_file(tmp_path / "other.json", {"x": {"loop": 1 == 1}}),
            ),
            "no labelled run",
        ),
    ]
    for result, words in cases:
        lines = result.stderr.decode().splitlines()
        assert result.returncode == 2, lines
        assert len(lines) == 1 and words in lines[0], lines


def test_the_search_space_comes_from_the_config_model() -> None:
    """Every searched setting is a field; its candidates start from the current value and
    stay within the field's bounds (ge/le), which LoopGuardConfig accepts."""
    assert searched_settings() == [
        name for name in SEARCHED_SETTINGS if name in LoopGuardConfig.model_fields
    ]
    defaults = LoopGuardConfig()
    for name in searched_settings():
        values = candidate_values(name, getattr(defaults, name))
        assert values[0] == getattr(defaults, name) and len(set(values)) == len(values) > 1
        for value in values:
            LoopGuardConfig(**{name: value})  # within the bounds
    assert min(candidate_values("repetition_threshold", 3)) == 2  # its ge=2
    assert candidate_values("policy", "default") == ("default", "strict")
    assert searched_settings(["repetition_threshold", "no_such_setting"]) == [
        "repetition_threshold"
    ]
