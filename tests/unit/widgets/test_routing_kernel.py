"""Output from a background thread lands in the task's Output widget, on a real ipykernel.

A kernel is started (jupyter_client); a task prints from its thread while the cell that
started it has finished and another cell has run (the case of ipywidgets 2358/4020).
The iopub messages are then checked: the print carries the parent header that the log
Output widget captures (its ``msg_id``), not the parent of whichever cell ran last,
and ``ctx.log`` arrives as the widget's state.
"""

from __future__ import annotations

import json

import pytest

jupyter_client = pytest.importorskip("jupyter_client")

CELL_1 = """
import threading
from workbench.widgets.background import TaskBar
bar = TaskBar("probe")
go = threading.Event()
def work(ctx):
    go.wait(30)
    print("stray print from the task thread")
    ctx.log("explicit log line")
    return "ok"
task = bar.submit("probe", work)
print("log widget", bar.log.model_id)
"""
CELL_2 = "print('second cell'); go.set(); bar.wait(30); print('state', task.state)"


def _run(kc, code):
    msg_id = kc.execute(code)
    msgs = []
    while True:
        msg = kc.get_iopub_msg(timeout=60)
        msgs.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle" \
                and msg["parent_header"].get("msg_id") == msg_id:
            return msg_id, msgs


def test_thread_output_is_routed_to_the_log_widget():
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        _id1, msgs1 = _run(kc, CELL_1)
        id2, msgs2 = _run(kc, CELL_2)
        msgs = msgs1 + msgs2
        text = "".join(m["content"].get("text", "") for m in msgs2 if m["msg_type"] == "stream")
        assert "state done" in text
        log_id = next(m["content"]["text"].split()[-1] for m in msgs1 if m["msg_type"] == "stream"
                      and "log widget" in m["content"]["text"])
        # the msg_id the log widget was told to capture (comm state updates)
        captured = [m["content"]["data"]["state"]["msg_id"] for m in msgs
                    if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == log_id
                    and "msg_id" in m["content"]["data"].get("state", {})]
        routed_ids = [c for c in captured if c]
        assert routed_ids and routed_ids[0].startswith("wb-task-")
        stray = [m for m in msgs if m["msg_type"] == "stream" and "stray print" in m["content"]["text"]]
        assert len(stray) == 1
        assert stray[0]["parent_header"]["msg_id"] == routed_ids[0]  # captured by the widget ...
        assert stray[0]["parent_header"]["msg_id"] != id2  # ... not by the cell that ran last
        assert captured[-1] == ""  # capture released when the task ended
        outputs = [m["content"]["data"]["state"]["outputs"] for m in msgs
                   if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == log_id
                   and "outputs" in m["content"]["data"].get("state", {})]
        assert any("explicit log line" in json.dumps(o) for o in outputs)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
