"""A model's fingerprint: the same sha256 for the same files, read from its cache file
without hashing the model again, and a new one when a file changes."""

from __future__ import annotations

import hashlib

from studies.services.catalog import model_catalog as model_service


def _model(folder):
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "gpt2"}')
    (folder / "model.safetensors").write_bytes(b"\x00weights" * 1000)
    return folder


def test_two_runs_of_one_model_record_one_sha256_and_the_second_does_not_hash(
    tmp_path, monkeypatch
):
    folder = _model(tmp_path / "m")
    first = model_service.fingerprint(str(folder))
    assert (folder / ".concordia-fingerprint.json").is_file()
    hashed: list[int] = []
    real = hashlib.sha256
    monkeypatch.setattr(model_service.hashlib, "sha256", lambda *a: hashed.append(1) or real(*a))
    second = model_service.fingerprint(str(folder))
    assert second == first and first["files"] == 2 and hashed == []


def test_a_changed_file_changes_the_fingerprint(tmp_path):
    folder = _model(tmp_path / "m")
    first = model_service.fingerprint(str(folder))
    (folder / "model.safetensors").write_bytes(b"\x01other" * 999)
    assert model_service.fingerprint(str(folder))["sha256"] != first["sha256"]
