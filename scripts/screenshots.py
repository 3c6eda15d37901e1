"""Take the README's screenshots of the study, output-browser and annotator pages.

Regenerate them from the repository root with::

    .venv/bin/python scripts/screenshots.py            # writes docs/img/screenshot-*.png
    .venv/bin/python scripts/screenshots.py --out /tmp  # or somewhere else

It sets Django up on a throwaway SQLite data directory, loads the demo study (what
``manage.py demo --setup-only --skip-model`` loads: the synthetic dataset, the users
``researcher`` and ``annotator``, a study and a Likert campaign), adds a ROUGE-L run
computed in-process, serves the app with ``runserver`` (DEBUG on, so static files are
served) and drives Debian's Chromium (``/usr/bin/chromium``, or ``CHROMIUM_PATH``) with
Playwright to log in and take the pictures. Nothing is left behind but the PNGs.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
WIDTH = 1280


def setup_data(data_dir: Path) -> dict[str, Any]:
    """Migrate, load the demo and score it with ROUGE-L; the ids the pages need."""
    sys.path.insert(0, str(REPO))
    os.environ["CONCORDIA_DATA_DIR"] = str(data_dir)
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from annotation.models import Campaign
    from studies.models import Dataset, Study
    from studies.services.runs.core import execute_run
    from studies.services.runs.request import RunRequest, start_run

    call_command("migrate", verbosity=0, interactive=False)
    call_command("demo", setup_only=True, skip_model=True)
    study = Study.objects.get(name="Demo study (synthetic data)")
    dataset: Dataset = study.dataset
    run = start_run(dataset, RunRequest(metric="rougeL"), user=study.owner, enqueue=False)
    execute_run(run.pk)
    campaign = Campaign.objects.get(study=study)
    return {"study": study.pk, "dataset": dataset.pk, "campaign": campaign.pk, "run": run.pk}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_up(url: str, server: subprocess.Popen[bytes]) -> None:
    for _ in range(120):
        if server.poll() is not None:
            raise SystemExit(f"runserver exited with {server.returncode}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"{url} did not answer")


def login(page: Any, base: str, username: str) -> None:
    page.goto(f"{base}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", username)  # the demo's passwords are the usernames
    page.click("form [type=submit]")
    page.wait_for_load_state("networkidle")


def shoot(page: Any, path: Path, max_height: int = 1400) -> None:
    """The page from its top to the end of its content, at most ``max_height`` pixels."""
    page.wait_for_load_state("networkidle")
    bottom = page.evaluate("document.querySelector('main').getBoundingClientRect().bottom")
    height = min(int(bottom) + 24, max_height)
    page.screenshot(
        path=str(path), clip={"x": 0, "y": 0, "width": WIDTH, "height": height}, full_page=True
    )
    print(f"wrote {path} ({path.stat().st_size // 1024} KB)")


def take(base: str, ids: dict[str, Any], out: Path) -> None:
    from playwright.sync_api import ViewportSize, sync_playwright

    chromium = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium)
        viewport: ViewportSize = {"width": WIDTH, "height": 900}
        researcher = browser.new_context(viewport=viewport)
        page = researcher.new_page()
        login(page, base, "researcher")
        page.goto(f"{base}/studies/{ids['study']}/")
        shoot(page, out / "screenshot-study.png")
        query = f"sort=-run:{ids['run']}&aspect=COH&hmin=3"
        page.goto(f"{base}/datasets/{ids['dataset']}/outputs/?{query}")
        shoot(page, out / "screenshot-outputs.png", max_height=1100)
        researcher.close()

        annotator = browser.new_context(viewport=viewport)
        page = annotator.new_page()
        login(page, base, "annotator")
        page.goto(f"{base}/annotate/{ids['campaign']}/guidelines/")
        page.click("#guidelines-start form [type=submit]")  # claims the next item
        page.wait_for_url("**/items/**")
        page.wait_for_load_state("networkidle")
        page.keyboard.press("4")  # rate the first aspect, as an annotator would
        shoot(page, out / "screenshot-annotate.png", max_height=1100)
        annotator.close()
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img")
    out = parser.parse_args().out.resolve()
    with tempfile.TemporaryDirectory(prefix="concordia-shots-") as tmp:
        data_dir = Path(tmp)
        ids = setup_data(data_dir)
        port = free_port()
        env = {**os.environ, "CONCORDIA_DATA_DIR": str(data_dir), "DEBUG": "true"}
        server = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_until_up(f"{base}/login/", server)
            take(base, ids, out)
        finally:
            server.terminate()
            server.wait(timeout=20)


if __name__ == "__main__":
    main()
