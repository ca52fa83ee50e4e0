"""The GPUs-busy refusal: the holders named, and what to do about them (the multi-node contract's
bisect stops at this on a host whose baseline holds the GPUs)."""

from __future__ import annotations

import json

from workbench.gpus import GpuApp, GpuInventory

GPUS = [{"index": str(i), "memory.used": "70000"} for i in range(2)]


def test_a_unit_holding_the_gpus_is_named_with_the_parameter_that_stops_it_for_the_run():
    inv = GpuInventory(gpus=GPUS, apps=[GpuApp(11, "python3", 70000, 0, "sglang-k26-ddtree.service"),
                                        GpuApp(12, "python3", 70000, 1, "sglang-k26-ddtree.service")])
    msg = inv.busy_message("gpu-a")
    assert msg.startswith("gpu-a: GPUs are busy, not starting anything:")
    assert "GPU 0: pid 11 (python3) of sglang-k26-ddtree.service" in msg
    line = next(x for x in msg.splitlines() if "stop_units" in x)
    assert json.loads(line.split("stop_units '")[1].split("'")[0]) == ["sglang-k26-ddtree.service"]
    assert "workbench stop gpu-a UNIT" in line


def test_allowed_units_and_free_gpus_give_no_message_and_unknown_holders_no_hint():
    inv = GpuInventory(gpus=GPUS, apps=[GpuApp(11, "python3", 70000, 0, "base.service")])
    msg = inv.busy_message("h", allow_units=("base.service",))  # GPU 0 is the base's; GPU 1 full, no process
    assert "GPU 0" not in msg and "GPU 1: 70000 MiB in use by processes not listed" in msg
    assert "stop_units" not in msg
    assert GpuInventory(gpus=[{"index": "0", "memory.used": "3"}]).busy_message("h") == ""
    msg = GpuInventory(gpus=[{"index": "0", "memory.used": "9000"}]).busy_message("h")
    assert "processes not listed" in msg and "stop_units" not in msg
