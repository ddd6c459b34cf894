"""The Altair charts in a real browser (Debian's chromium, driven by Playwright, against `streamlit run app.py`):
the Theory chart's α slider redraws it and no page script runs, and its block slider draws a parallel drafter's
curves; brushing the linked view's timeline redraws its lower pictures, again with no run; clicking a verdict
opens that iteration in the inspector.

Screenshots of the charts go to test-output/, with altair-timing.txt: the linked view's first draw for a
512-token trace, and the redraws after a slider move and a brush (medians, measured in the page).
"""

from __future__ import annotations

import statistics

import test_browser as browser
from synthetic import synthetic_trace
from test_browser import app_url  # noqa: F401  (the fixture: a fresh `streamlit run app.py`)

pytestmark = browser.pytestmark
CHART = "[data-testid='stVegaLiteChart']"

# Times the first Altair chart of a page: from its element appearing to its marks being in the SVG (Vega
# draws them in one pass).
WATCH = """(() => {
  const seen = window.specviz = {chart: null, inserted: 0, drawn: 0};
  new MutationObserver(() => {
    const chart = document.querySelector("[data-testid='stVegaLiteChart']");
    if (chart && chart !== seen.chart) Object.assign(seen, {chart, inserted: performance.now(), drawn: 0});
    if (chart && !seen.drawn && chart.querySelector('svg .mark-rect path')) seen.drawn = performance.now();
  }).observe(document, {subtree: true, childList: true});
})()"""

# Forget the chart timed so far (the next one is timed afresh); the time now.
RESTART = "Object.assign(window.specviz, {chart: null, inserted: 0, drawn: 0}) && performance.now()"

# Milliseconds from an action in the chart to its SVG changing, and to the frame after that (null:
# nothing changed within a minute, a bound only a broken chart reaches, however busy the machine).
REDRAW = """async ([chartIndex, act]) => {
  const chart = document.querySelectorAll("[data-testid='stVegaLiteChart']")[chartIndex];
  const svg = chart.querySelector('svg');
  let changed = 0;
  const watch = new MutationObserver(() => { changed = changed || performance.now(); });
  watch.observe(svg, {subtree: true, childList: true, attributes: true, characterData: true});
  const start = performance.now();
  (new Function('chart', act))(chart);
  while (!changed && performance.now() - start < 60000) await new Promise(r => requestAnimationFrame(r));
  await new Promise(r => requestAnimationFrame(r));
  watch.disconnect();
  return changed ? [changed - start, performance.now() - start] : null;
}"""

SLIDE = """const input = chart.querySelector('.vega-bind input[name=alpha]');
input.value = String(VALUE); input.dispatchEvent(new Event('input', {bubbles: true}));"""

# A drag on the timeline from X0 to X1 (fractions of its width), as Vega hears it: pressed on the
# view's background, moved and released on the window.
DRAG = """const view = chart.querySelector('.concat_0_group path.background');
const box = view.getBoundingClientRect();
const at = f => ({clientX: box.left + f * box.width, clientY: box.top + box.height / 2, bubbles: true,
                  pointerId: 1, isPrimary: true, button: 0, buttons: 1});
view.dispatchEvent(new PointerEvent('pointerdown', at(X0)));
window.dispatchEvent(new PointerEvent('pointermove', at(X1)));
window.dispatchEvent(new PointerEvent('pointerup', at(X1)));"""


def launch(playwright):
    chromium = playwright.chromium.launch(executable_path=browser.CHROMIUM, args=browser.ARGS)
    page = browser.new_page(chromium, 2000)
    page.add_init_script(WATCH)
    return chromium, page


def open_linked_view(page) -> tuple[float, float]:
    """Open Speedup curves; milliseconds from its chart's element to its marks, and from the click."""
    clicked = page.evaluate(RESTART)
    browser.open_page(page, "Speedup curves", "Speedup curves")
    page.wait_for_function("window.specviz.drawn > 0")
    inserted, drawn = page.evaluate("[window.specviz.inserted, window.specviz.drawn]")
    return drawn - inserted, drawn - clicked


def redraws(page, chart: int, actions: list[str]) -> tuple[float, float]:
    """Median milliseconds to the SVG change and to the next frame over `actions`."""
    times = [page.evaluate(REDRAW, [chart, act]) for act in actions]
    assert None not in times, "an action did not redraw the chart"
    return statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)


def no_rerun_since(page, started: int) -> int:
    """Asserts no script run began since `started` were counted, and returns the new count. Nothing marks that
    a rerun did not come, so one is asked for (Streamlit's R key): the browser's messages reach the server in
    order, so a rerun the chart had asked for would have begun before it, and ours is then not the only one."""
    page.evaluate("document.activeElement && document.activeElement.blur()")   # R in a slider moves no run
    browser.rerun(page, lambda: page.keyboard.press("r"))
    runs = browser.RUNS[page]
    assert runs.started == started + 1
    return runs.started


def test_theory_slider_redraws_without_a_rerun(app_url):  # noqa: F811
    from playwright.sync_api import expect, sync_playwright

    url, _ = app_url
    browser.OUT.mkdir(exist_ok=True)
    with sync_playwright() as p:
        chromium, page = launch(p)
        page.goto(url)
        browser.settle(page)
        browser.open_page(page, "Theory", "Theory")
        chart = page.locator(CHART).first
        expect(chart.locator("svg text", has_text="α = 0.80")).to_have_count(1)   # Vega draws in one pass
        chart.screenshot(path=browser.OUT / "theory-before.png")
        runs = browser.RUNS[page]
        started = runs.started
        assert started and runs.finished == started   # the page's runs so far, each counted once over
        slider = chart.locator(".vega-bind input[name='alpha']")
        slider.focus()
        for _ in range(30):
            slider.press("ArrowLeft")
        expect(chart.locator("svg text", has_text="α = 0.50")).to_have_count(1)
        started = no_rerun_since(page, started)
        chart.screenshot(path=browser.OUT / "theory-after.png")
        assert page.get_attribute("[data-test-script-state]", "data-test-script-state") == "notRunning"
        assert (browser.OUT / "theory-before.png").read_bytes() != (browser.OUT / "theory-after.png").read_bytes()
        slid = redraws(page, 0, [SLIDE.replace("VALUE", str(v)) for v in (0.9, 0.3, 0.7, 0.99, 1.0, 0.6, 0.8)])
        block = chart.locator(".vega-bind input[name='block']")
        block.focus()
        for _ in range(4):
            block.press("ArrowRight")
        expect(chart.locator("svg text", has_text="block B = 4")).to_have_count(1)   # a parallel drafter's curves
        expect(chart.locator("svg text", has_text="γ* = 4")).to_have_count(1)
        chart.screenshot(path=browser.OUT / "theory-block.png")
        assert runs.started == started
        chromium.close()
    (browser.OUT / "altair-timing.txt").write_text(
        f"theory slider redraw: {slid[0]:.0f} ms to the SVG change, {slid[1]:.0f} ms to the next frame "
        "(median of 7 moves)\n")


def test_linked_view_brushes_in_the_browser_and_a_click_inspects(app_url, tmp_path):  # noqa: F811
    from playwright.sync_api import expect, sync_playwright

    url, _ = app_url
    trace = synthetic_trace(512)
    trace.save(tmp_path / "long.json")
    with sync_playwright() as p:
        chromium, page = launch(p)
        page.goto(url)
        browser.settle(page)
        browser.open_page(page, "Traces", "Traces")
        page.locator("input[type=file]").set_input_files(tmp_path / "long.json")
        page.get_by_text("every page now shows it").wait_for()
        browser.settle(page)
        first = open_linked_view(page)
        chart = page.locator(CHART).first
        chart.screenshot(path=browser.OUT / "linked-before.png")
        whole = chart.locator("svg text", has_text="α̂ = ").text_content()
        runs = browser.RUNS[page]
        started = runs.started
        assert started and runs.finished == started   # the page's runs so far, each counted once over

        timeline = chart.locator(".concat_0_group path.background").first.bounding_box()
        y = timeline["y"] + timeline["height"] / 2
        page.mouse.move(timeline["x"] + 0.05 * timeline["width"], y)
        page.mouse.down()
        page.mouse.move(timeline["x"] + 0.3 * timeline["width"], y, steps=5)
        page.mouse.up()
        expect(chart.locator("svg text", has_text="α̂ = ")).not_to_have_text(whole)
        started = no_rerun_since(page, started)
        chart.screenshot(path=browser.OUT / "linked-brushed.png")
        assert (browser.OUT / "linked-before.png").read_bytes() != (browser.OUT / "linked-brushed.png").read_bytes()
        drags = [DRAG.replace("X0", str(a)).replace("X1", str(b))
                 for a, b in ((0.6, 0.9), (0.1, 0.5), (0.7, 0.75), (0.2, 0.95), (0.4, 0.6), (0.02, 0.3), (0.5, 0.8))]
        brushed = redraws(page, 0, drags)
        assert runs.started == started

        browser.open_page(page, "Traces", "Traces")
        again = open_linked_view(page)
        verdicts = chart.locator(".concat_1_group path.background").first
        verdicts.scroll_into_view_if_needed()   # as a person would: the page may run below the window
        cells = verdicts.bounding_box()
        iterations = len(trace.iterations)
        page.mouse.click(cells["x"] + (100.45 / (iterations - 0.1)) * cells["width"], cells["y"] + 5)
        page.locator("h3", has_text="Iteration 100:").wait_for()
        assert page.locator("h1", has_text="Iteration inspector").count() == 1
        chromium.close()
    with (browser.OUT / "altair-timing.txt").open("a") as out:
        out.write(f"linked view, {len(trace.generated_ids)}-token trace ({iterations} iterations): first draw "
                  f"{first[0]:.0f} ms from the chart's element to its marks, {first[1]:.0f} ms from clicking the "
                  f"page's link (the visit's first Vega chart: the library loads); coming back: {again[0]:.0f} ms "
                  f"and {again[1]:.0f} ms\n")
        out.write(f"linked view brush redraw: {brushed[0]:.0f} ms to the SVG change, {brushed[1]:.0f} ms to the "
                  "next frame (median of 7 drags)\n")


# A plotly chart's pieces as the browser laid them out, each a box {l, t, r, b} in px from the figure's corner:
# its panels, the point labels and callouts, markers, the names in bars, panel titles, tick labels, title, legend.
LAID_OUT = """(gd) => {
  const fl = gd._fullLayout, svg = gd.querySelector('.main-svg').getBoundingClientRect();
  const box = e => { const r = e.getBoundingClientRect();
    return {l: r.left - svg.left, t: r.top - svg.top, r: r.right - svg.left, b: r.bottom - svg.top}; };
  const panels = Object.keys(fl).filter(k => /^xaxis[0-9]*$/.test(k)).map(k => {
    const x = fl[k], y = fl[x.anchor.replace('y', 'yaxis')];
    return {name: k, l: x._offset, r: x._offset + x._length, t: y._offset, b: y._offset + y._length}; });
  const notes = [...gd.querySelectorAll('.annotation')].map(a => ({text: a.textContent,
    callout: !!a.querySelector('.annotation-arrow-g path'), ...box(a.querySelector('.annotation-text-g'))}));
  const texts = sel => [...gd.querySelectorAll(sel)].filter(t => t.textContent)
    .map(t => ({text: t.textContent, ...box(t)}));
  return {width: fl.width, height: fl.height, panels, notes,
    labels: texts('.scatterlayer .textpoint text').concat(notes.filter(n => n.callout)),
    markers: [...gd.querySelectorAll('.scatterlayer .points path.point')].map(box),
    bartexts: texts('.barlayer text.bartext'), bars: [...gd.querySelectorAll('.barlayer .point path')].map(box),
    xticks: texts('.xtick text'), ticks: texts('.xtick text, .ytick text'),
    title: box(gd.querySelector('.gtitle')), legend: box(gd.querySelector('.legend'))};
}"""


def meet(a: dict, b: dict, slack: float = 0.5) -> bool:
    return min(a["r"], b["r"]) - max(a["l"], b["l"]) > slack and min(a["b"], b["b"]) - max(a["t"], b["t"]) > slack


def within(a: dict, b: dict, slack: float = 1.0) -> bool:
    return (a["l"] >= b["l"] - slack and a["r"] <= b["r"] + slack and
            a["t"] >= b["t"] - slack and a["b"] <= b["b"] + slack)


def test_the_drafters_and_toy_charts_fit_a_projectors_widths(tmp_path):
    """The Speedup page's drafters chart from 480 px (1024 px wide or 150% zoom) to 1400, and the Theory page's
    toy charts from 230 px (each half the page at 150% zoom) to 420, laid out by chromium: no label over another,
    over a marker or out of its panel, no panel title over another, every token a tick label, the titles and
    legends inside the figure."""
    from playwright.sync_api import sync_playwright

    from specviz import charts, toy
    from specviz.study import load_record

    labels = [str(t) for t in toy.TABLE["token"]]
    split = toy.split(toy.TABLE["p"], toy.TABLE["q"])
    figures = {"drafters": (charts.drafters_chart(load_record(browser.ROOT / "assets/examples/drafters.json")),
                            (480, 560, 760, 900, 1400)),
               "toy-split": (charts.toy_split_chart(split, labels), (230, 300, 420)),
               "toy-histogram": (charts.toy_histogram(toy.simulate(toy.TABLE["p"], toy.TABLE["q"], 500), split.p,
                                                      labels), (230, 420))}
    browser.OUT.mkdir(exist_ok=True)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=browser.CHROMIUM, args=browser.ARGS)
        page = chromium.new_page(viewport={"width": 1500, "height": 900})
        for name, (fig, widths) in figures.items():
            (tmp_path / f"{name}.html").write_text(fig.to_html(include_plotlyjs=True, div_id="chart"))
            page.goto((tmp_path / f"{name}.html").as_uri())
            chart = page.locator("#chart")
            chart.locator(".main-svg").first.wait_for()
            for width in widths:
                page.evaluate("async w => await Plotly.relayout('chart', {width: w})", width)
                seen = page.evaluate(LAID_OUT, chart.element_handle())
                where = f"{name} at {width} px"
                figure = {"l": 0, "t": 0, "r": seen["width"], "b": seen["height"]}
                assert within(seen["title"], figure) and within(seen["legend"], figure), where
                titles = [n for n in seen["notes"] if not n["callout"]]
                assert all(within(t, figure) for t in titles), where
                assert not any(meet(a, b) for k, a in enumerate(titles) for b in titles[k + 1:]), where
                assert not any(meet(a, b) for k, a in enumerate(seen["ticks"]) for b in seen["ticks"][k + 1:]), where
                if name == "drafters":
                    panels = {p["name"]: p for p in seen["panels"]}
                    assert len(seen["labels"]) == 7 and all(within(t, panels["xaxis2"]) for t in seen["labels"]), where
                    for k, a in enumerate(seen["labels"]):
                        assert not any(meet(a, b) for b in seen["labels"][k + 1:]), (where, a["text"])
                        assert not any(meet(a, m, 1.5) for m in seen["markers"]), (where, a["text"])
                    assert len(seen["bartexts"]) == len(seen["bars"]) == 9, where
                    for text, bar in zip(seen["bartexts"], seen["bars"]):   # on its own bar, in the panel
                        middle, half = (text["l"] + text["r"]) / 2, 0.3 * (text["r"] - text["l"])   # the letters,
                        ink = {**text, "l": middle - half, "r": middle + half}   # not the whole line's height
                        assert bar["l"] <= middle <= bar["r"], (where, text["text"])
                        assert within(ink, panels["xaxis3"]), (where, text["text"])
                        assert not any(meet(ink, tick) for tick in seen["ticks"]), (where, text["text"])
                else:
                    assert [t["text"] for t in seen["xticks"]] == labels, where
                chart.screenshot(path=browser.OUT / f"{name}-{width}.png")
        chromium.close()
