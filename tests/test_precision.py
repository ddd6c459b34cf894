"""Precision as a choice: what bf16 measured against fp32 on this machine, and a greedy parting explained
as a near tie or called a bug."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from apps import APP, PAGE_TIMEOUT
from streamlit.testing.v1 import AppTest

from specviz import DecodeSettings, SpecvizError, device, generate, precision, verification, verify_cost
from specviz.charts.race import agreement
from specviz.device import pick_dtype
from specviz.divergence import NEAR_TIE, Divergence, Top2, describe
from specviz.drafters import DraftModelDrafter
from specviz.models import load_model
from specviz.study import Study, Variant


def test_the_gain_is_read_from_both_measured_curves(tiny_llama_dirs, tmp_path, monkeypatch, kept_threads):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    monkeypatch.setattr(precision, "native_bf16", lambda: True)
    torch.set_num_threads(1)
    fp32 = load_model(str(tiny_llama_dirs[0]), dtype="float32")
    assert precision.measured_gain(fp32.name, "cpu", 1) is None
    assert "Run once in each precision" in precision.gain_note(fp32.name, torch.device("cpu"), 1)
    slow = verify_cost.cached(fp32)
    assert precision.measured_gain(fp32.name, "cpu", 1) is None   # bf16 not measured yet
    fast = verify_cost.cached(load_model(str(tiny_llama_dirs[0]), dtype="bfloat16"))
    gain = precision.measured_gain(fp32.name, "cpu", 1)
    assert (gain.fp32_s, gain.bf16_s) == (slow.seconds[0], fast.seconds[0]) and fast.dtype == "bfloat16"
    assert f"{gain.speedup:.2f}× faster" in precision.gain_note(fp32.name, torch.device("cpu"), 1)
    assert precision.measured_gain(fp32.name, "cpu", 2) is None   # another thread count is another machine
    monkeypatch.setattr(precision, "native_bf16", lambda: False)
    assert "emulated" in precision.gain_note(fp32.name, torch.device("cpu"), 1)


def test_the_cpu_offers_fp32_first():
    assert precision.choices(torch.device("cpu")) == ["float32", "bfloat16"]
    assert precision.default(torch.device("cpu")) == "float32"
    with pytest.raises(SpecvizError, match="unknown dtype 'fp8': choose one of float32, fp32, float16"):
        pick_dtype(torch.device("cpu"), "fp8")


@pytest.mark.parametrize("native, offered", [(True, ["bfloat16", "float16", "float32"]),
                                             (False, ["float16", "float32"])])
def test_a_gpu_that_emulates_bf16_gets_fp16(monkeypatch, native, offered):
    """A T4 (sm75) has no bf16 units: torch's default check counts emulation, several times slower than fp16."""
    asked = []

    def supported(including_emulation: bool = True) -> bool:
        asked.append(including_emulation)
        return native or including_emulation

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", supported)
    gpu = torch.device("cuda")
    assert precision.choices(gpu) == offered and pick_dtype(gpu) == getattr(torch, offered[0])
    assert asked and not any(asked)


def test_a_process_that_has_not_started_cuda_asks_a_child_about_the_gpu(monkeypatch):
    """The web server draws the precision box and reads cached sizings (named by the GPU) without starting CUDA,
    whose context would hold hundreds of MB of the GPU for as long as the server runs: a child process asks. A
    process that has started CUDA (the decoder's, which loads the models) asks torch itself. A child that fails
    leaves the cautious answer (fp16, no name), kept: the pages still draw, and no child is started per page."""
    def in_this_process(*args, **kwargs):
        raise AssertionError("CUDA started in the server's own process")

    children, run = [], subprocess.run

    def child(*args, **kwargs):
        children.append(run(*args, **kwargs))
        return children[-1]

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", in_this_process)
    monkeypatch.setattr(torch.cuda, "get_device_name", in_this_process)
    monkeypatch.setattr(device.subprocess, "run", child)
    device._gpu_facts.cache_clear()
    gpu = torch.device("cuda")
    answer = precision.choices(gpu)   # the child's torch sees this machine's own GPU, if any
    facts = json.loads(children[0].stdout)
    assert answer == (["bfloat16", "float16", "float32"] if facts["bf16"] else ["float16", "float32"])
    if facts["names"]:
        assert device.device_name(gpu) == facts["names"][0]
    assert precision.choices(gpu) == answer and len(children) == 1   # asked once a process
    device._gpu_facts.cache_clear()
    monkeypatch.setattr(sys, "executable", "/bin/false")   # a child that fails: the cautious answer, kept
    assert precision.choices(gpu) == ["float16", "float32"] and device.device_name(gpu) == "GPU (its name unknown)"
    assert precision.choices(gpu) == ["float16", "float32"] and len(children) == 2
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index: "the GPU torch names")
    assert precision.choices(gpu) == ["bfloat16", "float16", "float32"] and len(children) == 2
    assert device.device_name(gpu) == "the GPU torch names"
    device._gpu_facts.cache_clear()


def parting(flip: float) -> Divergence:
    alone, ours = Top2([5, 7], ["cat", "dog"], flip), Top2([7, 5], ["dog", "cat"], 0.004)
    return Divergence(position=11, ours=7, alone=5, ours_top2=ours, alone_top2=alone, flip=flip)


def test_a_near_tie_is_explained_and_a_wide_gap_is_called_a_bug():
    tie = describe(parting(0.012), "bfloat16")
    assert tie.startswith("Greedy output parts from the target alone's at generated token 12")
    assert "led ours by only 0.012 logits" in tie and "rounding in bfloat16 flipped" in tie
    assert "'cat' ahead of 'dog' by 0.012" in tie and "'dog' ahead of 'cat' by 0.004" in tie
    wide = describe(parting(NEAR_TIE + 2), "float32")
    assert "more than rounding moves" in wide and "a bug in the verifier" in wide
    assert "no distribution" in describe(Divergence(3, 7, 5, None, None, None), "bfloat16")
    unseen = describe(Divergence(3, 9, 5, None, parting(0.1).alone_top2, None), "bfloat16")
    assert "not even among" in unseen and "a bug in the verifier" in unseen


def test_a_verifier_that_accepts_everything_is_called_a_bug_on_the_generate_page(tiny_llama_dirs, monkeypatch):
    target = load_model(str(tiny_llama_dirs[0]))
    drafter = DraftModelDrafter(load_model(str(tiny_llama_dirs[1])))
    target.eos_ids = frozenset()
    settings = DecodeSettings(temperature=0, gamma=4, max_new_tokens=32)
    alone = generate(target, None, "w1 w2 w3", settings)
    honest = generate(target, drafter, "w1 w2 w3", settings)
    assert agreement(Study("comparison", alone, [Variant({}, honest)]))[0]

    def accept_all(p, draft, parents=None):
        parents = list(range(-1, len(draft) - 1)) if parents is None else parents
        return verification._walk(torch.ones(len(draft), dtype=torch.bool), parents, p.argmax(dim=-1).tolist())

    monkeypatch.setattr(verification, "greedy", accept_all)
    broken = generate(target, drafter, "w1 w2 w3", settings)
    study = Study("comparison", alone, [Variant({}, broken)])
    same, sentence = agreement(study)
    assert not same and "a bug in the verifier" in sentence

    at = AppTest.from_file(APP, default_timeout=PAGE_TIMEOUT)
    at.session_state["trace"], at.session_state["studies"] = broken, {"comparison": study}
    at.session_state["shown"] = "live"
    at.switch_page("pages/generate.py").run()
    assert not at.exception and [i.value for i in at.info] == [sentence]

