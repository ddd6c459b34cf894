"""oneDNN-packed linear layers compute what nn.Linear computes and leave the checkpoint alone."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from specviz import load_model
from specviz.packed_linear import PackedLinear, can_pack, pack_linears

pytestmark = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="torch built without oneDNN")


@pytest.mark.parametrize("bias", [True, False])
def test_packed_linear_matches_linear(bias):
    torch.manual_seed(0)
    linear = nn.Linear(48, 80, bias=bias)
    packed = PackedLinear(linear)
    for shape in [(1, 48), (5, 48), (1, 7, 48), (2, 3, 48)]:
        x = torch.randn(shape)
        assert torch.allclose(packed(x), linear(x), atol=1e-5)


def test_packed_linear_obeys_autocast():
    """Training prefills the target under bf16 autocast: a packed layer computes what a plain one does."""
    torch.manual_seed(0)
    linear = nn.Linear(48, 80)
    packed = PackedLinear(linear)
    x = torch.randn(3, 48)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want, got = linear(x), packed(x.to(torch.bfloat16))
    assert got.dtype == want.dtype == torch.bfloat16
    assert torch.equal(got, want)


def test_load_model_packs_on_the_cpu_only_when_asked(tiny_llama_dirs):
    packed = load_model(str(tiny_llama_dirs[0]))
    plain = load_model(str(tiny_llama_dirs[0]), pack=False)
    assert can_pack(plain.model)
    assert not any(isinstance(m, PackedLinear) for m in plain.model.modules())
    assert sum(isinstance(m, PackedLinear) for m in packed.model.modules()) == \
        sum(isinstance(m, nn.Linear) for m in plain.model.modules())
    assert packed.model.state_dict().keys() == plain.model.state_dict().keys()
    ids = torch.tensor([[1, 5, 9, 3, 7]])
    with torch.no_grad():
        assert torch.allclose(packed.model(ids).logits, plain.model(ids).logits, atol=1e-4)
    assert pack_linears(packed.model) == 0  # already packed: nothing left to swap
