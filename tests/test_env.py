"""Typed environment helpers reject bad values loudly."""

import pytest

from evalsite.env import EnvError, env_bool, env_int, env_list, env_networks, env_str


def test_env_bool_accepts_common_spellings_and_rejects_others(monkeypatch):
    monkeypatch.setenv("FLAG", "Yes")
    assert env_bool("FLAG", False) is True
    monkeypatch.setenv("FLAG", "off")
    assert env_bool("FLAG", True) is False
    monkeypatch.setenv("FLAG", "maybe")
    with pytest.raises(EnvError, match="FLAG='maybe' is not a boolean"):
        env_bool("FLAG", True)
    monkeypatch.delenv("FLAG")
    assert env_bool("FLAG", True) is True


def test_env_int_checks_type_and_minimum(monkeypatch):
    monkeypatch.setenv("N", "12")
    assert env_int("N", 1) == 12
    monkeypatch.setenv("N", "twelve")
    with pytest.raises(EnvError, match="not an integer"):
        env_int("N", 1)
    monkeypatch.setenv("N", "0")
    with pytest.raises(EnvError, match="at least 1"):
        env_int("N", 5, minimum=1)


def test_file_variant_is_read_for_secrets(monkeypatch, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    monkeypatch.setenv("SECRET_KEY_FILE", str(secret))
    assert env_str("SECRET_KEY") == "s3cret"
    monkeypatch.setenv("SECRET_KEY_FILE", str(tmp_path / "missing"))
    with pytest.raises(EnvError, match="cannot be read"):
        env_str("SECRET_KEY")


def test_env_list_splits_on_commas(monkeypatch):
    monkeypatch.setenv("HOSTS", "a.example, b.example,,")
    assert env_list("HOSTS", []) == ["a.example", "b.example"]


def test_env_networks_reads_addresses_and_networks_and_names_a_bad_entry(monkeypatch):
    import ipaddress

    assert env_networks("PROXIES") == ()
    monkeypatch.setenv("PROXIES", "10.0.0.2, 172.16.0.0/12,::1,")
    assert env_networks("PROXIES") == (
        ipaddress.ip_network("10.0.0.2/32"),
        ipaddress.ip_network("172.16.0.0/12"),
        ipaddress.ip_network("::1/128"),
    )
    monkeypatch.setenv("PROXIES", "10.0.0.2, proxy.local")
    with pytest.raises(EnvError, match="PROXIES: entry 2, 'proxy.local', is not an IP address"):
        env_networks("PROXIES")
    monkeypatch.setenv("PROXIES", "10.0.0.1/8")  # host bits set: 10.0.0.1 or 10.0.0.0/8?
    with pytest.raises(EnvError, match="has host bits set"):
        env_networks("PROXIES")


def test_production_settings_refuse_to_start_without_a_secret_key(tmp_path):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "SECRET_KEY_FILE")}
    env.update(
        DEBUG="false", CONCORDIA_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="evalsite.settings"
    )
    proc = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env=env,
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(__file__)),
    )
    assert proc.returncode != 0 and "SECRET_KEY (or SECRET_KEY_FILE) must be set" in proc.stderr
    env["SECRET_KEY"] = "x" * 45 + "abcde"  # 50 characters, 6 different ones
    env["ALLOWED_HOSTS"] = "concordia.example"
    ok = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env=env,
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(__file__)),
    )
    assert ok.returncode == 0, ok.stderr
