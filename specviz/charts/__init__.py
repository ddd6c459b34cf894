"""Pure figure builders: trace records and DataFrames in, plotly or Altair figures or HTML out."""

from specviz.charts.explorer import theory_explorer
from specviz.charts.inspector import acceptance_test, final_bars, pq_bars, residual_bars
from specviz.charts.linked import linked_view
from specviz.charts.speedup import sweep_chart
from specviz.charts.table import draft_verify_table
from specviz.charts.text import colored_text, legend
from specviz.charts.theory import toy_histogram, toy_split_chart
from specviz.charts.timeline import timeline

__all__ = ["acceptance_test", "colored_text", "draft_verify_table", "final_bars", "legend", "linked_view",
           "pq_bars", "residual_bars", "sweep_chart", "theory_explorer", "timeline",
           "toy_histogram", "toy_split_chart"]
