"""Mechanisms added after held-out 19 was measured (issue 15, eighteenth round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

import io

from workbench.tracebacks import analyze
from workbench.tracebacks.diagnose import analyze_stream


def test_c10ds_heartbeat_monitor_timeout_is_an_nccl_watchdog_failure() -> None:
    """kserve#3845: c10d's heartbeat monitor gave up on a stuck watchdog, then a vLLM record cut after its header."""
    text = ("[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 2 Rank 1] Heartbeat monitor timed out! Process will be terminated "
            "after dumping debug info. workMetaList_.size()=138\n"
            "[rank1]:[E ProcessGroupNCCL.cpp:1153] [PG 2 Rank 1] ProcessGroupNCCL preparing to dump debug info.\n"
            "[rank1]:[F ProcessGroupNCCL.cpp:1169] [PG 2 Rank 1] [PG 2 Rank 1] ProcessGroupNCCL's watchdog got stuck for "
            "600 seconds without making progress in monitoring enqueued collectives.\n"
            "ERROR 08-07 18:42:46 multiproc\n")
    a = analyze(text)
    rc = a.root_cause
    assert rc is not None and "Heartbeat monitor timed out" in rc.message and rc.ranks == ("rank1",)
    assert [e.kind for e in a.events][:2] == ["nccl_warn", "nccl_warn"]


def test_an_unlevelled_records_failed_to_is_an_error_and_an_access_log_200_is_serving() -> None:
    """sglang#26032 (slime on NPUs): weight pushes answered 200, then SGLang's level-less "Failed to ..." record."""
    ok = ('(SGLangEngine pid=1493437) [2026-05-21 16:07:40] INFO:     7.150.10.22:41174 - "POST '
          '/update_weights_from_distributed HTTP/1.1" 200 OK\n')
    failed = ("(SGLangEngine pid=1493437) [2026-05-21 16:07:41 DP6 TP6] Failed to update parameter online: start out "
              "of range (expected to be in ra\n")
    rc = analyze(ok * 3 + failed).root_cause
    assert rc is not None and rc.message.startswith("Failed to update parameter online")
    assert rc.ranks == ("DP6 TP6",) and rc.phase == "serving"
    # an SGLang record that says nothing failed is not one; a 4xx answer does not say the server serves
    assert analyze(ok + "(SGLangEngine pid=1) [2026-05-21 16:07:41 TP0] Update weights finished.\n").root_cause is None
    rc = analyze(ok.replace("200 OK", "404 Not Found") + failed).root_cause
    assert rc is not None and rc.phase != "serving"


_BAICHUAN = (
    "(VllmWorkerProcess pid=3984335) INFO 01-27 11:03:00 weight_utils.py:251] Using model weights format "
    "['*.safetensors']\n"
    "ERROR 01-27 11:03:02 engine.py:366] Attempted to load weight (torch.Size([1, 1, 2, 1, 2])) into parameter "
    "(torch.Size([1, 1, 1, 1, 2]))\n"
    "ERROR 01-27 11:03:02 engine.py:366] Traceback (most recent call last):\n"
    'ERROR 01-27 11:03:02 engine.py:366]   File "/home/deploy/BaiCuan/vllm/vllm/engine/multiprocessing/engine.py", '
    "line 357, in run_mp_engine\n"
    "ERROR 01-27 11:03:02 engine.py:366]     engine = MQLLMEngine.from_engine_args(engine_args=engine_args,\n"
)


def test_the_record_under_a_cut_tracebacks_own_header_is_its_message() -> None:
    """Baichuan-M1#8: v0's run_mp_engine logged str(e) then the stack under one header; the stack is cut."""
    for a in (analyze(_BAICHUAN), analyze_stream(io.BytesIO(_BAICHUAN.encode()))):  # whole text and stream read
        rc = a.root_cause
        assert rc is not None and rc.exception_type is None
        assert rc.message.startswith("Attempted to load weight (torch.Size") and rc.phase == "weight_loading"
    # a record under another header (another time, another location) says nothing of this stack
    other = _BAICHUAN.replace("ERROR 01-27 11:03:02 engine.py:366] Attempted", "ERROR 01-27 11:02:58 llm.py:12] Attempted")
    rc = analyze(other).root_cause
    assert rc is not None and "Attempted" not in rc.message


def test_a_logged_repr_above_a_cut_traceback_gives_its_type() -> None:
    """dynamo#352: vLLM v0's engine loop logs repr(e), "AssertionError()", then the stack, cut before its type line."""
    text = ("INFO 03-22 22:56:38 engine.py:404] Added request 7d10b72b-44b7-4c68-bafd-3b41378a34ed.\n"
            "ERROR 03-22 22:56:38 engine.py:244] AssertionError()\n"
            "ERROR 03-22 22:56:38 engine.py:244] Traceback (most recent call last):\n"
            'ERROR 03-22 22:56:38 engine.py:244]   File "/opt/dynamo/venv/lib/python3.12/site-packages/vllm/engine/'
            'multiprocessing/engine.py", line 242, in start\n'
            "ERROR 03-22 22:56:38 engine.py:244]     self.run_engine_loop()\n")
    a = analyze(text)
    rc = a.root_cause
    assert rc is not None and rc.exception_type == "AssertionError" and rc.phase == "serving"
    assert a.final is not None and a.final.truncated
