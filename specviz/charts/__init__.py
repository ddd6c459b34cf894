"""Pure figure builders: trace records and DataFrames in, plotly or Altair figures or HTML out."""

from specviz.charts.adaptive import adaptive_chart
from specviz.charts.drafters import drafters_chart
from specviz.charts.explorer import theory_explorer
from specviz.charts.inspector import (
    acceptance_test,
    final_bars,
    iteration_heading,
    node_names,
    node_note,
    phase_caption,
    pq_bars,
    residual_bars,
)
from specviz.charts.lesson import (
    LessonStep,
    default_iteration,
    default_note,
    iteration_label,
    lesson_html,
    lesson_steps,
)
from specviz.charts.linked import linked_view
from specviz.charts.run_settings import agreement_note, settings_frame, shape_label
from specviz.charts.sizing import sizing_chart
from specviz.charts.speedup import speedup_chart, sweep_chart
from specviz.charts.study import ROW_HELP, grid_frame, rows_frame, rows_table, spread_note, study_setup
from specviz.charts.table import draft_verify_table
from specviz.charts.text import colored_text, legend
from specviz.charts.theory import toy_histogram, toy_split_chart
from specviz.charts.timeline import timeline
from specviz.charts.tree import (
    confidence_stop,
    last_committed,
    node_labels,
    node_test,
    rejection_points,
    residual_sequence,
    token_tree,
)
from specviz.charts.tree_mask import mask_note, tree_mask

__all__ = ["acceptance_test", "adaptive_chart", "agreement_note", "colored_text", "confidence_stop",
           "default_iteration", "default_note", "draft_verify_table", "drafters_chart", "final_bars", "grid_frame",
           "iteration_heading", "iteration_label", "last_committed", "legend", "lesson_html", "lesson_steps",
           "LessonStep", "linked_view", "mask_note", "node_labels", "node_names", "node_note", "node_test",
           "phase_caption", "pq_bars", "rejection_points", "residual_bars", "residual_sequence", "ROW_HELP",
           "rows_frame", "rows_table", "settings_frame", "shape_label", "sizing_chart", "speedup_chart", "spread_note",
           "study_setup", "sweep_chart", "theory_explorer", "timeline", "token_tree", "tree_mask", "toy_histogram",
           "toy_split_chart"]
