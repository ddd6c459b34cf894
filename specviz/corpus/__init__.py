"""The distillation corpus: broad prompts, the target's own answers, kept as token ids in the repository.

`prompts` builds prompts of every kind (chat, multi-turn, code, math, summarising, answering from
passages, translation, rewriting, long-form writing) from templates, topics and real text on the
machine; `answer` lets the target answer a batch of them; `grow` adds N more answers as a new shard;
`store` reads and writes shards and the held-out prompts (`heldout`), which no training step reads.
"""
