"""A Python framework example, unchanged but for its store: each refund
first appends its idempotency key to refunds-started.log in the gate
directory, then stops at the FileGate "refund" when the test armed it (the
same files as agenttest.FileGate), so a test can SIGKILL the plugin in the
middle of the write.

    python py_gated_refund.py EXAMPLE_DIR GATE_DIR STORE_CLASS METHOD

STORE_CLASS.METHOD in the example's orders_agent.py writes a refund; one of
its arguments is the call's idempotency key.
"""

from __future__ import annotations

import os
import runpy
import sys
import time
from typing import Any

example, gate_dir, store, method = sys.argv[1:5]
sys.path.insert(0, example)

import orders_agent  # noqa: E402

cls = getattr(orders_agent, store)
refund = getattr(cls, method)


def gated_refund(self: Any, *args: Any) -> Any:
    key = next(a for a in args if isinstance(a, str) and "/turn-" in a)
    with open(os.path.join(gate_dir, "refunds-started.log"), "a") as f:
        f.write(key + "\n")
    gate = os.path.join(gate_dir, "gate-refund.")
    if os.path.exists(gate + "armed"):
        with open(gate + "reached", "w") as f:
            f.write(str(os.getpid()))
        while not os.path.exists(gate + "release"):
            time.sleep(0.01)
    return refund(self, *args)


setattr(cls, method, gated_refund)
sys.argv = [os.path.join(example, "main.py")]
runpy.run_path(sys.argv[0], run_name="__main__")
