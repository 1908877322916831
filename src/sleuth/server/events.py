"""An agent's answer as it happens, for the HTTP faces (``/v1/ask/stream``, the
OpenAI-compatible chat): the question runs on a worker thread and its events come out of an
async iterator in the order they happened.

The events: ``("step", Step)`` per tool call, ``("token", str)`` per piece of the answer's
text, ``("context", {"used", "budget", "percent", "action"})`` per context-budget event,
``("progress", {"passages", "tokens", "seconds", "text"})`` before each model call (what it
is about to read and how long that takes here: "reading 5 passages (about 40 s here)"), then
``("answer", record)`` or ``("error", exception)``, the exception as the caller is told it (a
failure of the LLM or a bug: a line naming the request, the detail in the operator's log; see
:mod:`sleuth.server.failures`). When the consumer stops (the client went away) the run stops
at its next event.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from sleuth.agent.run import Listener
from sleuth.server.failures import request_id, told
from sleuth.service.callers import Caller
from sleuth.service.service import Service
from sleuth.types import Step

Event = tuple[str, Any]


class _Abandoned(Exception):
    """Raised in the run's listener once the consumer of its events has gone."""


def ask_events(service: Service, question: str, agent: str, *, caller: Caller,
               session: str | None = None,
               history: Sequence[Mapping[str, Any]] = ()) -> AsyncIterator[Event]:
    """Start asking ``question`` through :meth:`Service.ask` on the agents' pool and return
    its events (see the module docstring); the last is ``answer`` or ``error``. Called from
    the event loop; a key over its quota or a full pool raises here, before any event."""
    loop = asyncio.get_running_loop()
    rid = request_id()  # the worker thread does not see the request's context
    queue: asyncio.Queue[Event] = asyncio.Queue()
    abandoned = threading.Event()

    def put(event: str, data: Any) -> None:
        if abandoned.is_set():
            raise _Abandoned
        loop.call_soon_threadsafe(queue.put_nowait, (event, data))

    def step(done: Step) -> None:
        put("step", done)

    listener = Listener(step=step, token=lambda text: put("token", text),
                        context=lambda event: put("context", event),
                        progress=lambda reading: put("progress", reading))

    def work() -> None:
        try:
            record = service.ask(question, agent, session, on_step=listener, caller=caller,
                                 history=history)
        except _Abandoned:
            return
        except Exception as exc:  # a bug too: the stream still ends with a message
            loop.call_soon_threadsafe(queue.put_nowait, ("error", told(exc, caller, rid=rid)))
            return
        loop.call_soon_threadsafe(queue.put_nowait, ("answer", record))

    service.start_ask(work, caller)
    return _drain(queue, abandoned)


async def _drain(queue: asyncio.Queue[Event], abandoned: threading.Event
                 ) -> AsyncIterator[Event]:
    try:
        while True:
            event = await queue.get()
            yield event
            if event[0] in ("answer", "error"):
                return
    finally:  # also when the client disconnects and the response is cancelled
        abandoned.set()
