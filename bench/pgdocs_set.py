"""Check the PostgreSQL 15 manual question set (``bench/sets/pgdocs/questions.json``)
against the HTML manual it was written from, and print its statistics.

Each answerable question's gold page is read with Sleuth's own HTML reader
(:func:`sleuth.ingest.html.parse_html`, the text ``sleuth index`` stores); the gold answer
or one of its aliases must occur in the page text (case-insensitive) and the quoted
``evidence`` must occur in it verbatim once runs of whitespace are collapsed. The set's
shape is checked too: unique ids, known types, the record fields an unanswerable question
leaves empty, at most 3 questions per page, at most 10 ``behaviour`` questions, at least 64
answerable and 10 unanswerable questions, and no question that repeats 6 or more
consecutive words of its evidence. Unanswerable questions are listed, not checked against
the manual (that was done by hand with grep when the set was written).

    python bench/pgdocs_set.py      # installs postgresql-doc-15 with apt-get when missing
    python bench/pgdocs_set.py --html /usr/share/doc/postgresql-doc-15/html \\
        --questions bench/sets/pgdocs/questions.json

Exits 0 when every check passes, 1 on any failure, 2 when a file is missing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from _common import DEV_CORPORA, ensure_debian_docs

from sleuth.ingest.html import parse_html

HTML_DIR = Path(DEV_CORPORA["pgdocs"].source)
QUESTIONS = Path(__file__).resolve().parent / "sets" / "pgdocs" / "questions.json"
TYPES = ("default_value", "name", "number", "syntax", "behaviour", "unanswerable")
FIELDS = ("id", "question", "answer", "answer_aliases", "type", "supporting_passage_ids",
          "evidence", "answerable")
MAX_PER_PAGE = 3
MAX_BEHAVIOUR = 10
MIN_ANSWERABLE = 64
MIN_UNANSWERABLE = 10
ECHO_WORDS = 6  # a question sharing this many consecutive words with its evidence echoes it
_WORD = re.compile(r"[a-z0-9_$]+")


def collapse(text: str) -> str:
    """``text`` with every run of whitespace made one space."""
    return " ".join(text.split())


def page_text(html_dir: Path, page: str, cache: dict[str, str | None]) -> str | None:
    """The visible text (title first) of ``page`` as Sleuth indexes it; None if absent."""
    if page not in cache:
        path = html_dir / page
        if path.is_file():
            parsed = parse_html(path.read_text(encoding="utf-8", errors="replace"))
            cache[page] = collapse(f"{parsed.title or ''}\n{parsed.text}")
        else:
            cache[page] = None
    return cache[page]


def echoes(question: str, evidence: str, n: int = ECHO_WORDS) -> bool:
    """Whether ``question`` repeats ``n`` or more consecutive words of ``evidence``."""
    words = _WORD.findall(question.lower())
    grams = {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}
    ev = _WORD.findall(evidence.lower())
    return any(tuple(ev[i:i + n]) in grams for i in range(len(ev) - n + 1))


def shape_problems(record: dict[str, Any]) -> list[str]:
    """What is wrong with one record's fields, before the manual is read."""
    problems = [f"missing field {key!r}" for key in FIELDS if key not in record]
    if problems:
        return problems
    if record["type"] not in TYPES:
        problems.append(f"unknown type {record['type']!r}")
    if not str(record["question"]).strip():
        problems.append("empty question")
    if record["answerable"] is True:
        if record["type"] == "unanswerable":
            problems.append("answerable question typed 'unanswerable'")
        if not str(record["answer"]).strip():
            problems.append("answerable question without an answer")
        if not record["supporting_passage_ids"]:
            problems.append("answerable question without a gold page")
        if not str(record["evidence"]).strip():
            problems.append("answerable question without evidence")
    elif record["answerable"] is False:
        if record["type"] != "unanswerable":
            problems.append("unanswerable question not typed 'unanswerable'")
        if record["answer"] or record["answer_aliases"] or record["supporting_passage_ids"]:
            problems.append("unanswerable question with an answer, aliases or gold pages")
    else:
        problems.append("'answerable' is not true or false")
    return problems


def manual_problems(record: dict[str, Any], html_dir: Path,
                    cache: dict[str, str | None]) -> list[str]:
    """What the gold pages fail to back up in one answerable record."""
    problems: list[str] = []
    texts = []
    for page in record["supporting_passage_ids"]:
        text = page_text(html_dir, page, cache)
        if text is None:
            problems.append(f"gold page {page} not in {html_dir}")
        else:
            texts.append(text)
    if not texts:
        return problems
    joined = "\n".join(texts)
    forms = [record["answer"], *record["answer_aliases"]]
    if not any(collapse(form).lower() in joined.lower() for form in forms if form):
        problems.append(f"neither the answer nor an alias is on the page: {forms}")
    if collapse(record["evidence"]) not in joined:
        problems.append(f"evidence not on the page: {record['evidence'][:80]!r}")
    if echoes(record["question"], record["evidence"]):
        problems.append(f"question repeats {ECHO_WORDS}+ consecutive words of its evidence")
    return problems


def set_problems(records: list[dict[str, Any]]) -> list[str]:
    """What is wrong with the set as a whole: repeated ids, crowded pages, counts."""
    problems = []
    ids = Counter(str(r.get("id")) for r in records)
    problems += [f"id {qid} used {n} times" for qid, n in ids.items() if n > 1]
    answerable = [r for r in records if r.get("answerable") is True]
    pages = Counter(p for r in answerable for p in r.get("supporting_passage_ids", []))
    problems += [f"{page}: {n} questions (at most {MAX_PER_PAGE})"
                 for page, n in pages.items() if n > MAX_PER_PAGE]
    behaviour = sum(r.get("type") == "behaviour" for r in records)
    if behaviour > MAX_BEHAVIOUR:
        problems.append(f"{behaviour} behaviour questions (at most {MAX_BEHAVIOUR})")
    if len(answerable) < MIN_ANSWERABLE:
        problems.append(f"{len(answerable)} answerable questions (at least {MIN_ANSWERABLE})")
    unanswerable = sum(r.get("answerable") is False for r in records)
    if unanswerable < MIN_UNANSWERABLE:
        problems.append(f"{unanswerable} unanswerable questions (at least {MIN_UNANSWERABLE})")
    return problems


def report(records: list[dict[str, Any]], html_dir: Path) -> int:
    """Print the statistics and every failure; the number of failures."""
    answerable = [r for r in records if r.get("answerable") is True]
    pages = Counter(p for r in answerable for p in r.get("supporting_passage_ids", []))
    print(f"manual: {html_dir} ({sum(1 for _ in html_dir.glob('*.html'))} .html pages)")
    print(f"questions: {len(records)} ({len(answerable)} answerable, "
          f"{len(records) - len(answerable)} unanswerable)")
    print("per type: " + ", ".join(f"{t} {n}" for t, n in
                                   Counter(str(r.get("type")) for r in records).most_common()))
    print(f"gold pages: {len(pages)} distinct, at most {max(pages.values(), default=0)} "
          f"questions on one page")
    cache: dict[str, str | None] = {}
    failures = [f"set: {p}" for p in set_problems(records)]
    for record in records:
        problems = shape_problems(record)
        if not problems and record["answerable"] is True:
            problems = manual_problems(record, html_dir, cache)
        failures += [f"{record.get('id', '?')}: {p}" for p in problems]
    print("\nunanswerable questions (answer not in the manual):")
    for record in records:
        if record.get("answerable") is False:
            print(f"  {record.get('id')}: {record.get('question')}")
    print(f"\n{len(failures)} failure(s)")
    for line in failures:
        print(f"  FAIL {line}")
    return len(failures)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--html", type=Path, default=HTML_DIR,
                        help=f"the manual's HTML folder (default {HTML_DIR})")
    parser.add_argument("--questions", type=Path, default=QUESTIONS,
                        help="the question file (default bench/sets/pgdocs/questions.json)")
    args = parser.parse_args(argv)
    if args.html == HTML_DIR:
        ensure_debian_docs(HTML_DIR, DEV_CORPORA["pgdocs"].package or "")
    if not args.html.is_dir():
        print(f"no HTML manual at {args.html} (apt-get install -y postgresql-doc-15)",
              file=sys.stderr)
        return 2
    if not args.questions.is_file():
        print(f"no question file at {args.questions}", file=sys.stderr)
        return 2
    records = json.loads(args.questions.read_text(encoding="utf-8"))
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        print(f"{args.questions}: expected a JSON list of objects", file=sys.stderr)
        return 2
    return 1 if report(records, args.html) else 0


if __name__ == "__main__":
    sys.exit(main())
