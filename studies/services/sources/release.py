"""Fetching a benchmark's raw files at its pinned revision into a cache folder.

Hugging Face datasets come through ``huggingface_hub.snapshot_download`` (its own cache
under ``CACHE/hf``; a gated dataset needs ``HF_TOKEN`` set); release URLs are downloaded
with httpx to ``CACHE/url/<benchmark>/<revision>/<file>``, through a temporary name so
an interrupted download leaves nothing that looks complete. Nothing here runs in tests
(there is no network); ``load_benchmark --from PATH`` reads files already downloaded.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import httpx
from huggingface_hub import snapshot_download

from studies.services.sources.spec import Benchmark, HubRelease
from studies.services.sources.types import Provenance


def fetch(
    benchmark: Benchmark, cache_dir: Path, revision: str | None = None
) -> tuple[Path, Provenance]:
    """The local folder holding ``benchmark``'s files at ``revision`` (default: the pinned
    one), downloading what is not cached yet, and where they came from."""
    release = benchmark.release
    rev = revision or release.revision
    if isinstance(release, HubRelease):
        folder = Path(
            snapshot_download(
                release.repo,
                repo_type="dataset",
                revision=rev,
                allow_patterns=list(release.patterns),
                cache_dir=cache_dir / "hf",
            )
        )
        files = tuple(sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()))
        # the snapshot folder is named after the commit the revision resolved to
        return folder, Provenance("huggingface", release.repo, folder.name, files)
    folder = cache_dir / "url" / benchmark.name / rev
    base = release.base.format(revision=rev)
    for name in release.files:
        target = folder / name
        if not target.is_file():
            _download(base.rstrip("/") + "/" + quote(name), target)
    return folder, Provenance("url", base, rev, release.files)


def _download(url: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    with httpx.stream("GET", url, follow_redirects=True, timeout=120) as response:
        response.raise_for_status()
        with partial.open("wb") as out:
            for chunk in response.iter_bytes(1 << 20):
                out.write(chunk)
    partial.replace(target)
