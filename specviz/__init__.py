"""specviz: a speculative decoder that records everything it decides."""

from specviz.decoder import Run, generate
from specviz.errors import SpecvizError
from specviz.models import EMBEDDED, LoadedModel, check_same_vocab, load_model
from specviz.settings import DecodeSettings
from specviz.trace import Trace, load_trace, trace_from_dict

__all__ = ["DecodeSettings", "EMBEDDED", "LoadedModel", "Run", "SpecvizError", "Trace",
           "check_same_vocab", "generate", "load_model", "load_trace", "trace_from_dict"]
