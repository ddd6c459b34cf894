"""Targets served by real engines (vLLM, SGLang, llama-cpp-python) over HTTP: `target.RemoteTarget`
verifies drafts in one request per iteration; `engines` holds what each engine takes and returns."""

from specviz.remote.target import RemoteError, RemoteTarget, check_url

__all__ = ["RemoteError", "RemoteTarget", "check_url"]
