"""End to end in a real browser: Debian's chromium, driven by Playwright, against `streamlit run app.py`.

Screenshots go to test-output/, with first-token-seconds.txt: the time from starting the server, and
from pressing Generate, to the first generated token on the page, and app-timing.txt: the app's
verify and draft times per iteration against the library's for the same run.

Every wait is for an event on the page, bounded in minutes (PAGE, MODELS), never a fixed pause: a cold
machine (an empty SPECVIZ_CACHE) beside the parallel suite converts and loads the embedded model first.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from pages.ui.controls import PRECISION_NAMES
from specviz import DecodeSettings, Trace, trace_from_dict
from specviz.bench.llama_server import free_port, stop

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "test-output"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync"]
# Playwright's bounds, in ms. PAGE: for what only draws a page, the server's first script run included (it
# imports torch and the charts) on two busy cores. MODELS: for what waits on the decoder process, which on a
# cold machine first converts the embedded model from its GGUF file and loads it.
PAGE = 120_000
MODELS = 600_000
# Every chart on the page drawn: Streamlit shows a skeleton where an element's code is still loading (Plotly's
# and Vega's come after the script has finished), then the chart's own SVG.
DRAWN = """() => !document.querySelector("[data-testid='stSkeleton']")
  && [...document.querySelectorAll("[data-testid='stPlotlyChart']")].every(c => c.querySelector('.main-svg'))
  && [...document.querySelectorAll("[data-testid='stVegaLiteChart']")].every(c => c.querySelector('svg'))"""
# A Generate run under way: tokens on the page, and its rate not yet known ("…").
UNDER_WAY = """() => {
  const m = [...document.querySelectorAll("[data-testid='stMetric']")].map(e => e.innerText.split("\\n"));
  return m.length >= 5 && parseInt(m[0].at(-1)) > 0 && m[4].at(-1).trim() === "…"; }"""
# The app's websocket, over which its server sends the browser one ForwardMsg a binary frame.
STREAM = "/_stcore/stream"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists() or shutil.which("streamlit", path=Path(
    sys.executable).parent) is None, reason="needs Debian's chromium (make browser) and streamlit")


def wait_healthy(url: str, server: subprocess.Popen, timeout: float = PAGE / 1000) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.poll() is None, "streamlit exited early"
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=10) as response:
                if response.read().decode().strip() == "ok":
                    return
        except OSError:
            pass
        time.sleep(0.3)   # the next poll: the server says nothing when it is up
    raise TimeoutError("streamlit did not answer /_stcore/health")


@pytest.fixture(scope="module")
def app_url():
    """One `streamlit run app.py` for the module's tests, each in its own browser session."""
    port = free_port()
    started = time.monotonic()
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, server)
        yield url, started
    finally:
        stop(server, 60)


def message(payload: bytes | str) -> str | None:
    """The kind of ForwardMsg a frame from the app's server carries (None for a text frame)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    if isinstance(payload, str):
        return None
    msg = ForwardMsg()
    msg.ParseFromString(payload)
    return msg.WhichOneof("type")


class Runs:
    """The script runs a page's session has started and finished, read from the app's websocket: each run
    begins with a new_session message and ends with script_finished. The page's own running state is no
    count: a short run's start and end can be drawn in one render, and then the page never says running."""

    def __init__(self, page) -> None:
        self.started = 0
        self.finished = 0
        self.stream = None
        page.on("websocket", self._connect)

    def _connect(self, websocket) -> None:
        if websocket.url.endswith(STREAM):
            self.stream = websocket
            websocket.on("framereceived", self._count)

    def _count(self, payload: bytes | str) -> None:
        kind = message(payload)
        self.started += kind == "new_session"
        self.finished += kind == "script_finished"

    def expect(self, kind: str, timeout: float = PAGE):
        """A context manager that waits, on leaving, for a message of `kind` received after entering."""
        return self.stream.expect_event("framereceived", predicate=lambda payload: message(payload) == kind,
                                        timeout=timeout)


RUNS: dict = {}   # each page's Runs


def new_page(browser, height: int):
    """A page whose waits (and Playwright's assertions) are bounded by PAGE unless told otherwise, its script
    runs counted (`RUNS[page]`)."""
    from playwright.sync_api import expect

    expect.set_options(timeout=PAGE)
    page = browser.new_page(viewport={"width": 1280, "height": height})
    page.set_default_timeout(PAGE)
    RUNS[page] = Runs(page)
    return page


def settle(page, title: str | None = None, timeout: float = PAGE) -> None:
    """Until the script has run (with `title`: the page titled so) and every chart on the page is drawn;
    `timeout` for the run (MODELS where it waits on the decoder process)."""
    page.wait_for_selector("[data-testid='stApp']")
    if title:
        page.wait_for_selector(f"h1:has-text('{title}')")
    page.wait_for_selector("[data-test-script-state='notRunning']", timeout=timeout)
    page.wait_for_function(DRAWN)


def rerun(page, act, timeout: float = PAGE) -> None:
    """`act()`, an action that reruns the script, then until that run is over and drawn (`settle`). Right
    after a click the page may still say notRunning from the run before, so `settle` alone could return
    before the new run began: first the server's message that the new run finished."""
    with RUNS[page].expect("script_finished", timeout):
        act()
    settle(page, timeout=timeout)


def open_page(page, link: str, title: str) -> None:
    page.get_by_role("link", name=link).click()
    settle(page, title)


def wait_for_the_run(page) -> None:
    """Until the run's first tokens are on the page (it opened on an example's text: the sidebar
    says when the session's own run is what the pages show)."""
    page.locator("[data-testid='stSidebar']").get_by_text("Showing: last run").wait_for(timeout=MODELS)
    page.wait_for_selector(".specviz-text .tok", timeout=MODELS)


@contextmanager
def app_page(url: str, height: int):
    """Chromium showing the app's first page, settled; closed afterwards."""
    from playwright.sync_api import sync_playwright

    OUT.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = new_page(browser, height)
        page.goto(url)
        settle(page)
        yield page
        browser.close()


def download_trace(page) -> Trace:
    """The session's trace, downloaded from the Traces page as a visitor would."""
    open_page(page, "Traces", "Traces")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download the trace (JSON)").click()
    return trace_from_dict(json.loads(Path(download.value.path()).read_text()))


def set_slider(page, label: str, steps: int) -> None:
    """Move the sidebar slider labelled `label` to its minimum, then `steps` steps right."""
    from playwright.sync_api import expect

    slider = page.locator(f"input[aria-label^='{label}']")
    value = str(int(slider.get_attribute("min")) + steps)
    if slider.get_attribute("aria-valuetext") == value:
        return

    def press() -> None:
        slider.focus()
        slider.press("Home")
        for _ in range(steps):
            slider.press("ArrowRight")
        expect(slider).to_have_attribute("aria-valuetext", value)  # no key press lost

    rerun(page, press)


def test_generate_inspect_speedup(app_url, embedded_sizing):
    """Generate with the sidebar's defaults, the auto size among them: the tree sizing it reads is measured
    before (`embedded_sizing`), so the first token waits only for the models to load."""
    from playwright.sync_api import expect

    url, started = app_url
    with app_page(url, 2200) as page:
        set_slider(page, "Max new tokens", 11)
        clicked = time.monotonic()
        page.get_by_role("button", name="Generate").click()
        wait_for_the_run(page)
        first_token = time.monotonic()
        settle(page, timeout=MODELS)
        expect(page.get_by_test_id("stMetric").first).to_be_visible()
        expect(page.get_by_role("combobox", name="Showing")).to_have_value("Your runs and loaded files")  # at once
        page.screenshot(path=OUT / "generate.png", full_page=True)

        open_page(page, "Iteration inspector", "Iteration inspector")
        page.get_by_role("button", name="Next ▶").click()
        page.locator("h3", has_text="Iteration 1:").wait_for()
        settle(page)
        page.screenshot(path=OUT / "inspector.png", full_page=True)
        slider = page.locator("input[aria-label='Iteration']")
        slider.focus()
        slider.press("End")
        page.locator("h3", has_text=f"Iteration {slider.get_attribute('max')}:").wait_for()
        settle(page)
        page.screenshot(path=OUT / "inspector-last.png", full_page=True)

        for name, shot in (("Draft / verify table", "table"), ("Theory", "theory"), ("Speedup curves", "speedup")):
            open_page(page, name, name)
            page.screenshot(path=OUT / f"{shot}.png", full_page=True)
        expect(page.locator("[data-testid='stVegaLiteChart'] svg")).to_have_count(1)  # the linked view

        open_page(page, "Generate", "Generate")
        # the sidebar's settings survive the page switches (Streamlit drops widget state with a page)
        tokens = page.locator("input[aria-label='Max new tokens']")
        expect(tokens).to_have_attribute("aria-valuetext", "12")
        tokens.focus()
        rerun(page, lambda: tokens.press("End"))
        latency = page.locator("input[aria-label^='Simulated target latency']")
        latency.focus()
        rerun(page, lambda: latency.press("End"))   # a run still going when Stop arrives, however fast the machine
        with RUNS[page].expect("new_session"):
            page.get_by_role("button", name="Generate").click()
        page.wait_for_function(UNDER_WAY, timeout=MODELS)
        # the page's own Stop (Streamlit's toolbar has one too while a script runs)
        page.get_by_test_id("stMainBlockContainer").get_by_role("button", name="Stop", exact=True).click()
        page.get_by_text("Stopped: the trace holds").wait_for(timeout=MODELS)
        settle(page)
        page.screenshot(path=OUT / "stopped.png", full_page=True)
        numbers = dict(m.split("\n")[::2] for m in page.get_by_test_id("stMetric").all_inner_texts())
        assert 0 < int(numbers["tokens"]) < int(tokens.get_attribute("aria-valuetext"))   # cut short
        assert float(numbers["tokens / s"]) > 0   # the stopped run's own time, read once it had ended
    (OUT / "first-token-seconds.txt").write_text(
        f"server start to first token: {first_token - started:.1f} s (the tree sizing measured before)\n"
        f"click to first token: {first_token - clicked:.1f} s\n")


@pytest.mark.serial
def test_the_app_runs_the_library_run_and_records_both_timings(app_url, embedded):
    """Through the real server, the app's run is the library's for the same seeded settings and torch thread
    count; the medians of both runs' verify and draft times per iteration go to app-timing.txt, for a person to
    read (a quiet machine gives about 1.2x, a busy one up to 1.6x; with the decoder in the server's process
    they were 4x and 15x). Speed is measured by `python -m specviz bench`'s app rows, not asserted here."""
    import torch

    from specviz import generate
    from specviz.drafters import build_drafter

    url, _ = app_url
    with app_page(url, 1600) as page:
        rerun(page, page.get_by_text("Size the tree for this machine (auto)").click)   # a fixed chain:
        rerun(page, page.get_by_text("Adapt the draft to the text (adaptive)").click)  # both are on by default
        set_slider(page, "γ: tokens drafted", 3)  # γ 4, whatever this machine's measured default
        page.get_by_role("combobox", name="Drafter", exact=True).click()
        rerun(page, page.get_by_role("option", name="eagle", exact=True).click)
        for _ in range(2):  # the EAGLE head, lossless sampling at T 0.5, γ 4, seed 0, 48 tokens
            rerun(page, page.get_by_role("button", name="Generate").click, MODELS)   # the first run loads the models
        app = download_trace(page)

    threads = torch.get_num_threads()
    torch.set_num_threads(app.threads)
    try:
        drafter = build_drafter("eagle", embedded)
        generate(embedded, drafter, "Hello", DecodeSettings(temperature=0.0, max_new_tokens=4, record=False))
        library = generate(embedded, drafter, app.prompt, app.settings)
    finally:
        torch.set_num_threads(threads)
    assert app.generated_ids == library.generated_ids  # the same run

    def median(trace, phase: str) -> float:
        return statistics.median(getattr(it, phase) for it in trace.iterations)

    verify, draft = (median(app, f) / median(library, f) for f in ("verify_time", "draft_time"))
    (OUT / "app-timing.txt").write_text(
        f"{len(app.iterations)} iterations, {app.threads} torch thread(s): median verify app "
        f"{median(app, 'verify_time') * 1000:.1f} ms, library {median(library, 'verify_time') * 1000:.1f} ms "
        f"({verify:.2f}x); median draft app {median(app, 'draft_time') * 1000:.1f} ms, library "
        f"{median(library, 'draft_time') * 1000:.1f} ms ({draft:.2f}x)\n")


def test_tree_view_screenshots(app_url, tmp_path):
    """A hand-made token tree loaded from a file: the inspector's tree and residual sequence, and the
    Generate page's tree of the last iteration, as the browser draws them (tree-*.png)."""
    from playwright.sync_api import expect
    from synthetic import synthetic_tree_trace

    path = tmp_path / "tree.json"
    synthetic_tree_trace().save(path)
    url, _ = app_url
    with app_page(url, 2400) as page:
        open_page(page, "Traces", "Traces")
        page.locator("input[type=file]").set_input_files(path)
        page.get_by_text("Loaded tree.json").wait_for()
        open_page(page, "Iteration inspector", "Iteration inspector")
        charts = page.locator("[data-testid='stPlotlyChart']")
        charts.first.locator(".annotation-text").first.wait_for()
        charts.first.screenshot(path=OUT / "tree-inspector.png")
        sequence = page.locator("[data-testid='stPlotlyChart']", has_text="tried in turn").last
        sequence.scroll_into_view_if_needed()
        sequence.screenshot(path=OUT / "tree-residuals.png")
        page.get_by_text("The verify pass's attention mask", exact=True).click()
        mask = page.locator("[data-testid='stPlotlyChart']", has_text="attention in the verify pass")
        expect(mask.locator(".ytick")).to_have_count(8)   # the root and the 7 nodes
        mask.scroll_into_view_if_needed()
        mask.screenshot(path=OUT / "tree-mask.png")
        open_page(page, "Generate", "Generate")
        tree = page.locator("[data-testid='stPlotlyChart']", has_text="the token").first
        tree.screenshot(path=OUT / "tree-generate.png")
        expect(tree.locator(".annotation-text", has_text="✓")).to_have_count(2)


def test_a_real_tree_run_and_the_tree_sizes(app_url):
    """The embedded target with its default drafter drafting top-3 trees of depth 4 and 10 nodes: Generate
    draws the last iteration's real tree (tree-run.png); the Speedup page measures (on a cold machine, else
    reads) and draws the tree sizes for this machine (tree-sizing.png).

    The depth is set here too: a session starts at the depth measured for this machine once a sizing is
    cached (by an earlier test or run), and at depth 2 this run's last iteration, with one token of budget
    left, drafted nothing. The picture is of whatever the last iteration was, so it is checked against the
    downloaded trace."""
    from playwright.sync_api import expect

    from specviz.charts.tree import tree_boxes
    from specviz.tree import is_chain

    url, _ = app_url
    with app_page(url, 2400) as page:
        rerun(page, page.get_by_text("Size the tree for this machine (auto)").click)   # the size set by hand below,
        rerun(page, page.get_by_text("Adapt the draft to the text (adaptive)").click)  # drafted as set
        set_slider(page, "Max new tokens", 11)
        set_slider(page, "γ: tokens drafted", 3)
        set_slider(page, "Branches", 2)
        set_slider(page, "Node budget", 10)
        page.get_by_role("button", name="Generate").click()
        wait_for_the_run(page)
        settle(page, timeout=MODELS)
        tree = page.locator("[data-testid='stPlotlyChart']", has_text="the token").first   # a tree or a chain
        tree.scroll_into_view_if_needed()
        tree.screenshot(path=OUT / "tree-run.png")
        title, boxes = tree.locator(".gtitle").text_content(), tree.locator(".annotation-text").count()
        trace = download_trace(page)
        assert (trace.settings.gamma, trace.settings.branches, trace.settings.nodes, trace.settings.max_new_tokens,
                trace.settings.auto_size) == (4, 3, 10, 12, False)
        assert any(not is_chain(it.parents) for it in trace.iterations)   # it drafted trees
        last = trace.iterations[-1]
        assert title.startswith(f"Iteration {last.index}: the token") and boxes == len(tree_boxes(last)), title

        open_page(page, "Speedup curves", "Speedup curves")
        page.get_by_role("button", name="Measure tree sizes for this pair").click()
        chart = page.locator("[data-testid='stPlotlyChart']", has_text="Sizing the tree")
        chart.wait_for(timeout=MODELS)
        settle(page)
        chart.screenshot(path=OUT / "tree-sizing.png")
        expect(chart.locator(".legendtext", has_text="auto: depth")).to_have_count(1)


def test_precision_is_a_sidebar_choice_and_theory_explains_floating_point(app_url):
    from playwright.sync_api import expect

    url, _ = app_url
    with app_page(url, 1400) as page:
        box = page.locator("[data-testid='stSidebar'] input[aria-label=\"Precision (the models' dtype)\"]")
        expect(box).to_have_value(PRECISION_NAMES["float32"])

        def pick() -> None:
            box.click()
            page.get_by_role("option", name=PRECISION_NAMES["bfloat16"]).click()

        rerun(page, pick)
        open_page(page, "Theory", "Theory")
        expect(box).to_have_value(PRECISION_NAMES["bfloat16"])   # kept across pages
        page.get_by_role("heading", name="Lossless up to floating point").scroll_into_view_if_needed()
        expect(page.get_by_text("float32 speculative output parted from the target alone's in 0 of")).to_be_visible()
        page.screenshot(path=OUT / "theory-floating-point.png", full_page=True)


def test_the_toy_tables_edits_stay_across_pages_until_reset(app_url):
    """A teacher's own p on the Theory page survives a visit to another page; Reset brings back the default."""
    from playwright.sync_api import expect

    from specviz import toy

    def rejection(p: list[float]) -> str:
        return f"1 − Σ min(p, q) = {toy.split(p, toy.TABLE['q']).rejection:.3f}"

    url, _ = app_url
    with app_page(url, 1400) as page:
        open_page(page, "Theory", "Theory")
        caption = page.get_by_text("Rejection probability")
        expect(caption).to_contain_text(rejection(toy.TABLE["p"]))
        grid = page.locator("[data-testid='stDataFrame']")
        box = grid.bounding_box()
        header = box["height"] / (len(toy.TABLE["p"]) + 1)   # the header row and each body row are one height

        def edit(row: int, value: str):   # select a row's p and type over it: the grid opens its cell editor
            def act() -> None:
                grid.click(position={"x": box["width"] / 2, "y": (row + 1.5) * header})
                page.keyboard.type(value)
                cell = page.locator(".gdg-input")
                expect(cell).to_have_value(value)
                cell.press("Enter")   # into the editor itself, once it is there
            return act

        rerun(page, edit(0, "9"))
        edited = [9.0, *toy.TABLE["p"][1:]]
        expect(caption).to_contain_text(rejection(edited))
        open_page(page, "Lesson", "Lesson")
        open_page(page, "Theory", "Theory")
        expect(caption).to_contain_text(rejection(edited))
        grid.screenshot(path=OUT / "theory-toy-kept.png")
        rerun(page, edit(1, "7"))
        expect(caption).to_contain_text(rejection([9.0, 7.0, *toy.TABLE["p"][2:]]))
        rerun(page, lambda: page.get_by_role("button", name="Reset the toy p and q").click())   # right after an edit
        expect(caption).to_contain_text(rejection(toy.TABLE["p"]))
        expect(page.get_by_role("button", name="Reset the toy p and q")).to_be_disabled()
        draws = page.locator("input[aria-label='simulated draws']")
        rerun(page, lambda: (draws.focus(), draws.press("ArrowRight")))   # another run: the edits stay gone
        expect(caption).to_contain_text(rejection(toy.TABLE["p"]))
