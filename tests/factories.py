"""factory_boy factories for the studies models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from scoring.lm.served import Capabilities
from studies import models
from studies.demo_data import write_demo_jsonl
from studies.services.imports import ImportOptions, import_file


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", "pw")

    @factory.post_generation
    def role(self, create: bool, extracted: Any, **kwargs: Any) -> None:
        if create and extracted:
            self.groups.add(Group.objects.get_or_create(name=extracted)[0])


class DatasetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Dataset

    name = factory.Sequence(lambda n: f"dataset-{n}")
    task = factory.LazyFunction(lambda: models.TaskKind.objects.get(code="summarization"))


class DocumentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Document

    dataset = factory.SubFactory(DatasetFactory)
    doc_key = factory.Sequence(lambda n: f"doc-{n}")
    source = "A source text."
    references = factory.LazyFunction(lambda: ["A reference."])


class OutputFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Output

    document = factory.SubFactory(DocumentFactory)
    system_id = factory.Sequence(lambda n: f"sys-{n}")
    text = "An output."


class MetricRunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.MetricRun

    dataset = factory.SubFactory(DatasetFactory)
    metric = "gptscore"
    label = factory.Sequence(lambda n: f"run-{n}")


def dataset_pk(name: str) -> int:
    """The id of the dataset of that name (dataset pages are addressed by id)."""
    return models.Dataset.objects.get(name=name).pk


def import_demo(owner: Any, folder: Path, name: str = "demo") -> models.Dataset:
    """The demo data (studies/demo_data.py) imported as ``owner``'s dataset ``name``."""
    path = folder / f"{name}.jsonl"
    write_demo_jsonl(path)
    options = ImportOptions(
        dataset=name, task="summarization", file_format="jsonl", file_name=path.name, owner=owner
    )
    import_file(path, options)
    return models.Dataset.objects.get(name=name, owner=owner)


def probed_endpoint(endpoint: models.Endpoint, **found: Any) -> models.Endpoint:
    """Store probe findings on ``endpoint`` (as a probe would), without a server: by
    default what GPTScore needs (echo log-probabilities, the tokenizer check)."""
    found = {"echo_logprobs": True, "tokens_spell_text": True, **found}
    endpoint.capabilities = Capabilities(**found).as_dict()
    endpoint.probed_at = timezone.now()
    endpoint.save()
    return endpoint
