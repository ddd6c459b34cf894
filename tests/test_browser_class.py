"""A class taught from the app alone, in a real browser (Debian's chromium, driven by Playwright): the
app opens on the first shipped example with no model loaded, the Lesson walks its seven steps (timed
with nothing else running: class-lesson-timing.txt), every page shows the first example, and each
other example shows on the page it was made for (every page with every example is test_examples',
through AppTest). Screenshots go to test-output/class-*.png, with class-timing.txt: how long each
page took to settle after its click, beside the other tests.
"""

from __future__ import annotations

import time

import pytest
import test_browser as browser
from test_browser import (
    OUT,
    app_page,
    app_url,  # noqa: F401  (the fixture: a fresh `streamlit run app.py`)
    open_page,
    rerun,
    settle,
)

from specviz.examples import PACK, Example

pytestmark = browser.pytestmark
PAGES = ["Generate", "Lesson", "Iteration inspector", "Draft / verify table", "Speedup curves", "Theory", "Traces"]
TITLES = {"Lesson": "Lesson: one iteration", "Speedup curves": "Speedup curves"}
SHOTS = {"sampled-chat": PAGES, "copy-lookup": ["Generate"], "greedy-race": ["Generate"],
         "gamma-sweep": ["Speedup curves"], "beta-tau-grid": ["Draft / verify table"],
         "drafters": [], "token-tree": ["Iteration inspector"]}


def no_exception(page) -> None:
    assert page.locator("[data-testid='stException']").count() == 0


def timed(page, act, done: str) -> float:
    """Seconds from `act()` to `done` (a selector only the new screen has) showing, the script settled and its
    charts drawn."""
    started = time.monotonic()
    act()
    page.wait_for_selector(done)
    settle(page)
    return time.monotonic() - started


def show_example(page, example: Example) -> None:
    showing = page.get_by_role("combobox", name="Showing")
    if showing.input_value() == f"Example: {example.title}":   # picking it again would not rerun
        return
    showing.click()
    rerun(page, page.get_by_role("option", name=f"Example: {example.title}").click)
    page.locator("[data-testid='stSidebar']").get_by_text(f"Showing: example {example.name}:").wait_for()


def step(page, button: str, number: int) -> float:
    """Seconds from pressing the Lesson's `button` (the one above the step; it is there again below) to step
    `number` shown (`timed`)."""
    return timed(page, lambda: page.get_by_role("button", name=button).first.click(),
                 f"h2:has-text('Step {number} of 7')")


@pytest.mark.serial
def test_the_lesson_opens_on_the_first_example_and_walks_its_seven_steps(app_url):  # noqa: F811
    """Each step's heading comes up, forward and back. The seconds of a second walk, as a class sees the steps
    (the first walk, the screenshots, pays what a server pays once), go to class-lesson-timing.txt."""
    url, _ = app_url
    times: list[str] = []
    with app_page(url, 1600) as page:
        sidebar = page.locator("[data-testid='stSidebar']")
        sidebar.get_by_text(f"Showing: example {PACK[0].name}").wait_for()  # the first example
        page.locator(".specviz-text .tok").nth(10).wait_for()  # its text, before any model loaded
        page.screenshot(path=OUT / "class-open.png", full_page=True)
        open_page(page, "Lesson", "Lesson: one iteration")
        for number in range(1, 8):
            if number > 1:
                step(page, "Next ▶", number)
            no_exception(page)
            page.screenshot(path=OUT / f"class-lesson-{number}.png", full_page=True)
        for number in range(6, 0, -1):
            step(page, "◀ Prev", number)
        for number in range(2, 8):
            seconds = step(page, "Next ▶", number)
            times.append(f"lesson step {number}: {seconds:.2f} s")
    (OUT / "class-lesson-timing.txt").write_text("\n".join(times) + "\n")


def test_a_class_from_the_shipped_examples(app_url):  # noqa: F811
    url, _ = app_url
    times: list[str] = []
    with app_page(url, 1600) as page:
        for example in PACK:
            show_example(page, example)
            for name in PAGES if example is PACK[0] else SHOTS[example.name] or ["Speedup curves"]:
                seconds = timed(page, lambda name=name: page.get_by_role("link", name=name).click(),
                                f"h1:has-text('{TITLES.get(name, name)}')")
                times.append(f"{example.name}, {name}: {seconds:.2f} s")
                no_exception(page)
                assert page.get_by_text("No trace yet").count() == 0, times[-1]
                if name in SHOTS[example.name]:
                    shot = name.lower().replace(" / ", "-").replace(" ", "-")
                    page.screenshot(path=OUT / f"class-{example.name}-{shot}.png", full_page=True)
        open_page(page, "Speedup curves", "Speedup curves")  # any example shows the pack's drafter comparison
        chart = page.locator("[data-testid='stPlotlyChart']", has_text="Drafters side by side")  # below the fold
        chart.scroll_into_view_if_needed()
        chart.screenshot(path=OUT / "class-drafters.png")
        show_example(page, next(e for e in PACK if e.study == "comparison"))
        open_page(page, "Generate", "Generate")
        rerun(page, page.get_by_text("Race view").click)
        page.wait_for_selector(".specviz-race-lane")
        page.get_by_role("button", name="Replay").click()
        page.get_by_text("Identical output ✓").wait_for()
        settle(page)
        page.screenshot(path=OUT / "class-race.png", full_page=True)
    (OUT / "class-timing.txt").write_text("\n".join(times) + "\n")
