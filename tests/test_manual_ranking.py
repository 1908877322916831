"""Which LLM-free ranking a corpus gets, and how much a title match counts (issue 40).

Paragraph-long pages that each have a title (an encyclopedia, 2Wiki) get the multi-hop
ranking; the sections of a manual (titled pages, many longer than a chunk) and the pages of
works that share a title (filings) get the passage ranking, where a title match weighs 3
only when a title names a work of many chunks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sleuth import Index, Settings
from sleuth.retrieval import best_ranking, corpus_shape, search_documents

QUESTION = "Which TCP port does the server listen on by default?"
MANUAL = {  # file -> (title, paragraphs); every page runs over one 60-token chunk
    "connections.md": ("Connections and Authentication", [
        "listen_addresses specifies the TCP/IP addresses on which the server is to listen "
        "for connections from client applications. The value takes the form of a list.",
        "The TCP port the server listens on is 5432 by default. The same port number is "
        "used for all IP addresses the server listens on.",
        "max_connections determines the maximum number of concurrent connections to the "
        "database server. The default is typically 100 connections."]),
    "privileges.md": ("Default Privileges", [
        "ALTER DEFAULT PRIVILEGES sets the privileges that will be applied to objects "
        "created in the future. It does not affect privileges of existing objects.",
        "Privileges can be altered globally or only for objects created in given schemas."]),
    "sockets.md": ("Unix-Domain Sockets", [
        "unix_socket_directories specifies the directory of the socket on which the server "
        "is to listen for connections from client applications. The default is /tmp.",
        "unix_socket_permissions sets the access permissions of the socket. The default "
        "permissions are 0777, meaning anyone can connect."]),
    "keepalives.md": ("TCP Keepalives", [
        "tcp_keepalives_idle specifies the time with no network activity after which the "
        "server asks the client for a TCP keepalive. The default is zero: the system's.",
        "tcp_keepalives_count specifies how many keepalives may be lost before the server's "
        "connection to the client is considered dead. The default is the system's."]),
    "ssl.md": ("Secure TCP/IP Connections with SSL", [
        "The server has native support for using SSL connections to encrypt client and "
        "server communications. It listens for both normal and SSL connections on the "
        "same TCP port, and negotiates with any connecting client.",
        "ssl is off by default. Set it to on to enable SSL connections on the server."]),
    "timeouts.md": ("Client Connection Defaults", [
        "authentication_timeout is the maximum amount of time allowed to complete client "
        "authentication. The server closes the connection by default after one minute.",
        "statement_timeout aborts any statement that takes more than the specified amount "
        "of time. The default is zero, which disables the timeout."]),
    "senders.md": ("Sending Servers", [
        "max_wal_senders specifies the maximum number of concurrent connections from "
        "standby servers or streaming base backup clients. The default is 10.",
        "wal_sender_timeout terminates replication connections that are inactive for "
        "longer than this. The default is 60 seconds."]),
    "hosts.md": ("Allowed Client Hosts", [
        "The server accepts TCP/IP connections only from the client hosts and addresses "
        "that the host-based authentication file allows; by default only the local host.",
        "Each record names a connection type, a database, a user and a client address."]),
    "limits.md": ("Connection Limits", [
        "superuser_reserved_connections determines the number of connection slots that the "
        "server reserves for superusers. The default is three connections.",
        "Reserved slots stay free even when max_connections is reached by other users."]),
    "backlog.md": ("Accept Queue", [
        "The listen backlog is the queue of TCP connections the server has accepted at the "
        "network level but not yet handed to a backend. Its length is the system default.",
        "A full queue makes new clients wait or fail to connect."]),
    "resources.md": ("Resource Consumption", [
        "shared_buffers sets the amount of memory the database server uses for shared "
        "memory buffers. The default is typically 128 megabytes.",
        "work_mem sets the base maximum amount of memory to be used by a query operation "
        "such as a sort or hash table before writing to temporary disk files."]),
    "wal.md": ("Write Ahead Log", [
        "wal_level determines how much information is written to the WAL. The default "
        "value is replica, which writes enough data to support WAL archiving.",
        "checkpoint_timeout is the maximum time between automatic WAL checkpoints. The "
        "default is five minutes."]),
    "logging.md": ("Error Reporting and Logging", [
        "log_destination sets where server log messages go: stderr, csvlog, jsonlog and "
        "syslog. The default is to log to stderr only.",
        "logging_collector enables a background process that captures log messages sent "
        "to stderr and redirects them into log files."]),
}


@pytest.fixture(scope="module")
def manual(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("manual")
    for name, (title, paragraphs) in MANUAL.items():
        (folder / name).write_text(f"# {title}\n\n" + "\n\n".join(paragraphs) + "\n")
    with Index.open(folder / "idx", settings=Settings.load(chunk={"tokens": 60}),
                    create=True) as index:
        index.add([folder])
        assert index.stats().chunks > 1.2 * index.stats().documents
    return folder / "idx"


def first_document(index: Index, question: str) -> str:
    scores, _ = best_ranking(index, question)
    return str(index.read([next(iter(scores))]).chunks[0].doc_id)


def test_a_manual_gets_the_passage_ranking_with_title_matches_weighed_as_one(
        manual: Path) -> None:
    with Index.open(manual) as index:
        shape = corpus_shape(index)
        assert not shape.entity_pages and shape.title_weight == 1.0
        assert best_ranking(index, QUESTION)[1] == "passage"
        assert first_document(index, QUESTION) == "connections.md"
        assert search_documents(index, QUESTION, top_k=1)[0].doc_id == "connections.md"


def test_a_title_match_weighed_three_times_puts_the_page_named_default_first(
        manual: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the manual's ranking would be if its pages' titles counted as works' titles: the
    page whose title shares the question's word 'default' would come first."""
    import sleuth.retrieval as retrieval

    monkeypatch.setattr(retrieval, "WORK_CHUNKS", 0.0)
    with Index.open(manual) as index:
        assert corpus_shape(index).title_weight == retrieval.TITLE_WEIGHT
        assert first_document(index, QUESTION) == "privileges.md"


def test_paragraph_pages_get_the_multi_hop_ranking(wiki_index: Index) -> None:
    shape = corpus_shape(wiki_index)
    assert shape.entity_pages and shape.title_weight == 1.0
    assert best_ranking(wiki_index, "Who directed the film Blood Street?")[1] == "hybrid"


def test_works_that_share_a_title_weigh_a_title_match_three_times(tmp_path: Path) -> None:
    records = [{"id": f"{work}#p{page}", "title": work,
                "text": f"{work} page {page}: revenue, capital expenditure and cash flow."}
               for work in ("ACME_2022_10K", "GLOBEX_2021_10K") for page in range(12)]
    (tmp_path / "corpus.json").write_text(json.dumps(records))
    with Index.open(tmp_path / "idx", create=True) as index:
        index.add([tmp_path / "corpus.json"])
        shape = corpus_shape(index)
        assert not shape.entity_pages and shape.title_weight == 3.0
        hits = search_documents(index, "What was GLOBEX capital expenditure in 2021?", top_k=1)
        assert hits[0].doc_id.startswith("GLOBEX_2021_10K")
