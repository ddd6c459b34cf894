"""Another session on the same machine: the embedded target decoding alone, greedy, one thread, over and over,
until stopped. Run it beside a measurement to see what a second visitor does to it (`learnt-costs.md`):

    PYTHONPATH=. python benchmarks/neighbour.py &
"""

from __future__ import annotations

import torch

from specviz import DecodeSettings, generate, load_model

PROMPT = "Write a long story about a lighthouse keeper and the sea."


def main() -> None:
    torch.set_num_threads(1)
    target = load_model(None, "cpu", "float32")
    settings = DecodeSettings(temperature=0.0, max_new_tokens=64, record=False)
    while True:
        generate(target, None, PROMPT, settings)


if __name__ == "__main__":
    main()
