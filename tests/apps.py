"""The app under AppTest, and the sidebar set for the tiny same-vocabulary pair the tests build."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from pages.ui.controls import CUSTOM_PAIR

APP = str(Path(__file__).resolve().parent.parent / "app.py")
# AppTest's limit on one script run. A run that only draws pages gets minutes: the first one in a process imports
# torch, transformers and the charts. A run that waits on the decoder process gets more: a fresh process starts,
# and on a cold machine converts and loads the embedded model there first, beside a parallel suite.
PAGE_TIMEOUT = 120
MODEL_TIMEOUT = 600


def use_tiny_pair(at: AppTest, dirs: tuple[Path, Path], prompt: str, max_new_tokens: int) -> AppTest:
    """Point the sidebar at the tiny target and its draft LM (the "model" drafter), with `prompt`."""
    target, drafter = dirs
    at.selectbox(key="pair").set_value(CUSTOM_PAIR).run()
    at.text_input(key="custom_target").set_value(str(target))
    at.text_input(key="custom_drafter").set_value(str(drafter))
    at.selectbox(key="drafter").set_value("model")
    at.text_area(key="prompt").set_value(prompt)
    at.slider(key="max_new_tokens").set_value(max_new_tokens)
    return at.run()


def switch_to(at: AppTest, name: str) -> AppTest:
    """Pick `name` (an example, or "live") in the sidebar's Showing box."""
    next(box for box in at.sidebar.selectbox if box.label == "Showing").set_value(name)
    return at.run()
