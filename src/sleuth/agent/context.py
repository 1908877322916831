"""Context management (AgenticRAG): warn at 90 % of the token budget, force ``summarize``
at 100 %, then drop tool output not tied to the references the model chose to keep.

Tool output is cut into blocks by the ids that head them (a reference id in brackets for
search results and find/open windows, ``[2] chunk_id: …`` for chunk searches, ``=== chunk …``
for chunk reads). A kept block stays verbatim; a dropped one leaves a one-line stub naming its
ids, so every id stays valid and can be opened again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sleuth.agent.run import Run
from sleuth.agent.toolcalls import assistant_message, execute
from sleuth.prompts import prompt
from sleuth.settings import AgentSettings
from sleuth.text.ids import REF_ID
from sleuth.text.tokens import count_tokens
from sleuth.tools import Tool, ToolContext
from sleuth.types import Step

_BLOCK = re.compile(rf"^(?:\[({REF_ID.pattern})\]|\[\d+\] chunk_id: (\S+)|"
                    r"=== chunk ([^\s:]+))", re.MULTILINE)
_STUB = "[removed by summarize: {}]"


def count_messages(messages: Sequence[dict[str, Any]]) -> int:
    """Tokens of a conversation as sent: contents, tool-call arguments, a few per message."""
    total = 0
    for m in messages:
        total += 4 + count_tokens(str(m.get("content") or ""))
        if m.get("tool_calls"):
            total += count_tokens(json.dumps(m["tool_calls"]))
    return total


def prune(content: str, keep: set[str]) -> tuple[str, list[str]]:
    """``content`` without the blocks whose ids are not in ``keep``; (text, dropped ids)."""
    heads = list(_BLOCK.finditer(content))
    if not heads:
        return content, []
    kept: list[str] = []
    dropped: list[str] = []
    for i, head in enumerate(heads):
        block_id = next(g for g in head.groups() if g)
        end = heads[i + 1].start() if i + 1 < len(heads) else len(content)
        if block_id in keep:
            kept.append(content[head.start():end].rstrip())
        else:
            dropped.append(block_id)
    if not dropped:
        return content, []
    preamble = content[: heads[0].start()].rstrip()
    parts = ([preamble] if preamble and kept else []) + kept
    parts.append(_STUB.format(", ".join(dict.fromkeys(dropped))))
    return "\n\n".join(parts), dropped


@dataclass
class ContextWatch:
    """Budget watch for one run: a warning at ``warn_ratio``, a forced summary at 100 %."""

    run: Run
    ctx: ToolContext
    tools: Sequence[Tool]
    settings: AgentSettings
    budget: int
    warned: bool = False
    recount: bool = False  # the last token estimate predates a compaction
    forced: int = 0

    @property
    def enabled(self) -> bool:
        return any(t.name == "summarize" for t in self.tools)

    def check(self, messages: list[dict[str, Any]], estimate: int) -> bool:
        """Act on the context size after a step; False when the answer must be forced."""
        budget = self.budget
        used = count_messages(messages) if self.recount else estimate
        self.recount = False
        if not self.enabled:
            return used < budget
        if used >= budget:
            if self.forced >= 3:  # summarizing no longer frees enough
                return False
            self.forced += 1
            self.run.context(used, budget, "summarize")
            self._force_summary(messages, used, budget)
            return count_messages(messages) < budget
        if used >= self.settings.warn_ratio * budget and not self.warned:
            self.warned = True
            messages.append({"role": "user", "content": prompt("context_warning").format(
                used=used, budget=budget, percent=round(100 * used / budget))})
            self.run.answer.context_events.append({"step": len(self.run.answer.trajectory),
                                                   "event": "warning", "tokens": used,
                                                   "budget": budget})
            self.run.context(used, budget, "warn")
        return True

    def _force_summary(self, messages: list[dict[str, Any]], used: int, budget: int) -> None:
        summarize = next(t for t in self.tools if t.name == "summarize")
        messages.append({"role": "user", "content": prompt("context_full").format(
            used=used, budget=budget)})
        response = self.run.chat(messages, [summarize.schema()], tool_choice="required",
                                 parallel_tool_calls=self.settings.parallel_tool_calls)
        number = self.run.next_step
        calls = [c for c in response.tool_calls if c.name == "summarize"]
        if calls:
            messages.append(assistant_message(response, calls[:1]))
            step = execute(self.tools, self.ctx, calls[0], response, number)
            call_id = calls[0].id
        else:  # the model wrote its notes as text: keep the ids those notes name
            notes = (response.content or "").strip() or "(no notes)"
            keep = list(dict.fromkeys(REF_ID.findall(notes)))
            keep += [i for i in self.ctx.tracker.read if i in notes and i not in keep]
            messages.append({"role": "assistant", "content": notes})
            result = summarize.run(self.ctx, {"notes": notes, "keep_refs": keep})
            step = Step(number, "summarize", {"notes": notes, "keep_refs": keep}, result.text,
                        "forced summary written as text", 0)
            call_id = None
        self.run.record(step)
        if call_id is not None:
            messages.append({"role": "tool", "tool_call_id": call_id,
                             "content": step.tool_output})
        else:
            messages.append({"role": "user", "content": step.tool_output})
        self.compact(messages, step, forced=True, before=used)

    def compact(self, messages: list[dict[str, Any]], step: Step, *, forced: bool = False,
                before: int | None = None) -> None:
        """Drop tool output not tied to the ids the summarize ``step`` keeps."""
        args = step.tool_input if isinstance(step.tool_input, dict) else {}
        raw = args.get("keep_refs") or []
        keep = {str(r).strip().strip("[]`'\" ") for r in
                ([raw] if isinstance(raw, str) else raw)}
        keep |= {ref.chunk_id for r in list(keep) if (ref := self.ctx.tracker.refs.get(r))
                 and ref.chunk_id}
        tokens_before = before if before is not None else count_messages(messages)
        dropped: list[str] = []
        last = len(messages) - 1
        for i, message in enumerate(messages):
            if i == last or message.get("role") != "tool":
                continue
            text, gone = prune(str(message.get("content") or ""), keep)
            if gone:
                message["content"] = text
                dropped += gone
        self.recount = True
        self.warned = False
        self.run.answer.context_events.append({
            "step": step.step, "event": "summarize", "forced": forced,
            "tokens_before": tokens_before, "tokens_after": count_messages(messages),
            "kept": sorted(keep), "dropped": list(dict.fromkeys(dropped)),
        })
