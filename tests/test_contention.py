"""Other processes' CPU use is seen, so a sizing timed on a busy machine says so."""

import subprocess
import sys
import time

from specviz.contention import BUSY_CORES, Contention, _own_seconds, warning

SPIN = "import time\nwhile time.process_time() < 1.0:\n    pass\nprint(time.process_time())"


def test_a_busy_neighbour_is_counted():
    start = time.perf_counter()
    contention = Contention()
    spent = float(subprocess.run([sys.executable, "-c", SPIN], capture_output=True, text=True, check=True).stdout)
    others = contention.others()
    wall = time.perf_counter() - start
    assert others >= (spent - 0.05) / wall   # the neighbour's CPU second, in cores over the wall time
    # and it is counted as another's, not ours (a lower bound alone would pass on a machine busy anyway)
    assert _own_seconds() - contention.own < 0.5 * spent


def test_the_warning_names_the_remedy_only_when_busy():
    assert warning("the curve", None) is None
    assert warning("the curve", BUSY_CORES / 2) is None
    text = warning("the curve", 1.0)
    assert text.startswith("the curve was measured while other processes kept 1.0 of ")
    assert "python -m specviz sizing --again" in text
