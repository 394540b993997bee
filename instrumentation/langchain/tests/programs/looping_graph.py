"""A user's LangGraph program with no OpenTelemetry code in it: run under opentelemetry-instrument.

Prints one JSON line to stderr: whether LoopGuardInterrupt reached this caller and how many
times the tool body really ran. Spans go wherever OTEL_TRACES_EXPORTER says.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents import RUN_CONFIG, USER_INPUT, ToolCounter, build_react_graph, looping_script
from otel_loopguard_testing import reported_outcome


def main() -> None:
    counter = ToolCounter()
    graph = build_react_graph(looping_script(give_up_after=12), counter)
    with reported_outcome(lambda: counter["search"]) as outcome:
        if "--stream" in sys.argv:
            for _chunk in graph.stream(USER_INPUT, RUN_CONFIG, stream_mode="updates"):
                pass
        else:
            outcome["answer"] = graph.invoke(USER_INPUT, RUN_CONFIG)["messages"][-1].content


if __name__ == "__main__":
    main()
