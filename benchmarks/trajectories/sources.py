"""Published agent trajectories read into one small model: model turns and tool calls.

Each reader takes a source's own files, as published, and yields :class:`Trajectory`
objects; nothing here knows about OpenTelemetry or about the loop guard. Three sources
(where they come from and their licences: ``README.md`` beside this file):

* ``mini-swe-agent`` trajectories (``*.traj.json``, format ``mini-swe-agent-1``): a
  bash-only coding agent on SWE-bench Verified; every assistant message holds exactly one
  ```bash block, the next user message is the command's output; ``results_summary.json``
  says which instances were resolved.
* SWE-agent trajectories (``*.traj``): ``trajectory`` steps with ``action`` (an
  SWE-agent command such as ``open``, ``goto``, ``scroll_down``, ``search_file``,
  ``edit``, or a shell command) and ``observation``.
* τ-bench historical trajectories (one JSON list): OpenAI-format chat messages with
  native tool calls, a ``reward`` of 1.0 when the task was done right.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any]
    output: str
    call_id: str = ""


@dataclass
class Turn:
    """One model response and the tool calls it asked for (with their outputs)."""

    text: str
    calls: list[ToolCall] = field(default_factory=list)
    time: float | None = None  # unix seconds the response was made, when the source says
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str = "stop"


@dataclass
class Trajectory:
    set: str  # the corpus set: swe-bash, swe-agent, tau-airline
    id: str  # unique, used as the conversation id and the label key
    agent: str
    model: str
    turns: list[Turn]
    success: bool | None  # resolved / reward 1.0; None when the source does not say
    source: str  # the file it came from, relative to the source's root

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [call for turn in self.turns for call in turn.calls]


# -- mini-swe-agent ----------------------------------------------------------------------------

_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.S)


def read_mini_swe_agent(root: Path, results: Path) -> Iterator[Trajectory]:
    """``root``: the folder of ``<instance>/<instance>.traj.json``; ``results``: the
    ``results_summary.json`` of the same run (``instances[].resolved``)."""
    summary = json.loads(results.read_text(encoding="utf-8"))
    resolved = {item["instance_id"]: bool(item["resolved"]) for item in summary["instances"]}
    for path in sorted(root.glob("*/*.traj.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        messages = data["messages"]
        turns: list[Turn] = []
        model = "unknown"
        for index, message in enumerate(messages):
            if message["role"] != "assistant":
                continue
            text = message.get("content") or ""
            response = (message.get("extra") or {}).get("response") or {}
            usage = response.get("usage") or {}
            model = response.get("model") or model
            turn = Turn(
                text=text,
                time=response.get("created"),
                model=response.get("model"),
                input_tokens=usage.get("prompt_tokens"),
                output_tokens=usage.get("completion_tokens"),
            )
            blocks = _BASH_BLOCK.findall(text)
            following = messages[index + 1] if index + 1 < len(messages) else None
            # exactly one block is a command the agent ran; other answers were refused
            # with a format error (a user message that is no command output)
            if len(blocks) == 1 and following is not None and following["role"] == "user":
                turn.calls.append(
                    ToolCall("bash", {"command": blocks[0].strip()}, following["content"] or "")
                )
                turn.finish_reason = "tool_calls"
            turns.append(turn)
        instance = data.get("instance_id") or path.parent.name
        yield Trajectory(
            set="swe-bash",
            id=f"swe-bash/{instance}",
            agent="mini-swe-agent",
            model=model,
            turns=turns,
            success=resolved.get(instance),
            source=str(path.relative_to(root)),
        )


# -- SWE-agent ---------------------------------------------------------------------------------

#: SWE-agent's own commands (its agent-computer interface); any other action is a shell
#: command, which SWE-agent runs in bash
SWE_AGENT_COMMANDS = frozenset(
    {
        "open",
        "goto",
        "scroll_up",
        "scroll_down",
        "create",
        "edit",
        "search_dir",
        "search_file",
        "find_file",
        "submit",
        "str_replace_editor",
        "decompile",
        "disassemble",
        "debug_start",
        "debug_add_breakpoint",
        "debug_continue",
        "debug_step",
        "debug_exec",
        "debug_stop",
        "connect_start",
        "connect_sendline",
        "connect_exec",
        "connect_stop",
        "exit_forfeit",
    }
)


def swe_agent_call(action: str, observation: str) -> ToolCall:
    """An SWE-agent action as the tool call an instrumentation would record."""
    action = action.strip()
    head, _, rest = action.partition(" ")
    first_line = head.split("\n", 1)[0]
    if first_line in SWE_AGENT_COMMANDS:
        if "\n" in head:
            rest = head.split("\n", 1)[1] + (" " + rest if rest else "")
        return ToolCall(first_line, {"args": rest.strip()}, observation)
    return ToolCall("bash", {"command": action}, observation)


def read_swe_agent(root: Path, paths: list[str]) -> Iterator[Trajectory]:
    """``paths``: the ``.traj`` files to read, relative to ``root`` (the repository)."""
    for relative in paths:
        data = json.loads((root / relative).read_text(encoding="utf-8"))
        turns = []
        for step in data.get("trajectory") or []:
            turn = Turn(text=step.get("response") or step.get("thought") or "")
            action = step.get("action") or ""
            if action.strip():
                turn.calls.append(swe_agent_call(action, step.get("observation") or ""))
                turn.finish_reason = "tool_calls"
            turns.append(turn)
        name = Path(relative).stem
        parent = Path(relative).parent.name
        exit_status = (data.get("info") or {}).get("exit_status")
        yield Trajectory(
            set="swe-agent",
            id=f"swe-agent/{parent[:60]}/{name}",
            agent="swe-agent",
            model=_swe_agent_model(parent),
            turns=turns,
            # published demonstrations and test runs that were submitted
            success=exit_status == "submitted",
            source=relative,
        )


def _swe_agent_model(folder: str) -> str:
    return folder.split("__", 1)[0] if "__" in folder else "unknown"


# -- τ-bench -----------------------------------------------------------------------------------


def read_tau_bench(path: Path, domain: str) -> Iterator[Trajectory]:
    """One historical-trajectories file (a list of ``{task_id, trial, reward, traj}``)."""
    model = path.stem.rsplit("-", 1)[0]
    for record in json.loads(path.read_text(encoding="utf-8")):
        turns: list[Turn] = []
        pending: dict[str, ToolCall] = {}
        for message in record["traj"]:
            role = message["role"]
            if role == "assistant":
                turn = Turn(text=message.get("content") or "", model=model)
                for call in message.get("tool_calls") or []:
                    function = call["function"]
                    try:
                        arguments = json.loads(function.get("arguments") or "{}")
                    except json.JSONDecodeError:
                        arguments = {"raw": function.get("arguments")}
                    tool_call = ToolCall(function["name"], arguments, "", call.get("id") or "")
                    pending[tool_call.call_id] = tool_call
                    turn.calls.append(tool_call)
                if turn.calls:
                    turn.finish_reason = "tool_calls"
                turns.append(turn)
            elif role == "tool":
                tool_call = pending.pop(message.get("tool_call_id") or "", None)
                if tool_call is not None:
                    tool_call.output = message.get("content") or ""
        yield Trajectory(
            set=f"tau-{domain}",
            id=f"tau-{domain}/{model}/task{record['task_id']}-trial{record['trial']}",
            agent=f"tau-bench {domain} agent",
            model=model,
            turns=turns,
            success=record.get("reward") == 1.0,
            source=f"{path.name}#task_id={record['task_id']},trial={record['trial']}",
        )
