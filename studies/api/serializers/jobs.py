"""The jobs list: queued and running work, lane by lane (the jobs page's rows)."""

from __future__ import annotations

from rest_framework import serializers

from studies.services.jobs import BATCH_LANE, LANE_LABELS


class JobSerializer(serializers.Serializer):  # type: ignore[type-arg]
    lane = serializers.ChoiceField(
        choices=[*LANE_LABELS, BATCH_LANE],
        help_text="the worker that takes it; batch: a run waiting for batch answers (none)",
    )
    kind = serializers.CharField(help_text="run, import, training, matrix, diagnostics, plan…")
    title = serializers.CharField(help_text="another researcher's work: its kind only")
    url = serializers.CharField(allow_blank=True, help_text="its page ('' when not yours)")
    queue = serializers.CharField()
    running = serializers.BooleanField()
    user = serializers.CharField(allow_blank=True, help_text="who started it")
    dataset_id = serializers.IntegerField(allow_null=True)
    queued_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    done = serializers.IntegerField(allow_null=True)
    total = serializers.IntegerField(allow_null=True)
    eta_seconds = serializers.FloatField(allow_null=True, help_text="a running job's time left")
    position = serializers.IntegerField(
        help_text="among its lane's queued jobs, from 1; 0: running"
    )
    ahead = serializers.IntegerField(help_text="jobs before it in its lane, running ones included")
    starts_in = serializers.FloatField(
        allow_null=True,
        help_text="seconds until it starts, when everything ahead has an ETA and a worker "
        "alive serves its lane",
    )
