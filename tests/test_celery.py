"""The queue layout (evalsite/celery.py, settings): the sweeper has a queue of its own,
served by a light worker that runs beat, never by the model worker."""

from types import SimpleNamespace

from evalsite.celery import app, local_workers, warn_if_beat_sweeps_elsewhere


def _queues_and_beat(argv: list[str]) -> tuple[str, bool]:
    return argv[argv.index("-Q") + 1], "-B" in argv


def test_the_sweeper_and_its_beat_messages_go_to_the_maintenance_queue(settings):
    route = app.amqp.router.route({}, "studies.tasks.sweep_stale_work")
    assert route["queue"].name == "maintenance"
    sweep = settings.CELERY_BEAT_SCHEDULE["sweep-stale-work"]
    assert sweep["options"]["queue"] == "maintenance"
    # model work stays off it
    assert app.amqp.router.route({}, "studies.tasks.run_metric")["queue"].name == "gpu"


def test_one_machine_runs_a_model_worker_and_light_ones_for_maintenance_io_and_pages(
    tmp_path,
):
    model, maintenance, io, light = local_workers("demo", tmp_path / "schedule")
    assert _queues_and_beat(model) == ("cpu,gpu", False)
    assert _queues_and_beat(maintenance) == ("maintenance", True)
    assert _queues_and_beat(io) == ("io", False)
    assert _queues_and_beat(light) == ("light", False)
    # imports and computed pages go to the light worker, never behind a model job
    for task in (
        "studies.tasks.import_upload",
        "studies.tasks.compute_correlations",
        "studies.tasks.compute_diagnostics",
        "studies.tasks.compute_report_card",
        "studies.tasks.compute_planner",
        "annotation.tasks.compute_agreement",
    ):
        assert app.amqp.router.route({}, task)["queue"].name == "light", task
    for task in ("studies.tasks.run_metric", "studies.tasks.run_metric_cpu"):
        assert app.amqp.router.route({}, task)["queue"].name in {"cpu", "gpu"}, task
    assert app.amqp.router.route({}, "studies.tasks.run_metric_io")["queue"].name == "io"
    assert maintenance[maintenance.index("-s") + 1] == str(tmp_path / "schedule")
    assert model[model.index("-n") + 1] != maintenance[maintenance.index("-n") + 1]


def _worker(queues: list[str], beat: bool) -> SimpleNamespace:
    """What the handler reads of a starting worker: its beat service and its queues."""
    amqp = SimpleNamespace(queues=dict.fromkeys(queues))
    return SimpleNamespace(beat=object() if beat else None, app=SimpleNamespace(amqp=amqp))


def test_a_worker_running_beat_without_the_maintenance_queue_is_warned_about(caplog):
    warn_if_beat_sweeps_elsewhere("old@host", _worker(["cpu", "gpu"], beat=True))
    (record,) = caplog.records
    assert record.levelname == "WARNING"
    assert "old@host" in record.getMessage() and "-Q maintenance" in record.getMessage()
    caplog.clear()
    warn_if_beat_sweeps_elsewhere("light@host", _worker(["maintenance"], beat=True))
    warn_if_beat_sweeps_elsewhere("model@host", _worker(["cpu", "gpu"], beat=False))
    assert caplog.records == []
