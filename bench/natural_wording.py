"""Validate the natural-wording 2Wiki dev set and print its statistics (stdlib only).

``bench/sets/2wiki-natural/questions.json`` holds 160 2WikiMultihopQA dev questions
rewritten by hand the way people type them (same ids, answers and evidence);
``written.json`` holds the same 160 records as 2Wiki wrote them, in the same order. This
script checks that:

- every id is a dev question, ``written.json`` is the dev records verbatim and in the same
  order, and each rewritten record keeps every gold field unchanged (``original_question``
  is the dev text; only ``question``, ``rewrite`` and ``subset`` are new);
- all 100 ids of ``bench/answer_subsets.json`` ("2wiki") are present as ``answers100`` and
  the other 60 are ``random.Random(40).sample`` over the remaining dev ids (dev order);
- no rewrite equals its original (nor differs only in case, punctuation or spacing), and no
  rewrite names the gold answer where the original did not;
- every tag is in the vocabulary, and the tags a machine can see agree with the text
  (``lower_case``, ``punctuation``, ``vs`` both ways; ``contraction``, ``no_comma_or`` when
  tagged); the ``typo`` share is 5% of the set, give or take one question.

It prints counts per tag, per type and per subset, the typo and lower-case shares, how the
questions end and begin. Exit status 1 on any violation (each is listed).

Run: python bench/natural_wording.py [--set bench/sets/2wiki-natural] [--data DIR | --dev PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from _common import REPO, add_data_option, data_root, wiki_questions

SET_DIR = REPO / "bench" / "sets" / "2wiki-natural"
SUBSETS = REPO / "bench" / "answer_subsets.json"
EXTRA_SEED, EXTRA_N = 40, 60
TYPO_SHARE = 0.05
TAGS = (
    "contraction", "vs", "kin_word", "paraphrase_death", "paraphrase_birth",
    "paraphrase_release", "no_comma_or", "question_word_last", "informal_reference",
    "lower_case", "typo", "telegraphic", "reordered", "punctuation",
)
NEW_FIELDS = ("original_question", "rewrite", "subset")
TYPES = ("comparison", "bridge_comparison", "compositional", "inference")
CONTRACTION = re.compile(
    r"n't\b|\b(?:who|what|where|when|how|which|that|it|he|she|there|one|film|album|country)'s\b"
    r"|\b(?:who|what|where|when|how)'d\b|'re\b|'ve\b|'ll\b|'m\b", re.IGNORECASE)
VS = re.compile(r"\bvs\b", re.IGNORECASE)
WH_START = re.compile(r"^\s*(?:who|whose|what|where|when|which|how|was|were|is|are|do|did|"
                      r"does)\b", re.IGNORECASE)


def load(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise SystemExit(f"{path}: expected a JSON list of question records")
    return data


def squash(text: str) -> str:
    """Lower case, letters and digits only: what is left when case and punctuation go."""
    return re.sub(r"[\W_]+", " ", text.casefold()).strip()


def irregular_punctuation(text: str) -> bool:
    """Not one plain trailing "?", or doubled / leading / trailing whitespace."""
    return (not text.endswith("?") or text.endswith("??") or "  " in text
            or text != text.strip())


def expected_selection(dev: list[dict[str, Any]], subset_ids: list[str]) -> list[str]:
    """The 100 answer-subset ids, then 60 drawn with Random(40) from the other dev ids."""
    chosen = set(subset_ids)
    rest = [q["id"] for q in dev if q["id"] not in chosen]
    return list(subset_ids) + random.Random(EXTRA_SEED).sample(rest, EXTRA_N)


def check_records(natural: list[dict[str, Any]], written: list[dict[str, Any]],
                  dev: dict[str, dict[str, Any]], expected: list[str]) -> list[str]:
    """Ids, selection, order and gold fields of both files."""
    problems: list[str] = []
    ids = [r.get("id") for r in natural]
    if ids != [r.get("id") for r in written]:
        problems.append("questions.json and written.json differ in ids or order")
    if len(set(ids)) != len(ids):
        problems.append("repeated ids")
    if ids != expected:
        missing = [i for i in expected[:100] if i not in ids]
        problems.append(f"selection differs from the 100 answer-subset ids + Random("
                        f"{EXTRA_SEED}).sample of {EXTRA_N} (answer-subset ids missing: "
                        f"{len(missing)})")
    subset_of = {i: ("answers100" if n < 100 else "extra60") for n, i in enumerate(expected)}
    for rec in written:
        if dev.get(rec.get("id", "")) != rec:
            problems.append(f"{rec.get('id')}: written.json record is not the dev record")
    for rec in natural:
        qid = rec.get("id", "")
        orig = dev.get(qid)
        if orig is None:
            problems.append(f"{qid}: not a dev question id")
            continue
        if set(rec) != set(orig) | set(NEW_FIELDS):
            problems.append(f"{qid}: fields {sorted(set(rec) ^ (set(orig) | set(NEW_FIELDS)))}"
                            " added or missing")
        changed = [k for k in orig if k != "question" and rec.get(k) != orig[k]]
        if changed:
            problems.append(f"{qid}: gold fields changed: {changed}")
        if rec.get("original_question") != orig["question"]:
            problems.append(f"{qid}: original_question is not the dev question")
        if rec.get("subset") != subset_of.get(qid):
            problems.append(f"{qid}: subset {rec.get('subset')!r}, expected "
                            f"{subset_of.get(qid)!r}")
    return problems


def leaks(rec: dict[str, Any]) -> list[str]:
    """Gold answers (3+ characters, not yes/no) the rewrite names but the original did not."""
    out = []
    for answer in [rec["answer"], *rec.get("answer_aliases", [])]:
        a = squash(str(answer))
        if len(a) < 3 or a in ("yes", "no"):
            continue
        pattern = re.compile(rf"\b{re.escape(a)}\b")
        if pattern.search(squash(rec["question"])) and not pattern.search(
                squash(rec["original_question"])):
            out.append(str(answer))
    return out


def check_rewrite(rec: dict[str, Any]) -> list[str]:
    """One rewritten question against its original and its tags."""
    qid, text, tags = rec["id"], rec["question"], rec.get("rewrite")
    problems: list[str] = []
    if not isinstance(text, str) or not text.strip():
        return [f"{qid}: empty question"]
    if text == rec["original_question"] or squash(text) == squash(rec["original_question"]):
        problems.append(f"{qid}: rewrite is the original up to case, punctuation and spacing")
    if not isinstance(tags, list) or not tags or len(set(tags)) != len(tags):
        return [*problems, f"{qid}: rewrite must be a non-empty list of distinct tags"]
    unknown = sorted(set(tags) - set(TAGS))
    if unknown:
        problems.append(f"{qid}: unknown tags {unknown}")
    seen = {
        "lower_case": text == text.lower(),
        "punctuation": irregular_punctuation(text),
        "vs": bool(VS.search(text)),
    }
    for tag, present in seen.items():
        if present != (tag in tags):
            problems.append(f"{qid}: tag {tag!r} {'missing' if present else 'not seen'}: "
                            f"{text!r}")
    if "contraction" in tags and not CONTRACTION.search(text):
        problems.append(f"{qid}: tagged contraction, none found: {text!r}")
    if "no_comma_or" in tags and " or " not in text.casefold():
        problems.append(f"{qid}: tagged no_comma_or without an 'or': {text!r}")
    problems += [f"{qid}: names the answer {a!r}" for a in leaks(rec)]
    return problems


def share(n: int, total: int) -> str:
    return f"{n:3d} / {total} ({100 * n / total:4.1f}%)" if total else f"{n}"


def report(natural: list[dict[str, Any]], dev: list[dict[str, Any]]) -> list[str]:
    """Print the statistics; return the set-level problems (the typo share)."""
    n = len(natural)
    tags = Counter(t for r in natural for t in r["rewrite"])
    types = Counter(r["type"] for r in natural)
    dev_types = Counter(q["type"] for q in dev)
    print(f"questions: {n}  subsets: {dict(Counter(r['subset'] for r in natural))}")
    print("\nper type (this set | dev set):")
    for t in TYPES:
        print(f"  {t:18s} {share(types[t], n)} | {share(dev_types[t], len(dev))}")
    print("\nper tag (questions carrying it; a question may carry several):")
    for tag in TAGS:
        per = Counter(r["type"] for r in natural if tag in r["rewrite"])
        by_type = ", ".join(f"{t[:5]} {per[t]}" for t in TYPES)
        print(f"  {tag:18s} {share(tags[tag], n)}   [{by_type}]")
    texts = [r["question"] for r in natural]
    print(f"\ntags per question: mean {sum(map(len, (r['rewrite'] for r in natural))) / n:.2f}"
          f", distinct tag sets {len({frozenset(r['rewrite']) for r in natural})}")
    print(f"typo:               {share(tags['typo'], n)} (target {TYPO_SHARE:.0%})")
    print(f"all lower case:     {share(sum(t == t.lower() for t in texts), n)}")
    print(f"ends with one '?':  {share(sum(not irregular_punctuation(t) for t in texts), n)}")
    print(f"no '?' at all:      {share(sum('?' not in t for t in texts), n)}")
    print(f"ends with '??':     {share(sum(t.endswith('??') for t in texts), n)}")
    print(f"extra whitespace:   {share(sum('  ' in t or t != t.strip() for t in texts), n)}")
    print(f"starts with a question word or auxiliary: "
          f"{share(sum(bool(WH_START.match(t)) for t in texts), n)}")
    openings = Counter(" ".join(t.casefold().split()[:2]) for t in texts).most_common(5)
    print("commonest openings: " + "; ".join(f"{o!r} {c}" for o, c in openings))
    low = [t for t in TAGS if t != "typo" and tags[t] < 0.1 * n]
    if low:
        print(f"note: under 10% of the set: {', '.join(low)}")
    want = round(TYPO_SHARE * n)
    if abs(tags["typo"] - want) > 1:
        return [f"typo on {tags['typo']} questions, want {want} (+-1)"]
    return []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", type=Path, default=SET_DIR,
                    help="folder with questions.json (rewritten) and written.json")
    ap.add_argument("--dev", type=Path, default=None,
                    help="2Wiki dev questions [the data root's 2wikimultihopqa/questions.json]")
    add_data_option(ap)
    args = ap.parse_args()
    dev = load(args.dev or wiki_questions(data_root(args.data)))
    natural = load(args.set / "questions.json")
    written = load(args.set / "written.json")
    subset_ids = json.loads(SUBSETS.read_text(encoding="utf-8"))["2wiki"]["ids"]
    by_id = {q["id"]: q for q in dev}
    problems = check_records(natural, written, by_id, expected_selection(dev, subset_ids))
    for rec in natural:
        if rec.get("id") in by_id:
            problems += check_rewrite(rec)
    problems += report(natural, dev)
    if problems:
        print(f"\n{len(problems)} violation(s):")
        for p in problems:
            print("  " + p)
        sys.exit(1)
    print("\nOK: all checks passed")


if __name__ == "__main__":
    main()
