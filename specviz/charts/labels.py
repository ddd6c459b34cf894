"""Labels beside a scatter's points that never meet: each by its point or in a callout, placed so that none
overlaps another label, a marker or the panel's edge at any width of the panel between its narrowest and a
stretch of it (the points move apart sideways as the page widens; the labels keep their size).

A search with backtracking over each label's places (plotly's text positions around the marker, then callouts
at growing distances in 24 directions), the most constrained label first; where none is clear within `TRIES`
steps, each label goes where it overlaps least at the narrowest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

CHAR = 0.5         # a character's width in em, generous for Source Sans (Streamlit's) and Open Sans (plotly's)
TRIES = 5_000      # backtracking steps for the labels' places before the least-overlap fallback
CALLOUT_REACH = [12, 22, 34, 48, 64]   # px from a point to the nearest edge of its callout
PLACES = ["middle right", "top center", "bottom center", "middle left", "top right", "bottom right", "top left",
          "bottom left"]


Box = tuple[float, float, float, float]   # left, bottom, right, top in px, y up


@dataclass(frozen=True)
class Place:
    """Where a point's label goes: plotly's text `position` by the marker, or an `offset` (px, y up) of a callout's
    centre from the point, with the `text` shown (a group label may break after its commas) and its `box` (px,
    from the point)."""
    position: str | None
    offset: tuple[float, float] | None
    text: str
    box: Box


def text_size(text: str, font: float) -> tuple[float, float]:
    """A label's width and height in px at `font` px, estimated from its characters (`CHAR` em each) and lines,
    with room for a callout's padding (2 px a side)."""
    lines = text.split("<br>")
    return max(len(line) for line in lines) * CHAR * font + 4, len(lines) * 1.3 * font + 4


def label_box(position: str, text: str, marker: float, font: float) -> Box:
    """The box (px, from the point) a label takes at plotly's text `position` around the point's marker."""
    width, height = text_size(text, font)
    gap = marker / 2 + 2
    vertical, horizontal = position.split()
    left = {"left": -gap - width, "center": -width / 2, "right": gap}[horizontal]
    bottom = {"bottom": -gap - height, "middle": -height / 2, "top": gap}[vertical]
    return left, bottom, left + width, bottom + height


def options(label: str, marker: float, font: float) -> list[Place]:
    """A label's places, best first: by the marker at each text position, then in a callout at each `CALLOUT_REACH`
    (px from the point to the callout's nearest edge) in each of 24 directions, rightwards first."""
    texts = list(dict.fromkeys([label, label.replace(", ", ",<br>")]))
    near = [Place(position, None, text, label_box(position, text, marker, font))
            for text in texts for position in PLACES]
    far = []
    for reach in CALLOUT_REACH:
        for degrees in sorted(range(0, 360, 15), key=lambda d: (abs((d + 180) % 360 - 180), d)):
            dx, dy = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
            for text in texts:
                width, height = text_size(text, font)
                edge = min(width / 2 / abs(dx) if abs(dx) > 1e-9 else math.inf,
                           height / 2 / abs(dy) if abs(dy) > 1e-9 else math.inf)
                cx, cy = dx * (reach + edge), dy * (reach + edge)
                box = (cx - width / 2, cy - height / 2, cx + width / 2, cy + height / 2)
                far.append(Place(None, (cx, cy), text, box))
    return near + far


def overlap(a: Box, b: Box) -> float:
    """The area two boxes share."""
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def shift(box: Box, x: float, y: float) -> Box:
    return box[0] + x, box[1] + y, box[2] + x, box[3] + y


def sweep(a: Box, b: Box, shifts: tuple[float, float]) -> bool:
    """Whether box `b`, moved right by some shift in `shifts` (low, high), overlaps box `a`."""
    if not (a[1] < b[3] and b[1] < a[3]):
        return False
    return max(a[0] - b[2], shifts[0]) < min(a[2] - b[0], shifts[1])


def sweep_line(start: tuple[float, float], end: tuple[float, float], b: Box, shifts: tuple[float, float]) -> bool:
    """Whether the segment from `start` to `end` runs through box `b` moved right by some shift in `shifts`."""
    (x0, y0), (x1, y1) = start, end
    if abs(y1 - y0) < 1e-9:
        if not b[1] < y0 < b[3]:
            return False
        low, high = 0.0, 1.0
    else:
        low, high = sorted(((b[1] - y0) / (y1 - y0), (b[3] - y0) / (y1 - y0)))
        low, high = max(low, 0.0), min(high, 1.0)
        if low >= high:
            return False
    xs = sorted((x0 + (x1 - x0) * low, x0 + (x1 - x0) * high))
    return max(xs[0] - b[2], shifts[0]) < min(xs[1] - b[0], shifts[1])


@lru_cache(maxsize=16)   # a page's every rerun draws the chart again from the same study
def place_labels(points: tuple[tuple[float, float | None], ...], labels: tuple[str, ...], x_range: tuple[float, float],
                 y_range: tuple[float, float], size: tuple[float, float], stretch: float, marker: float,
                 font: float) -> tuple[Place, ...]:
    """Each point's label `Place` (markers of `marker` px, labels in `font` px), such that at every width of the
    panel from the narrowest (`size` px) to `stretch` times that, each label stays inside the panel, clear of every
    marker and of the other labels, and each callout's line clear of the other markers and labels: found by
    backtracking, the label with the fewest such places first (within `TRIES` steps); failing that, each label in
    turn where it overlaps least at the narrowest."""
    width, height = size
    r = marker / 2 + 1
    at = {i: ((p[0] - x_range[0]) / (x_range[1] - x_range[0]) * width,
              (p[1] - y_range[0]) / (y_range[1] - y_range[0]) * height) for i, p in enumerate(points)
          if p[1] is not None}
    dot = (-r, -r, r, r)   # a marker's box

    def shifts(i: int, k: int) -> tuple[float, float]:
        """How far right of point i point k is, from the narrowest chart to the widest."""
        gap = at[k][0] - at[i][0]
        return min(gap, gap * stretch), max(gap, gap * stretch)

    def lifted(box: Box, i: int) -> Box:   # a box from point i, at point i's height
        return box[0], box[1] + at[i][1], box[2], box[3] + at[i][1]

    def alone(i: int, place: Place) -> float:
        """What a place costs whatever the other labels do: its area outside the panel or over a marker at the
        narrowest, and a thousand for each marker it or its callout's line meets at any width (its callout's line
        leaves from its own marker, and from those under it)."""
        box = shift(place.box, *at[i])
        cost = (box[2] - box[0]) * (box[3] - box[1]) - overlap(box, (0.0, 0.0, width, height))
        cost += sum(overlap(box, shift(dot, *at[k])) for k in at)
        cost += 1000 * sum(sweep(lifted(place.box, i), lifted(dot, k), shifts(i, k)) for k in at)
        if place.offset is not None:
            line = (0.0, at[i][1]), (place.offset[0], at[i][1] + place.offset[1])
            cost += 1000 * sum(sweep_line(*line, lifted(dot, k), shifts(i, k)) for k in at
                               if abs(at[k][0] - at[i][0]) + abs(at[k][1] - at[i][1]) > 2 * r)
        return cost

    def between(i: int, place: Place, k: int, other: Place) -> float:
        """What two labels' places cost together: their shared area at the narrowest, and a thousand where they,
        or a callout's line and the other label, meet at any width."""
        cost = overlap(shift(place.box, *at[i]), shift(other.box, *at[k]))
        cost += 1000 * sweep(lifted(place.box, i), lifted(other.box, k), shifts(i, k))
        if place.offset is not None:
            line = (0.0, at[i][1]), (place.offset[0], at[i][1] + place.offset[1])
            cost += 1000 * sweep_line(*line, lifted(other.box, k), shifts(i, k))
        if other.offset is not None:
            line = (0.0, at[k][1]), (other.offset[0], at[k][1] + other.offset[1])
            cost += 1000 * sweep_line(*line, lifted(place.box, i), shifts(k, i))
        return cost

    named = [i for i in at if labels[i]]
    choices = {i: [(alone(i, place), place) for place in options(labels[i], marker, font)] for i in named}
    clear = {i: [place for cost, place in choices[i] if cost == 0] for i in named}
    order = sorted(named, key=lambda i: len(clear[i]))
    tries = [TRIES]

    def search(k: int, placed: list[tuple[int, Place]]) -> bool:
        if k == len(order):
            return True
        i = order[k]
        for place in clear[i]:
            tries[0] -= 1
            if tries[0] < 0:
                return False
            if all(between(i, place, j, other) == 0 for j, other in placed):
                placed.append((i, place))
                if search(k + 1, placed):
                    return True
                placed.pop()
        return False

    placed: list[tuple[int, Place]] = []
    if not search(0, placed):
        placed = []
        for i in order:
            placed.append((i, min(choices[i], key=lambda choice: choice[0] + sum(
                between(i, choice[1], j, other) for j, other in placed))[1]))
    places = [Place(PLACES[0], None, label, (0.0, 0.0, 0.0, 0.0)) for label in labels]
    for i, place in placed:
        places[i] = place
    return tuple(places)
