"""The queue layout (evalsite/celery.py, settings): the sweeper has a queue of its own,
served by a light worker that runs beat, never by the model worker; the short metrics
have a worker of their own; the demo's workers, compose's services, the task routes and
the runs registry agree on the queues."""

from pathlib import Path
from types import SimpleNamespace

import yaml

from evalsite.celery import LANES, app, local_workers, warn_if_beat_sweeps_elsewhere
from studies.services.runs import registry
from studies.services.runs.core import TASKS

COMPOSE = Path(__file__).resolve().parent.parent / "docker" / "compose.yml"


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
    model, maintenance, io, light, quick = local_workers("demo", tmp_path / "schedule")
    assert _queues_and_beat(model) == ("cpu,gpu", False)
    assert _queues_and_beat(maintenance) == ("maintenance", True)
    assert _queues_and_beat(io) == ("io", False)
    assert _queues_and_beat(light) == ("light", False)
    assert _queues_and_beat(quick) == ("quick", False)
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
    assert app.amqp.router.route({}, "studies.tasks.run_metric_quick")["queue"].name == "quick"
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


def _compose_queues() -> set[str]:
    """The queues compose's services take (their CELERY_QUEUES; the beat service's own)."""
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    taken = {"maintenance"} if "beat" in services else set()
    for service in services.values():
        queues = (service.get("environment") or {}).get("CELERY_QUEUES")
        if queues:
            taken |= set(queues.split(":-")[-1].strip("${}").split(","))
    return taken


def test_every_queue_a_run_or_task_goes_to_has_a_worker_in_the_demo_and_in_compose(tmp_path):
    demo = {
        q
        for argv in local_workers("x", tmp_path / "s")
        for q in _queues_and_beat(argv)[0].split(",")
    }
    assert demo == {q for queues in LANES.values() for q in queues}
    runner_queues = {r.queue for r in registry.runners().values()} | {"io"}  # served: io
    routed = {route["queue"] for route in app.conf.task_routes.values()}
    for queue in runner_queues:
        task = TASKS[queue]  # the run task of the queue a runner declares …
        assert app.amqp.router.route({}, task)["queue"].name == queue  # … routes there
    assert runner_queues <= routed
    assert routed <= demo, routed - demo
    assert routed <= _compose_queues(), routed - _compose_queues()
    # a 10-second ROUGE or BLEU run never waits behind a model run
    for metric in ("rougeL", "bleu", "chrf", "length", "random"):
        assert registry.queue_for(metric) == "quick", metric
    assert registry.queue_for("gptscore") == "gpu"
