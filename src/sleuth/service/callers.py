"""Who calls a server: the API keys of ``serve.api_keys`` and the caller each one names.

A plain key is an admin's (it sees the whole index); ``{key, collection, groups}`` is a
tenant's (its collection, and the documents there that are open or share one of its
groups), and with ``document_roots`` the server folders it may index by path. Keys are
compared in constant time.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from pathlib import Path

import yaml

from sleuth.errors import ConfigError
from sleuth.settings import ApiKey, ServeSettings
from sleuth.text.access import Access, check_name, parse_groups


@dataclass(frozen=True)
class Share:
    """A key's own share of the server, from its entry in the key file; each None where the
    ``serve.*_per_key`` default applies (:mod:`sleuth.service.pool`)."""

    asks: int | None = None  # agent runs going at once (serve.asks_per_key)
    uploads: int | None = None  # indexing requests going at once (serve.uploads_per_key)
    calls: int | None = None  # tool calls and reads running or waiting (serve.calls_per_key)
    rate: float | None = None  # requests a second, 0 for no limit (serve.rate_per_key)
    burst: int | None = None  # requests at once above the rate (serve.burst_per_key)


@dataclass(frozen=True)
class Caller:
    """Who makes a request: the API key's name (``local`` without auth), and for a tenant's
    key its collection and groups (``collection`` None: an admin, who sees everything)."""

    name: str = "local"
    collection: str | None = None
    groups: tuple[str, ...] = ()
    # the server folders a tenant's key may index by path (its key file's document_roots)
    document_roots: tuple[Path, ...] = ()
    share: Share = Share()  # its own limits, where its key file entry sets them

    @property
    def admin(self) -> bool:
        return self.collection is None

    @property
    def access(self) -> Access | None:
        if self.collection is None:
            return None
        return Access(frozenset({self.collection}), frozenset(self.groups))


LOCAL = Caller()
# The limits of serve a tenant's key is shown (GET /v1/status): those its own requests are
# held to; the server's address, folders, pools and other keys' work are the operator's.
TENANT_LIMITS = ("max_query_chars", "max_top_k", "max_queries", "max_body_bytes",
                 "max_message_chars", "asks_per_key", "uploads_per_key",
                 "calls_per_key", "rate_per_key", "burst_per_key")
KeyRing = dict[str, Caller]  # secret → the caller it authenticates


def load_api_keys(serve: ServeSettings) -> KeyRing:
    """The callers of ``serve.api_keys`` by secret (a mapping, or a YAML/JSON file of one):
    a plain string is an admin key, ``{key, collection, groups, document_roots}`` a tenant's
    key (relative roots are read from the key file's folder)."""
    keys = serve.api_keys
    if keys is None:
        return {}
    base = Path.cwd()  # what relative document_roots are read against: the key file's folder
    if isinstance(keys, Path):
        base = keys.expanduser().resolve().parent
        try:
            loaded = yaml.safe_load(keys.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read API key file {serve.api_keys}: {exc}") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"API key file {serve.api_keys} must map names to keys")
        try:
            keys = ServeSettings(api_keys=loaded).api_keys
        except ValueError as exc:
            raise ConfigError(f"API key file {serve.api_keys}: {exc}") from None
        assert isinstance(keys, dict)
    ring: KeyRing = {}
    for name, spec in keys.items():
        if isinstance(spec, ApiKey):  # its name also names its sessions folder
            caller = Caller(check_name("API key", str(name)),
                            check_name("collection", spec.collection),
                            parse_groups(spec.groups),
                            tuple((base / root.expanduser()).resolve()
                                  for root in spec.document_roots),
                            Share(spec.asks, spec.uploads, spec.calls, spec.rate, spec.burst))
            secret = spec.key
        else:
            caller, secret = Caller(str(name)), spec
        if not secret or secret in ring:
            raise ConfigError(f"API key {name!r} is empty or the same as another key's")
        ring[secret] = caller
    return ring


def caller_for_key(keys: KeyRing, presented: str | None) -> Caller | None:
    """The caller whose key is ``presented`` (compared in constant time), else None."""
    if not presented:
        return None
    found = None
    for secret, caller in keys.items():
        if hmac.compare_digest(secret.encode(), presented.encode()):
            found = caller
    return found
