from django.apps import AppConfig


class LearnedConfig(AppConfig):
    name = "learned"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Learned metrics"
