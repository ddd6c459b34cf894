"""Token trees: a draft as nodes (token, parent, depth), a chain being the tree with one branch.

A tree draft proposes several continuations that share prefixes (SpecInfer's token tree, EAGLE's
"tree-structured draft"). Node i holds one token and the index of its parent (-1: a child of the
last committed token, the root); parents come before their children, so node order is a valid
order to feed the nodes in. The depth of a node is the number of drafted tokens on its path.

The target verifies the whole tree in one forward pass: each node sits at position
prefix + depth - 1 and attends to the prefix and to its own ancestors only (`attention_mask`),
so its logits are exactly those of feeding its path alone. A chain's mask is the causal one.
"""

from __future__ import annotations

import torch

from specviz.errors import SpecvizError


def parse_shape(text: str) -> tuple[int, int, int]:
    """A tree's shape written DEPTHxTOPKxNODES (4x1x0 is a γ=4 chain; 4x2x8 a depth-4 tree of top-2 children
    and at most 8 nodes); SpecvizError when it is not one."""
    parts = text.strip().split("x")
    if len(parts) != 3 or not all(part.isdigit() for part in parts) or int(parts[0]) < 1 or int(parts[1]) < 1:
        raise SpecvizError(f"{text!r} is not DEPTHxTOPKxNODES (e.g. 4x2x8)")
    depth, topk, nodes = (int(part) for part in parts)
    return depth, topk, nodes


def common_prefix(a: list[int], b: list[int]) -> int:
    """How many leading tokens two sequences share: the path two chains share (what of a KV
    cache built on one serves the other; where an output parts from a reference)."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def chain(n: int) -> list[int]:
    """The parents of a chain of n nodes: each node's parent is the one before it."""
    return list(range(-1, n - 1))


def is_chain(parents: list[int]) -> bool:
    return all(parent == i - 1 for i, parent in enumerate(parents))


def depths(parents: list[int]) -> list[int]:
    """Depth of each node, 1 for the root's children."""
    out: list[int] = []
    for parent in parents:
        out.append(1 if parent < 0 else out[parent] + 1)
    return out


def children(parents: list[int]) -> dict[int, list[int]]:
    """Node -> its children in node order (the drafter's ranking); -1 is the root."""
    out: dict[int, list[int]] = {}
    for i, parent in enumerate(parents):
        out.setdefault(parent, []).append(i)
    return out


def walk(ok: list[bool], parents: list[int], rank: list[int] | None = None) -> tuple[list[int], list[int]]:
    """Follow passing children from the root: at each node the passing child the target ranks best
    (with `rank`) or the first one. Returns the path and every child of a reached node, in order."""
    tree, node, path_, tested = children(parents), -1, [], []
    while True:
        kids = tree.get(node, [])
        tested.extend(kids)
        good = [c for c in kids if ok[c]]
        if not good:
            return path_, tested
        node = min(good, key=lambda c: rank[c]) if rank else good[0]
        path_.append(node)


def ancestry(parents: list[int]) -> torch.Tensor:
    """[n, n] bool: entry (i, j) is True when node j is node i or one of its ancestors."""
    n = len(parents)
    seen = torch.eye(n, dtype=torch.bool)
    for i, parent in enumerate(parents):
        if parent >= 0:
            seen[i] |= seen[parent]
    return seen


def visibility(parents: list[int], past: int, lead: int = 0) -> torch.Tensor:
    """[lead + n, past + lead + n] bool: what each of a pass's new positions may attend to, when
    `past` positions are cached, `lead` committed tokens are fed first and the last n = len(parents)
    are tree nodes. The cached and lead positions form a causal prefix that every row sees; a node
    also sees its ancestors and itself, never its siblings or cousins."""
    new = lead + len(parents)
    seen = torch.ones(new, past + new, dtype=torch.bool).tril(past)
    seen[lead:, past + lead:] = ancestry(parents)
    return seen


def attention_mask(parents: list[int], past: int, new: int, dtype: torch.dtype,
                   device: torch.device) -> torch.Tensor:
    """`visibility` of a pass over `new` tokens whose last len(parents) are tree nodes, as the
    additive 4D mask [1, 1, new, past + new]: 0 where attention is allowed, the dtype's minimum
    elsewhere (the form transformers passes through to eager and SDPA attention alike)."""
    seen = visibility(parents, past, new - len(parents))
    mask = torch.zeros(seen.shape, dtype=dtype).masked_fill(~seen, torch.finfo(dtype).min)
    return mask.to(device)[None, None]
