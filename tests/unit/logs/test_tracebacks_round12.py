"""Mechanisms added after held-out 12 was measured (issue 15, eleventh round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.phases import timeline
from workbench.tracebacks import analyze


def test_a_c10d_store_socket_timeout_places_a_cut_start_up_stack_in_nccl_init() -> None:
    """sglang#7478 and ms-swift#3343: TCPStore's 'waitForInput ... timed out after 1800000ms' (with or without
    '[rankN]:'), then a start-up traceback cut before any frame names the step."""
    for prefix in ("[rank1]:", ""):
        text = (prefix + "[W623 15:37:01.824135523 socket.cpp:485] [c10d] waitForInput: socket SocketImpl(fd=100, "
                "addr=[node-0]:43590, remote=[node-0]:20000) timed out after 1800000ms\n"
                "[2025-06-23 15:37:01 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
                '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2546, in '
                "run_scheduler_process\n"
                "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, pp_rank, dp_rank)\n"
                '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 312, in __init__\n'
                "    self.tp_worker = TpWorkerClass(\n")
        rc = analyze(text).root_cause
        assert rc is not None and rc.phase == "nccl_init", prefix
    # forwards only: a store timeout while serving does not pull the timeline back
    rows = timeline("[2025-06-23 15:30:00] Decode batch. #running-req: 1\n"
                    "[W623 15:37:01.824135523 socket.cpp:485] [c10d] The client socket has timed out after 600000ms "
                    "while trying to connect to (node-0, 20000).\n")
    assert [r["phase"] for r in rows] == ["serving"]


def test_lmdeploys_loading_weights_line_places_a_cut_cli_traceback_in_weight_loading() -> None:
    """lmdeploy#2104: 'INFO - loading weights - "pytorch_model-00001-of-00003.bin"', then the CLI's traceback
    cut inside Engine.from_pretrained."""
    text = ('2024-09-05 08:43:29,394 - lmdeploy - INFO - loading weights.\n'
            '2024-09-05 08:43:29,395 - lmdeploy - INFO - loading weights - "pytorch_model-00001-of-00003.bin"\n'
            "Traceback (most recent call last):\n"
            '  File "/envs/v6/lib/python3.10/site-packages/lmdeploy/cli/entrypoint.py", line 36, in run\n'
            "    args.run(args)\n"
            '  File "/envs/v6/lib/python3.10/site-packages/lmdeploy/pytorch/chat.py", line 70, in run_chat\n'
            "    tm_model = Engine.from_pretrained(model_path,\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.phase == "weight_loading"
