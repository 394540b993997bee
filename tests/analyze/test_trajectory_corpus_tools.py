"""The corpus tools in ``benchmarks/trajectories/``: the labelling rules, the readers, and
the converter's OTLP as ``otel-loopguard analyze --labels`` reads it.

Small trajectories written here in each source's published format; the policy of the
replay stops every run at its third tool call (``replay_policies``), so what is tested is
the converted traces and labels, not the detectors.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "trajectories"))

import convert  # noqa: E402
from rules import judge, loop_start  # noqa: E402
from sources import (  # noqa: E402
    ToolCall,
    Trajectory,
    Turn,
    read_mini_swe_agent,
    read_tau_bench,
    swe_agent_call,
)

from .test_cli import STOP_POLICY, cli  # noqa: E402


def run_of(calls: list[tuple[str, dict, str]], success: bool | None = True, name="r") -> Trajectory:
    turns = [Turn(text=f"step {i}", calls=[ToolCall(*call)]) for i, call in enumerate(calls)]
    return Trajectory("s", name, "agent", "model", turns, success, "test")


RUN_TESTS = ("bash", {"command": "pytest -q"}, "1 failed")


def test_the_same_call_three_times_in_a_row_is_a_loop_from_the_first_repeat() -> None:
    calls = [("bash", {"command": "ls"}, "a b"), RUN_TESTS, RUN_TESTS, RUN_TESTS]
    verdict = judge(run_of(calls))
    assert verdict is not None and verdict.loop and verdict.from_tool_call == 3
    assert judge(run_of(calls[:3])).loop is False  # twice is not enough: clean


def test_distinct_edits_between_identical_test_runs_are_no_loop() -> None:
    calls = []
    for n in range(4):
        calls += [("bash", {"command": f"sed -i 's/x/{n}/' f.py"}, ""), RUN_TESTS]
    assert judge(run_of(calls)).loop is False
    assert judge(run_of(calls, success=False)) is None  # failed, no loop: not labelled


def test_think_calls_between_the_same_failing_call_do_not_hide_the_loop() -> None:
    book = ("book_reservation", {"user": "u1"}, "Error: payment amount does not add up")
    calls = []
    for n in range(3):
        calls += [("think", {"thought": f"try {n}"}, ""), book]
    verdict = judge(run_of(calls, success=False))
    assert verdict.loop and verdict.from_tool_call == 4  # the second book_reservation


def test_a_cycle_of_two_calls_three_times_is_a_loop_twice_is_not() -> None:
    cycle = [("list_a", {}, "[]"), ("list_b", {}, "[]")]
    assert loop_start(run_of(cycle * 2)) is None
    assert loop_start(run_of(cycle * 3)) == (3, 2)


def test_swe_agent_commands_become_their_own_tools_and_the_rest_bash() -> None:
    assert swe_agent_call("goto 120\n", "[File: x]") == ToolCall(
        "goto", {"args": "120"}, "[File: x]"
    )
    assert swe_agent_call("edit 1:1\nprint(1)\nend_of_edit", "").name == "edit"
    assert swe_agent_call("ls -la", "out").arguments == {"command": "ls -la"}


def test_mini_swe_agent_reader_skips_answers_refused_for_their_format(tmp_path) -> None:
    (tmp_path / "i1").mkdir()
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        {
            "role": "assistant",
            "content": "THOUGHT: look\n\n```bash\nls\n```",
            "extra": {
                "response": {
                    "created": 100,
                    "model": "m",
                    "usage": {"prompt_tokens": 5, "completion_tokens": 2},
                }
            },
        },
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\na\n</output>"},
        {"role": "assistant", "content": "two blocks ```bash\nls\n``` ```bash\npwd\n```"},
        {"role": "user", "content": "Please always provide EXACTLY ONE action"},
    ]
    (tmp_path / "i1" / "i1.traj.json").write_text(
        json.dumps({"instance_id": "i1", "messages": messages, "info": {}})
    )
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"instances": [{"instance_id": "i1", "resolved": True}]}))
    (run,) = read_mini_swe_agent(tmp_path, results)
    assert run.id == "swe-bash/i1" and run.success is True and len(run.turns) == 2
    assert [call.arguments for call in run.tool_calls] == [{"command": "ls"}]
    assert run.turns[0].input_tokens == 5 and run.turns[0].time == 100


def test_tau_bench_reader_pairs_tool_results_with_their_calls(tmp_path) -> None:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_user_details", "arguments": '{"user_id": "u"}'},
    }
    record = {
        "task_id": 3,
        "trial": 1,
        "reward": 1.0,
        "info": {},
        "traj": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "name": "get_user_details", "content": "{}"},
            {"role": "assistant", "content": "done"},
        ],
    }
    path = tmp_path / "gpt-4o-airline.json"
    path.write_text(json.dumps([record]))
    (run,) = read_tau_bench(path, "airline")
    assert run.id == "tau-airline/gpt-4o/task3-trial1" and run.success is True
    assert run.tool_calls == [ToolCall("get_user_details", {"user_id": "u"}, "{}", "c1")]


def test_converted_runs_replay_as_one_run_each_and_match_their_labels(tmp_path) -> None:
    loop = run_of([("bash", {"command": "ls"}, "a")] + [RUN_TESTS] * 4, name="set/loop")
    clean = run_of([("bash", {"command": f"cat f{n}"}, f"{n}") for n in range(2)], name="set/ok")
    chosen, verdicts = convert.sample([loop, clean], clean_per_set=5, seed=1)
    assert [run.id for run in chosen] == ["set/loop", "set/ok"]
    data = convert.otlp_lines(convert.Converter(), chosen)
    export = tmp_path / "s.otlp.jsonl.gz"
    export.write_bytes(gzip.compress(data))
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps(convert.labels_document(chosen, verdicts)))
    result = cli(
        "analyze", "--format", "json", "--policy", STOP_POLICY, str(export), "--labels", str(labels)
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    runs = {run["run_id"]: run for run in report["runs"]}
    assert set(runs) == {"set/loop", "set/ok"}  # keyed by the conversation id
    assert runs["set/loop"]["tool_calls"] == 5 and runs["set/ok"]["tool_calls"] == 2
    scored = report["summary"]["labels"]
    assert scored["labels_without_run"] == 0 and scored["unlabelled_runs"] == 0
    assert (scored["caught"], scored["false_stops"]) == (1, 0)  # stopped at 3, loop from 3
    assert scored["saved_tool_calls"] == 2


def test_the_converter_gives_the_same_bytes_twice() -> None:
    run = run_of([RUN_TESTS, ("bash", {"command": "ls"}, "a")], name="set/same")
    first = convert.otlp_lines(convert.Converter(), [run])
    assert first == convert.otlp_lines(convert.Converter(), [run])
    spans = json.loads(first)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    names = sorted(span["name"] for span in spans)
    assert names == [
        "chat model",
        "chat model",
        "execute_tool bash",
        "execute_tool bash",
        "invoke_agent agent",
    ]


def test_sample_of_no_clean_runs_keeps_the_loops() -> None:
    loop = run_of([RUN_TESTS] * 3, name="set/loop")
    clean = run_of([RUN_TESTS], name="set/ok")
    chosen, _ = convert.sample([loop, clean], clean_per_set=0, seed=1)
    assert [run.id for run in chosen] == ["set/loop"]


def make_corpus(folder: Path) -> Path:
    loop = run_of([("bash", {"command": "ls"}, "a")] + [RUN_TESTS] * 4, name="set/loop")
    clean = run_of([("bash", {"command": f"cat f{n}"}, f"{n}") for n in range(2)], name="set/ok")
    chosen, verdicts = convert.sample([loop, clean], clean_per_set=5, seed=1)
    folder.mkdir()
    (folder / "set.otlp.jsonl.gz").write_bytes(
        gzip.compress(convert.otlp_lines(convert.Converter(), chosen))
    )
    (folder / "labels.json").write_text(json.dumps(convert.labels_document(chosen, verdicts)))
    return folder


def benchmark(*args: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "LOOPGUARD_TRAJECTORIES"}
    environment["PYTHONPATH"] = str(Path(__file__).parent)  # replay_policies
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "real_trajectories.py"), *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=False,
    )


def test_the_benchmark_prints_one_row_per_set_and_gates_like_analyze(tmp_path) -> None:
    corpus = make_corpus(tmp_path / "corpus")
    passed = benchmark("--corpus", str(corpus), "--policy", STOP_POLICY, "--min-recall", "100%")
    assert passed.returncode == 0, passed.stderr
    rows = {line.split()[0]: line.split() for line in passed.stdout.splitlines() if line}
    assert rows["s"][1:4] == ["2", "1", "1"] and rows["all"][1:4] == ["2", "1", "1"]
    assert rows["all"][4:6] == ["1/1", "100.0%"]  # recall
    # the observe preset never stops: recall 0, the gate fails
    failed = benchmark("--corpus", str(corpus), "--policy", "observe", "--min-recall", "0.9")
    assert failed.returncode == 1 and "gate failed: recall 0.0% < 90.0%" in failed.stdout
    assert "missed: set/loop" in failed.stdout


def test_the_benchmark_with_no_corpus_where_told_says_so_and_exits_2(tmp_path) -> None:
    result = benchmark("--corpus", str(tmp_path / "nowhere"))
    assert result.returncode == 2
    assert f"no corpus (labels.json and *.otlp.jsonl.gz) in {tmp_path / 'nowhere'}" in result.stderr
