from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    label = "annotation"
    verbose_name = "Annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # receives studies' signals and fills studies' hooks (studies never imports
        # this app); its modules need the models, so they load once the apps are ready
        from annotation import hooks

        hooks.register()
