"""The PPI table through the API, and competence weights on the correlation matrix."""

from __future__ import annotations

import pytest

from studies.models import Aspect

pytestmark = pytest.mark.django_db


def test_the_ppi_table_is_the_pages(world):
    coh = Aspect.objects.get(code="COH")
    url = f"/api/datasets/{world.dataset.pk}/ppi/"
    response = world.client("owner").get(url, {"run": world.run.pk, "aspect": coh.pk, "vs": "s1"})
    assert response.status_code == 200
    body = response.json()
    assert body["run"]["pk"] == world.run.pk and body["aspect"]["code"] == "COH"
    assert [s["system"] for s in body["systems"]] == ["s0", "s1", "s2"]
    assert body["reference"] == "s1" and {d["system"] for d in body["differences"]} == {"s0", "s2"}
    # every output is judged here: PPI is the human-only mean
    for s in body["systems"]:
        assert s["n_judged"] == s["n_total"] == 4
        assert s["ppi"]["value"] == pytest.approx(s["human"]["value"])
    default = world.client("owner").get(url).json()
    assert default["query"]["run"] == world.run.pk  # the first run by label


def test_bad_ppi_queries_are_refused_with_their_reason(world):
    url = f"/api/datasets/{world.dataset.pk}/ppi/"
    owner = world.client("owner")
    unknown = owner.get(url, {"run": 999999})
    assert unknown.status_code == 404 and "No run with id 999999" in unknown.json()["detail"]
    bad = owner.get(url, {"weights": "heavy"})
    assert bad.status_code == 400 and "weights" in bad.json()["errors"]
    assert world.client("other_researcher").get(url).status_code == 404


def test_the_matrix_records_competence_weighting_in_its_parameters(world):
    url = f"/api/datasets/{world.dataset.pk}/correlations/"
    body = world.client("owner").get(url, {"weights": "competence", "ci": "false"}).json()
    assert body["params"]["weight_by_competence"] is True
    assert world.client("owner").get(url, {"weights": "x"}).status_code == 400
