"""A scripted OpenAI-compatible server for tests and demos (``python -m
sleuth.testing.fake``): real HTTP, the quirks of real servers, no model."""
