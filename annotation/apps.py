from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    label = "annotation"
    verbose_name = "Annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation import hooks  # noqa: F401  (registers with studies' signals)
