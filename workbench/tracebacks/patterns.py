"""The shapes the traceback scanner looks for: regexes, event patterns, limits.

Kept apart from :mod:`workbench.tracebacks.scan` so the state machine reads on its own;
nothing here keeps state.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from workbench.logformats import _C10_FRAME, _RANK_TOKENS, any_of, any_of_bytes, any_part_of
from workbench.tracebacks.model import EventKind, Frame
from workbench.tracebacks.phrases import ANY_LEVEL_PHRASES, LOST_TYPE_PHRASES

_HEADER = "Traceback (most recent call last)"
# a frame line, or one whose opening 'File "' a paste cut off (a window that starts inside the line:
# 'tensorrt_llm/runtime/model_runner.py", line 81, in read_config'); a garbled paste may double the opening
# quote ('File ""/usr/local/.../tokenizer_group.py", line 30'), skipped only before a path's first character
# so that a frame of an empty file name ('File "", line 1') keeps it
_FILE = re.compile(r'(\s*)(?:File "(?:"(?=[\w./\\<~]))?|(?=[\w.\\/-]+\.pyx?", line \d+, in \S))([^"\n]*)"?'
                   r'(?:, line (\d+))?(?:, in (.*))?')
_FILE_STRICT = re.compile(r'\s*(?:File "(?:"(?=[\w./\\<~]))?[^"\n]+|[\w.\\/-]+\.pyx?)", line \d+, in \S')
_EXC = re.compile(r"([A-Za-z_][\w$]*(?:\.[A-Za-z_][\w$]*)*(?:\([\w.]+\))?)(?::(?:[ \t]?(.*)))?$")
# a bare exception line (no frame before it) must name an error class outright: not a warning
# (torch's "BackendCompilerFailed: backend='inductor' raised:" heads the error it wraps)
# (or a class of a package's exceptions module, whatever its name: torch's "torch._dynamo.exc.Unsupported")
# (not the word alone: "Error: ..." is how Rust's main, Go's cobra and shell tools report a failure, no Python type)
# (NCCL's result codes are no exception's type: "ncclRemoteError: A call failed possibly due to a network error")
_BARE_EXC_NAME = re.compile(r"^(?!nccl[A-Z])(?:.*(?:(?<=[\w.])Error|Exception|Fault|Failure|(?<=[a-z])Failed|Timeout|Cancelled|"
                            r"Abort)$|.*\.(?:exc|exceptions|errors)\.[A-Z]\w*$)")
# an error record's message that is only the start of its first word: the log was cut right there ("Ru", "WorkerPro")
_FIRST_WORD_ONLY = re.compile(r"[A-Za-z]\w{0,11}")


def cut_error_record(level: str | None, message: str) -> bool:
    """A record at ERROR or CRITICAL ``level`` whose ``message`` (stripped) is empty or the start of its first word:
    the log ends where an error record began, what it said lost (events.cut_record, cut.ends_cut)."""
    return level in ("ERROR", "CRITICAL") and (not message or _FIRST_WORD_ONLY.fullmatch(message) is not None)


_EXC_REPR = re.compile(r"([A-Za-z_][\w.]*(?:Error|Exception))\((['\"])(.+)")
# an exception line quoted inside a sentence of an issue ("... 报错`RuntimeError: [TM][ERROR] ...`"), groups as _EXC_REPR's
# (a blank inside the opening backtick kept: "with error : ` KeyError: 'layers.0.mlp.down_proj.weight'`")
# a Markdown list item's mark and/or a bold opening before a sentence
_LIST_MARK = re.compile(r"(?:[-*+]|\d{1,2}[.)]) +(?:\*\*|__)?|(?:\*\*|__)(?=\w)")
# the exception type a quote opens with (the bare Exception too, as an unquoted line may be)
_QUOTED_TYPE = r"(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception)|Exception)"
_QUOTED_EXC = re.compile(r"` ?(" + _QUOTED_TYPE + r")(: )([^`]+)`")
# a line of prose that opens a quote with the exception line, the quote closing on a later line
# ("`RuntimeError: Decode out of memory.\nTry to allocate 148 tokens.`")
_OPEN_QUOTED_EXC = re.compile(r"`(" + _QUOTED_TYPE + r")(: )([^`]+)")
# a sentence that ends naming the error its next line quotes ("I keep getting the following ValueError:")
_NAMES_NEXT = re.compile(r"[a-z] ((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)):\s*$")
_WHOLE_QUOTE = re.compile(r"`([^`]{8,})`\s*$")
# an exception line a sentence names after a verb of getting it, unquoted ("... but i got TypeError: X() got ..."),
# or that is a sentence of its own after another ("... can someone help ? ValueError: As of transformers ..."),
# or that a record with no level word names as its cause, maybe with the exception's arguments (SGLang's "Decode
# transfer failed for request ... with exception KVTransferError(bootstrap_room=1655...): Failed due to ..."), or after
# words that say one occurred (LiteLLM's proxy: "_handle_llm_api_exception(): Exception occured - litellm.NotFoundError:
# NotFoundError: Hosted_vllmException - Error code: 404 - ...")
_NAMED_IN_PROSE = re.compile(r"(?:\b(?:[Gg]ot|[Gg]et|[Gg]etting|raised?|raises|throws?|thrown|encounter(?:ed)?|hit|"
                             r"with exception|[Ee]xception occurr?ed(?: -|:)) (?:an? |the )?|(?<=[a-z)] [?!])\s+|(?<=[a-z]{2}[.?!])\s+|"
                             # or glued to a sentence in a script written without blanks between its words ("运行server.py
                             # 提示ValueError: No available memory ...", "部署qwen2.5失败Exception: Capture cuda graph failed")
                             r"(?<=[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]))"
                             r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)|(?<=[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])Exception)(?:\([^()\n]{0,200}\))?(: )(\S.{8,})")
_FATAL = re.compile(r"\s*Fatal Python error: (.*)")
_FH_HEADER = re.compile(r"\s*(Current thread|Thread|Stack)\b[^(]*\(most recent call first\):")
# rich's boxed tracebacks (typer, rich.traceback.install), once the box borders are gone
_RICH_FRAME = re.compile(r"\s*(?:(\S+?\.pyx?):(\d+) in (\S+)|in (\S+):(\d+))\s*$")
# (IPython 8 puts one blank between the number and the code: "---> 47 self._init_executor()")
_RICH_CODE = re.compile(r"\s*(❱\s*|-+>\s*)?\d+\s(?:│|\s|$)|\s*(-+>\s*)\d+ (?=\S)")
# IPython's frames (Jupyter, Colab, Databricks): "[path](link) in f(args)", "path in f(args)",
# "File path:N, in f(args)"; its header is the exception's name, then "Traceback (most recent call last)";
# JupyterLab renders IPython 8's path as a link ("File [~/envs/x/.../llm_engine.py:292](http://host/lab/tree/...
# #line=291), in LLMEngine.from_engine_args(cls, ...)")
_IPY_FRAME = re.compile(r"\s*(?:\[(/[^\]\s]+\.pyx?)\]\([^)\s]*\)|(/\S+\.pyx?)|File (\S+\.pyx?|<[^>\s]+>)(?::(\d+)|, line (\d+)),?"
                        r"|File \[(?P<lpath>[^\]\s]+\.pyx?):(?P<lline>\d+)\]\([^)\s]*\),?) "
                        r"in (?P<func>[\w.<>]+)(?:\(|\s*$)")
_IPY_HEADER = re.compile(r"\s*[A-Za-z_][\w.]*\s{4,}$")
# IPython >= 8 names a notebook cell "Cell In[2], line 4"; VS Code renders the line number as a link
# ("[line 4](vscode-notebook-cell:...)") and so the numbered code lines ("----> [4](vscode-...) code")
_IPY_CELL = re.compile(r"\s*Cell (In ?\[\d+\]), (?:line (\d+)|\[line (\d+)\]\([^)\s]*\))\s*$")
_IPY_LINKED_CODE = re.compile(r"\s*(-+>\s*)?\[\d+\]\([^)\s]*\)")
_FH_FRAME = re.compile(r'\s*File "([^"]*)", line (\d+) in (.+)')
# py-spy's dump of a live process (SGLang's watchdog prints one per scheduler): each thread under 'Thread 499 (idle):
# "MainThread"', its frames most recent first, "    replay (npu_graph_runner.py:82)" (--native: "    0x7f15... (libc.so.6)")
_PYSPY_THREAD = re.compile(r'\s*Thread (?:0x[0-9A-Fa-f]+|\d+) \((?:idle|active|gil)[^)]*\): "([^"]*)"\s*$')
_PYSPY_FRAME = re.compile(r"\s+([^\s()]+) \(([^()\s]+?)(?::(\d+))?\)\s*$")
# a level word inside a prefix the parser does not know; no leading \b, which would keep the regex
# engine from skipping ahead to the words' first letters (ten times slower): boundaries are checked after
# glog's and c10's severity tag ("[E ProcessGroupNCCL.cpp:916]", "[E1001 16:06:04.53 ProcessGroupNCCL.cpp:607]") is ERROR
# (and ONNX Runtime's severity letter in its record's head: "[E:onnxruntime:, inference_session.cc:2280 operator()]")
_LEVEL_WORD = re.compile(r"ERROR|CRITICAL|WARNING|\[E\]|\[E(?=(?:\d{4} [\d:.]+)? ?[\w.-]+\.(?:cpp|cc|cu|h|hpp):\d+\]|"
                         r":onnxruntime:)")
# an exception class's name as an error report quotes it, dotted or not ("AttributeError", "torch.OutOfMemoryError")
RAISED_NAME = r"[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)"
_EXC_NAME = re.compile(r"(?:Error|Exception|Exit|Interrupt|Warning|Iteration|Fault|Failure|Timeout|Unsupported|Cancelled|Abort)$")
_CARET = re.compile(r"\s*[~^]+\s*$")
_QUOTE = re.compile(r"[ \t]*(?:> ?)+")
# PEP 654's margins around an exception group's tracebacks: "  | " before each line, "  +-+---- 1 ----"
# between its sub-exceptions (indented deeper for nested groups)
_GROUP_MARGIN = re.compile(r"[ \t]+(?:\|(?: |$)|\+[-+]+(?: (?:\d+|\.\.\.) -+)?[ \t]*$)")
# a frame line the terminal cut before ", in f", or inside its path (a long egg path), and the tail that completes it
_FILE_CUT = re.compile(r'File "(?:[^"]+", line \d*,?\s*|[^"]*)$')
_FRAME_TAIL = re.compile(r'\d*, in \S|in \S|[^\s"]*", line \d+, in \S')


def join_cut_frame(held: str, tail: str) -> str:
    """A frame line the terminal cut (:data:`_FILE_CUT`) and its tail (:data:`_FRAME_TAIL`, stripped) as one line: no
    blank where the cut fell inside the path or the line number."""
    in_path = '"' not in held[held.rfind('File "') + 6:]
    return held.rstrip() + ("" if in_path or tail[:1].isdigit() else " ") + tail
# a Markdown fence: the line is one (with its language tag) unless text follows it ("```RuntimeError: ...```")
_FENCE = re.compile(r"\s*(?:```|~~~)(?![`~]*\s*[^\s`~]+[^\w\s+.#-])")
# SGLang's "[2025-02-16 19:29:38 TP4]" before a traceback's header on the same line, also when a paste lost its "["
_MIDLINE_RANK = re.compile(r"(?:\[|^)\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?((?: [A-Z][A-Z_]*\d+)*)\]")
# SGLang's rank prefix inside a logging format of the user's, in the bracket before the source location
# ("2026-03-18 11:22:06.731 ERROR 120984 [ TP0 scheduler.py:3190] Scheduler hit an exception: Traceback ...")
_RANK_AT_LOCATION = re.compile(r"\[ ?(" + _RANK_TOKENS + r"(?: " + _RANK_TOKENS + r")*) [\w.-]+\.py:\d+\]")
_PROCESS_LINE = re.compile(r"Process [\w.-]+:$")
# the same header as the last line of a log, which may cut it before its colon
_PROCESS_CUT = re.compile(r"Process [\w.-]+:?")
_CONTEXT = "During handling of the above exception, another exception occurred"
_CAUSE = "The above exception was the direct cause of the following exception"
_STOP = re.compile(
    r"\d+%\||^Killed$|^Aborted|terminate called|^\S+\.py:\d+: \w*Warning|^Exception ignored in|^Fatal Python error|"
    r"^Segmentation fault|^\s*warnings\.warn\(|^Error executing job|^INFO:|^WARNING:|^ERROR:"
)
# the message logger.exception writes before the stack it attaches ("Error in chat completion stream generator.",
# threading's "Exception in thread Thread-1 (run):"): under a traceback's exception line it opens the next record
_NEXT_RECORD = re.compile(r"(?:Error|Exception) (?:in|while|during) [\w ()./-]{3,80}[.:]?\s*$")
# Python logging's default head ("2024-04-24 19:19:03,669 - lmdeploy - ERROR - "), which the parser does not strip
_LOGGING_HEAD = re.compile(r"\d[\d\-:., ]{7,30} - [\w.-]+ - (DEBUG|INFO|WARNING|ERROR|CRITICAL) - ")
_TERMINATE = re.compile(r"terminate called after throwing an instance of '([^']+)'")
_WHAT = re.compile(r"\s*what\(\):\s*(.*)")
_CPP_STOP = re.compile(r"Exception raised from |frame #\d+:|^\s*$|^(?:stack )?backtrace:|^\s*\d+: \S|^\s*--- |^note: |"
                       # the abort that follows: faulthandler's report, the shell's "Aborted (core dumped)"; a record
                       r"^[0-9A-F]{16}|^Fatal Python error: |^Aborted\b|^WARN(?:ING)?: |^INFO: ")  # of another writer
# a native runtime's own report of an error nothing caught: libc++'s abort message, a Rust panic
# (its message on the next line since Rust 1.73, quoted on the line before), c10's abort handler
# (older libc++ says "terminating with uncaught exception of type", and logcat prints it under its tag, "libc++abi", as a
# message of its own)
_NATIVE_ABORT = re.compile(r"(?:libc\+\+abi: |^)terminating (?:due to|with) uncaught exception of type (\S+?)"
                           r"(?::(?: (.*))?)?$|"
                           # (Rust 1.88 and later name the thread's id too: "thread '<unnamed>' (1004759) panicked at")
                           r"thread '[^']*'(?: \(\d+\))? panicked at (?:'(.*)', )?\S+?:?$|"
                           r"(Unhandled exception caught in c10/util/AbortHandler\.h)")
# a C++ exception printed as "ns::Type: message" (TensorRT-LLM's "[TensorRT-LLM][ERROR]
# tensorrt_llm::common::TllmException: ..."), after any bracketed tags
_CPP_EXC_LINE = re.compile(r"(?:\[[^\]\n]*\]\s*)*((?:[A-Za-z_]\w*::)+[A-Za-z_]\w*(?:Exception|Error)): (.*)")
# a numbered native frame of a C++ backtrace ("4  0x7f6ce80a9b72 ns::Class::method(args) + 50"), as
# TensorRT-LLM and glog print them: the frame's function is the symbol's last name before its arguments
_NUM_FRAME = re.compile(r"\s*\d+\s+0x[0-9a-fA-F]+\s+(?:(\S[^(]*?)\()?")
_PG_RANK = re.compile(r"\[PG[^\]]*? Rank (\d+)\]")
_FLAT_SPLIT = re.compile(r'(?=\bFile ")')
_MIDLINE_PROC = re.compile(r"\((\w+?)(?:[_ ]((?:DP|TP|PP|EP)\d+(?:[_ ](?:DP|TP|PP|EP)\d+)*))?(?: rank=(\d+))? pid=\d+\)\s*$")
_FLAT_PREFIX = re.compile(r'\(\w+(?: rank=\d+|(?: (?:DP|TP|PP|EP)\d+)+)? pid=\d+\)\s*(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d \[?[^\]\s]+:\d+\]\s*)?')
_FLAT_FRAME = re.compile(r'File "([^"]*)", line (\d+), in (\S+)\s*(.*)')
_FLAT_END = re.compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d|Process [\w.-]+:|\[\d{4}-\d\d-\d\d ")
_FLAT_EXC = re.compile(r"(?:^|\s)((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt))(?::\s|$)")

# fixed lines a library prints under its error, whole in every log that holds them: PyTorch's hints under a CUDA error
# (a log that ends on one short of its end, "For debugging consider passing CU", was cut; c10's frame list that follows
# them comes after the error's hints, not right under its message)
FIXED_LINES = (
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
    "incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
)


def _alternatives(phrases: tuple[tuple[str, str | None], ...]) -> str:
    return "|".join(re.escape(text) if pattern is None else pattern for text, pattern in phrases)


_EVENTS: tuple[tuple[EventKind, re.Pattern[str]], ...] = (
    # (and a GPU that stopped answering on PCIe in Xid 79's words, no number: "NVRM: fallen off the bus and is not ...")
    # (and an AMD GPU's own report of a page fault, as the kernel logs it: "amdgpu 0000:03:00.0: amdgpu: [gfxhub] page
    # fault (src_id:0 ring:40 vmid:8 pasid:32781)", the process it faulted in on the next line)
    # (and a Moore Threads GPU's driver resetting a context it found hung: "MTGPU:(Error): 56377:  PID 1747 experienced
    # error Guilty Lockup (0x1) caller[CheckFWCCB CTX Reset Noticication]")
    # (the driver's "NVRM: Xid (PCI:0000:01:00): 62, ..."; a journal line that lost its host, "Mar 27 17:40:36 kernel: NVRM:
    # Xid (PCI:...", leaves the driver's tag read as the service and the message beginning at "Xid")
    ("xid", re.compile(r"NVRM: Xid \(|^Xid \(PCI:[\w:.]+\): \d|\bfallen off the bus\b|"
                       r"\bamdgpu: \[(?:gfx|mm)hub\d*\] (?:(?:no-)?retry )?page fault\b|"
                       r"\bMTGPU:\(Error\): .{0,40}\bexperienced error \w+ Lockup\b|"
                       # Intel's i915 reporting a hung GPU engine it captured ("GPU HANG: ecode 12:1:85def5fb, in
                       # llama-bench [1538400]"), the error state under it
                       r"\bGPU HANG: ecode\b")),
    ("oom_kill", re.compile(
        r"Out of memory: Kill(?:ed)? process|oom-kill:|invoked oom-killer|Memory cgroup out of memory|"
        r"Failed with result 'oom-kill'|killed by the OOM killer|"
        # Ray's memory monitor killing workers before the kernel would ("1 Workers (tasks / actors) killed due to
        # memory pressure (OOM), 0 Workers crashed due to other reasons at node ...")
        r"killed due to memory pressure \(OOM\)|"
        # (and Dask's nanny restarting a worker past its memory budget: "Worker tcp://127.0.0.1:34349 (pid=342998)
        # exceeded 95% memory budget. Restarting...")
        r"\bexceeded \d+% memory budget\b|"
        # (and Ray's memory monitor: "Memory on the node (IP: 10.0.0.2, ID: ...) where the task was running was 94.5GB
        # / 99.4GB (0.950839), which exceeds the memory usage threshold of 0.95. Ray killed this worker ...")
        r"\bexceeds the memory usage threshold of \d|"
        # the end of Ray's message for a task or actor its memory monitor killed, the line a paste most often keeps
        # ("Refer to the documentation on how to address the out of memory issue: https://docs.ray.io/...")
        r"how to address the out of memory issue|"
        # Kubernetes' record of a container the kernel's OOM killer ended ("reason: OOMKilled" in a pod's status,
        # "Last State: Terminated  Reason: OOMKilled" in kubectl describe)
        r"\bOOMKilled\b")),
    ("fatal_signal", re.compile(
        r"Fatal Python error: |Segmentation fault|^Aborted \(core dumped\)|Illegal instruction \(core dumped\)|"
        # (the shell's word alone, a CPU without the instructions a build uses: "Illegal instruction"; and bash's report
        # of a script's command, "start.sh: line 18:  1669 Illegal instruction     (core dumped) python -m ...")
        r"^Illegal instruction$|: line \d+: +\d+ Illegal instruction\b|"
        r"Bus error \(core dumped\)|"
        # zsh's report of a job a signal ended ("[1]    1782217 IOT instruction (core dumped)  python x.py", "zsh: ...")
        r"(?:^zsh: |^\[\d+\] +[+-]? *\d+ )(?:IOT instruction|abort|segmentation fault|illegal hardware instruction|bus error)"
        r"(?: \(core dumped\))? |"
        r"\*\*\* SIG(?:SEGV|ABRT|BUS|ILL|FPE)|received signal SIG(?:SEGV|ABRT|BUS)|"
        # cuda-gdb stopping on a kernel's fault ("CUDA Exception: Warp Illegal Address", "Thread 71 \"pt_autograd_0\"
        # received signal CUDA_EXCEPTION_14, Warp Illegal Address.")
        r"^CUDA Exception: [A-Z]|received signal CUDA_EXCEPTION_\d+|"
        r"Floating point exception|Segfault encountered|^Signal \(\d+\) received\.|"  # (the last: Triton's server)
        # (a C++ program's own handler of a fatal signal, as its tutorials write it: InfiniStore's "Interrupt signal (11)
        # received.", before its stack; not an interrupt or a termination asked for, 2 or 15)
        r"\bInterrupt signal \((?:4|6|7|8|11)\) received\b|"
        # LLVM's report_fatal_error, which aborts the process (a Triton kernel's compile: "LLVM ERROR: Failed to
        # compute parent layout for slice layout.")
        r"^LLVM ERROR: |"
        # Go's runtime ending the process on a panic nothing recovered, or on its own fatal error ("panic: runtime
        # error: invalid memory address or nil pointer dereference", then "[signal SIGSEGV: ...]" and the goroutines;
        # "fatal error: concurrent map writes"): a router's, a gateway's or an operator's crash beside the engines
        r"^panic: (?=\S)|^fatal error: (?=[a-z])|"
        # (and Go's runtime on a signal it cannot handle, in cgo code: "SIGSEGV: segmentation violation", then "PC=0x...")
        r"^SIG(?:SEGV|BUS|ABRT|ILL|FPE): [a-z]|"
        # (its signal line, the first of a paste that lost the panic's: "[signal SIGSEGV: segmentation violation code=0x1
        # addr=0x0 pc=0x...]", on Windows "[signal 0xc0000005 code=0x0 addr=0x0 pc=0x7ff6b3b759d9]")
        r"^\[signal (?:SIG[A-Z]+: |0x[0-9a-f]+ code=)|"
        # torch elastic's summary of a rank a signal ended ("traceback : Signal 11 (SIGSEGV) received by PID 6421")
        r"\bSignal \d+ \(SIG[A-Z]+\) received by PID \d+|"
        # ggml's GGML_ABORT and GGML_ASSERT, which abort the process ("ggml-cpu.c:13612: fatal error", "ggml-cpu-aarch64
        # .cpp:4012: GGML_ASSERT(params->wsize >= ...) failed", its backtrace under it)
        # (a GGML_ASSERT's line whole, "... failed", is an error line of its own: phrases.ANY_LEVEL_PHRASES)
        r"^[\w./-]+\.(?:c|cc|cpp|cu|m):\d+: (?:fatal error$|GGML_ASSERT\((?!.*\bfailed\b))|"
        # the kernel's own report of a process it stopped (dmesg, the journal's kernel lines)
        r"traps: \S+\[\d+\] general protection fault|\S+\[\d+\]: segfault at [0-9a-f]+ ip|"
        # Open MPI's signal handler: its header, and the frames it prints under it ("[host:pid] [13]
        # /lib/libmpi.so.40(MPI_Bcast+0x121)[0x7fc1ff32d881]"), which a paste often keeps without the header
        r"^\[[\w.-]+:\d+\] (?:\*\*\* Process received signal|\[ ?\d+\] \S[^\s(]*\([^)\s]*\)\[0x[0-9a-f]+\])|"
        # Android's report of a process a signal ended (logcat: "Fatal signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault
        # addr 0x0 in tid 5283 (mediapipe/5278), pid 5243 (...)")
        r"\bFatal signal \d+ \(SIG[A-Z]+\)|"
        # Cosmopolitan's crash report (a llamafile: "error: Uncaught SIGSEGV (SEGV_MAPERR) at 0x8 on host pid 25983 tid
        # 26011", the registers under it)
        r"^error: Uncaught SIG[A-Z]+ \(")),
    # a kernel's device-side assert, in a .cu file or in the Triton kernel torchinductor generated ("/tmp/
    # torchinductor_root/q5/cq5….py:97: unknown: block: [4,0,0], thread: [0,0,0] Assertion `index out of bounds…` failed.")
    ("device_assert", re.compile(r"(?:\.cu:\d+: .*|block: \[[\d,]+\], thread: \[[\d,]+\] )Assertion .* failed\.|"
                                 r"device-side assertion .* failed")),
    ("error_line", re.compile(rf"(?P<lost>{_alternatives(LOST_TYPE_PHRASES)})|(?P<any>{_alternatives(ANY_LEVEL_PHRASES)})|"
                              r"out of memory|CUDA error|CUDA runtime error|cudaError\w+|CUDA_ERROR_\w+|Error Code \d+|"
                              # (ROCm's, as ggml and the engines print it for AMD GPUs: "ROCm error: invalid device
                              # function", "HIP error: ...", "hipErrorOutOfMemory")
                              r"ROCm error|HIP error|hipError\w+|"
                              r"Assertion failed|[Ff]ailed to (?:start|initiali[sz]e)[^:.]*: \S|NCCL error|Connection refused|"
                              # a worker's own report that a call it ran failed (vLLM's "Error executing method ...")
                              r"Error executing metho|"
                              # a server's own record of a request it could not serve (Ray Serve's replica.py)
                              r"\bRequest failed\b")),
    # a C compiler or linker failing under torch.compile / triton: no level, no traceback of its own
    # (and nvcc's own count of a source's errors, and ninja giving up the build: a JIT kernel's, FlashInfer's)
    # (and ptxas refusing what Triton generated: "ptxas fatal : Value 'sm_121a' is not defined for option 'gpu-name'")
    ("compile_error", re.compile(r"^collect2: error:|cannot find -l\w+|: fatal error: |^error: command '\S+' failed|"
                                 r"^ptxas fatal\s*: |"
                                 r"^\d+ errors? detected in the compilation of |^ninja: build stopped: subcommand failed")),
    ("nccl_warn", re.compile(
        r"NCCL WARN|Watchdog caught collective operation timeout|ran for \d+ milliseconds before timing out|"
        # c10d's heartbeat monitor, which kills the process when the watchdog thread itself hangs ("[E ProcessGroupNCCL
        # .cpp:1316] [PG 2 Rank 1] Heartbeat monitor timed out!", then "[F ...] ProcessGroupNCCL's watchdog got stuck")
        r"[Ww]atchdog timeout|Heartbeat monitor timed out|watchdog got stuck|"
        # c10d's watchdog dying on the error it caught ("Process group watchdog thread terminated with exception: ...")
        r"watchdog thread terminated with exception")),
    ("process_died", re.compile(
        # (a process that exited with code 0 ended as it meant to: no death, whatever came before)
        r"actor died|died unexpectedly|scheduler is dead|scheduler died|^Exit code: (?!0\b)-?\d+|"
        r"exited with (?:exit )?code (?!0\b)-?\d+|"
        r"exited unexpectedly|ChildFailedError|Failed core proc\(s\): \{'|Main process exited, code=|"
        r"(?:WorkerProc|EngineCore|Worker) failed to start|"
        # a launcher's word that the server it ran never came up ("vLLM failed to start.  Retry with
        # --enable-serving-output ...": instructlab; "SGLang server failed to start")
        r"\b(?:vLLM|SGLang|[Ss]erver|[Ee]ngine) failed to start\b|"
        # Ray's own word for a worker process that died or never came up
        r"A worker died or was killed|Failed to register worker|"
        # Ray's report of a raylet that died under its node's workers ("Raylet is terminated. Termination is unexpected.
        # Possible reasons include: (1) SIGKILL by the user or system OOM killer, ..."), and of an actor whose worker
        # process died ("The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR")
        r"Termination is unexpected|\b[Aa]ctor is dead because its worker process|"
        # Ray's GCS giving up on a node whose raylet stopped answering (its workers, and the engine's ranks on them,
        # are gone with it): "The node with node id: ... has been marked dead because the detector has missed too
        # many heartbeats from it"
        r"has been marked dead because|"
        # mpirun's report of a rank a signal ended ("process rank 6 with PID 0 on node x exited on signal 9"), or that
        # exited with an error ("mpirun detected that one or more processes exited with non-zero status, thus causing")
        r"exited on signal \d+|exited with non-zero status\b|"
        # Kubernetes' word for a container whose process exited and keeps being restarted, as a deployer reports it
        r"[Cc]rashed container|CrashLoopBackOff")),
    # (torch elastic's agent stopped from outside, stopping its workers: "Received 15 death signal, shutting down workers")
    ("killed", re.compile(r"^Killed$|Received sigquit|SIGQUIT received|kill_process_tree|\bReceived \d+ death signal\b")),
)
# Words one of which every match of a kind's pattern contains (one per alternative of the
# pattern): one scan of a line for all of them says which kinds' patterns can match at all.
_EVENT_NEEDLES: dict[EventKind, tuple[str, ...]] = {
    "xid": ("Xid (", "fallen off the bus", "] page fault", "] retry page fault", "] no-retry page fault", "MTGPU:(Error)",
            "GPU HANG: ecode"),
    "oom_kill": ("Out of memory: Kill", "oom-kill", "cgroup out of memory", "OOM killer", "memory pressure (OOM)",
                 "address the out of memory issue", "OOMKilled", "memory budget", "memory usage threshold"),
    "fatal_signal": ("Fatal Python error: ", "Segmentation fault", "Aborted (core dumped)",
                     "Illegal instruction", "Bus error (core dumped)", "IOT instruction",
                     "segmentation fault", "illegal hardware instruction", "bus error", "*** SIG",
                     "received signal SIG", "Floating point exception", "Segfault encountered", "LLVM ERROR: ",
                     "general protection fault", "segfault at ", "Process received signal", ")[0x", "panic: ",
                     "fatal error: ", " abort ", "Signal (", "SIGSEGV: ", "SIGBUS: ", "SIGABRT: ", "SIGILL: ",
                     "SIGFPE: ", " received by PID ", ": fatal error", ": GGML_ASSERT(", "Uncaught SIG", "Fatal signal ",
                     "[signal ", "CUDA Exception: ", "signal CUDA_EXCEPTION_", "Interrupt signal ("),
    "device_assert": ("Assertion ", "device-side assertion "),
    "error_line": (*(text for text, _ in LOST_TYPE_PHRASES + ANY_LEVEL_PHRASES), "out of memory", "CUDA error",
                   "ROCm error", "HIP error", "hipError",
                   "CUDA runtime error", "cudaError", "CUDA_ERROR_", "Error Code ", "Assertion failed", "ailed to start",
                   "ailed to initiali", "NCCL error", "Connection refused", "Error executing metho", "Request failed"),
    "compile_error": ("collect2: error:", "cannot find -l", ": fatal error: ", "error: command '", "ptxas fatal",
                      " detected in the compilation of ", "ninja: build stopped: subcommand failed"),
    "nccl_warn": ("NCCL WARN", "Watchdog caught collective operation timeout", " milliseconds before timing out",
                  "atchdog timeout", "Heartbeat monitor timed out", "watchdog got stuck",
                  "watchdog thread terminated with exception"),
    "process_died": ("actor died", "died unexpectedly", "scheduler is dead", "scheduler died", "Exit code: ",
                     "exited with code ", "exited with exit code ", "exited unexpectedly", "marked dead because",
                     "ChildFailedError", "Failed core proc(s): {'",
                     "Main process exited, code=", " failed to start", "A worker died or was killed",
                     "Failed to register worker", "exited on signal ", "exited with non-zero status", "rashed container",
                     "CrashLoopBackOff",
                     "Termination is unexpected", "ctor is dead because its worker process"),
    "killed": ("Killed", "Received sigquit", "SIGQUIT received", "kill_process_tree", " death signal"),
}
_NEEDLES = tuple(sorted({w for words in _EVENT_NEEDLES.values() for w in words}))
# the words that make a line worth reading at all (see _interesting): broader than the needles,
# and none begins with a blank, which would slow the one search over a quiet stretch of log
_EVENT_ANCHORS = ("Xid", "Connection refused", "failed to start", "CUDA error", "CUDA runtime", "cudaError",
                  "ROCm error", "HIP error", "hipError",
                  "CUDA_ERROR", "Error Code", "NCCL error", "ailed to ", "actor died", "cannot find -l", "collect2",
                  "fatal error", "error: command", "in the compilation of", "build stopped", "ssertion",
                  "Main process", "out of memory", "Out of memory", "oom", "OOM", "Fatal", "Segmentation", "Abort",
                  "Illegal", "Bus error", "SIG", "IOT instruction", "segmentation fault", "illegal hardware",
                  "bus error", "fallen off the bus", "Termination is unexpected", "Floating", "NCCL WARN", "Watchdog",
                  "timing out", "died", "dead", "Exit code", "exited", "ChildFailed", "Failed core", "Killed",
                  "sigquit", "SIGQUIT", "kill_process", "atchdog timeout", "cgroup out of memory", "Error executing",
                  "register worker", "Segfault", "LLVM ERROR", "Request failed", "Process received signal", ")[0x",
                  "rashed container", "CrashLoopBackOff", "Heartbeat monitor", "watchdog thread terminated", "panic: ",
                  "non-zero status", "ptxas fatal", "received by PID", "page fault", "GGML_ASSERT", "MTGPU",
                  " abort ", "Signal (", "death signal", "exitcode",
                  *(text.strip(" :") for text, _ in LOST_TYPE_PHRASES + ANY_LEVEL_PHRASES))
_EVENT_PART = any_part_of(_NEEDLES)  # the quick first search (see any_part_of)


def event_matches(msg: str, *, after: EventKind | None = None) -> Iterator[tuple[EventKind, re.Match[str]]]:
    """The kinds of :data:`_EVENTS` whose pattern the line matches, in that order, with the match
    (those from ``after`` on, when given)."""
    if _EVENT_PART.search(msg) is None:  # most lines hold no needle: one quick search says so
        return
    events = _EVENTS if after is None else _EVENTS[[k for k, _ in _EVENTS].index(after):]
    for kind, pattern in events:
        for needle in _EVENT_NEEDLES[kind]:  # plain ``in`` tests: far cheaper than a regex scan
            if needle in msg:
                m = pattern.search(msg)
                if m is not None:
                    yield kind, m
                break


_PLAIN: tuple[str | None, ...] = (None, None, None, None, None, None)
_MAX_FOREIGN = 25
_MAX_MESSAGE_LINES = 40
_MAX_MESSAGE_CHARS = 8000


def level_word(text: str, end: int | None = None) -> str | None:
    """The first level word (``ERROR``, ``CRITICAL``, ``WARNING`` as a whole word, or ``[E]``) in ``text[:end]``."""
    stop = len(text) if end is None else min(end, len(text))
    for m in _LEVEL_WORD.finditer(text, 0, stop):
        word = m.group(0)
        if word.startswith("[E"):
            return "[E]"
        s, e = m.start(), m.end()
        if (s == 0 or not _is_word(text[s - 1])) and (e >= stop or not _is_word(text[e])):
            return word
    return None


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def repr_message(r: re.Match[str]) -> str:
    """The message of an exception's repr (an :data:`_EXC_REPR` match): without the quote and parenthesis that close
    it, and only those, so a message's own closing parenthesis stays ("ValueError('... not enough values to unpack
    (expected 4, got 2)')"); a repr cut before its end loses only trailing quotes and parentheses."""
    text = r.group(3).rstrip()
    return text[:-2] if text.endswith(r.group(2) + ")") else r.group(3).rstrip("')\"")


def midline_ranks(msg: str, pos: int) -> list[str]:
    """The ranks a line's own prefixes name before a traceback's header at ``pos`` (SGLang's "[2025-02-16 19:29:38
    TP4]", else the ranks in a bracket before a source location), as found, maybe blank."""
    return _MIDLINE_RANK.findall(msg, 0, pos) or _RANK_AT_LOCATION.findall(msg, 0, pos)


def quoted_exception(text: str, before: str = "") -> re.Match[str] | None:
    """An exception line quoted in a line of prose (never a log record's): ``Type: message`` in
    backticks inside a sentence, or opening the line, its closing backtick maybe on a later line;
    or a line that is one quote whose type the sentence ``before`` it ended on. Groups as _EXC_REPR's.
    A Markdown list item's mark or bold opening ("- **Kernels (B200)**: ... fails with `RuntimeError: ...`") is
    not part of the sentence."""
    if (mark := _LIST_MARK.match(text)) is not None:
        text = text[mark.end():]
    if text.startswith("```"):  # a fence glued to the quote ("```RuntimeError: ...```"): one backtick opens it
        text = text[2:]
    elif text[:2] == "` " and text[2:3].isalpha():  # "` ValueError: ...`"
        text = "`" + text[2:]
    if "`" not in text:
        return _NAMED_IN_PROSE.search(text) if text[:1].isalpha() else None
    if text[:1].isalpha():  # (a sentence with other quotes may name it unquoted)
        return _QUOTED_EXC.search(text) or _NAMED_IN_PROSE.search(text)
    if text[:1] != "`" or not text[1:2].isalpha():
        return None
    if (quote := _WHOLE_QUOTE.match(text)) and ":" not in quote.group(1)[:40] and (named := _NAMES_NEXT.search(before)):
        return _QUOTED_EXC.match(f"`{named.group(1)}: {quote.group(1)}`")
    # a line that opens with another quote (a model's name) and quotes the exception line after it ("`org/model-4bit`
    # with error: `KeyError: 'x'`")
    return _OPEN_QUOTED_EXC.match(text) or _QUOTED_EXC.search(text)


def looks_like_exception(m: re.Match[str]) -> bool:
    """An ``_EXC`` match whose name reads like an exception class (so ``Killed`` or ``else:`` is not one)."""
    name = m.group(1).split("(", 1)[0]  # ray.exceptions.RayTaskError(RuntimeError)
    last = name.rsplit(".", 1)[-1]
    return bool(_EXC_NAME.search(last)) or (last[:1].isupper() and "." in name) or last == "Exception"


def split_flattened(rest: str) -> tuple[list[Frame], str | None, str]:
    """Frames, exception type and message of a traceback pasted without its newlines.

    ``rest`` is what follows ``Traceback (most recent call last):`` on the line. Process
    prefixes and vLLM headers are dropped, the text is split at ``File "``, and the last
    frame's tail is split into code and ``SomeError: message`` (cut at the next log record).
    """
    frames: list[Frame] = []
    pieces = [p.strip() for p in _FLAT_SPLIT.split(_FLAT_PREFIX.sub("", rest))]
    for piece in pieces:
        m = _FLAT_FRAME.match(piece)
        if m is None:
            continue
        tail = m.group(4)
        exc = _FLAT_EXC.search(tail)
        code = tail[: exc.start(1)].strip() if exc else tail.strip()
        frames.append(Frame(m.group(1), int(m.group(2)), m.group(3), code or None))
        if exc:
            after = _FLAT_END.split(tail[exc.end(1):].lstrip(":"), 1)[0].strip()
            return frames, exc.group(1), after
    return frames, None, ""


def own_record(lead: str, header: str | None) -> tuple[str, bool]:
    """The words before a traceback's header on its line, and whether they are the traceback's own record: a paste
    that lost its newlines leaves logger.exception's message followed by the next line's copy of the record's header
    ("IndexError('Dimension out of range') ERROR 06-16 11:58:22 [engine.py:166] Traceback ..."), dropped here."""
    # (a header a record copies, with its time: not a format's name the parser gives as one, "sglang", "ERROR")
    if header and any(c.isdigit() for c in header) and len(lead) > len(header) and lead.rstrip().endswith(header.strip()):
        return lead.rstrip()[:-len(header.strip())], True
    return lead, False


# the header's word cut inside itself, after a record's colon ("Scheduler hit an exception: Tra"), longest first
_HEADER_STEMS = tuple(_HEADER[:k] for k in range(9, 2, -1))


def cut_header(msg: str) -> int:
    """Where a ``Traceback (most recent call last):`` cut short at the end of the line begins
    (``... hit an exception: Traceback (m`` where a window or a paste ended, or ``...: Tra``), or -1."""
    tail = msg.rstrip()
    pos = tail.rfind("Traceback (")
    if pos >= 0 and _HEADER.startswith(tail[pos:]):
        return pos
    stem = next((w for w in _HEADER_STEMS if tail.endswith(w)), None)
    return len(tail) - len(stem) if stem is not None and tail[:len(tail) - len(stem)].endswith(": ") else -1



def _interesting_words(*, strong: bool) -> frozenset[str]:
    """The words that make a line matter to the scanner or to the phase timeline."""
    from workbench.phases import _ANCHORS, _FAILURE_ANCHORS  # the timeline's own words

    words = {
        'File "', "Traceback", "most recent call", "Error", "error", "Exception", "exception", "what()", "terminate",
        "Fatal", "fatal", "Segmentation", "Abort", "Killed", "SIG", "Xid", "NCCL", "nccl", "ssertion",
        "died", "dead", "fail", "Fail", "xited", "Exit", "OOM", "oom", "out of memory", "Out of memory",
        "above exception", "During handling", "atchdog", "timing out", "sigquit", "ChildFailed", "kill_process",
        "cannot find -l", "ray::", "Illegal", "' panicked", "Bus error", "Floating", "Main process", "Interrupt", "Timeout",
        "Cancelled", "Thread 0x", "Stack (", '): "MainThread"', "│", "┃", "║", "╭", "^[", "\ufffd[", '{"', "m(", "segfault",
        "protection fault", "memory budget", "memory usage threshold", "[signal ", "GPU HANG", "CUDA_EXCEPTION_",
        # a program's usage line as it refuses its command line (events.first_error reads it as the last resort)
        "usage: ",
        # a record at an error level whose words name no failure ("LMCache ERROR: The number of retrieved tokens is less
        # than the expected number of tokens!"): the last resort reads it (events.first_error)
        "ERROR", "CRITICAL",
        # a native backtrace's frame as glibc's backtrace_symbols, c10 and UCX print it (_NATIVE_SYMBOL below)
        ") [0x", "frame #", "()  ", ") + ",
        # gdb's frames (GDB_FRAME: "#0  ", a library's ") from /", a source line's ") at /" or ") at ./"), the kernel's
        # crash utility's (" at ffffffff8da96bd8")
        "#0  ", ") from /", ") at /", ") at .", " at ffffffff",
        # the CUDA runtime's error for a GPU its build has no kernels for, printed with no other error word
        "kernel image",
        # uvicorn running an app's lifespan start-up (phases._TEXT_STARTUP reads it before a failure)
        "Waiting for application startup",
        # the last resort's quiet failures (events.quiet_failure): an access line's 500, an unknown argument
        '" 500', "nknown argument", "nknown option", "upstream connect error", "no healthy upstream",
        *_EVENT_ANCHORS, *_ANCHORS, *_FAILURE_ANCHORS,
    } - _WEAK
    if not strong:
        words |= _WEAK
    return frozenset(words)


# words that matter to the timeline only while it does not know the phase yet (a window that
# begins mid-run): the batch and request lines that make up most of a serving log
_WEAK = frozenset({"batch", "/v1/", "Avg prompt", "Req(rid=", "scheduled_", "enerating sequences", " HTTP/1.", " toks/s"})
_INTERESTING = any_of(_interesting_words(strong=False))
_STRONG = any_of(_interesting_words(strong=True))
# the same two over a log's UTF-8 bytes, for the reader's search for the next line that matters
INTERESTING_BYTES = any_of_bytes(_interesting_words(strong=False))
STRONG_BYTES = any_of_bytes(_interesting_words(strong=True))


def no_cr(line: str) -> str:
    """The line without the carriage return a CRLF file leaves at its end, as the parser reads it
    (a ``\\r`` anywhere else is a progress bar's redraw: the short path leaves those alone)."""
    return line.rstrip("\r\n") if "\r" in line else line


# a frame of gdb's backtrace: its number, the frame's address (none for frame 0 stopped at a source line), the function
# (``??`` where gdb knows none) and its arguments, where it is ("from" a library, "at" a source line)
GDB_FRAME = re.compile(r"#\d+\s+(?:\S+ in )?(?:\?\?|[A-Za-z_~].*?) \(.*\)(?: (?:from|at) \S+)?$")
# a frame of a native backtrace: a process that crashed in native code. As glibc's backtrace_symbols prints it
# ("/usr/lib/x86_64-linux-gnu/libstdc++.so.6(+0xd6df4) [0x7f9572b73df4]", maybe followed by the demangled function;
# vLLM's crash handler names the process title after "--- ": "--- VLLM::EngineCore(_PyEval_EvalFrameDefault+0x8cf)
# [0x55fb937b7a7f]"; a Ray worker's title: "ray::VisualExecutionWorker(PyEval_EvalCode+0xae) [0x5f450e]"), as c10
# prints it under its error ("frame #3: c10d::ProcessGroupNCCL::WorkNCCL::isCompleted()
# + 0x58 (0x7f4d... in .../libtorch_cuda.so)"), as UCX prints it ("14 0x0000000000004493 ???()  .../libffi.so.8:0", or with
# its runs of blanks collapsed by a paste: "8 0x0000000000127022 tensorrt_llm::runtime::TllmRuntime::TllmRuntime() :0")
_NATIVE_SYMBOL = re.compile(r"(?:\S+\.so(?:\.\d+)*|--- \S+|ray::\w+)\([^()\s]*\) \[0x[0-9a-fA-F]+\]|" + _C10_FRAME.pattern +
                            r"|\d+ 0x[0-9a-fA-F]+ \S+\(\) +\S*:\d+$"
                            # a numbered frame as TensorRT-LLM and glog print it, its head cut ("5  0x7f9e... ns::C::f(...) + 443")
                            r"|\d+\s+0x[0-9a-fA-F]+\s+\S.*\) \+ \d+$"
                            # the same with a library's offset or a bare symbol ("4  0x7f67... /opt/.../libtriton_
                            # tensorrtllm.so(+0x515f5) [0x7f67...]", "7  0x7f67... TRITONBACKEND_ModelInstanceInitialize + 101")
                            r"|\d+\s+0x[0-9a-fA-F]+\s+(?:\S+\.so(?:\.\d+)*\([^()\s]*\) \[0x[0-9a-fA-F]+\]|[A-Za-z_]\w* \+ \d+)$"
                            # c10's head of the frames it lists under a torch error's message (see native_backtrace)
                            r"|Exception raised from \S+ at \S+ \(most recent call first\):$"
                            # gdb's "bt" ("#3  0x00007f8e2c289676 in free () from /lib/x86_64-linux-gnu/libc.so.6", "#0
                            # __pthread_kill_implementation (no_tid=0, signo=6, ...) at ./nptl/pthread_kill.c:44", the
                            # address replaced by a report's "xxx"), and the kernel's crash utility (" #2 [ffffa5d59a524e60]
                            # panic at ffffffff8da96bd8")
                            r"|" + GDB_FRAME.pattern + r"|#\d+ \[[0-9a-f]{8,}\] \S+ at [0-9a-f]{8,}$")
