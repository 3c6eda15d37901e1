"""Production settings: `check --deploy` is clean, and bad configurations refuse to start."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


def manage(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``manage.py args`` in a fresh process with production variables (plus ``env``)."""
    drop = ("SECRET_KEY", "SECRET_KEY_FILE", "DJANGO_ALLOW_ASYNC_UNSAFE")  # the last: conftest
    base = {k: v for k, v in os.environ.items() if k not in drop}
    base.update(
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="concordia.example",
        CONCORDIA_DATA_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        CELERY_BROKER_URL="filesystem://",
        LOG_LEVEL="WARNING",
    )
    base.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], env=base, cwd=ROOT, capture_output=True, text=True
    )


def test_check_deploy_reports_no_issue_with_production_settings(tmp_path):
    proc = manage(tmp_path, "check", "--deploy", "--fail-level", "DEBUG")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "System check identified no issues" in proc.stdout, proc.stdout + proc.stderr


def show(tmp_path: Path, names: str, **env: str) -> str:
    code = f"from django.conf import settings; print([getattr(settings, n) for n in {names.split()!r}])"
    proc = manage(tmp_path, "shell", "-c", code, **env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def test_production_defaults_to_https_redirect_hsts_and_secure_cookies(tmp_path):
    names = "SECURE_SSL_REDIRECT SECURE_HSTS_SECONDS SESSION_COOKIE_SECURE CSRF_COOKIE_SECURE"
    assert show(tmp_path, names) == "[True, 31536000, True, True]"
    # A plain-HTTP internal deployment turns all of it off with one variable ...
    assert show(tmp_path, names, HTTPS="false") == "[False, 0, False, False]"
    # ... and each can be set on its own.
    assert show(tmp_path, names, SECURE_HSTS_SECONDS="3600") == "[True, 3600, True, True]"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SECRET_KEY": "short-key"}, "SECRET_KEY is too short: 9 characters, at least 50"),
        ({"SECRET_KEY": "ab" * 30}, "at least 5 different ones"),
        ({"ALLOWED_HOSTS": ""}, "ALLOWED_HOSTS must be set when DEBUG is off"),
        ({"SECURE_HSTS_SECONDS": "a year"}, "SECURE_HSTS_SECONDS='a year' is not an integer"),
        ({"LOGIN_FAILURE_LIMIT": "0"}, "LOGIN_FAILURE_LIMIT=0 must be at least 1"),
        ({"TRUSTED_PROXIES": "10.0.0.300"}, "TRUSTED_PROXIES: entry 1, '10.0.0.300', is not"),
        (
            {"LOGIN_ADDRESS_FAILURE_LIMIT": "5"},
            "LOGIN_ADDRESS_FAILURE_LIMIT=5 must be at least LOGIN_FAILURE_LIMIT=10",
        ),
        (
            {"ENDPOINT_KEY_ENV_ALLOWED": "JUDGE_KEY,SECRET_KEY,DATABASE_URL"},
            "ENDPOINT_KEY_ENV_ALLOWED names SECRET_KEY, DATABASE_URL: the site's own secrets",
        ),
        ({"ENDPOINT_ALLOWED_NETWORKS": "10.0.0.1/8"}, "ENDPOINT_ALLOWED_NETWORKS: entry 1"),
    ],
)
def test_production_refuses_to_start_with_a_weak_configuration(tmp_path, env, message):
    proc = manage(tmp_path, "check", **env)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr[-2000:]


def test_debug_mode_keeps_running_without_any_of_it(tmp_path):
    proc = manage(tmp_path, "check", DEBUG="true", SECRET_KEY="", ALLOWED_HOSTS="")
    assert proc.returncode == 0, proc.stderr


def test_pages_carry_a_content_security_policy_without_inline_code(client):
    response = client.get("/login/")
    policy = response["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";") if d.strip())
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["object-src"] == "'none'" and directives["frame-ancestors"] == "'none'"
    assert "unsafe" not in policy


def test_heat_css_is_current():
    from studies.templatetags.studies_extras import heat, heat_css

    css = (ROOT / "static" / "css" / "heat.css").read_text(encoding="utf-8")
    assert css == heat_css()
    assert (heat(0.93), heat(-0.3), heat(None)) == ("heat-p19", "heat-n06", "heat-none")
    assert f".{heat(1.0)} " in css and f".{heat(-1.0)} " in css
