from django.db import migrations


def forwards(apps, schema_editor):
    from studies.defaults import load_defaults

    load_defaults(apps)


class Migration(migrations.Migration):
    dependencies = [("studies", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
