"""USR's human judgments (Mehri & Eskenazi, ACL 2020) on Topical-Chat and PersonaChat: for
each of 60 dialogue contexts, 6 responses (4 systems, the original human response and a
new human one) rated by 3 annotators on six qualities.

Layout (the files linked from https://github.com/Shikib/usr, README "Dataset", at commit
b1e50bb: ``http://shikib.com/tc_usr_data.json`` and ``pc_usr_data.json``): one JSON array
of contexts, each ``{"context": dialogue history (turns separated by newlines), "fact":
the knowledge snippet (Topical-Chat) or persona (PersonaChat), "responses": [{"response",
"model", "Understandable": [3 ratings], "Natural": [...], "Maintains Context": [...],
"Engaging": [...], "Uses Knowledge": [...], "Overall": [...]}]}``. ``model`` names the
source of the response (``Original Ground Truth``, ``Argmax Decoding``, ``Nucleus
Decoding (p = 0.3)`` ..., ``New Human Generated``).

Emits one record per response: ``doc_id`` ``tc<i>``/``pc<i>`` (the context's position in
the file), ``system_id`` the ``model``, ``source`` the history, ``context.fact`` the fact,
the original human response as the reference of the others, ``annotators`` ``a1``..``a3``
(anonymous, numbered per response) and ``human`` (mean, or majority for the two 0/1
questions).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from studies.services.sources.build import as_label, human_from, record
from studies.services.sources.readers import fail, find_file, iter_json_array
from studies.services.sources.spec import Benchmark, Conversion, UrlRelease
from studies.services.sources.types import AspectSpec, Licence, Option, Row

PAPER = "Mehri & Eskenazi 2020, USR, section 4 (the annotation questions)"
ASPECTS = (
    AspectSpec.binary(
        "understandable",
        "Is the response understandable in the context of the history? (Not whether it is "
        "on topic: for example, if it uses pronouns they should make sense.)",
        source=PAPER,
    ),
    AspectSpec.scale("natural", 1, 3, "Is the response naturally written?", PAPER),
    AspectSpec.scale(
        "maintains_context",
        1,
        3,
        "Does the response serve as a valid continuation of the conversation history?",
        PAPER,
    ),
    AspectSpec.scale("engaging", 1, 3, "Is the response dull or interesting?", PAPER),
    AspectSpec.binary(
        "uses_knowledge",
        "Given the fact that the response is conditioned on, does the response use that fact?",
        source=PAPER,
    ),
    AspectSpec.scale(
        "overall",
        1,
        5,
        "Given your answers above, what is your overall impression of the quality of this "
        "utterance?",
        PAPER,
    ),
)
_BY_NAME = {spec.name: spec for spec in ASPECTS}
COLUMNS = {
    "understandable": "Understandable",
    "natural": "Natural",
    "maintains_context": "Maintains Context",
    "engaging": "Engaging",
    "uses_knowledge": "Uses Knowledge",
    "overall": "Overall",
}
SUBSETS = {"topicalchat": ("tc_usr_data.json", "tc"), "personachat": ("pc_usr_data.json", "pc")}
REFERENCE_SYSTEM = "Original Ground Truth"


def read(path: Path, options: dict[str, Any]) -> Conversion:
    file_name, prefix = SUBSETS[options["subset"]]
    file = find_file(path, file_name, f"**/{file_name}")

    def records() -> Iterator[Row]:
        for where, line, item in iter_json_array(file):
            yield from _records(file, f"{where} (line {line})", int(where[2:-1]), item, prefix)

    return Conversion(records, aspects=ASPECTS)


def _records(file: Path, where: str, index: int, item: Any, prefix: str) -> Iterator[Row]:
    if not isinstance(item, dict):
        raise fail(file, where, "", "expected a context object")
    history, fact, responses = item.get("context"), item.get("fact", ""), item.get("responses")
    if not isinstance(history, str):
        raise fail(file, where, "context", "missing, or not text")
    if not isinstance(responses, list):
        raise fail(file, where, "responses", "expected a list")
    reference = [
        r["response"]
        for r in responses
        if isinstance(r, dict)
        and r.get("model") == REFERENCE_SYSTEM
        and isinstance(r.get("response"), str)
    ]
    for j, response in enumerate(responses):
        place = f"responses[{j}]"
        if not isinstance(response, dict):
            raise fail(file, where, place, "expected an object")
        model, text = response.get("model"), response.get("response")
        if not isinstance(model, str) or not isinstance(text, str):
            raise fail(file, where, f"{place}.model/response", "missing, or not text")
        annotators: dict[str, dict[str, Any]] = {}
        for name, column in COLUMNS.items():
            ratings = response.get(column)
            if not isinstance(ratings, list):
                raise fail(file, where, f"{place}.{column}", "expected a list of ratings")
            annotators[name] = {
                f"a{k}": _value(file, where, f"{place}.{column}[{k - 1}]", _BY_NAME[name], v)
                for k, v in enumerate(ratings, start=1)
            }
        yield record(
            f"{prefix}{index}",
            model,
            history,
            text,
            references=[] if model == REFERENCE_SYSTEM else reference,
            human=human_from(_BY_NAME, annotators),
            annotators=annotators,
            context={"fact": fact} if fact else None,
        )


def _value(file: Path, where: str, field: str, spec: AspectSpec, value: Any) -> Any:
    if spec.kind == "binary":
        label = as_label(value, spec.labels)
        if label is None:
            raise fail(file, where, field, f"expected 0 or 1, got {value!r}")
        return label
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(file, where, field, f"expected a number, got {value!r}")
    if not spec.low <= value <= spec.high:  # type: ignore[operator]
        raise fail(file, where, field, f"{value} is outside {spec.low:g}-{spec.high:g}")
    return value


BENCHMARK = Benchmark(
    name="usr",
    title="USR human judgments (Topical-Chat, PersonaChat responses)",
    task="dialogue",
    licence=Licence(
        "unspecified",
        "https://github.com/Shikib/usr",
        None,
        "the judgment files state no licence; Topical-Chat itself is CDLA-Sharing-1.0",
    ),
    citation=(
        "@inproceedings{mehri2020usr, title={{USR}: An Unsupervised and Reference Free "
        "Evaluation Metric for Dialog Generation}, author={Mehri, Shikib and Eskenazi, Maxine}, "
        "booktitle={Proceedings of ACL}, pages={681--707}, year={2020}}"
    ),
    homepage="http://shikib.com/usr",
    release=UrlRelease("http://shikib.com", "b1e50bb", ("tc_usr_data.json", "pc_usr_data.json")),
    layout=__doc__ or "",
    aspects=ASPECTS,
    read=read,
    options=(Option("subset", str, "topicalchat", "topicalchat or personachat", tuple(SUBSETS)),),
)
