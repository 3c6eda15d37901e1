from django.apps import AppConfig


class StudiesConfig(AppConfig):
    name = "studies"
    verbose_name = "Studies"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from studies import signals  # noqa: F401  (connects the receivers)
