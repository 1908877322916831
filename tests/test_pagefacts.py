"""compare_dates and person_fact: dates and places read from pages, compared without a
model, on the command line and as the default agent's calls for the questions they settle."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import page_fact, records_index

import sleuth
from sleuth.facts.asks import comparison, fact_question
from sleuth.facts.dates import Comparison, Date
from sleuth.facts.kin import Family, Relative, extends, family, nationality
from sleuth.facts.lives import FactQuestion
from sleuth.llm import OpenAIClient
from sleuth.settings import Settings
from sleuth.testing.fake import FakeLLMServer, reply

FILMS = [
    {"id": "harbour", "title": "The Quiet Harbour", "text": "The Quiet Harbour is a 1954 drama "
     "film directed by Marta Velasquez Orozco and starring Anita Lind."},
    {"id": "salt", "title": "Salt And Iron", "text": "Salt And Iron is a 1961 war film "
     "starring Peter Holm. It was produced by Tomas Brandt and directed by Holm."},
    {"id": "orozco", "title": "Marta Velasquez Orozco", "text": "Marta Velasquez Orozco( 2 "
     "March 1912, Guadalajara – 9 June 1990) was a Mexican film director."},
    {"id": "holm", "title": "Peter Holm", "text": "Peter Holm (born Peter Holmqvist; 17 "
     "September 190030 April 1985) was a Swedish actor and director."},
    {"id": "fog", "title": "Fog Over Lund", "text": "Fog Over Lund is a film directed by "
     "Karin Sjöberg. It was released in 1948."},
]
BORN_FIRST = "Which film has the director who was born first, The Quiet Harbour or Salt And Iron?"


@pytest.fixture(scope="module")
def films_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return records_index(tmp_path_factory, "films", FILMS)


@pytest.mark.parametrize(("text", "event", "expected"), [
    ("Eduardo De Filippo( 24 May 1900 – 31 October 1984), also known as Eduardo", "born",
     Date(1900, 5, 24)),
    ("Eduardo De Filippo( 24 May 1900 – 31 October 1984), also known as Eduardo", "died",
     Date(1984, 10, 31)),
    ("Frank Tuttle( August 6, 1892 – January 6, 1963) was a director.", "born",
     Date(1892, 8, 6)),
    ("Hassan Al- Qeed( born 13 April 1998), he is a football player.", "born",
     Date(1998, 4, 13)),
    ("Hassan Al- Qeed( born 13 April 1998), he is a football player.", "died", None),
    ("Richard Wesley (– 31 January 1758) was an Irish peer.", "died", Date(1758, 1, 31)),
    ("Ertem Eğilmez( 18 February 1929, Trabzon – 21 September 1989, Istanbul)", "died",
     Date(1989, 9, 21)),
    # two births: none settled (a comparison weighs both)
    ("John Adams( 1672 or 1673 – 1745) was a merchant.", "born", None),
    # a year run into the next date, the dash lost, as some pages have it
    ("Jules White( born Julius Weiss; 17 September 190030 April 1985) was a director.",
     "died", Date(1985, 4, 30)),
    ("Richard Widmark (December 26, 1914March 24, 2008) was an actor.", "born",
     Date(1914, 12, 26)),
    ("Howard Hawks( May 30, 1896 December 26, 1977) was a director.", "died",
     Date(1977, 12, 26)),
    ("Martino Finotto( born 11 November 1933 in Camporosso, died 13 August 2014) was a "
     "racing driver.", "died", Date(2014, 8, 13)),
    ("Vivian Naefe( b. March 21, 1953 in Hamburg) is a director.", "born", Date(1953, 3, 21)),
    ("Ann Hui is a director. She was born on 23 May 1947 in Anshan.", "born",
     Date(1947, 5, 23)),
    # a work's date: after "released" and the like, else the page's first
    ("Trashed is a single by Skin from 2002. The single was released in June 2003.", "date",
     Date(2003, 6)),
    ("Mutiny is a 1952 American adventure film, 110 minutes long.", "date", Date(1952)),
    ("The tower is 1200 m high and has 3,500 steps.", "date", None),
])
def test_the_date_the_page_gives_is_read(text: str, event: str,
                                                  expected: Date | None) -> None:
    fact = {"born": "birth_date", "died": "death_date", "date": "date"}[event]
    assert page_fact(text, fact) == expected


def test_dates_compare_only_at_the_precision_both_give() -> None:
    assert Date(1950).before(Date(1951, 3)) is True
    assert Date(1950).before(Date(1950, 3)) is None
    assert Date(1950, 3, 2).before(Date(1950, 3, 1)) is False
    page = "Ada Lunt( 1 May 1900 – 2 June 1950) was a weaver."
    assert (page_fact(page, "birth_date"), page_fact(page, "death_date")) == \
        (Date(1900, 5, 1), Date(1950, 6, 2))
    assert page_fact("Ada Lunt( born 1 May 1900) is a weaver.", "death_date") is None


@pytest.mark.parametrize(("question", "expected"), [
    ("Who was born first, Hywel Teifi Edwards or Felix Schuster?",
     Comparison(("Hywel Teifi Edwards", "Felix Schuster"), "born", "earliest")),
    ("Was Angus Wagner or Juan Carlos Falcón born first?",
     Comparison(("Angus Wagner", "Juan Carlos Falcón"), "born", "earliest")),
    ("Who was born first out of C. Maurice Patterson and Maj-Briht Bergström-Walan?",
     Comparison(("C. Maurice Patterson", "Maj-Briht Bergström-Walan"), "born", "earliest")),
    ("Who is younger, Isaac P. Walker or Nakkhatra Mangala?",
     Comparison(("Isaac P. Walker", "Nakkhatra Mangala"), "born", "latest")),
    ("Who died later, Charles Fechter or Félix De Blochausen?",
     Comparison(("Charles Fechter", "Félix De Blochausen"), "died", "latest")),
    ("Who lived longer, Louis Ncamiso Ndlovu or Raymond Balze?",
     Comparison(("Louis Ncamiso Ndlovu", "Raymond Balze"), "lived", "latest")),
    # a title with a comma, a capitalised "Or" and a question mark of its own stay whole
    ("Which film came out earlier, A Slave Of Love or Remorse, A Story Of The Red Plague?",
     Comparison(("A Slave Of Love", "Remorse, A Story Of The Red Plague"), "date",
                "earliest")),
    ("Which film has the director who died later, Jára Cimrman Lying, Sleeping or Mr. Ace?",
     Comparison(("Jára Cimrman Lying, Sleeping", "Mr. Ace"), "died", "latest", "director")),
    ("Which film has the director born first, Killer: Dead Or Alive or Adultery: A User'S "
     "Guide?", Comparison(("Killer: Dead Or Alive", "Adultery: A User'S Guide"), "born",
                          "earliest", "director")),
    ("Which film whose director is younger, Tall Man Riding or Şalvar Davası?",
     Comparison(("Tall Man Riding", "Şalvar Davası"), "born", "latest", "director")),
    ("Which film has the producer died later, A Midnight Romance or The Bedford Incident?",
     Comparison(("A Midnight Romance", "The Bedford Incident"), "died", "latest",
                "producer")),
    ("Which magazine was founded first, Racing Toward Diversity or Lo Scolaro?",
     Comparison(("Racing Toward Diversity", "Lo Scolaro"), "date", "earliest")),
    ("Which film was released more recently, No Path Through Fire or Bright Leaf?",
     Comparison(("No Path Through Fire", "Bright Leaf"), "date", "latest")),
    # questions no date settles
    ("Are Vivicca Whitsett and Pepa (Rapper) from the same country?", None),
    ("Who was the first wife of Henry Ford?", None),
    ("Who came first in the race, Ann or Bob?", None),
    ("Which river is longer, the Nile or the Amazon?", None),
    ("What is the date of death of the director of film Mutiny?", None),
    ("How is the relationship between Roxie Daymon and Governor Morock depicted, regarding "
     "their legal affairs, and how did she later learn about her family from Aunt Patsy "
     "Perkins and the estate in Chicago?", None),
])
def test_comparison_reads_what_a_question_compares(question: str,
                                                   expected: Comparison | None) -> None:
    assert comparison(question) == expected


def test_compare_on_the_command_line(films_index: Path, sleuth) -> None:  # type: ignore[no-untyped-def]
    args = ("--event", "born", "--relation", "director", "--index", str(films_index))
    result = sleuth("compare", "The Quiet Harbour", "Salt And Iron", *args)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert "director Marta Velasquez Orozco [harbour#0]; born 2 March 1912 [orozco#0]" in \
        lines[1]
    # "directed by Holm": the surname stands for the person the page named before
    assert "director Peter Holm [salt#0]; born 17 September 1900 [holm#0]" in lines[2]
    assert lines[-2:] == ["So Salt And Iron has the director who was born first.",
                          "Answer: Salt And Iron"]
    data = sleuth("compare", "The Quiet Harbour", "Salt And Iron", "--order", "latest",
                  *args, "--json").json()
    assert data["answer"] == "The Quiet Harbour"  # type: ignore[index]
    assert [e["date"] for e in data["entities"]] == ["2 March 1912", "17 September 1900"]  # type: ignore[index]


def test_compare_says_what_it_could_not_settle(films_index: Path, sleuth) -> None:  # type: ignore[no-untyped-def]
    index = ("--index", str(films_index))
    # Karin Sjöberg has no page: her dates are not taken from another page
    out = sleuth("compare", "The Quiet Harbour", "Fog Over Lund", "--event", "born",
                 "--relation", "director", *index).out
    assert "Fog Over Lund: director Karin Sjöberg [fog#0]; no page titled Karin Sjöberg" in out
    assert out.rstrip().endswith("Not settled: no date for Fog Over Lund; search their pages "
                                 "(keyword_search) or read them (chunk_read).")
    out = sleuth("compare", "The Quiet Harbour", "Nowhere Film", *index).out
    assert "- Nowhere Film: no page titled so found" in out
    # works' own dates
    out = sleuth("compare", "The Quiet Harbour", "Fog Over Lund", *index).out
    assert out.rstrip().endswith("So Fog Over Lund is dated earliest.\nAnswer: Fog Over Lund")


def test_a_settled_question_is_answered_with_the_verdict_without_a_model_call(
        films_index: Path) -> None:
    with FakeLLMServer([]) as server:
        answer = sleuth.ask(BORN_FIRST, index=films_index, agent="hybrid",
                            llm=OpenAIClient("fake-model", server.base_url))
        assert server.requests == []
    assert [s.tool_name for s in answer.trajectory] == ["hybrid_search", "compare_dates"]
    # the verdict, citing the pages its dates were read from
    assert answer.answer == "Salt And Iron [harbour#0] [orozco#0] [salt#0] [holm#0]"
    assert [c.chunk_id for c in answer.citations] == ["harbour#0", "orozco#0", "salt#0",
                                                      "holm#0"]
    assert answer.llm_calls == 0 and answer.loops == 0


def test_the_default_agent_compares_dates_before_its_first_call(films_index: Path) -> None:
    model = {"settled_answers": "model"}  # the model writes the answer from the verdict
    script = [reply("Salt And Iron [salt#0] [holm#0]."),
              reply("The documents do not say."), reply("Unknown.")]
    with FakeLLMServer(script) as server:
        answer = sleuth.ask(BORN_FIRST, index=films_index, agent="hybrid",
                            settings=Settings.load(agent=model),
                            llm=OpenAIClient("fake-model", server.base_url))
        other = sleuth.ask("Who directed The Quiet Harbour?", index=films_index,
                           agent="hybrid", llm=OpenAIClient("fake-model", server.base_url))
        first, said, second = server.requests
    assert [s.tool_name for s in answer.trajectory] == ["hybrid_search", "compare_dates"]
    assert answer.trajectory[1].tool_input == {
        "entities": ["The Quiet Harbour", "Salt And Iron"], "event": "born",
        "order": "earliest", "relation": "director"}
    call, result = first["messages"][-2:]
    assert call["tool_calls"][0]["function"]["name"] == "compare_dates"
    assert result["content"].endswith("Answer: Salt And Iron")
    # offered where it applies; elsewhere the prompt stays as it was
    assert "compare_dates" in [t["function"]["name"] for t in first["tools"]]
    # a question no tool applies to: the answer from the first passages (no tools offered),
    # then, where that says the documents do not say, the loop without compare_dates
    assert "tools" not in said
    assert "compare_dates" not in [t["function"]["name"] for t in second["tools"]]
    assert [s.tool_name for s in other.trajectory] == ["hybrid_search", "answer_first"]
    assert answer.answer.startswith("Salt And Iron") and \
        {"salt#0", "holm#0"} <= {c.chunk_id for c in answer.citations}


LIFE = ("birth_date", "birth_place", "death_date", "death_place")


def _life(*read: object) -> tuple[object, ...]:
    """What a page settles of each of :data:`LIFE`, None where not given."""
    return tuple(read) + (None,) * (len(LIFE) - len(read))


@pytest.mark.parametrize(("text", "expected"), [
    ("Helmut Käutner (born 25 March 1908 in Düsseldorf, Germany; died 20 April 1980 in "
     "Castellina in Chianti, Italy) was a German film director.",
     _life(Date(1908, 3, 25), "Düsseldorf, Germany", Date(1980, 4, 20),
          "Castellina in Chianti, Italy")),
    ("Christian August (29 November 1690, in Dornburg – 16 March 1747, in Zerbst) was a "
     "German prince.", _life(Date(1690, 11, 29), "Dornburg", Date(1747, 3, 16), "Zerbst")),
    ("Infanta María (Madrid, 23 June 1862 – Schloss Nymphenburg, Munich, 4 December 1946) "
     "was an infanta.", _life(Date(1862, 6, 23), "Madrid", Date(1946, 12, 4),
                             "Schloss Nymphenburg, Munich")),
    ("Albert S. Rogell( August 21, 1901 Oklahoma City, Oklahoma- April 7, 1988 Los Angeles, "
     "California) was a director.", _life(Date(1901, 8, 21), "Oklahoma City, Oklahoma",
                                         Date(1988, 4, 7), "Los Angeles, California")),
    ("Frederick William( 25 October 1768, The Hague – 9 January 1816, Weilburg) was a ruler.",
     _life(Date(1768, 10, 25), "The Hague", Date(1816, 1, 9), "Weilburg")),
    ("Anna Rajecka (c.1762, Warsaw – 1832, Paris), was a painter.",
     _life(Date(1762), "Warsaw", Date(1832), "Paris")),
    # from sentences: the place after "born ... in", cut where a clause begins
    ("Leo Maloney was an actor. Maloney was born in Santa Rosa, California and built a "
     "studio. He died in Ukiah, California.",
     _life(None, "Santa Rosa, California", None, "Ukiah, California")),
    ("Frank Sinatra was a singer. Born to Italian immigrants in Hoboken, New Jersey, Sinatra "
     "began his career in the swing era.", _life(None, "Hoboken, New Jersey")),
    ("Schwartz was a composer. Schwartz died in Siversky, near Saint Petersburg, on 27 "
     "December 2009.", _life(None, None, Date(2009, 12, 27), "Siversky")),
    ("Denys Desjardins (born 1966 in Montreal, Quebec), is a film director.",
     _life(Date(1966), "Montreal, Quebec")),
    ("Henry Ford (July 30, 1863 – April 7, 1947) was an American industrialist.",
     _life(Date(1863, 7, 30), None, Date(1947, 4, 7), None)),
])
def test_births_and_deaths_are_read_from_a_lead(text: str, expected: tuple[object, ...]) -> None:
    assert tuple(page_fact(text, fact) for fact in LIFE) == expected


def test_a_date_is_shown_as_the_page_writes_it() -> None:
    assert str(page_fact("Eduardo Frei (January 16, 1911 – January 22, 1982) was a "
                         "president.", "death_date")) == "January 22, 1982"
    assert str(Date(1982, 1, 22)) == "22 January 1982"


@pytest.mark.parametrize(("question", "expected"), [
    ("What is the place of birth of the director of film Peter'S Friends?",
     FactQuestion("Peter'S Friends", "birth_place", "director")),
    ("Where was the performer of song Come Dance With Me (Song) born?",
     FactQuestion("Come Dance With Me (Song)", "birth_place", "performer")),
    ("Where did Sylvia Burka's husband die?", FactQuestion("Sylvia Burka", "death_place",
                                                           "husband")),
    ("When did the composer of film The Sparrow'S Fluttering die?",
     FactQuestion("The Sparrow'S Fluttering", "death_date", "composer")),
    ("What is the date of death of Alfonso Pérez De Guzmán, 5Th Duke Of Medina Sidonia's "
     "father?", FactQuestion("Alfonso Pérez De Guzmán, 5Th Duke Of Medina Sidonia",
                             "death_date", "father")),
    ("Where was the place of death of the director of film Tabitha, Stand Up?",
     FactQuestion("Tabitha, Stand Up", "death_place", "director")),
    ("When was Wolfgang Amadeus Mozart born?",
     FactQuestion("Wolfgang Amadeus Mozart", "birth_date")),
    ("Where did Prince Ferdinand Of Bavaria's mother die?",
     FactQuestion("Prince Ferdinand Of Bavaria", "death_place", "mother")),
    ("Where was the place of death of the mother of Louis XV?",
     FactQuestion("Louis XV", "death_place", "mother")),
    ("Where was the place of burial of Ada Of Holland's husband?",
     FactQuestion("Ada Of Holland", "burial_place", "husband")),
    # relatives, through one page or two
    ("Who is the paternal grandfather of Margaret Of Bavaria, Marchioness Of Mantua?",
     FactQuestion("Margaret Of Bavaria, Marchioness Of Mantua", "father", "father")),
    ("Who is Karl Von Habsburg's paternal grandmother?",
     FactQuestion("Karl Von Habsburg", "mother", "father")),
    ("Who is the father-in-law of Mary Hay?", FactQuestion("Mary Hay", "father", "spouse")),
    ("Who is the mother of John I, Count Palatine Of Simmern?",
     FactQuestion("John I, Count Palatine Of Simmern", "mother")),
    ("Who is the father of the director of film Battle In Seattle?",
     FactQuestion("Battle In Seattle", "father", "director")),
    ("Who is the spouse of the director of film Where Mountains Float?",
     FactQuestion("Where Mountains Float", "spouse", "director")),
    ("What nationality is Ameena Begum's husband?",
     FactQuestion("Ameena Begum", "nationality", "husband")),
    ("Which country the director of film A Man Called Hero is from?",
     FactQuestion("A Man Called Hero", "nationality", "director")),
    ("Who is the paternal grandfather of the director of film X?", None),  # three pages
    ("Who is Colgú Mac Faílbe Flaind's uncle?", None),
    ("Where was the film Mutiny shot?", None),
    ("Who directed The Quiet Harbour?", None),
])
def test_fact_question_reads_what_a_question_asks_of_whom(
        question: str, expected: FactQuestion | None) -> None:
    assert fact_question(question) == expected


def test_person_fact_on_the_command_line(films_index: Path, sleuth) -> None:  # type: ignore[no-untyped-def]
    index = ("--index", str(films_index))
    out = sleuth("fact", "The Quiet Harbour", "birth_place", "--relation", "director",
                 *index).out.splitlines()
    assert out[1] == "- The Quiet Harbour: director Marta Velasquez Orozco [harbour#0]"
    assert out[2].startswith("- Marta Velasquez Orozco: born in Guadalajara [orozco#0]")
    assert out[-1] == "Answer: Guadalajara"
    data = sleuth("fact", "Peter Holm", "death_date", *index, "--json").json()
    assert data["answer"] == "30 April 1985" and data["chunk_id"] == "holm#0"  # type: ignore[index]
    out = sleuth("fact", "Peter Holm", "death_place", *index).out
    assert "- Peter Holm: its page [holm#0] gives no death place" in out
    assert out.rstrip().endswith("Not found: the pages read do not state the death place.")


def test_the_default_agent_reads_a_birthplace_before_its_first_call(films_index: Path) -> None:
    asked = "Where was the director of film The Quiet Harbour born?"
    with FakeLLMServer([reply("Guadalajara [orozco#0].")]) as server:
        answer = sleuth.ask(asked, index=films_index, agent="hybrid",
                            settings=Settings.load(agent={"settled_answers": "model"}),
                            llm=OpenAIClient("fake-model", server.base_url))
        (request,) = server.requests
    assert [s.tool_name for s in answer.trajectory] == ["hybrid_search", "person_fact"]
    assert request["messages"][-1]["content"].endswith("Answer: Guadalajara")
    assert "person_fact" in [t["function"]["name"] for t in request["tools"]]
    assert "compare_dates" not in [t["function"]["name"] for t in request["tools"]]
    assert answer.answer.startswith("Guadalajara")


@pytest.mark.parametrize(("text", "expected"), [
    ("Margaret (1442–1479) was married in 1463 to Federico I Gonzaga, Marquess of Mantua. "
     "She was the daughter of Albert III, Duke of Bavaria and Anna of Brunswick-Grubenhagen.",
     Family((Relative("Albert III, Duke of Bavaria", "male"),
             Relative("Anna of Brunswick-Grubenhagen", "female")),
            (Relative("Federico I Gonzaga, Marquess of Mantua", "male"),))),
    # born ... to; a title after a comma, a lost space before a parenthesis, a broken hyphen
    ("He was born in Rabat to Henri, Count of Paris( the claimant from 1940) and his wife, "
     "Princess Isabelle of Orléans- Braganza.",
     Family((Relative("Henri, Count of Paris", "male"),
             Relative("Princess Isabelle of Orléans-Braganza", "female")))),
    # "his wife" inside the parents' phrase is a parent's, not the page's person's
    ("Louis (1729–1765) was the only surviving son of King Louis XV of France and his "
     "wife, Queen Marie Leszczyńska.",
     Family((Relative("King Louis XV of France", "male"),
             Relative("Queen Marie Leszczyńska", "female")))),
    # an aside between dashes, a one-word name that goes with the one before
    ("The daughter of King Stanisław Leszczyński—Stanislaus I of Poland–and Catherine "
     "Opalińska, she married King Louis XV of France.",
     Family((Relative("King Stanisław Leszczyński", "male"),
             Relative("Catherine Opalińska", "female")),
            (Relative("King Louis XV of France", "male"),))),
    ("The eldest son of Charles I and IV, the last Emperor of Austria and King of Hungary, "
     "and his wife, Zita of Bourbon-Parma, Otto was born in 1912.",
     Family((Relative("Charles I and IV", "male"), Relative("Zita of Bourbon-Parma",
                                                            "female")))),
    # the words do not say who is who: the tool asks the parents' pages
    ("She is the daughter of actors Amrita Singh and Saif Ali Khan. Khan was married to his "
     "first wife, Amrita Singh, after which he married the actress Kareena Kapoor.",
     Family((Relative("Amrita Singh"), Relative("Saif Ali Khan")),
            (Relative("Kareena Kapoor", "female"),))),
    # a phrase that goes on names the other parent; a brother is no parent
    ("Edsel Ford was the son of Clara Jane Bryant Ford and the only child of Henry Ford.",
     Family((Relative("Clara Jane Bryant Ford"), Relative("Henry Ford")))),
    ("Belgutei was the son of Yesugei and half-brother to Genghis Khan.",
     Family((Relative("Yesugei"),))),
    ("Frederick was born in 1417 to Stephen, Count Palatine of Simmern and Zweibrücken and "
     "his wife, Anna of Veldenz. Frederick married Margaret of Guelders.",
     Family((Relative("Stephen, Count Palatine of Simmern and Zweibrücken", "male"),
             Relative("Anna of Veldenz", "female")), (Relative("Margaret of Guelders"),))),
    ("Pirani Ameena Begum (8 May 1892 – 1 May 1949) was the wife of Sufi Master Inayat Khan.",
     Family((), (Relative("Sufi Master Inayat Khan"),))),
    ("His father was Jan Kowalski, a carpenter.", Family((Relative("Jan Kowalski", "male"),))),
    # a spouse named again by a first name is the same one; the page's full form is kept
    ("In 1932 Fernando Cortés married María del Pilar Cordero, who adopted the stage name of "
     "Mapy Cortés. He promoted the career of his wife Mapy, who became a noted vedette.",
     Family((), (Relative("María del Pilar Cordero (Mapy Cortés)"),))),
    ("He married Anne Smith in 1900. His wife Anne was a painter.",
     Family((), (Relative("Anne Smith"),))),
    ("Bjarne Henning-Jensen was a Danish film director.", Family()),
    # a title after a comma, and the one word after "and" that goes on with it
    ("Ermesinda was a daughter of Bernard-Roger, Count of Bigorre and his wife Garsenda, "
     "Heiress of Bigorre.",
     Family((Relative("Bernard-Roger, Count of Bigorre", "male"),
             Relative("Garsenda, Heiress of Bigorre", "female")))),
    ("She was the wife of Prince Arthur, Duke of Connaught and Strathearn.",
     Family((), (Relative("Prince Arthur, Duke of Connaught and Strathearn", "male"),))),
])
def test_family_reads_parents_and_spouses_from_a_lead(text: str, expected: Family) -> None:
    assert family(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("Alfred Zinnemann( April 29, 1907 – March 14, 1997) was an Austrian- born American film "
     "director.", "Austrian-born American"),
    ("He was an Austrian-born composer.", "Austrian"),
    ("Hans J. Salter (January 14, 1896 – July 23, 1994) was an Austrian-American film "
     "composer.", "Austrian-American"),
    ("Aristarete was an ancient Greek painter.", "Greek"),
    ("Sara Ali Khan (born 12 August 1995) is an Indian actress.", "Indian"),
    # names are no nationality, nor is a faith
    ("Prince Jacques (born 1941) is the son of Henri, Count of Paris.", None),
    ("Belgutei was the son of Yesugei and half-brother to Genghis Khan.", None),
    ("He was a Lutheran pastor in Ohio.", None),
    ("Andrew Lau (born 4 April 1960) is a Hong Kong film director.", None),
])
def test_nationality_reads_the_lead(text: str, expected: str | None) -> None:
    assert nationality(text) == expected


@pytest.mark.parametrize(("longer", "name", "expected"), [
    ("Prince Arthur, Duke of Connaught and Strathearn", "Prince Arthur, Duke of Connaught",
     True),
    ("Princess Madeleine, Duchess of Hälsingland", "Princess Madeleine", True),
    ("Hugh de Stafford, 2nd Earl of Stafford", "Hugh Stafford, 2nd Earl of Stafford", True),
    # a word of the name itself is another person, not a fuller form
    ("Henry Ford II", "Henry Ford", False),
    ("John Dickens Jr", "John Dickens", False),
    ("Mary Smith, Countess of Arran", "Jane Smith", False),
])
def test_a_fuller_name_adds_only_particles_and_a_title(longer: str, name: str,
                                                        expected: bool) -> None:
    assert extends(longer, name) is expected


FAMILY = [
    {"id": "margaret", "title": "Margaret of Bavaria", "text": "Margaret of Bavaria (1442–1479)"
     " was a marchioness. She was the daughter of Albert III, Duke of Bavaria and Anna of "
     "Brunswick."},
    {"id": "albert", "title": "Albert III, Duke of Bavaria", "text": "Albert III (27 March 1401"
     " – 29 February 1460) was Duke of Bavaria-Munich. He was born in Wolfratshausen to "
     "Ernest, Duke of Bavaria and Elisabetta Visconti."},
    {"id": "sara", "title": "Sara Tamsin Ray", "text": "Sara Tamsin Ray (born 1995) is an "
     "Indian actress, the daughter of actors Amrita Vale and Saif Orlo Ray."},
    {"id": "saif", "title": "Saif Orlo Ray", "text": "Saif Orlo Ray (born 1970) is an Indian "
     "actor. He was married to his first wife, Amrita Vale, after which he married Kareena "
     "Lind. He lives in Mumbai."},
    {"id": "john", "title": "John of Simmern", "text": "John of Simmern (1459–1509) was a "
     "count. John was born in 1459 to Frederick of Simmern."},
    {"id": "frederick", "title": "Frederick of Simmern", "text": "Frederick of Simmern "
     "(1417–1480) was a count. In 1454 Frederick married Margaret of Guelders. He died in "
     "Simmern and was buried in Ravengiersburg Abbey."},
    # a father with no page, named more fully by the mother's page
    {"id": "margit", "title": "Princess Margit of Osterland", "text": "Princess Margit of "
     "Osterland (1882–1920) was a princess. She was the elder daughter of Prince Aldric, "
     "Duke of Varn, and his wife Princess Liese of Holm."},
    {"id": "liese", "title": "Princess Liese of Holm", "text": "Princess Liese of Holm "
     "(1860–1917) was a German princess, the wife of Prince Aldric, Duke of Varn and "
     "Strathmoor."},
]


@pytest.fixture(scope="module")
def family_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return records_index(tmp_path_factory, "family", FAMILY)


def test_person_fact_follows_relatives_from_page_to_page(family_index: Path,
                                                         sleuth) -> None:  # type: ignore[no-untyped-def]
    index = ("--index", str(family_index))
    out = sleuth("fact", "Margaret of Bavaria", "father", "--relation", "father",
                 *index).out.splitlines()
    assert out[1].startswith("- Margaret of Bavaria: father Albert III, Duke of Bavaria "
                             "[margaret#0]")
    assert out[2].startswith("- Albert III, Duke of Bavaria: father Ernest, Duke of Bavaria "
                             "[albert#0]")
    assert out[-1] == "Answer: Ernest, Duke of Bavaria"
    # "actors A and B" says nobody's sex: B's page ("He") makes B the father
    data = sleuth("fact", "Sara Tamsin Ray", "father", *index, "--json").json()
    assert data["answer"] == "Saif Orlo Ray"  # type: ignore[index]
    data = sleuth("fact", "Sara Tamsin Ray", "spouse", "--relation", "father", *index,
                  "--json").json()
    assert data["answer"] == "Amrita Vale and Kareena Lind"  # type: ignore[index]
    # a mother the page does not name: the father's page says whom he married
    data = sleuth("fact", "John of Simmern", "mother", *index, "--json").json()
    assert data["answer"] == "Margaret of Guelders"  # type: ignore[index]
    data = sleuth("fact", "John of Simmern", "burial_place", "--relation", "father", *index,
                  "--json").json()
    assert data["answer"] == "Ravengiersburg Abbey"  # type: ignore[index]
    data = sleuth("fact", "Saif Orlo Ray", "nationality", *index, "--json").json()
    assert data["answer"] == "Indian"  # type: ignore[index]
    out = sleuth("fact", "Frederick of Simmern", "father", *index).out
    assert "its page [frederick#0] gives no father" in out
    # a parent with no page of their own, as the other parent's page names them in full
    data = sleuth("fact", "Princess Margit of Osterland", "father", *index, "--json").json()
    assert data["answer"] == "Prince Aldric, Duke of Varn and Strathmoor"  # type: ignore[index]


def test_the_default_agent_reads_a_grandfather_before_its_first_call(
        family_index: Path) -> None:
    asked = "Who is the paternal grandfather of Margaret Of Bavaria?"
    with FakeLLMServer([]) as server:
        answer = sleuth.ask(asked, index=family_index, agent="hybrid",
                            llm=OpenAIClient("fake-model", server.base_url))
        assert server.requests == []  # settled: the verdict is the answer
    assert [s.tool_name for s in answer.trajectory] == ["hybrid_search", "person_fact"]
    assert answer.trajectory[1].tool_input == {"entity": "Margaret Of Bavaria",
                                               "fact": "father", "relation": "father"}
    assert answer.answer == "Ernest, Duke of Bavaria [margaret#0] [albert#0]"


def test_a_fact_the_pages_do_not_state_lets_the_model_answer_at_once(
        films_index: Path) -> None:
    # Karin Sjöberg has no page: the tool says so, and the model is not forced to search on
    # (a tool that applied has looked the question's entities up)
    asked = "Where did the director of film Fog Over Lund die?"
    with FakeLLMServer([reply("The passages do not say [fog#0].")]) as server:
        answer = sleuth.ask(asked, index=films_index, agent="hybrid",
                            llm=OpenAIClient("fake-model", server.base_url))
        (request,) = server.requests
    assert [s.tool_name for s in answer.trajectory] == ["hybrid_search", "person_fact"]
    assert request["messages"][-1]["content"].endswith(
        "Not found: the pages read do not state the death place.")
    assert "tool_choice" not in request
