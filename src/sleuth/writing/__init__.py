"""The writing pack: requests to write something (an advisory, a SOAP note, a scene
retold) get the whole piece from the first passages (:mod:`sleuth.writing.tasks`). It
registers its question reader through :mod:`sleuth.plugins` (entry ``writing`` of
``sleuth.readers``) like an outside package, and the core answers every question short
without it (``plugins.disabled: [writing]``, or ``agent.writing_tasks: false``)."""

from sleuth.writing.tasks import WritingTasks, writing_task

READERS = (WritingTasks(),)

__all__ = ["READERS", "WritingTasks", "writing_task"]
