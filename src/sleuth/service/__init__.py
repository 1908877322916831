"""The service every face calls: one tool-call path with limits and sessions
(``service``), saved sessions (``sessions``), the document library the app shows
(``library``), the worker pools and per-key quotas (``pool``) and API keys (``callers``)."""
