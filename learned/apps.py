from django.apps import AppConfig


class LearnedConfig(AppConfig):
    name = "learned"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Learned metrics"

    def ready(self) -> None:
        # the learned metric's runner joins the runs registry, and its trained metrics
        # studies' hooks (studies never imports this app); its modules need the models,
        # so they load once the apps are ready
        from learned import hooks
        from learned.runners import RUNNER
        from studies.services.runs.registry import register

        register(RUNNER)
        hooks.register()
