"""The benchmarks page: the loadable benchmarks with their licences, and a form that loads
one into a dataset as an import job (downloaded and imported by a worker)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from studies.models import TaskKind
from studies.services.imports import create_benchmark_job
from studies.services.sources import BENCHMARKS, LicenceNotAccepted, catalogue
from studies.views.helpers import researcher_required


class BenchmarkForm(forms.Form):
    name = forms.ChoiceField(label="Benchmark")
    dataset = forms.SlugField(
        max_length=100, help_text="Name of a new dataset, or of one of your own datasets."
    )
    revision = forms.CharField(
        required=False, max_length=100, help_text="Release revision; empty: the pinned one."
    )
    accept_licence = forms.BooleanField(
        required=False,
        label="I accept the benchmark's licence",
        help_text="Needed for non-commercial or unstated licences (marked below).",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["name"].choices = [
            (row["name"], f"{row['title']} — {row['licence']}") for row in catalogue()
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        spec = BENCHMARKS.get(data.get("name", ""))
        if spec is not None and spec.licence.restricted and not data.get("accept_licence"):
            self.add_error(
                "accept_licence",
                f"{spec.name} is released under {spec.licence.describe()}: accept it to load.",
            )
        return data


@researcher_required
def benchmarks(request: HttpRequest) -> HttpResponse:
    form = BenchmarkForm(request.POST or None, initial={"dataset": request.GET.get("dataset", "")})
    status = 400 if request.method == "POST" else 200
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            with transaction.atomic():
                job = create_benchmark_job(
                    name=data["name"],
                    dataset_name=data["dataset"],
                    task=TaskKind.objects.get(code=BENCHMARKS[data["name"]].task),
                    user=request.user,
                    revision=data["revision"],
                    accept_licence=data["accept_licence"],
                )
        except LicenceNotAccepted as exc:
            form.add_error("accept_licence", str(exc))
        else:
            return redirect("studies:import-detail", pk=job.pk)
    return render(
        request, "studies/benchmarks.html", {"form": form, "rows": catalogue()}, status=status
    )
