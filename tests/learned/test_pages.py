"""The training page (/learned/new/): a valid form creates a job, enqueued on commit, and
opens its live page; bad input shows where it is and creates nothing; only researchers,
and only with datasets they may see."""

from __future__ import annotations

import re
import time

import pytest
from django.urls import reverse

from learned.models import TrainedMetric

pytestmark = pytest.mark.django_db
NEW = "/learned/new/"


def _form(judged, model: str, **changes: object) -> dict[str, object]:  # type: ignore[no-untyped-def]
    from studies.models import Aspect

    data: dict[str, object] = {
        "dataset": judged.pk,
        "aspect": Aspect.objects.get(code="COH").pk,
        "setup": "single",
        "backbone": model,
        "mode": "head",
        "margin": "0.5",
        "seed": "0",
        "layer": "",
        "max_minutes": "",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def _options(page: str, name: str) -> list[str]:
    select = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', page, re.S)
    assert select, f"no <select name={name}>"
    return re.findall(r">([^<]+)</option>", select[1])


def test_the_form_creates_a_job_enqueued_on_commit_and_opens_its_live_page(
    client, cast, judged, installed_tiny, sent, django_capture_on_commit_callbacks
):
    client.force_login(cast["owner"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(NEW, _form(judged, installed_tiny, seed="3", max_minutes="2"))
    job = TrainedMetric.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "learned:detail", args=[job.pk]
    )
    assert sent == [("learned.tasks.train_metric_cpu", [job.pk], "cpu")]
    assert (job.status, job.dataset, job.aspect.code, job.setup, job.mode) == (
        "pending",
        judged,
        "COH",
        "single",
        "head",
    )
    assert job.created_by == cast["owner"] and job.config["seed"] == 3
    assert job.config["hyperparameters"]["max_seconds"] == 120
    # no blocks asked: a frozen decoder uses 40% of its blocks (1 of the tiny model's 2)
    assert (job.config["backbone"]["layer"], job.config["backbone"]["layers"]) == (1, 2)
    page = client.get(response["Location"]).content.decode()
    assert 'id="job-progress"' in page and "Pending" in page


def test_the_default_backbone_uses_12_blocks_and_the_request_loads_no_weights(
    client, cast, judged, sent, monkeypatch, django_capture_on_commit_callbacks, capsys
):
    from scoring.learned import backbone

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the request loaded the backbone's weights")

    monkeypatch.setattr(backbone.Backbone, "__init__", refuse)
    client.force_login(cast["owner"])
    started = time.perf_counter()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(NEW, _form(judged, "default"))
    seconds = time.perf_counter() - started
    assert response.status_code == 302, response.content.decode()[-3000:]
    job = TrainedMetric.objects.get()
    b = job.config["backbone"]
    assert (b["label"], b["layer"], b["layers"], b["pooling"], b["feature_dim"]) == (
        "SmolLM2-135M-Instruct",
        12,
        30,
        "last+answer",
        1152,
    )
    assert b["files"]["sha256"] and len(sent) == 1
    with capsys.disabled():
        print(f"\nPOST /learned/new/ with the default backbone: {seconds:.2f} s")


def test_too_few_pairs_is_shown_on_the_form_and_creates_nothing(
    client, cast, judged, installed_tiny, sent, django_capture_on_commit_callbacks
):
    client.force_login(cast["owner"])
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(NEW, _form(judged, installed_tiny, margin="5"))
    page = response.content.decode()
    assert response.status_code == 400
    assert 'id="train-errors"' in page and "Too few preference pairs: 0 train pairs" in page
    assert "72 differing by no more than the margin 5" in page
    assert not TrainedMetric.objects.exists() and not callbacks and not sent


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"backbone": "/tmp"}, "backbone", "Unknown backbone /tmp"),
        ({"layer": "3"}, "layer", "layer must be between 1 and 2, not 3"),
        ({"aspect": "relevance"}, "aspect", "Select a valid choice"),
        ({"setup": "sideways"}, "setup", "Select a valid choice"),
        ({"margin": "-1"}, "margin", "greater than or equal to 0"),
        ({"seed": str(2**40)}, "seed", "less than or equal to"),
        ({"dataset": str(2**70)}, "dataset", "Select a valid choice"),
    ],
)
def test_bad_input_names_its_field_and_creates_nothing(  # type: ignore[no-untyped-def]
    client, cast, judged, installed_tiny, sent, changes, field, message
):
    from studies.models import Aspect

    if changes.get("aspect") == "relevance":  # an aspect without judgments on the dataset
        changes = {"aspect": Aspect.objects.get(code="REL").pk}
    client.force_login(cast["owner"])
    response = client.post(NEW, _form(judged, installed_tiny, **changes))
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert field in errors and message in " ".join(errors[field]), errors
    assert not TrainedMetric.objects.exists() and not sent


def test_extra_datasets_belong_to_multi_and_cross(client, cast, judged, installed_tiny, sent):
    client.force_login(cast["owner"])
    single = client.post(NEW, _form(judged, installed_tiny, datasets=[judged.pk]))
    assert "multi and cross setups only" in " ".join(single.context["form"].errors["datasets"])
    multi = client.post(NEW, _form(judged, installed_tiny, setup="multi", datasets=[judged.pk]))
    assert multi.status_code == 302
    assert [t["aspect"] for t in TrainedMetric.objects.get().config["tasks"]] == ["COH", "FLU"]


def test_a_dataset_preselected_by_the_query_lists_its_judged_aspects(client, cast, judged):
    client.force_login(cast["owner"])
    page = client.get(NEW, {"dataset": judged.pk}).content.decode()
    assert re.search(rf'<option value="{judged.pk}" selected>', page)
    assert [o.split(" ")[0] for o in _options(page, "aspect")[1:]] == ["Coherence", "Fluency"]
    assert "SmolLM2-135M-Instruct (the default" in " ".join(_options(page, "backbone"))
    bare = client.get(NEW).content.decode()
    assert _options(bare, "aspect") == ["---------"] and "Choose a dataset first" in bare


def test_changing_the_dataset_redraws_the_form_through_htmx(client, cast, judged):
    client.force_login(cast["owner"])
    response = client.get(NEW, {"dataset": judged.pk, "margin": "0.8"}, HTTP_HX_REQUEST="true")
    fragment = response.content.decode()
    assert response.status_code == 200 and "HX-Request" in response["Vary"]
    assert fragment.startswith('<form method="post"') and 'id="train-form"' in fragment
    assert "<html" not in fragment and 'value="0.8"' in fragment
    assert len(_options(fragment, "aspect")) == 3
    assert 'hx-get="/learned/new/"' in fragment and "csrfmiddlewaretoken])" in fragment


def test_annotators_cannot_open_the_page_and_outsiders_cannot_use_others_datasets(
    client, cast, judged, installed_tiny, sent
):
    client.force_login(cast["annotator"])
    assert client.get(NEW).status_code == 403
    assert client.post(NEW, _form(judged, installed_tiny)).status_code == 403
    client.logout()
    assert client.get(NEW)["Location"].startswith("/login/")
    client.force_login(cast["outsider"])
    page = client.get(NEW, {"dataset": judged.pk}).content.decode()
    assert "judged" not in _options(page, "dataset") and _options(page, "aspect") == ["---------"]
    response = client.post(NEW, _form(judged, installed_tiny))
    assert response.status_code == 400 and "dataset" in response.context["form"].errors
    assert not TrainedMetric.objects.exists() and not sent


def test_the_list_dataset_and_correlations_pages_link_to_the_form(client, cast, judged):
    client.force_login(cast["owner"])
    assert 'href="/learned/new/"' in client.get("/learned/").content.decode()
    for url in (
        reverse("studies:dataset-detail", args=[judged.pk]),
        reverse("studies:correlations", args=[judged.pk]),
    ):
        assert f'href="/learned/new/?dataset={judged.pk}"' in client.get(url).content.decode()
