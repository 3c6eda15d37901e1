"""Template validation and rendering never evaluate user text."""

import pytest

from scoring.prompts import TemplateError, placeholders, render, validate_template


def test_render_substitutes_placeholders_and_keeps_doubled_braces_literal():
    text = "Task: {task_description}\n{src}\n{{json}} Tl;dr"
    assert placeholders(text) == ["task_description", "src"]
    assert (
        render(text, {"task_description": "Summarise.", "src": "A {b} c"})
        == "Task: Summarise.\nA {b} c\n{json} Tl;dr"
    )


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{src.__class__}", "attribute or index access"),
        ("{ref[0]}", "attribute or index access"),
        ("{src!r}", "conversion"),
        ("{src:>10}", "format spec"),
        ("{secret}", "Unknown placeholder {secret}"),
        ("{}", "Empty placeholder"),
        ("{src", "Unbalanced braces"),
    ],
)
def test_unsafe_templates_are_rejected_with_a_clear_message(template, message):
    with pytest.raises(TemplateError, match=message.replace("{", r"\{").replace("[", r"\[")):
        validate_template(template)


def test_render_requires_a_value_for_each_placeholder():
    with pytest.raises(TemplateError, match="No value given for placeholder {hypo}"):
        render("{src} {hypo}", {"src": "x"})
