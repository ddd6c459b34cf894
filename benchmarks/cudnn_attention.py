"""cuDNN's attention on CUDA against torch's other kernels, on prompts new to the process.

cuDNN builds a plan for each new pair of query and key lengths; a decode meets new lengths at every
step. Each prompt below is new to the process except the last (the first one again). Run one process
per setting, from the repository root:

    PYTHONPATH=. python benchmarks/cudnn_attention.py bfloat16 on
    PYTHONPATH=. python benchmarks/cudnn_attention.py bfloat16 off

prints the milliseconds of each 32-token greedy run, the target alone (a) and the EAGLE head at γ 2 (e),
prompt by prompt. `specviz.device.steady_attention` turns cuDNN's attention off on CUDA; "on" here
turns it back on after the model loads.
"""

from __future__ import annotations

import json
import sys

import torch

from specviz.decoder import generate
from specviz.device import Clock
from specviz.drafters import build_drafter
from specviz.models import load_model
from specviz.settings import DecodeSettings

dtype, cudnn = sys.argv[1], sys.argv[2] == "on"
torch.set_num_threads(2)
target = load_model(None, "cuda", dtype)
torch.backends.cuda.enable_cudnn_sdp(cudnn)
target.eos_ids = frozenset()   # every run writes 32 tokens
clock, drafter = Clock(target.device), build_drafter("eagle", target)
settings = DecodeSettings(temperature=0.0, gamma=2, max_new_tokens=32, record=True)
for d in (None, drafter):   # the process's first runs, on a prompt of its own
    generate(target, d, "Hello there", settings)
prompts = [p["text"] for p in json.load(open("assets/bench_prompts.json"))["prompts"]][:6]
runs = []
for i, text in enumerate([*prompts, prompts[0]]):
    for d in (None, drafter):
        start = clock.now()
        generate(target, d, text, settings)
        runs.append(f"{i}{'e' if d else 'a'}:{1000 * (clock.now() - start):.0f}")
print(f"{dtype} cudnn {'on' if cudnn else 'off'} ms per 32 tokens: {' '.join(runs)}")
