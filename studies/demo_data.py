r"""Synthetic demo dataset for Concordia.

IMPORTANT: everything produced by this module is SYNTHETIC. The twelve news-style
source texts, their reference summaries and all system outputs were written by
the Concordia project itself (the stories, people, places and figures are
invented). The "systems" are not real summarisation models but *controlled
degradations* of a hand-written summary, and the "human" scores are NOT real
human judgments: they are simulated annotator ratings drawn from a seeded random
generator around a base score chosen to match the expected effect of each
degradation. The dataset exists only to demonstrate and test the app; it must
never be presented or analysed as evidence about real systems or real people.

Systems (``system_id``):

* ``faithful`` -- a hand-written, accurate 3-sentence summary.
* ``shuffled`` -- the faithful sentences in a different order (hurts coherence).
* ``dropped-facts`` -- a vague one-sentence summary without the key facts
  (hurts relevance).
* ``injected-errors`` -- the faithful summary with names, numbers or places
  swapped for wrong ones (hurts consistency).
* ``disfluent`` -- the faithful summary with dropped function words, repeated
  words and swapped word pairs (hurts fluency).
* ``lead-3`` -- the first three source sentences verbatim.

Each record has the JSONL layout used by the importer::

    {"doc_id": "demo-01", "system_id": "faithful", "source": "...",
     "references": ["..."], "output": "...",
     "human": {"coherence": 4.33, "consistency": 5.0, "fluency": 4.67,
               "relevance": 4.0},
     "metrics": {"unigram_f1": 0.61, "length_ratio": 0.9}}

Human scores are the mean of three simulated annotators (integers 1-5) rounded
to 2 decimals. Metrics are actually computed from the texts: ``unigram_f1`` is
the unigram-overlap F1 between the output and the best-matching reference and
``length_ratio`` is output words divided by words of the first reference, both
over lowercased ``\w+`` tokens and rounded to 4 decimals.

Everything is deterministic given ``seed``; the only randomness source is a
single ``random.Random(seed)``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ASPECTS",
    "NUM_ANNOTATORS",
    "SYSTEMS",
    "generate_demo_records",
    "write_demo_jsonl",
]

#: Quality aspects rated by the simulated annotators, in output order.
ASPECTS: tuple[str, ...] = ("coherence", "consistency", "fluency", "relevance")

#: System identifiers, in the order records are emitted for each document.
SYSTEMS: tuple[str, ...] = (
    "faithful",
    "shuffled",
    "dropped-facts",
    "injected-errors",
    "disfluent",
    "lead-3",
)

#: Number of simulated annotators averaged into each human score.
NUM_ANNOTATORS = 3

_MIN_SCORE = 1
_MAX_SCORE = 5

_TOKEN_RE = re.compile(r"\w+")

#: Lowercase function words the "disfluent" system may drop.
_FUNCTION_WORDS = frozenset(
    {
        "a", "an", "the", "of", "to", "in", "on", "at", "by", "for", "from",
        "with", "and", "or", "but", "is", "are", "was", "were", "has", "have",
        "had", "will", "be", "its", "their", "it", "that", "after", "so",
        "since", "about", "as",
    }
)  # fmt: skip


@dataclass(frozen=True)
class _Document:
    """One hand-written synthetic news item and its controlled outputs."""

    doc_id: str
    source: tuple[str, ...]
    references: tuple[str, ...]
    faithful: tuple[str, ...]
    vague: str
    errors: tuple[tuple[str, str], ...]


_DOCUMENTS: tuple[_Document, ...] = (
    _Document(
        doc_id="demo-01",
        source=(
            "The Millbrook city council voted 7 to 2 on Tuesday to build 14 "
            "kilometres of protected bike lanes along Harper Avenue.",
            "The project will cost 3.8 million dollars and is expected to be "
            "finished by October 2025.",
            "Council member Rosa Delgado, who proposed the plan, said crashes "
            "involving cyclists on the avenue had doubled since 2019.",
            "Several shop owners opposed the vote, arguing that removing 120 "
            "parking spaces would hurt their business.",
            "Construction is scheduled to begin in March, starting at the "
            "northern end near Lakeview Park.",
        ),
        references=(
            "Millbrook's council voted 7 to 2 to build 14 kilometres of protected "
            "bike lanes on Harper Avenue, a 3.8 million dollar project due to be "
            "finished by October 2025.",
            "The Millbrook council approved protected bike lanes on Harper Avenue "
            "despite objections from shop owners about losing 120 parking spaces.",
        ),
        faithful=(
            "The Millbrook city council voted 7 to 2 to build 14 kilometres of "
            "protected bike lanes on Harper Avenue.",
            "The project will cost 3.8 million dollars and should be finished by October 2025.",
            "Shop owners opposed it because 120 parking spaces will be removed.",
        ),
        vague="A city council voted on a transport project for one of its streets.",
        errors=(
            ("7 to 2", "5 to 4"),
            ("Harper Avenue", "Mercer Street"),
            ("3.8 million", "9.1 million"),
            ("October 2025", "June 2027"),
            ("120", "40"),
        ),
    ),
    _Document(
        doc_id="demo-02",
        source=(
            "A family bakery in Harlow Bay has won the national bread prize for "
            "the second year in a row.",
            "Owner Tomasz Nowak, 58, entered a rye sourdough made with flour from "
            "a mill 30 kilometres away.",
            "The judges tasted 412 loaves from 96 bakeries before announcing the "
            "winner in Leeds on Saturday.",
            "Nowak said he would use the 5,000 pound prize to buy a new stone oven.",
            "The bakery, founded by his parents in 1974, employs 11 people.",
        ),
        references=(
            "Tomasz Nowak's Harlow Bay bakery won the national bread prize for the "
            "second year in a row with a rye sourdough, chosen from 412 loaves "
            "entered by 96 bakeries.",
        ),
        faithful=(
            "A Harlow Bay bakery run by Tomasz Nowak won the national bread prize "
            "for the second year in a row with a rye sourdough.",
            "The judges picked it from 412 loaves entered by 96 bakeries.",
            "Nowak plans to spend the 5,000 pound prize on a new stone oven.",
        ),
        vague="A bakery won a prize for one of its breads.",
        errors=(
            ("Nowak", "Kowalski"),
            ("second", "fourth"),
            ("rye", "wheat"),
            ("412", "250"),
            ("96", "31"),
            ("5,000", "50,000"),
        ),
    ),
    _Document(
        doc_id="demo-03",
        source=(
            "Kenyan runner Alice Wambui won the Riverton Marathon on Sunday in 2 "
            "hours, 21 minutes and 40 seconds, a new course record.",
            "She broke the previous record, set in 2016, by 48 seconds.",
            "More than 18,000 runners took part, the largest field in the race's 35-year history.",
            "Temperatures reached 24 degrees by late morning, and medical staff "
            "treated about 200 runners for heat exhaustion.",
            "Organisers said they would consider an earlier start time next year.",
        ),
        references=(
            "Alice Wambui set a Riverton Marathon course record of 2 hours, 21 "
            "minutes and 40 seconds in a race with more than 18,000 runners.",
            "Kenya's Alice Wambui won the Riverton Marathon in record time, while "
            "the heat left about 200 runners needing medical treatment.",
        ),
        faithful=(
            "Alice Wambui won the Riverton Marathon on Sunday in a course record "
            "of 2 hours, 21 minutes and 40 seconds.",
            "She beat the old record from 2016 by 48 seconds.",
            "More than 18,000 runners took part, and about 200 were treated for heat exhaustion.",
        ),
        vague="A runner won a marathon on Sunday.",
        errors=(
            ("Alice Wambui", "Grace Otieno"),
            ("Riverton", "Eastfield"),
            ("2016", "2009"),
            ("48 seconds", "3 minutes"),
            ("18,000", "6,000"),
            ("200", "20"),
        ),
    ),
    _Document(
        doc_id="demo-04",
        source=(
            "The Oakford Public Library reopened on Monday after an 18-month "
            "renovation that cost 6.5 million dollars.",
            "The building now has solar panels on its roof, a children's wing and "
            "a recording studio that residents can book for free.",
            "Head librarian Marcus Bell said 1,300 people visited on the first "
            "day, about three times the usual number.",
            "The renovation was funded mostly by a local tax approved by voters in 2021.",
            "Opening hours have been extended until 9 pm on weekdays.",
        ),
        references=(
            "The Oakford Public Library reopened after an 18-month, 6.5 million "
            "dollar renovation that added solar panels, a children's wing and a "
            "free recording studio.",
        ),
        faithful=(
            "The Oakford Public Library reopened on Monday after an 18-month "
            "renovation costing 6.5 million dollars.",
            "It added solar panels, a children's wing and a free recording studio.",
            "Head librarian Marcus Bell said 1,300 people visited on the first day.",
        ),
        vague="A library reopened after some work on the building.",
        errors=(
            ("Oakford", "Westbury"),
            ("Monday", "Friday"),
            ("18-month", "five-year"),
            ("6.5 million", "22 million"),
            ("Marcus Bell", "Helen Crane"),
            ("1,300", "300"),
        ),
    ),
    _Document(
        doc_id="demo-05",
        source=(
            "The ferry service between Port Ellery and Gull Island was suspended "
            "on Wednesday after the vessel Marigold struck a submerged rock.",
            "None of the 64 passengers or 6 crew were injured, according to the "
            "operator, Northsound Ferries.",
            "Divers found a 2-metre crack in the hull below the waterline.",
            "The company expects repairs to take at least three weeks and has "
            "chartered two smaller boats to carry islanders in the meantime.",
            "The island's 900 residents depend on the ferry for groceries, mail "
            "and hospital visits.",
        ),
        references=(
            "Ferry service to Gull Island was suspended after the Marigold hit a "
            "rock and cracked its hull, but none of the 64 passengers were hurt.",
            "Northsound Ferries halted the Port Ellery to Gull Island route for at "
            "least three weeks of repairs and chartered two smaller boats.",
        ),
        faithful=(
            "The ferry between Port Ellery and Gull Island was suspended after the "
            "Marigold struck a submerged rock, cracking its hull.",
            "None of the 64 passengers or 6 crew were hurt.",
            "Repairs will take at least three weeks, so the operator has chartered "
            "two smaller boats.",
        ),
        vague="A ferry service was suspended after an accident.",
        errors=(
            ("Gull Island", "Heron Island"),
            ("Marigold", "Seaspray"),
            ("64", "210"),
            ("three weeks", "two days"),
            ("two smaller boats", "a helicopter"),
        ),
    ),
    _Document(
        doc_id="demo-06",
        source=(
            "A team of five students from Fairview High School won the regional "
            "robotics championship in Dunmore on Saturday.",
            "Their robot, nicknamed Pebble, sorted 40 coloured blocks in 92 "
            "seconds, beating 27 other teams.",
            "The students built it in eight weeks using parts from an old printer "
            "and a 150 dollar microcontroller kit.",
            "Teacher Priya Raman said the team will now compete at the national "
            "final in Carlton in May.",
            "The school plans to raise 4,000 dollars to cover travel costs.",
        ),
        references=(
            "Fairview High School's robot Pebble won the regional robotics "
            "championship by sorting 40 blocks in 92 seconds, sending the team to "
            "the national final in May.",
        ),
        faithful=(
            "Five Fairview High School students won the regional robotics "
            "championship in Dunmore on Saturday.",
            "Their robot, Pebble, sorted 40 blocks in 92 seconds to beat 27 other teams.",
            "The team will compete at the national final in Carlton in May.",
        ),
        vague="Some students won a robotics competition.",
        errors=(
            ("Fairview", "Brookside"),
            ("Dunmore", "Ashton"),
            ("40", "15"),
            ("92 seconds", "11 minutes"),
            ("27", "3"),
            ("May", "December"),
        ),
    ),
    _Document(
        doc_id="demo-07",
        source=(
            "A wildfire in the hills east of Santa Lena has burned about 2,400 "
            "hectares since it started on Thursday afternoon.",
            "Fire officials said the blaze was 35 percent contained by Saturday evening.",
            "About 1,100 residents of the villages of Arroyo Seco and Monte Verde "
            "were ordered to evacuate.",
            "Two houses and a barn were destroyed, but no injuries have been reported.",
            "Investigators believe the fire was started by a spark from a power line.",
            "Cooler temperatures forecast for Monday could help crews.",
        ),
        references=(
            "A wildfire east of Santa Lena has burned about 2,400 hectares and "
            "forced 1,100 residents to evacuate, and it was 35 percent contained "
            "by Saturday.",
        ),
        faithful=(
            "A wildfire east of Santa Lena has burned about 2,400 hectares since "
            "Thursday and was 35 percent contained by Saturday.",
            "About 1,100 residents were ordered to evacuate.",
            "Two houses and a barn were destroyed, but no one was injured.",
        ),
        vague="A wildfire is burning and some people had to leave their homes.",
        errors=(
            ("Santa Lena", "San Miguel"),
            ("2,400", "240"),
            ("Thursday", "Monday"),
            ("35 percent", "90 percent"),
            ("1,100", "11,000"),
            ("Two houses", "Forty houses"),
        ),
    ),
    _Document(
        doc_id="demo-08",
        source=(
            "The Calder Museum of History will open an exhibition of 230 letters "
            "written by Victorian engineer Edith Moorcroft on 12 April.",
            "The letters were discovered last year in a trunk in the attic of a "
            "farmhouse near Kelby.",
            "They describe her work on the Ashdown railway viaduct, which was "
            "completed in 1871 and is still in use.",
            "Curator James Okafor said the letters show Moorcroft did much of the "
            "design work credited to her brother.",
            "Entry to the exhibition will be free for the first month.",
        ),
        references=(
            "The Calder Museum of History will display 230 newly found letters by "
            "engineer Edith Moorcroft, which suggest she designed much of the "
            "Ashdown viaduct credited to her brother.",
            "An exhibition of Edith Moorcroft's letters, found in a farmhouse "
            "attic near Kelby, opens at the Calder Museum of History on 12 April.",
        ),
        faithful=(
            "The Calder Museum of History will open an exhibition of 230 letters "
            "by engineer Edith Moorcroft on 12 April.",
            "The letters, found last year in a farmhouse near Kelby, describe her "
            "work on the Ashdown railway viaduct.",
            "They suggest she did much of the design work credited to her brother.",
        ),
        vague="A museum will open an exhibition of old letters.",
        errors=(
            ("230", "45"),
            ("Edith Moorcroft", "Ada Whitlock"),
            ("12 April", "30 September"),
            ("Kelby", "Harrowgate"),
            ("Ashdown", "Penmoor"),
            ("her brother", "her father"),
        ),
    ),
    _Document(
        doc_id="demo-09",
        source=(
            "Battery maker Voltaris announced on Tuesday that it will build a "
            "factory in Greyport, creating 1,500 jobs.",
            "The plant will cost 1.2 billion dollars and produce batteries for "
            "electric buses and trucks.",
            "Chief executive Lena Hartmann said production should start in early 2027.",
            "The regional government is providing 90 million dollars in grants "
            "and a 10-year tax break.",
            "Greyport lost more than 3,000 jobs when its steelworks closed in 2015.",
        ),
        references=(
            "Voltaris will build a 1.2 billion dollar battery factory in Greyport, "
            "creating 1,500 jobs, with production due to start in 2027.",
        ),
        faithful=(
            "Voltaris will build a 1.2 billion dollar battery factory in Greyport, "
            "creating 1,500 jobs.",
            "Chief executive Lena Hartmann said production should start in early 2027.",
            "The regional government is contributing 90 million dollars in grants.",
        ),
        vague="A company announced plans to build a factory.",
        errors=(
            ("Voltaris", "Ampero"),
            ("1.2 billion", "400 million"),
            ("Greyport", "Northam"),
            ("1,500", "150"),
            ("Lena Hartmann", "Paul Fischer"),
            ("2027", "2031"),
            ("90 million", "9 million"),
        ),
    ),
    _Document(
        doc_id="demo-10",
        source=(
            "The Westmere Youth Orchestra performed for 6,000 people at the "
            "open-air Harbour Bowl on Friday night.",
            "Conductor Sofia Lindqvist, 29, led 85 young musicians in a programme "
            "of Dvorak and new works by local composers.",
            "The concert raised 42,000 dollars for music lessons in schools that "
            "have lost funding.",
            "It was the orchestra's first performance since a fire damaged its "
            "rehearsal hall in January.",
            "A second concert has been scheduled for 14 September.",
        ),
        references=(
            "The Westmere Youth Orchestra played to 6,000 people at the Harbour "
            "Bowl, raising 42,000 dollars for school music lessons.",
            "Led by conductor Sofia Lindqvist, 85 young musicians gave the "
            "orchestra's first concert since a January fire damaged its hall.",
        ),
        faithful=(
            "The Westmere Youth Orchestra performed for 6,000 people at the "
            "Harbour Bowl on Friday.",
            "Conductor Sofia Lindqvist led its 85 young musicians.",
            "The concert raised 42,000 dollars for music lessons in schools.",
        ),
        vague="A youth orchestra gave a concert.",
        errors=(
            ("Westmere", "Ravensholm"),
            ("6,000", "600"),
            ("Harbour Bowl", "City Arena"),
            ("Sofia Lindqvist", "Anna Berg"),
            ("85", "12"),
            ("42,000", "4,200"),
        ),
    ),
    _Document(
        doc_id="demo-11",
        source=(
            "Storm Hilda brought winds of up to 140 kilometres per hour to the "
            "coast of Norland on Sunday night.",
            "About 45,000 homes lost power, and some remained without electricity on Tuesday.",
            "The national rail operator cancelled all trains north of Brenton for "
            "24 hours after trees fell on the tracks.",
            "A fisherman was rescued by helicopter after his boat capsized off Cape Mara.",
            "Forecasters expect calmer weather by Thursday.",
        ),
        references=(
            "Storm Hilda hit Norland with winds of 140 kilometres per hour, "
            "cutting power to 45,000 homes and halting trains north of Brenton "
            "for a day.",
        ),
        faithful=(
            "Storm Hilda hit the coast of Norland on Sunday night with winds of up "
            "to 140 kilometres per hour.",
            "About 45,000 homes lost power, and trains north of Brenton were "
            "cancelled for 24 hours.",
            "A fisherman was rescued by helicopter after his boat capsized.",
        ),
        vague="A storm caused problems on Sunday.",
        errors=(
            ("Hilda", "Petra"),
            ("Norland", "Eastvale"),
            ("140", "60"),
            ("45,000", "4,500"),
            ("Brenton", "Fallow Cross"),
            ("24 hours", "two weeks"),
            ("helicopter", "lifeboat"),
        ),
    ),
    _Document(
        doc_id="demo-12",
        source=(
            "Researchers at the University of Kessington have identified a new "
            "species of frog in the cloud forests of the Serra Alta mountains.",
            "The frog, named Pristimantis aurelia, is just 14 millimetres long and "
            "has bright orange eyes.",
            "The team of seven biologists, led by Maria Santos, found it during a "
            "2023 expedition after hearing its unusual high-pitched call.",
            "Only about 50 individuals were counted, living in an area smaller "
            "than 3 square kilometres.",
            "The researchers have asked for the species to be listed as critically endangered.",
        ),
        references=(
            "University of Kessington researchers found a new 14-millimetre frog "
            "species, Pristimantis aurelia, in the Serra Alta mountains and want "
            "it listed as critically endangered.",
            "A team led by Maria Santos discovered a tiny orange-eyed frog in the "
            "Serra Alta cloud forests, with only about 50 known individuals.",
        ),
        faithful=(
            "Researchers at the University of Kessington have found a new frog "
            "species, Pristimantis aurelia, in the Serra Alta mountains.",
            "The frog is just 14 millimetres long, and only about 50 individuals were counted.",
            "The team wants it listed as critically endangered.",
        ),
        vague="Scientists have found a new kind of animal.",
        errors=(
            ("Kessington", "Dunholm"),
            ("Serra Alta", "Sierra Negra"),
            ("14 millimetres", "14 centimetres"),
            ("50", "5,000"),
            ("critically endangered", "of least concern"),
        ),
    ),
)

# Base (expected) rating per system and aspect before noise. Systems whose
# effect depends on how strong the applied degradation was get their
# degraded aspect adjusted in ``_base_scores``.
_BASE_SCORES: dict[str, dict[str, float]] = {
    "faithful": {"coherence": 4.5, "consistency": 4.6, "fluency": 4.6, "relevance": 4.5},
    "shuffled": {"coherence": 2.2, "consistency": 4.3, "fluency": 4.2, "relevance": 4.1},
    "dropped-facts": {"coherence": 4.2, "consistency": 4.4, "fluency": 4.4, "relevance": 1.9},
    "injected-errors": {"coherence": 4.1, "consistency": 2.0, "fluency": 4.3, "relevance": 3.7},
    "disfluent": {"coherence": 2.9, "consistency": 4.0, "fluency": 2.0, "relevance": 3.6},
    "lead-3": {"coherence": 3.3, "consistency": 4.6, "fluency": 4.4, "relevance": 3.3},
}

_DOC_OFFSET_RANGE = 0.35  # per-document difficulty shift, uniform(-r, r)
_ANNOTATOR_BIAS_SD = 0.25  # per-annotator leniency, fixed across the dataset
_RATING_NOISE_SD = 0.45  # per-rating noise


# --------------------------------------------------------------------------
# Text utilities and metrics
# --------------------------------------------------------------------------


def _tokens(text: str) -> list[str]:
    r"""Return lowercased ``\w+`` word tokens of ``text``."""
    return _TOKEN_RE.findall(text.lower())


def _unigram_f1(output: str, reference: str) -> float:
    """Unigram-overlap F1 (clipped counts) between two texts."""
    out_counts = Counter(_tokens(output))
    ref_counts = Counter(_tokens(reference))
    overlap = sum((out_counts & ref_counts).values())
    if overlap == 0:
        return 0.0
    precision = overlap / sum(out_counts.values())
    recall = overlap / sum(ref_counts.values())
    return 2 * precision * recall / (precision + recall)


def _compute_metrics(output: str, references: Sequence[str]) -> dict[str, float]:
    """Compute the automatic metrics for one output against its references."""
    best_f1 = max(_unigram_f1(output, ref) for ref in references)
    ref_len = len(_tokens(references[0]))
    length_ratio = len(_tokens(output)) / ref_len if ref_len else 0.0
    return {
        "unigram_f1": round(best_f1, 4),
        "length_ratio": round(length_ratio, 4),
    }


# --------------------------------------------------------------------------
# Controlled degradations
# --------------------------------------------------------------------------


def _shuffle_sentences(sentences: Sequence[str], rng: random.Random) -> tuple[list[str], bool]:
    """Reorder sentences with a non-identity permutation.

    Returns the reordered sentences and whether the opening sentence was moved
    away from the front (which damages coherence the most).
    """
    identity = tuple(range(len(sentences)))
    permutations = [p for p in itertools.permutations(identity) if p != identity]
    order = rng.choice(permutations)
    return [sentences[i] for i in order], order[0] != 0


def _inject_errors(
    sentences: Sequence[str],
    errors: Sequence[tuple[str, str]],
    rng: random.Random,
) -> tuple[str, int]:
    """Replace 2-3 randomly chosen facts with wrong ones.

    All chosen substitutions are applied simultaneously (whole-word matches)
    so a replacement can never be re-substituted. Returns the corrupted text
    and the number of substitutions used.
    """
    text = " ".join(sentences)
    count = rng.randint(2, min(3, len(errors)))
    chosen = dict(rng.sample(list(errors), count))
    pattern = re.compile(
        r"(?<!\w)(?:"
        + "|".join(re.escape(k) for k in sorted(chosen, key=len, reverse=True))
        + r")(?!\w)"
    )
    return pattern.sub(lambda m: chosen[m.group(0)], text), count


def _make_disfluent(sentences: Sequence[str], rng: random.Random) -> tuple[str, float]:
    """Damage grammar: drop function words, repeat words, swap word pairs.

    Returns the disfluent text and its severity, the fraction of original
    words that were dropped, repeated or moved.
    """
    out_sentences: list[str] = []
    total_words = 0
    damaged = 0
    for sentence in sentences:
        words = sentence.split()
        total_words += len(words)
        new_words: list[str] = []
        for index, word in enumerate(words):
            bare = word.lower().strip(",.")
            if index > 0 and bare in _FUNCTION_WORDS and rng.random() < 0.5:
                damaged += 1
                continue
            new_words.append(word)
            if rng.random() < 0.15:
                new_words.append(word.rstrip(",."))
                damaged += 1
        if len(new_words) > 3 and rng.random() < 0.6:
            i = rng.randrange(1, len(new_words) - 2)
            new_words[i], new_words[i + 1] = new_words[i + 1], new_words[i]
            damaged += 2
        out_sentences.append(" ".join(new_words))
    text = " ".join(out_sentences)
    if damaged == 0:  # guarantee a visible degradation
        first, _, rest = text.partition(" ")
        text = f"{first} {first} {rest}".strip()
        damaged = 1
    return text, damaged / max(total_words, 1)


# --------------------------------------------------------------------------
# Simulated annotators
# --------------------------------------------------------------------------


def _base_scores(system_id: str, severity: float) -> dict[str, float]:
    """Return the expected rating per aspect, adjusted by degradation severity.

    ``severity`` is system specific: 1.0 if the shuffle moved the opening
    sentence (0.0 otherwise), the number of injected errors, or the fraction
    of damaged words for the disfluent system. It is ignored otherwise.
    """
    base = dict(_BASE_SCORES[system_id])
    if system_id == "shuffled":
        base["coherence"] -= 0.4 * severity
    elif system_id == "injected-errors":
        base["consistency"] -= 0.4 * (severity - 2)
    elif system_id == "disfluent":
        base["fluency"] = max(1.3, base["fluency"] + 0.8 - 2.5 * severity)
    return base


def _simulate_human(
    base: dict[str, float],
    doc_offset: float,
    annotator_bias: Sequence[float],
    rng: random.Random,
) -> dict[str, float]:
    """Average three simulated integer ratings per aspect, rounded to 2 dp."""
    scores: dict[str, float] = {}
    for aspect in ASPECTS:
        ratings = []
        for bias in annotator_bias:
            raw = base[aspect] + doc_offset + bias + rng.gauss(0.0, _RATING_NOISE_SD)
            rating = math.floor(raw + 0.5)
            ratings.append(min(_MAX_SCORE, max(_MIN_SCORE, rating)))
        scores[aspect] = round(sum(ratings) / len(ratings), 2)
    return scores


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def generate_demo_records(seed: int = 0) -> list[dict[str, Any]]:
    """Generate the SYNTHETIC demo dataset: 12 documents x 6 systems = 72 records.

    Records are ordered by document (``demo-01`` .. ``demo-12``) and, within a
    document, by :data:`SYSTEMS`. The output is fully determined by ``seed``:
    it drives the shuffle order, which facts are corrupted, the disfluency
    edits and the simulated annotator ratings. The hand-written texts
    (``faithful``, ``dropped-facts`` and ``lead-3`` outputs, sources and
    references) are the same for every seed.
    """
    rng = random.Random(seed)
    annotator_bias = [rng.gauss(0.0, _ANNOTATOR_BIAS_SD) for _ in range(NUM_ANNOTATORS)]
    records: list[dict[str, Any]] = []
    for doc in _DOCUMENTS:
        doc_offset = rng.uniform(-_DOC_OFFSET_RANGE, _DOC_OFFSET_RANGE)

        shuffled, lead_moved = _shuffle_sentences(doc.faithful, rng)
        corrupted, n_errors = _inject_errors(doc.faithful, doc.errors, rng)
        disfluent, damage = _make_disfluent(doc.faithful, rng)
        outputs: dict[str, tuple[str, float]] = {
            "faithful": (" ".join(doc.faithful), 0.0),
            "shuffled": (" ".join(shuffled), 1.0 if lead_moved else 0.0),
            "dropped-facts": (doc.vague, 0.0),
            "injected-errors": (corrupted, float(n_errors)),
            "disfluent": (disfluent, damage),
            "lead-3": (" ".join(doc.source[:3]), 0.0),
        }

        source = " ".join(doc.source)
        references = list(doc.references)
        for system_id in SYSTEMS:
            output, severity = outputs[system_id]
            base = _base_scores(system_id, severity)
            records.append(
                {
                    "doc_id": doc.doc_id,
                    "system_id": system_id,
                    "source": source,
                    "references": list(references),
                    "output": output,
                    "human": _simulate_human(base, doc_offset, annotator_bias, rng),
                    "metrics": _compute_metrics(output, references),
                }
            )
    return records


def write_demo_jsonl(path: str | os.PathLike[str], seed: int = 0) -> int:
    """Write the SYNTHETIC demo records to ``path`` as UTF-8 JSONL.

    One JSON object per line. Returns the number of records written.
    """
    records = generate_demo_records(seed)
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return len(records)


def _main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point: ``python -m studies.demo_data OUT.jsonl``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="output JSONL file")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    count = write_demo_jsonl(args.path, seed=args.seed)
    print(f"wrote {count} synthetic demo records to {args.path}")


if __name__ == "__main__":
    _main()
