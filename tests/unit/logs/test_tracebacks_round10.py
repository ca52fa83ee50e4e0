"""Mechanisms added after held-out 10 was measured (issue 15, ninth round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.tracebacks import analyze


def test_a_client_call_vllms_engine_core_ran_is_serving() -> None:
    """vllm#30690: 'Invocation of add_lora method failed' after the engine was built, the traceback cut
    at the adapter's loader; the timeline alone still says start-up."""
    p = "(EngineCore_DP0 pid=1511501) "
    text = (p + "INFO 12-15 18:57:09 [gpu_model_runner.py:4244] Graph capturing finished in 26 secs, took 1.34 GiB\n"
            + p + "INFO 12-15 18:57:09 [core.py:250] init engine (profile, create kv cache, warmup model) took 69.12 seconds\n"
            + p + "ERROR 12-15 18:57:10 [core.py:918] Invocation of add_lora method failed\n"
            + p + "ERROR 12-15 18:57:10 [core.py:918] Traceback (most recent call last):\n"
            + p + 'ERROR 12-15 18:57:10 [core.py:918]   File "/envs/vllm/lib/python3.12/site-packages/vllm/lora/'
            'worker_manager.py", line 102, in _load_adapter\n')
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type is None and rc.phase == "serving"


def test_the_engines_loop_failing_is_serving() -> None:
    """lmdeploy#1515 (an OOM under a benchmark) and TensorRT-LLM#1279 (its older batch manager's words)."""
    rc = analyze("2024-05-08 16:16:10,360 - lmdeploy - ERROR - Engine loop failed with error: CUDA out of memory. "
                 "Tried to allocate 488.00 MiB.\n"
                 "Traceback (most recent call last):\n"
                 '  File "/envs/v4/lib/python3.10/site-packages/lmdeploy/pytorch/engine/request.py", line 17, in '
                 "_raise_exception_on_finish\n").root_cause
    assert rc is not None and "CUDA out of memory" in rc.message and rc.phase == "serving"
    rc = analyze("2024-03-11T18:16:28.919807829Z [TensorRT-LLM][ERROR] Encountered an error in forward function: "
                 "[TensorRT-LLM][ERROR] Assertion failed: freeBlockIterator.has_value() (/tmp/tritonbuild/tensorrtllm/"
                 "tensorrt_llm/cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp:249)\n").root_cause
    assert rc is not None and "freeBlockIterator" in rc.message and rc.phase == "serving"
    # a failure that names neither loop nor start says nothing of the phase
    rc = analyze("2024-05-08 16:16:10,360 - lmdeploy - ERROR - Rank[0] failed with error: out of memory\n").root_cause
    assert rc is not None and rc.phase == "unknown"


def test_tensorrt_llms_runner_reading_its_engine_is_start_up() -> None:
    """TensorRT-LLM#1950: examples/run.py's runner_cls.from_dir -> WorldConfig.mpi assertion."""
    text = ("Traceback (most recent call last):\n"
            '  File "/opt/TensorRT-LLM/examples/llama/../run.py", line 420, in main\n'
            "    runner = runner_cls.from_dir(**runner_kwargs)\n"
            '  File "/usr/local/lib/python3.10/dist-packages/tensorrt_llm/runtime/model_runner_cpp.py", line 98, in from_dir\n'
            "    world_config = WorldConfig.mpi(tensor_parallelism=tp_size,\n"
            "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp (worldConfig.cpp:99)\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError" and rc.phase == "startup_other"


def test_a_frame_line_whose_opening_the_paste_cut_is_still_a_frame() -> None:
    """TensorRT-LLM#753: the window starts inside the frame line ('…model_runner.py", line 81, in read_config')."""
    text = ('tensorrt_llm/runtime/model_runner.py", line 81, in read_config\n'
            "    assert world_size == tensorrt_llm.mpi_world_size(), \\\n"
            "AssertionError: Engine world size (2 * 1) != Runtime world size (1)\n")
    a = analyze(text)
    rc = a.root_cause
    assert rc is not None and rc.exception_type == "AssertionError" and rc.phase == "startup_other"
    assert rc.innermost_frame is not None and rc.innermost_frame.function == "read_config"
    # words that merely mention a file and a line are no frame
    assert analyze('see model_runner.py, line 81, in the docs\n').root_cause is None


def test_a_key_logged_alone_above_a_cut_traceback_is_its_message() -> None:
    """vllm#11010: logger.exception(e) of a KeyError writes only the quoted key, then the traceback (cut)."""
    text = ("ERROR 12-09 00:49:29 engine.py:366] 'layers.0.mlp.down_proj.weight.absmax'\n"
            "ERROR 12-09 00:49:29 engine.py:366] Traceback (most recent call last):\n"
            'ERROR 12-09 00:49:29 engine.py:366]   File "/usr/local/lib/python3.12/dist-packages/vllm/engine/'
            'multiprocessing/engine.py", line 357, in run_mp_engine\n')
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type is None and rc.message == "'layers.0.mlp.down_proj.weight.absmax'"
    # a quoted phrase with blanks is prose, not a key: no message is made of it
    rc = analyze(text.replace("'layers.0.mlp.down_proj.weight.absmax'", "'see below'")).root_cause
    assert rc is not None and rc.message == ""


def test_a_watchdog_line_wrapped_off_its_rank_prefix_takes_the_rank_it_names() -> None:
    """open-r1#620: '[rank2]:[E424 ...] ... Process group watchdog thread terminat' / 'ed with exception:
    [Rank 2] Watchdog caught collective operation timeout: ...' (the second line has no prefix)."""
    text = ("[rank2]:[E424 01:17:25.031978332 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) Rank 2] "
            "Process group watchdog thread terminat\n"
            "ed with exception: [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, "
            "OpType=BROADCAST, NumelIn=112, NumelOut=112,\n")
    rc = analyze(text).root_cause
    assert rc is not None and "Watchdog caught collective operation timeout" in rc.message
    assert rc.ranks == ("rank2",)
