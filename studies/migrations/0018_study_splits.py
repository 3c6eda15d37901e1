# A study's frozen split of its documents into tune / dev / test (issue 40).

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("studies", "0017_upload_sessions"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="StudySplit",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("seed", models.BigIntegerField()),
                ("dev_share", models.FloatField(default=0.0)),
                ("test_share", models.FloatField()),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "stratified_by",
                    models.ForeignKey(
                        blank=True,
                        help_text="The aspect whose mean human score per document the split "
                        "is stratified by.",
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="studies.aspect",
                    ),
                ),
                (
                    "study",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="split",
                        to="studies.study",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            ("dev_share__gte", 0), ("test_share__gt", 0), ("test_share__lt", 1)
                        ),
                        name="split_shares_valid",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="SplitDocument",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "part",
                    models.CharField(
                        choices=[("tune", "tune"), ("dev", "dev"), ("test", "test")], max_length=8
                    ),
                ),
                (
                    "document",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="split_parts",
                        to="studies.document",
                    ),
                ),
                (
                    "split",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="documents",
                        to="studies.studysplit",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["split", "part"], name="split_part")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("split", "document"), name="split_document_unique"
                    )
                ],
            },
        ),
    ]
