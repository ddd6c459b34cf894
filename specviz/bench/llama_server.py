"""llama-cpp-python's OpenAI-compatible server on the embedded GGUF file, on loopback: the real engine
the remote target is tested and measured against on a machine without a GPU."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from specviz.errors import SpecvizError
from specviz.models import embedded_gguf

MODEL = "smollm2"   # the alias it serves the embedded model under


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(process: subprocess.Popen, grace_s: float) -> None:
    """Ask a server process to end (SIGTERM), and kill it if it has not within `grace_s` seconds."""
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def llama_server(threads: int = 1, context: int = 2048,
                 ready_s: float = 120.0) -> Iterator[tuple[str, subprocess.Popen]]:
    """Start the server (`--logits_all true`, which echoed log-probabilities need), wait until
    `/v1/models` answers, yield (its URL, its process), and stop it."""
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError:
        raise SpecvizError("llama-cpp-python's server is not installed: make setup-test builds it "
                           "(pip install 'llama-cpp-python[server]')") from None
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tempfile.TemporaryFile()   # a pipe nobody reads would fill with its request log and stall it
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(embedded_gguf()), "--model_alias", MODEL,
         "--host", "127.0.0.1", "--port", str(port), "--logits_all", "true", "--n_ctx", str(context),
         "--n_threads", str(threads), "--n_threads_batch", str(threads), "--verbose", "false"],
        stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + ready_s
        while not _answers(url):
            if process.poll() is not None:
                log.seek(0)
                raise SpecvizError(f"llama-cpp-python's server exited while starting: "
                                   f"{log.read().decode(errors='replace')[-500:]}")
            if time.monotonic() > deadline:
                raise SpecvizError(f"llama-cpp-python's server did not answer within {ready_s:g} s")
            time.sleep(0.2)
        yield url, process
    finally:
        stop(process, 10)
        log.close()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as answer:
            return bool(json.loads(answer.read()).get("data"))
    except (OSError, ValueError):
        return False
