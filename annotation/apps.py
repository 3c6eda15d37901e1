from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    label = "annotation"
    verbose_name = "Annotation"
    default_auto_field = "django.db.models.BigAutoField"
