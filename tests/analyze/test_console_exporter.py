"""A trace saved without a Collector: ``analyze`` reads the SDK console exporter's output
(the program's own lines between the spans skipped), and README's local command runs
without connection errors or the exporters' wait at exit."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from otel_loopguard.analyze.readers import ReadStats, read_spans

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

AGENT = """
from otel_loopguard import LoopGuardInterrupt, agent_run, loopguard_tool

@loopguard_tool
def search(query: str) -> str:
    return "no results"

print("agent starting")
try:
    with agent_run("researcher"):
        for i in range(10):
            print("calling search", i)
            search("pricing")
except LoopGuardInterrupt as stop:
    print("stopped:", stop)
"""


def console_output(tmp_path: Path) -> tuple[Path, list]:
    """Spans printed by a real ConsoleSpanExporter, with the program's lines between them."""
    out = io.StringIO()
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out)))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("invoke_agent researcher") as agent:
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        out.write("a line the program printed\n")
        with tracer.start_as_current_span("execute_tool search") as tool:
            tool.set_attributes({"gen_ai.tool.name": "search", "tags": ["a", "b"], "n": 3})
            tool.add_event("gen_ai.tool.message", {"gen_ai.tool.call.arguments": "{}"})
            tool.set_status(Status(StatusCode.ERROR, "boom"))
    path = tmp_path / "run.txt"
    path.write_text("program output first\n" + out.getvalue() + "}\n{ not json\n")
    return path, list(memory.get_finished_spans())


def test_console_exporter_spans_are_read_as_the_sdk_made_them(tmp_path: Path) -> None:
    path, spans = console_output(tmp_path)
    stats = ReadStats()
    views = {view.name: view for view in read_spans([str(path)], stats)}
    assert stats.spans == 2 and set(views) == {s.name for s in spans}
    for span in spans:
        view = views[span.name]
        assert view.trace_id == f"{span.context.trace_id:032x}"
        assert view.span_id == f"{span.context.span_id:016x}"
        parent = f"{span.parent.span_id:016x}" if span.parent else None
        assert view.parent_span_id == parent
        assert abs(view.start_time_unix_nano - span.start_time) < 1_000  # microseconds
        assert view.resource_attributes["service.name"] == span.resource.attributes["service.name"]
    tool = views["execute_tool search"]
    assert tool.attributes["tags"] == ["a", "b"] and tool.attributes["n"] == 3
    assert tool.status_code == "error" and tool.status_description == "boom"
    assert [event.name for event in tool.events] == ["gen_ai.tool.message"]


def test_text_that_holds_no_spans_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text('hello\n{\n    "name": 1\n}\n')
    done = subprocess.run(
        [str(BIN / "otel-loopguard"), "analyze", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "console exporter" in done.stderr


def _readme_local_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Enable with opentelemetry-instrument\n", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines()[1:]]


def test_readmes_local_commands_save_a_trace_analyze_reads_without_a_collector(
    tmp_path: Path,
) -> None:
    export, instrument, analyze = _readme_local_commands()
    assert export.startswith("export ") and "opentelemetry-instrument" in instrument
    (tmp_path / "agent.py").write_text(AGENT)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OTEL_", "PYTEST_", "PYTHONPATH"))
    }
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    started = time.monotonic()
    done = subprocess.run(
        ["bash", "-c", f"{export}\n{instrument}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    for noise in ("Failed to export", "Connection refused", "Transient error", "Traceback"):
        assert noise not in done.stderr, done.stderr[-3000:]
    assert elapsed < 30  # no exporter retrying at exit (about 10 s each signal)
    run = (tmp_path / "run.txt").read_text()
    assert "stopped:" in run and '"name": "execute_tool search"' in run
    replay = subprocess.run(
        ["bash", "-c", analyze], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert replay.returncode == 1, replay.stderr  # a run reached STOP
    assert "(researcher): STOP" in replay.stdout
