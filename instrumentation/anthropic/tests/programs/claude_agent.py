"""A user's hand-written Claude tool-use agent: run it under opentelemetry-instrument.

The only OpenTelemetry-related code is the loop guard's agent/tool helpers the README shows
for agents written without a framework. The Anthropic API is the scripted stand-in (the
network cannot be reached here). Prints one JSON line to stderr: whether
LoopGuardInterrupt reached this caller, tool executions, requests the transport received.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents import ToolBox, looping, productive, run_agent
from scripted_api import ScriptedMessagesAPI

from otel_loopguard import LoopGuardInterrupt


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", choices=["looping", "productive"], default="looping")
    parser.add_argument("--stream", action="store_true")
    args = parser.parse_args()
    script = looping(give_up_after=12) if args.script == "looping" else productive()
    api = ScriptedMessagesAPI(script)
    tools = ToolBox()
    outcome = {"interrupted": False, "answer": None}
    try:
        outcome["answer"] = run_agent(api.client(), tools, stream=args.stream).answer
    except LoopGuardInterrupt as interrupt:
        outcome["interrupted"] = True
        outcome["end_state"] = (interrupt.decision.end_state or "stopped").__str__()
    outcome["executions"] = sum(tools.calls.values())
    outcome["requests"] = len(api.requests)
    print(json.dumps(outcome), file=sys.stderr)


if __name__ == "__main__":
    main()
