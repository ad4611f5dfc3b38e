"""The orders example on the OpenAI Agents SDK, unchanged but for its store:
each refund first appends its idempotency key to refunds-started.log in the
gate directory, then stops at the FileGate "refund" when the test armed it
(the same files as agenttest.FileGate), so a test can SIGKILL the plugin in
the middle of the write.

    python oa_gated_refund.py EXAMPLE_DIR GATE_DIR
"""

from __future__ import annotations

import os
import runpy
import sys
import time

example, gate_dir = sys.argv[1], sys.argv[2]
sys.path.insert(0, example)

import orders_agent  # noqa: E402


class GatedStore(orders_agent.Store):
    def refund(self, order_id: str, amount_cents: int, key: str) -> str:
        with open(os.path.join(gate_dir, "refunds-started.log"), "a") as f:
            f.write(key + "\n")
        gate = os.path.join(gate_dir, "gate-refund.")
        if os.path.exists(gate + "armed"):
            with open(gate + "reached", "w") as f:
                f.write(str(os.getpid()))
            while not os.path.exists(gate + "release"):
                time.sleep(0.01)
        return super().refund(order_id, amount_cents, key)


orders_agent.Store = GatedStore  # type: ignore[misc]
sys.argv = [os.path.join(example, "main.py")]
runpy.run_path(sys.argv[0], run_name="__main__")
