"""Mechanisms added in the twenty-sixth stop, from held-outs 67 and 68's misses (measured untuned first): failures
printed at no level by drivers, Ray, CANN, Open MPI, ggml and zsh; the torch error c10 lists frames under; time-only
and localised syslog prefixes; logs cut inside a token or a failure's fixed words; a function handed to a pool.  Lines
in the shapes of the real logs (the thread says which)."""

from __future__ import annotations

from workbench.logformats import parse_line, parse_time
from workbench.tracebacks import analyze


def _root(log: str):  # type: ignore[no-untyped-def]
    rc = analyze(log).root_cause
    assert rc is not None, log
    return rc


def test_a_gpu_fallen_off_the_bus_is_the_failure() -> None:
    """NVSentinel#155: dmesg's wrapped NVRM report, no Xid number."""
    log = ("[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
           "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
           "               NVRM: fallen off the bus and is not responding to commands.\n"
           "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).\n")
    assert "fallen off the bus" in _root(log).message


def test_rays_words_for_a_dead_raylet_and_a_dead_actors_worker_are_deaths() -> None:
    """ray#59626 and slime#1740."""
    raylet = ("(raylet) WARNING: 64 PYTHON worker processes have been started on node: 273acc\n"
              "(raylet) Raylet is terminated. Termination is unexpected. Possible reasons include: (1) SIGKILL by the "
              "user or system OOM killer\n")
    assert "Raylet is terminated" in _root(raylet).message
    actor = ("error: The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR\n"
             "Worker exit detail: Worker exits unexpectedly. Worker exits with an exit code 1.\n")
    assert "The actor is dead because its worker process has died" in _root(actor).message


def test_the_dead_actors_report_inside_actordiederrors_own_message_leaves_the_exception_the_cause() -> None:
    """verl#1309: the exception's message runs on over the fields and the death report under it."""
    log = ('File "/verl/single_controller/ray/base.py", line 46, in func\n'
           "  output = ray.get(output)\n"
           "[2025-05-10 00:18:27] ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
           "[2025-05-10 00:18:27] \tclass_name: create_colocated_worker_cls.<locals>.WorkerDict\n"
           "[2025-05-10 00:18:27] \tpid: 1230\n"
           "[2025-05-10 00:18:27] The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR\n")
    rc = _root(log)
    assert rc.exception_type == "ray.exceptions.ActorDiedError" and "died unexpectedly" in rc.message


def test_canns_error_report_under_a_warnings_inner_error_is_the_failure() -> None:
    """vllm-ascend#1972: "EZ9999: Inner Error!" at warning level says nothing; the [PID] line under it does."""
    log = ("[rank7]:[W723 10:35:57.462407611 compiler_depend.ts:57] Warning: EZ9999: Inner Error!\n"
           "EZ9999: [PID: 14897] 2025-07-23-10:35:42.381.401 The error from device(chipId:7, dieId:0), serial number "
           "is 2, there is an aivec error exception, core id is 5, error code = 0\n"
           "        TraceBack (most recent call last):\n")
    assert "there is an aivec error exception" in _root(log).message


def test_open_mpi_refusing_to_place_the_ranks_is_the_cause_of_the_spawn_threads_stack() -> None:
    """TensorRT-LLM#5495: the banner, then the spawning thread's stack cut before its exception line."""
    log = ("rank 0 using MpiPoolSession to spawn MPI processes\n"
           "--------------------------------------------------------------------------\n"
           "All nodes which are allocated for this job are already filled.\n"
           "--------------------------------------------------------------------------\n"
           "Exception in thread Thread-3 (_manager_spawn):\n"
           "Traceback (most recent call last):\n"
           '  File "/usr/lib/python3.12/threading.py", line 1075, in _bootstrap_inner\n')
    rc = _root(log)
    assert rc.kind == "log_line" and "already filled" in rc.message


def test_zshs_report_of_a_job_a_signal_ended_is_a_fatal_signal() -> None:
    """TensorRT-LLM#10810's last line: zsh's name for SIGABRT."""
    log = "[1]    1782217 IOT instruction (core dumped)  /home/user/.pyenv/versions/trt-312/bin/python run.py\n"
    assert "IOT instruction (core dumped)" in _root(log).message
    assert "segmentation fault" in _root("zsh: segmentation fault (core dumped)  python serve.py\n").message
    assert analyze("the bus error  was fixed in 1.2\nnothing else\n").root_cause is None  # prose, not zsh's report


def test_ggmls_cuda_error_is_what_the_process_aborted_of_after_its_backtrace() -> None:
    """llama.cpp#13909: ggml names the failed call, prints a glibc backtrace, and the shell says Aborted."""
    frames = "".join(f"./llama.cpp/llama-cli(+0x75{i}b7b)[0x5c5553040b7b]\n" for i in range(11))
    log = ("/llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu:75: CUDA error\n"
           "CUDA error: an illegal memory access was encountered\n"
           "  current device: 7, in function ggml_backend_cuda_synchronize at /llama.cpp/ggml/src/ggml-cuda/ggml-cuda"
           ".cu:2461\n"
           "  cudaStreamSynchronize(cuda_ctx->stream())\n" + frames + "Aborted (core dumped)\n")
    assert _root(log).message.startswith("CUDA error: an illegal memory access was encountered")


def test_a_time_alone_before_the_message_is_a_prefix_and_the_message_no_program() -> None:
    """llama.cpp#18496: a syslog time with neither host nor program, and "CUDA error: " is no "host ident:"."""
    line = parse_line("Jan 04 12:17:44 CUDA error: an illegal memory access was encountered   ")
    assert line.message.startswith("CUDA error: an illegal") and line.time == "Jan 04 12:17:44" and line.host is None
    assert parse_line("Jan 04 12:17:44 gpu1 kernel: NVRM: Xid (PCI:0000:3b:00): 79").host == "gpu1"


def test_a_journal_line_with_a_chinese_month_is_a_journal_line_and_its_error_record_the_failure() -> None:
    """lmdeploy#3554: journalctl in a zh_CN locale, an ERROR record in it, then the request answered 200."""
    head = "5月 17 17:09:51 ma-GALAX bash[192775]: "
    line = parse_line(head + '2025-05-17 17:09:51,337 - lmdeploy - ERROR - async_engine.py:791 - session 3 finished, '
                             'reason "error"')
    assert line.format == "journal" and line.pid == 192775 and line.level == "ERROR"
    assert parse_time("12月  5 07:09:51", year=2025) is not None
    a = analyze(head + '2025-05-17 17:09:51,337 - lmdeploy - ERROR - async_engine.py:791 - session 3 finished, reason '
                       '"error"\n' + head + "INFO:     192.168.1.207:63341 - \"POST /v1/chat/completions HTTP/1.1\" "
                       "200 OK\n")
    assert a.root_cause is not None and 'reason "error"' in a.root_cause.message
    assert a.final is not None and not a.final.truncated  # a record after it: no stack was announced and cut


def test_the_torch_error_c10_lists_frames_under_is_the_message_with_its_rank() -> None:
    """gpustack#3383: c10's "Exception raised from" head follows the error's own line, a warning record of rank 1."""
    log = ("[rank1]:[W1119 17:59:26.271588084 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=61): Failed "
           "to recv, got 0 bytes. Connection was likely closed.\n"
           "Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:682 (most recent call "
           "first):\n"
           "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x80 (0x7090b977eeb0 in /torch/lib/libc10.so)\n"
           "frame #1: <unknown function> + 0x5d694d1 (0x70909d7ef4d1 in /torch/lib/libtorch_cpu.so)\n"
           "frame #2: <unknown function> + 0x5d6a8cd (0x70909d7f08cd in /torch/lib/libtorch_cpu.so)\n")
    rc = _root(log)
    assert "Failed to recv, got 0 bytes" in rc.message and rc.ranks == ("rank1",)


def test_a_log_cut_inside_a_token_or_a_failures_fixed_words_was_cut() -> None:
    """TensorRT-LLM#1670 (a host's prefix "VM-0" of "VM-0-16-ubuntu:392:494") and LLaMA-Factory#8261."""
    warn = "VM-0-16-ubuntu:392:494 [2] enqueue.cc:43 NCCL WARN Cuda failure 'out of memory'\n\n"
    a = analyze(warn * 3 + "VM-0")
    assert a.final is not None and a.final.truncated
    b = analyze("[1763]   1%|| 24/1752 [01:08<1:22:56,  2.88s/it][rank5]:[E602 11:17:52.185053341 "
                "ProcessGroupNCCL.cpp:632] [Rank 5] Watchdog caught collective operati")
    assert b.final is not None and b.final.truncated
    # a whole last line that ends where a phrase's blank or colon would come was not cut (ollama#12366)
    c = analyze("Error: 500 Internal Server Error: llama runner process has terminated\n"
                "C:\\a\\ollama\\ml\\backend\\ggml\\ggml\\src\\ggml-cuda\\ggml-cuda.cu:84: CUDA error\n")
    assert c.final is None or not c.final.truncated


def test_a_function_handed_to_a_pool_is_the_step_the_frame_runs() -> None:
    """lmdeploy#2993: TurboMind's constructor maps its C++ binding's process_weight over the GPUs."""
    log = ("[rank3]: Traceback (most recent call last):\n"
           '[rank3]:   File "/envs/x/lib/python3.10/site-packages/lmdeploy/turbomind/turbomind.py", line 121, in __init__\n'
           "[rank3]:     for _ in e.map(self.model_comm.process_weight,\n"
           '[rank3]:   File "/envs/x/lib/python3.10/concurrent/futures/_base.py", line 621, in result_iterator\n'
           "[rank3]:     yield _result_or_cancel(fs.pop())\n"
           "[rank3]: RuntimeError: [TM][ERROR] CUDA runtime error: out of memory\n")
    assert _root(log).phase == "weight_loading"


_PYSPY = ("[2025-11-05 10:18:51] Pyspy dump for PID 499:\n"
          "Process 499: sglang::scheduler\n"
          "Python v3.11.13 (/usr/local/python3.11.13/bin/python3.11)\n"
          'Thread 499 (idle): "MainThread"\n'
          "    replay (npu_graph_runner.py:82)\n"
          "    _forward_raw (model_runner.py:2149)\n"
          "    forward_batch_generation (tp_worker.py:368)\n"
          "    run_batch (scheduler.py:1987)\n"
          "    event_loop_overlap (scheduler.py:999)\n"
          "    run_scheduler_process (scheduler.py:2810)\n"
          'Thread 544 (idle): "Thread-1"\n'
          "    _recv (multiprocessing/connection.py:395)\n"
          "    run (threading.py:1012)\n")


def test_py_spys_dump_of_the_main_thread_says_where_a_hung_process_was() -> None:
    """gpustack#3139: SGLang's watchdog dumps the scheduler with py-spy; the main thread's frames are read, most recent
    first, and the other threads' are not the stack."""
    a = analyze(_PYSPY)
    assert a.root_cause is not None and a.root_cause.kind == "log_line" and "py-spy" in a.root_cause.message
    assert a.root_cause.phase == "serving" and a.root_cause.innermost_frame is not None
    assert a.root_cause.innermost_frame.function == "replay"
    assert [t.frames[0].function for t in a.tracebacks] == ["run_scheduler_process"]  # outermost first


def test_a_kill_or_a_failure_beside_py_spys_dump_is_the_cause() -> None:
    """sglang#31178 and #12076: the dump comes with the SIGQUIT or the watchdog's timeout that led to it."""
    killed = analyze("[2026-07-14 08:34:37] SIGQUIT received. signum=None, frame=None. It usually means one child "
                     "failed.\n" + _PYSPY).root_cause
    assert killed is not None and "SIGQUIT received" in killed.message
    watchdog = analyze("[2025-10-29 11:25:58 TP3] Watchdog timeout (self.watchdog_timeout=300)\n" + _PYSPY).root_cause
    assert watchdog is not None and "Watchdog timeout" in watchdog.message
