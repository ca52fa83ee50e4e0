"""One log line into structure: the prefixes SGLang, vLLM and their hosts put in front of a message.

``parse_line(line)`` peels the prefixes off one line, outermost first, and returns a
:class:`LogLine`. It never raises and is cheap enough to run on every journal message
(``bench/tracebacks_throughput.py`` measures it).

Prefixes recognised, in the order they are peeled::

    logfmt     time="..." level=info msg="..." k=v               (logrus; the line inside msg is parsed, quotes unescaped)
    tracing    2025-06-05T01:31:26.837710Z  INFO mistralrs_core::engine:   (Rust's tracing: TGI, mistral.rs, routers)
    collector  1779264164797<TAB>2026-05-20T08:02:44.797Z<TAB>   (Loki export, kubectl --timestamps, CI logs)
    journal    May 30 15:02:13 host python[33085]:               (journalctl short; also -o short-iso / syslog)
    kernel     [Mon May 30 15:02:13 2025] / [12345.678901]       (dmesg -T / dmesg; journalctl -o short-monotonic)
    ucx        [1749803291.555759] [host:7053 :0]  tcp_ep.c:1260 UCX  ERROR    (UCX's own records; level and location)
    compose    svc-1  |                                          (docker compose; [pod/x/c] for kubectl --prefix)
    vllm proc  (VllmWorker rank=2 pid=123) (EngineCore_DP0 pid=7) (APIServer pid=1) (Worker_TP1_EP1 pid=9)
    torch      [rank3]:                                          (torch.distributed elastic)
    then one app header:
    sglang     [2025-05-30 15:02:13(.mmm)? DP1 TP0] (+ optional "[ERROR] " or uvicorn "INFO:     ")
               (also spdlog's "[2026-04-03 15:47:21.586738] [logger] [error] ")
    vllm       ERROR 09-18 21:38:02 [core.py:708]  (old: "INFO 07-17 23:41:16 model_runner.py:559]"; no time: "ERROR [x.py:8]")
    uvicorn    INFO:     Started server process [1]
    glog       [W309 12:56:45.480623726 ProcessGroupNCCL.cpp:1553]   (torch c10, absl; glog 0.7+: E20250522 ...)
    trtllm     [TensorRT-LLM][ERROR] / [01/10/2025-08:00:00] [TRT-LLM] [E]
    raycpp     [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069:   (Ray's C++ components;
               their lines come under the log monitor's "(raylet) " prefix, peeled as a process)
    nccl       host:pid:tid [dev] NCCL WARN ...                  (level only; the text stays the message)
    pylogging  2024-11-07 12:55:24,870 - lmdeploy - ERROR - __init__.py:17 -   (a record with its own time first and
               its level within two fields of it: Python logging's formats, Ray's "... INFO worker.py:1821 -- ",
               zap's console; a time before one of the headers above gives that header's record)

ANSI colour codes are removed first. ``rank`` is SGLang's rank string ("TP3", "DP1 TP0"),
or for vLLM the ranks named by a worker process ("TP1 EP1" for ``Worker_TP1_EP1``, "rank2" for
``VllmWorker rank=2``; ``EngineCore_DP0`` and ``ApiServer_0`` name processes, not ranks), or
"rank3" for ``[rank3]:``. Leftover escape codes, box borders and ``^M`` are removed first
(:func:`clean_line`).
``time`` is the innermost timestamp as printed; :func:`parse_time` turns it into a datetime.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import re2

__all__ = ["LogLine", "clean_line", "parse_line", "parse_time", "strip_ansi"]


@dataclass(slots=True)
class LogLine:
    """One parsed line. ``message`` is what is left once every prefix is removed.

    Treat it as read-only; it is not frozen only because frozen dataclasses are eight
    times slower to build and this runs on every journal message.
    """

    raw: str
    message: str
    time: str | None = None
    level: str | None = None
    rank: str | None = None
    process: str | None = None
    pid: int | None = None
    service: str | None = None
    host: str | None = None
    location: str | None = None
    format: str = "plain"


_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z]|[@-Z\\-_])")

_ISO_TS = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_JOURNAL = re.compile(
    # (the month's name as the host's locale writes it: "May 17", and in Chinese or Japanese "5月 17")
    r"(?P<ts>(?:[A-Z][a-z]{2}|1?\d月) [ \d]?\d \d\d:\d\d:\d\d(?:\.\d+)?|" + _ISO_TS + r") "
    # (a host name holds no colon, a program's name no parenthesis and it begins with no digit: "RuntimeError:
    # permute(x): ..." or "2024-09-05 08:43:29,394 - ..." after a collector's time is no host and program)
    r"(?P<host>[^\s:]+) (?P<ident>[^\s\[\]:()\d][^\s\[\]:()]*)(?:\[(?P<pid>\d+)\])?: ?"
)
# Rust's tracing-subscriber: RFC 3339 time, the level padded to 5, the target ("mistralrs_core::engine") -- the
# router of TGI, SGLang's and vLLM's Rust routers, mistral.rs, candle-vllm, dynamo
# (not a collector's time before vLLM's record: "...Z ERROR 03-13 09:00:43 [core.py:330] ...")
_TRACING = re.compile(r"(?P<ts>" + _ISO_TS + r")  ?(?P<lvl>TRACE|DEBUG|INFO|WARN|ERROR) (?!\d\d-\d\d \d\d:|\[[^\]\s:]+:\d+\])"
                      r"(?:(?P<loc>[A-Za-z_]\w*(?:::\w+)*): )?")
_TRACING_LEVEL = {"TRACE": "DEBUG", "DEBUG": "DEBUG", "INFO": "INFO", "WARN": "WARNING", "ERROR": "ERROR"}
# (containerd's and CRI-O's own log files: the stream and whether the line is whole, "...Z stdout F ")
_COLLECTOR = re.compile(r"(?:\d{10,19}\t)?(?P<ts>" + _ISO_TS + r")[\t ](?:(?:stdout|stderr) [FP] )?")
# Google Cloud Logging's export: the entry's severity (stdout's INFO, stderr's ERROR: the collector's, not the app's
# level) and its RFC 3339 time in UTC before the line ("ERROR 2025-03-30T23:51:21.303592681Z [rank0]: ...")
_SEVERITY_TS = re.compile(r"(?:DEFAULT|DEBUG|INFO|NOTICE|WARNING|ERROR|CRITICAL|ALERT|EMERGENCY) "
                          r"(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) ")
_SEVERITY_HEADS = frozenset({"DEFA", "DEBU", "INFO", "NOTI", "WARN", "ERRO", "CRIT", "ALER", "EMER"})
_KERNEL = re.compile(r"\[(?P<ts>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}|\s*\d+\.\d+)\] ?")
# words that head a message after a time, never a syslog program's name ("CUDA error: ...", "NCCL WARN ...")
_NO_IDENT = frozenset({"error", "errors", "warning", "warn", "info", "debug", "fatal", "critical", "exception", "failed",
                       "failure"})
_SYSLOG_TIME = re.compile(r"(?P<ts>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?) ")
_JOURNAL_AFTER_TS = re.compile(r"(?P<host>[\w.-]+) (?P<ident>[^\s\[\]:]+)\[(?P<pid>\d+)\]: ?")  # -o short-monotonic
# UCX's own log record behind its "[seconds.micro]" ("[1749803291.555759] [host:7053 :0]   tcp_ep.c:1260 UCX  ERROR ...")
_UCX = re.compile(r"\[(?P<host>[^\]\s:]+):(?P<pid>\d+) *:\d+\] +(?P<loc>[\w.]+:\d+) +UCX +(?P<lvl>[A-Z]+) +")
_UCX_BARE = re.compile(r"(?P<loc>\w[\w.]*\.c(?:pp)?:\d+) +UCX +(?P<lvl>[A-Z]+) +")  # a paste without the time and host
_UCX_LEVEL = {"ERROR": "ERROR", "FATAL": "CRITICAL", "WARN": "WARNING", "DIAG": "INFO", "INFO": "INFO", "PRINT": "INFO"}
# Intel oneCCL's records (the collectives of vLLM and SGLang on XPU, ipex-llm): "2024:08:21-10:24:26:( 4456) |CCL_ERROR|
# atl_ofi_helper.cpp:867 atl_ofi_get_prov_list: fi_getinfo error: ret -61, providers 0"
_ONECCL = re.compile(r"\d{4}:\d\d:\d\d-\d\d:\d\d:\d\d:\( *(?P<pid>\d+)\) \|CCL_(?P<lvl>[A-Z]+)\| +(?:(?P<loc>[\w.]+:\d+) )?")
_ONECCL_LEVEL = {"ERROR": "ERROR", "FATAL": "CRITICAL", "WARN": "WARNING", "INFO": "INFO"}
_TRTLLM = re.compile(
    r"(?:\[(?P<ts>\d\d/\d\d/\d{4}-\d\d:\d\d:\d\d)\] )?\[(?:TRT-LLM|TensorRT-LLM)\]"
    r"(?: ?\[RANK (?P<rank>\d+)\])?(?: ?\[(?P<lvl>[A-Z]+)\])? ?"
)
_COMPOSE = re.compile(r"(?P<svc>[A-Za-z0-9][\w.-]*)\s+\| ?")
_KUBE = re.compile(r"\[pod/(?P<svc>[^\]\s]+)\] ")
# vLLM >= 0.10 names a worker by its ranks after its name: "(VllmWorker TP0 pid=9)", "(VllmWorker TP1 EP1 pid=9)"
# Ray Serve names a replica by application and deployment: "(ServeReplica:default:LLMRouter pid=9)"
_PROC_FAST = re.compile(r"\(([A-Za-z_][\w.:-]*?)(?: rank=(\d+)| ((?:DP|TP|PP|EP|CP)\d+(?: (?:DP|TP|PP|EP|CP)\d+)*))? pid=(\d+)\) ?")
_PROC = re.compile(r"\((?P<name>[A-Za-z_][\w.:/-]*)(?P<kv>(?:,? \w+=[^\s,)]+)+)\) ?")
_PROC_KV = re.compile(r"(\w+)=([^\s,)]+)")
_PROC_RANKS = re.compile(r"_(DP|TP|PP|EP|CP)(\d+)")
# (a pasted window may start one character into the prefix: "rank0]:[E811 ...] ...", its "[" lost)
_TORCH_RANK = re.compile(r"\[?rank(?P<r>\d+)\]: ?")
_SGLANG = re.compile(
    r"\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?)(?P<ranks>(?: [A-Z][A-Z_]*\d+)*)\] ?"
    r"(?:\[(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL)\] |(?P<uvl>DEBUG|INFO|WARNING|ERROR|CRITICAL|TRACE):\s+)?"
)
_RANK_TOKENS = r"(?:DP|PP|TP|EP|CP|ATTN_CP|ATTN_DP|ATTN_TP|MOE_DP|MOE_EP|MOE_TP)\d+"
_SGLANG_RANK_ONLY = re.compile(r"\[(?P<ranks>" + _RANK_TOKENS + r"(?: " + _RANK_TOKENS + r")*)\] ?")
_VLLM = re.compile(  # (the time may be left out by the logging configuration: "ERROR [serving.py:830] ...")
    r"(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?:(?P<ts>\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)? \[?|\[)"
    r"(?P<loc>[^\]\s:]+:\d+)\] ?"
)
_UVICORN = re.compile(r"(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL|TRACE):(?:\s+|(?=\w))")
# Python logging's level first, padded, then the time ("%(levelname)-8s %(asctime)s ...": FastDeploy's "ERROR    2026-04-19
# 19:22:38,720 4358  engine.py[line:160] Failed to launch worker processes")
_LEVEL_FIRST = re.compile(r"(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL) +(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:[,.]\d+)? ")
# (or with its time and thread left out, the level letter and the source only: "E gds_mt_backend.cpp:237] GDS_MT: ...",
# NIXL's plugins in a Dynamo log)
# (or with its date left out: ExecuTorch's ET_LOG, "E 00:00:00.650431 executorch:file_data_loader.cpp:194] ...")
_GLOG = re.compile(r"\[?(?P<lvl>[IWEF])(?: ?(?P<ts>(?:(?:\d{8}|\d{3,4}) )?\d\d:\d\d:\d\d\.\d+) +(?:\d+ )?| "
                   r"(?=[\w.-]+\.(?:cc|cpp|cxx|c|h|hpp|cu|go|rs):\d+\] ))(?P<loc>[^\]\s]+:\d+)\] ?")
_NCCL = re.compile(r"\S+:(?P<pid>\d+):\d+ \[\d+\] (?:\S+:\d+ )?NCCL (?P<lvl>INFO|WARN|TRACE|ERROR) ")
# A record with its own time first and no header above: Python logging's formats ("%(asctime)s - %(name)s -
# %(levelname)s - %(message)s", xinference's "%(asctime)s %(name)s %(process)d %(levelname)s", Ray's "... INFO
# worker.py:1821 -- "), zap's console ("...Z    INFO    controller ..."), bracketed levels ("[INFO ]"): the time, at
# most two fields (a logger's name, a pid, a thread), the level as a whole word, then an optional source location
_PLAIN_LEVELS = r"DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL"
_PLAIN_SEP = r"(?:[ \t]+-+[ \t]+|[ \t]*\|[ \t]*|[ \t]+)"
_PLAIN_LOC = r"(?:[\w./-]+\.(?:py|rs|cc|cpp|hpp|go)(?::[\w<>]+\(\))?|[\w<>]+\(\)):\d+"
_PLAIN_TIME = r"\[?(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\]?"
_PLAIN_RECORD = re.compile(
    _PLAIN_TIME + r"(?:" + _PLAIN_SEP + r"(?!(?:" + _PLAIN_LEVELS + r")\b)[\w.<>\[\]:/-]{1,80}){0,2}?" + _PLAIN_SEP
    + r"(?:\[(?P<blvl>" + _PLAIN_LEVELS + r") *\]|(?P<lvl>" + _PLAIN_LEVELS + r")\b)"
    r"(?:[ \t]*(?:[-|:]+[ \t]+|(?=\[)|$)|[ \t]+)"
    r"(?:(?P<loc>" + _PLAIN_LOC + r")(?:[ \t]+-+[ \t]+|:[ \t]+)"
    # (a pid, and SGLang's ranks, in the bracket: "ERROR 120984 [ TP0 scheduler.py:3190] ")
    r"|(?:\d+[ \t]+)?\[ ?(?:(?P<ranks>[A-Z]+\d+(?: [A-Z]+\d+)*) )?(?P<bloc>" + _PLAIN_LOC + r")\][ \t]+)?")
# winston's default format, a Node server's (LibreChat): its level in lower case right after the time, then a colon
# ("2024-09-01 21:43:28 error: Failed to fetch models from Ollama API")
_WINSTON = re.compile(_PLAIN_TIME + r" (?P<lvl>error|warn|info|debug): ")
# Android's logcat, as Android Studio shows it ("2024-10-07 21:09:34.399 19864-19889 libc++abi  com.test.llama  E
# terminating with ...") and as adb's threadtime format prints it ("10-07 21:09:34.399 19864 19889 E libc++abi: ..."):
# the time, the pid and thread, then the tag and package and a level letter, or the level letter and the tag; and
# nginx's error log ("2024/04/16 13:58:38 [error] 1279#0: *20351 ..."), a gateway's in front of a server
_LOGCAT = re.compile(r"(?P<ts>(?:\d{4}-)?\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) +\d+[- ]+\d+ +"
                     r"(?:\S+ +\S+ +(?P<lvl>[VDIWEFA]) +|(?P<lvl2>[VDIWEFA]) +[^:\s][^:]{0,60}: )")
_NGINX = re.compile(r"(?P<ts>\d{4}/\d\d/\d\d \d\d:\d\d:\d\d) \[(?P<word>debug|info|notice|warn|error|crit|alert|emerg)\] "
                    r"\d+#\d+: (?:\*\d+ )?")
# C++ servers' records of bracketed fields after the time, one of them the level (MindIE: "[2025-04-06 15:49:29.887+08:00]
# [419] [421] [server] [ERROR] [llm_infer_model.cpp:28] : ModelInstance init failed"): the fields after the time
_BRACKET_FIELDS = (r"(?:[ \t]*\[[^\[\]\s]{1,40}\]){0,4}?[ \t]*\[(?P<blvl>" + _PLAIN_LEVELS + r") *\]"
                   r"(?:[ \t]+\[(?P<bloc>" + _PLAIN_LOC + r")\])?[ \t]*:?[ \t]+")
_BRACKETED_RECORD = re.compile(_PLAIN_TIME + _BRACKET_FIELDS)
_BRACKETED_TAIL = re.compile(_BRACKET_FIELDS)  # the same after a time another header took ("[2025-02-19 09:59:12.38]")
# the time, the thread and the level in lower case, then the source location with glog's bracket (MindIE's daemon: "Log
# default format: yyyy-mm-dd hh:mm:ss.uuuuuu threadid loglevel msg", "... 460279 error infer_engine_inner.cc:257] ...")
# (named as _BRACKETED_RECORD's groups: one reading serves both)
_THREAD_RECORD = re.compile(r"(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) \d+ "
                            r"(?P<blvl>trace|debug|info|warning|warn|error|critical|fatal) (?P<bloc>[\w./-]+:\d+)\] ")
_PLAIN_STAMP = re.compile(_PLAIN_TIME + r"[ \t]+")  # a time alone before a known header ("2025-07-10 08:59:40 ERROR 07-09 ...")
# what may begin another record inside a record's message: a time, a bracket or a process's parenthesis, a level word
# and its time or source (vLLM's), glog's letter and date
_NESTED_START = re.compile(r"[\[(\d]|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) [\d\[]|[IWEF]\d{4} ")
_PLAIN_LEVEL = {"WARN": "WARNING", "FATAL": "CRITICAL"}

# spdlog's default pattern after its bracketed time: "[logger] [error] " (C++ servers: tt-media-server...)
_SPDLOG = re.compile(r"(?:\[[\w.:-]+\] )?\[(?P<lvl>trace|debug|info|warning|warn|error|critical)\] ")
_SPDLOG_LEVEL = {"trace": "TRACE", "debug": "DEBUG", "info": "INFO", "warn": "WARNING", "warning": "WARNING",
                 "error": "ERROR", "critical": "CRITICAL"}

# a logfmt record (Go's logrus: 'time="..." level=info msg="  File \\"/x.py\\", line 3, in f" component=vllm'), whose
# msg holds the line of the program it wraps; the record's level is the wrapper's, not the line's (but see
# _LOGFMT_LEVEL: an error level stands for a line that has no level of its own)
_LOGFMT_MSG = re.compile(r'(?:\w+=(?:"(?:[^"\\]|\\.)*"|\S*) )*?msg="((?:[^"\\]|\\.)*)"')
_LOGFMT_ESCAPE = re.compile(r'\\(["\\])')
# a Go program's own record in logfmt (ollama's slog: 'time=... level=ERROR source=sched.go:489 msg="error loading llama
# server" error="llama runner process has terminated: cudaMalloc failed: out of memory"'): its error level stands for
# a line of its own that has none, and the error it carries after msg is the rest of what it says
_LOGFMT_LEVEL = re.compile(r"\blevel=\"?(?:error|ERROR|fatal|FATAL|panic|PANIC|crit\w*|CRIT\w*)\b")
_LOGFMT_ERROR = re.compile(r'\berr(?:or)?="((?:[^"\\]|\\.)*)"')

_NO_ORIGIN: tuple[str | None, ...] = (None, None, None, None, None, None)
_TRT_LEVEL = {"E": "ERROR", "W": "WARNING", "I": "INFO", "V": "DEBUG", "ERROR": "ERROR", "WARNING": "WARNING",
              "INFO": "INFO", "DEBUG": "DEBUG", "VERBOSE": "DEBUG"}
# one-letter levels (glog, Ray's C++ records, llama.cpp): each head's pattern admits only the letters it writes
_LETTER_LEVEL = {"D": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "C": "CRITICAL", "F": "CRITICAL"}
# (logcat's letters add verbose and assert; nginx's words: _LOGCAT, _NGINX)
_SEVERITY = {**_LETTER_LEVEL, "V": "DEBUG", "A": "CRITICAL", "debug": "DEBUG", "info": "INFO", "notice": "INFO",
             "warn": "WARNING", "error": "ERROR", "crit": "CRITICAL", "alert": "CRITICAL", "emerg": "CRITICAL"}
# A record whose fields are joined by pipes: loguru's default ("2025-09-10 11:16:22.307 | ERROR    | pkg.mod:func:106 -
# "), Python logging's "%(asctime)s | %(levelname)s | %(name)s | " (FastChat: "... | ERROR | stderr | "), a container
# runtime's own time glued in front of it ("2025-09-10 18:16:22.307225+00:002025-09-10 11:16:22.307 | ERROR | ...")
_PIPES = re.compile(
    r"(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)(?=\d{4}-\d\d-\d\d[ T]))?"
    r"(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?) \| *"
    r"(?P<lvl>TRACE|DEBUG|INFO|SUCCESS|WARNING|WARN|ERROR|CRITICAL|FATAL) *\| "
    r"(?:[\w.<>-]+(?::[\w<>.-]+)*:\d+ - |(?P<name>[\w.<>-]+) \| )?")
_PIPES_LEVEL = {"SUCCESS": "INFO", "WARN": "WARNING", "FATAL": "CRITICAL"}
# Ray's C++ components' own record (raylet, GCS, core worker): "[2025-04-02 15:02:00,117 E 135782 135782] (raylet)
# node_manager.cc:3069: msg" (time, one-letter level, pid, thread id; the component's name in newer releases)
_RAYCPP = re.compile(r"\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (?P<lvl>[DIWECF]) (?P<pid>\d+) \d+\] "
                     r"(?:\([\w.-]+\) )?(?:(?P<loc>[\w./-]+:\d+): )?")
# the prefix Ray's log monitor puts before a line of one of its own components ("(raylet) ", "(gcs_server) "); a
# worker's has its pid and goes by _PROC
_RAY_COMPONENT = re.compile(r"\((?P<name>raylet|gcs_server|autoscaler|monitor|dashboard|dashboard_agent|log_monitor|"
                            r"runtime_env_agent)\) ?")
# a vLLM worker named by its ranks alone, its pid left out ("(Worker_TP3) ERROR 04:57:00 [multiproc_executor.py:1055]")
_PROC_NAMED = re.compile(r"\((?P<name>\w*Worker(?:_(?:DP|TP|PP|EP|CP)\d+)+)\) ?")
_LLAMACPP = re.compile(r"\d+\.\d\d\.\d\d\d\.\d\d\d (?P<lvl>[DIWE]) ")
# Go's zerolog console writer, its default kitchen time and three-letter level ("9:01PM ERR [llama-cpp] Failed loading
# model ...": LocalAI)
_ZEROLOG = re.compile(r"(?P<ts>\d{1,2}:\d\d(?::\d\d)?[AP]M) (?P<lvl>TRC|DBG|INF|WRN|ERR|FTL|PNC) ")
_ZEROLOG_LEVEL = {"TRC": "DEBUG", "DBG": "DEBUG", "INF": "INFO", "WRN": "WARNING", "ERR": "ERROR", "FTL": "CRITICAL",
                  "PNC": "CRITICAL"}
_NCCL_LEVEL = {"INFO": "INFO", "WARN": "WARNING", "TRACE": "DEBUG", "ERROR": "ERROR"}
_UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DIGITS = frozenset("0123456789")
_ALNUM = _UPPER | _DIGITS | frozenset("abcdefghijklmnopqrstuvwxyz")


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences (vLLM colours its process prefixes)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


# What pastes and log collectors leave of escape codes and line ends once the ESC byte is gone:
# a literal "^[[1;36m", a replacement character "\ufffd[1;36m", a bare "36m(" or "[36m(" before a process
# prefix and "0m" or "[0m" after it, or " [36m(" and ") [0m" where a blank took the ESC's place (a Ray actor's
# " [36m(VLLM_Qwen_Chat_Ray pid=724236) [0m   File ..."); a literal "^M" at the end of a line.
_ANSI_LEFTOVER = re.compile(
    r"(?:\^\[|\ufffd)\[[0-9;]*[A-Za-z]|^(?: \[|\[?)\d{1,3}(?:;\d{1,3})*m(?=\()|"
    r"(?<=\))(?: \[|\[?)\d{1,3}(?:;\d{1,3})*m(?= |$)")
# Box borders: k9s / rich panels draw "│ ... │" around every line.
_BOX = re.compile(r"^[ \t]*[│┃║][ \t]?(?=\S| {2,})|[ \t]*[│┃║][ \t]*$")
_RAY_REPEAT = re.compile(r" \[repeated \d+x across cluster\]$")
# rsyslog's escapes of control characters (#033 the ESC of a colour code, #015 a carriage return, #011 a tab) and a
# log export's CSV rows ("1756144012376,\"...\"": CloudWatch's epoch milliseconds, the message quoted with its own
# quotes doubled when it holds one)
_SYSLOG_ESCAPE = re.compile(r"#033\[[0-9;]*[A-Za-z]|#015$|#015(?=\"$)")
_CSV_STAMP = re.compile(r"\d{10}(?:\d{3})?(?:\.\d+)?,")
# a whole line in Markdown emphasis: the same one to three marks at both ends (mirrored), none touching a blank
# ("*** Error in `python': double free ... ***", glibc's, keeps its stars), a blank inside, something to read
_EMPHASIS = re.compile(r"([*_]{1,3})(?=[^\s*_])(.{8,}?\s.*?[^\s*_])([*_]{1,3})")
_CLEAN_MARKS = ("^[", "\ufffd[", ")0m", "│", "┃", "║", "^M", "cluster]", "File \u201c", 'File \\"', "#0", "&quot;", "&#39;")




def _lost_esc(line: str, pos: int = 0) -> bool:
    """A colour code that lost its ESC byte before a process prefix at ``pos``: "36m(", "[36m(", " [36m("."""
    c = line[pos:pos + 1]
    return (c == "[" or c.isdigit() or line[pos:pos + 2] == " [") and "m(" in line[pos:pos + 12]


def _needs_clean(line: str) -> bool:
    """True when the line holds one of :data:`_CLEAN_MARKS` (or a bare colour code before a process
    prefix). Plain ``in`` tests: each is a C scan, four times faster here than one regex alternation."""
    return (("^" in line and ("^[" in line or "^M" in line)) or "\ufffd[" in line or ")0m" in line
            or "│" in line or "┃" in line or "║" in line or "cluster]" in line
            or ("File " in line and ("File \u201c" in line or 'File \\"' in line))
            or ("&" in line and ("&quot;" in line or "&#39;" in line))
            or _lost_esc(line) or "#0" in line or (line[:1].isdigit() and (line[10:11] == "," or line[13:14] == ","))
            or (line[:1] in "*_" and line[-1:] in "*_" and line[:1] != ""))


def clean_line(line: str) -> str:
    """Undo what a paste or a collector did to one line: leftover colour codes, box borders,
    literal ``^M``, Ray's ``[repeated Nx across cluster]``, curly or escaped quotes around paths.

    HTML's escaped quotes (``&quot;``) too. Cheap and idempotent; :func:`parse_line` applies it before reading the
    prefixes.
    """
    if line[:1].isdigit() and (stamp := _CSV_STAMP.match(line)) is not None:  # an exported row: its message
        line = line[stamp.end():]
        if len(line) > 1 and line[0] == '"' and line[-1] == '"':
            line = line[1:-1].replace('""', '"')
    if "#0" in line:
        line = _SYSLOG_ESCAPE.sub("", line).replace("#011", "\t")
    if "^[" in line or "\ufffd[" in line or ")0m" in line or _lost_esc(line):
        line = _ANSI_LEFTOVER.sub("", line)
    if line.endswith("^M"):
        line = line[:-2]
    if "│" in line or "┃" in line or "║" in line:
        line = _BOX.sub("", line).rstrip()
    if line.endswith("cluster]"):
        line = _RAY_REPEAT.sub("", line)
    if "File \u201c" in line:  # File “/path”, line 3 — a paste through a word processor
        line = line.replace("\u201c", '"').replace("\u201d", '"')
    if 'File \\"' in line:  # a traceback printed inside a quoted string
        line = line.replace('\\"', '"')
    if "&quot;" in line or "&#39;" in line:  # a log pasted out of an HTML page, its quotes escaped
        line = html.unescape(line)
    if line[:1] in "*_" and line[-1:] in "*_" and line[:1] and (m := _EMPHASIS.fullmatch(line)) is not None \
            and m.group(3) == m.group(1)[::-1] and m.group(1) not in m.group(2):
        line = m.group(2)  # a line a paste set in Markdown's bold or italics: "**_ERROR ... ValueError: ..._**"
    return line


_NAME_RANKS: dict[str, str | None] = {}


def _proc_rank(name: str, rank: str | None) -> str | None:
    if rank is not None:
        return "rank" + rank
    try:
        return _NAME_RANKS[name]
    except KeyError:
        pass
    # only a worker process is one rank; EngineCore_DP0 / ApiServer_1 name a process, not a rank
    parts = _PROC_RANKS.findall(name) if "Worker" in name else None
    found = " ".join(p + n for p, n in parts) if parts else None
    if len(_NAME_RANKS) < 4096:  # process names repeat: remember what they say
        _NAME_RANKS[name] = found
    return found


Parsed = tuple[LogLine, tuple[str | None, ...], str | None]  # a parsed line: the line, its origin, its header


def _journal(line: str, pos: int = 0) -> re.Match[str] | None:
    """journald's time, host and program at ``pos``; None for a time alone before a message whose first words would
    read as a host and a program with no pid ("Jan 04 12:17:44 CUDA error: ...", "...Z CUDA error: out of memory")."""
    m = _JOURNAL.match(line, pos)
    return None if m is None or (not m["pid"] and m["ident"].lower() in _NO_IDENT) else m


def _parse(line: str, *, inner: bool = False) -> Parsed:
    """Parse one line; also return the writer's identity and the app header text.

    The identity separates interleaved writers (vLLM processes, journal pids, compose
    services); the header lets a caller tell a new record from a continuation that
    repeats the previous record's header (vLLM prefixes every line of a traceback).
    """
    raw = line
    if not line or line[0] in " \t":  # continuation lines (traceback frames) carry no prefix
        if "[rank" in line[:16] and line.lstrip(" \t").startswith("[rank"):
            line = line.lstrip(" \t")  # torch's "[rankN]:" indented by a paste (a list item's "  [rank1]:   File")
        elif line[:2] == " (" and _PROC_FAST.match(line, 1):
            line = line[1:]  # (or a process's prefix, one space in: " (SGLangEngine pid=12589) torch.AcceleratorError: ...")
        elif "\x1b" not in line and "\r" not in line and not _needs_clean(line):
            return LogLine(raw, line), _NO_ORIGIN, None
    wrapper_level = None  # a logfmt record's own level, when it says error (see below)
    if line[:5] in ("time=", "level") and ' msg="' in line and (lf := _LOGFMT_MSG.match(line)):
        said, err = lf.group(1), _LOGFMT_ERROR.search(line, lf.end())
        wrapper_level = "ERROR" if _LOGFMT_LEVEL.search(line, 0, lf.start(1)) else None
        line = _LOGFMT_ESCAPE.sub(r"\1", said + (f": {err.group(1)}" if err and err.group(1) not in said else ""))
        if not line or line[0] in " \t":
            return LogLine(raw, line), _NO_ORIGIN, None
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if _needs_clean(line):
        line = clean_line(line)
    if "\r" in line:
        line = line.rstrip("\r\n")
        if "\r" in line:  # progress bars redraw with \r: the terminal shows the last part
            tail = line.rsplit("\r", 1)[1]
            line = tail if tail.strip() else line.replace("\r", "")
    pos = stamp = 0
    n = len(line)
    time = level = rank = process = service = host = location = None
    pid: int | None = None
    jpid: str | None = None
    torch_rank: str | None = None
    fmt = "plain"
    header: str | None = None

    # Outer prefixes: collector timestamps, journal/syslog, kernel, compose/kubectl.
    if n and line[0] in _DIGITS:
        m = _TRACING.match(line) if n > 26 and line[10:11] == "T" else None
        if m:
            time, level, location, fmt = m["ts"], _TRACING_LEVEL[m["lvl"]], m["loc"], "tracing"
            pos = m.end()
        elif m := _journal(line):
            time, host, service, jpid = m["ts"], m["host"], m["ident"], m["pid"]
            fmt = "journal"
            pos = m.end()
        elif line[4:5] == ":" and (m := _ONECCL.match(line)) is not None:
            pid, level, location, fmt = int(m["pid"]), _ONECCL_LEVEL.get(m["lvl"], "DEBUG"), m["loc"], "oneccl"
            pos = m.end()
        else:
            m = _COLLECTOR.match(line)
            if m:
                time = m["ts"]
                pos = m.end()
                stamp = m.start("ts")
                if line[pos + 10:pos + 11] == "T" and (m := _TRACING.match(line, pos)) is not None:
                    # a Rust server's tracing record in a container's log ("...Z stdout F 2024-12-21T13:26:25.25Z ERROR
                    # lorax_launcher: ..."): its own time, level and target
                    time, level, location, fmt = m["ts"], _TRACING_LEVEL[m["lvl"]], m["loc"], "tracing"
                    pos = m.end()
                elif m := _journal(line, pos):
                    time, host, service, jpid = m["ts"], m["host"], m["ident"], m["pid"]
                    fmt = "journal"
                    pos = m.end()
    elif n > 4 and line[0] in _UPPER and line[3] == " ":
        m = _journal(line)
        if m:
            time, host, service, jpid = m["ts"], m["host"], m["ident"], m["pid"]
            fmt = "journal"
            pos = m.end()
        elif m := _SYSLOG_TIME.match(line):  # the time alone, its host and program left out (a paste, `ts`)
            time, pos = m["ts"], m.end()
    elif n > 26 and line[:4] in _SEVERITY_HEADS and line.find("Z ", 20, 48) > 0 and (m := _SEVERITY_TS.match(line)):
        time = m["ts"]
        pos = m.end()
    if pos and pos < n and _lost_esc(line, pos):  # a colour code that lost its ESC after a collector's prefix
        line = line[:pos] + _ANSI_LEFTOVER.sub("", line[pos:])  # ("...Z [1;36m(Worker pid=1)")
        n = len(line)
    if pos < n and line[pos] == "[" and pos + 1 < n and (line[pos + 1] == " " or line[pos + 1] in _DIGITS or line[pos + 1] in _UPPER):
        m = _KERNEL.match(line, pos)
        if m:
            time = m["ts"].strip()
            pos = m.end()
            j = _JOURNAL_AFTER_TS.match(line, pos) if fmt == "plain" else None
            if j:
                host, service, jpid, fmt = j["host"], j["ident"], j["pid"], "journal"
                pos = j.end()
            elif (u := _UCX.match(line, pos)) is not None:
                host, pid, location, level, fmt = u["host"], int(u["pid"]), u["loc"], _UCX_LEVEL.get(u["lvl"], "DEBUG"), "ucx"
                pos = u.end()
            else:
                fmt = "kernel"
                service = service or "kernel"
    if pos < n and line[pos] in _ALNUM:
        m = _COMPOSE.match(line, pos)
        if m is None and fmt == "plain" and (u := _UCX_BARE.match(line, pos)) is not None:  # its head left out
            location, level, fmt = u["loc"], _UCX_LEVEL.get(u["lvl"], "DEBUG"), "ucx"
            pos = u.end()
        elif m:
            service = m["svc"]
            fmt = "compose"
            pos = m.end()
    elif line.startswith("[pod/", pos):
        m = _KUBE.match(line, pos)
        if m:
            service = m["svc"]
            fmt = "compose"
            pos = m.end()

    # vLLM process prefixes (EngineCore may wrap a worker's prefix), torch's [rankN]:.
    while pos < n and line[pos] == "(":
        m = _PROC_FAST.match(line, pos)
        if m:
            process, prank, pid = m.group(1), m.group(2), int(m.group(4))
            if m.group(3):
                process += "_" + m.group(3).replace(" ", "_")  # "VllmWorker TP0" is Worker_TP0's rank
        elif (m := _PROC.match(line, pos)) is None:
            m = _RAY_COMPONENT.match(line, pos) or _PROC_NAMED.match(line, pos)
            if not m:
                break
            process, prank = m["name"], None
        else:
            process = m.group("name")
            kv = dict(_PROC_KV.findall(m.group("kv")))
            pid_text = kv.get("pid")
            pid = int(pid_text) if pid_text and pid_text.isdigit() else pid
            prank = kv.get("rank")
        rank = _proc_rank(process, prank) or rank
        fmt = "vllm"
        pos = m.end()
    if line.startswith("[rank", pos) or (pos == 0 and line.startswith("rank", pos)):
        m = _TORCH_RANK.match(line, pos)
        if m:
            torch_rank = "rank" + m["r"]
            rank = rank or torch_rank
            pos = m.end()

    # TensorRT-LLM's own prefixes: "[TensorRT-LLM][ERROR] ", "[01/10/2025-08:00:00] [TRT-LLM] [E] ".
    if line.startswith("[T", pos) or line.startswith("] [T", pos + 20):
        m = _TRTLLM.match(line, pos)
        if m:
            level = _TRT_LEVEL.get(m["lvl"] or "", m["lvl"])
            time = m["ts"] or time
            rank = ("rank" + m["rank"]) if m["rank"] else rank
            fmt = header = "trtllm"
            pos = m.end()

    # One application header.
    if pos < n:
        c = line[pos]
        m = None
        if c == "[":
            nxt = line[pos + 1] if pos + 1 < n else ""
            if nxt in _DIGITS:
                m = _SGLANG.match(line, pos)
                if m:
                    time = m["ts"]
                    ranks = m["ranks"].strip()
                    rank = ranks or rank
                    level = m["lvl"] or m["uvl"]
                    fmt = "uvicorn" if m["uvl"] else "sglang"
                    header = "sglang"
                    if level is None and line.startswith("[", m.end()):
                        sp = _SPDLOG.match(line, m.end())
                        if sp:
                            level = _SPDLOG_LEVEL[sp["lvl"]]
                            m = sp
                        elif (bt := _BRACKETED_TAIL.match(line, m.end())) is not None:
                            level, location, fmt, m = _PLAIN_LEVEL.get(bt["blvl"], bt["blvl"]), bt["bloc"], "bracketed", bt
                elif line[pos + 24:pos + 25] == " " and line[pos + 26:pos + 27] == " " and (
                        r := _RAYCPP.match(line, pos)) is not None:
                    m = r
                    level, time, location, fmt = _LETTER_LEVEL[m["lvl"]], m["ts"], m["loc"], "raycpp"
                    pid = pid if pid is not None else int(m["pid"])
            elif nxt in "IWEF":
                m = _GLOG.match(line, pos)
                if m:
                    level, time, location, fmt = _LETTER_LEVEL[m["lvl"]], m["ts"], m["loc"], "glog"
                    header = m.group(0)
            if m is None and nxt in _UPPER:
                m = _SGLANG_RANK_ONLY.match(line, pos)
                if m:
                    rank = m["ranks"]
                    fmt = "sglang"
                    header = "sglang"
        elif c in "DIWEC":
            m = _VLLM.match(line, pos)
            if m:
                level, time, location, fmt = m["lvl"], m["ts"], m["loc"], "vllm"
                header = m.group(0)
            else:
                m = _UVICORN.match(line, pos)
                if m:
                    level, fmt = m["lvl"], "uvicorn"
                    header = m["lvl"]
                elif (m := _LEVEL_FIRST.match(line, pos)) is not None:
                    level, time, fmt = m["lvl"], m["ts"].replace("T", " "), "pylogging"
                elif c in "IWEF":
                    m = _GLOG.match(line, pos)
                    if m:
                        level, time, location, fmt = _LETTER_LEVEL[m["lvl"]], m["ts"], m["loc"], "glog"
                        header = m.group(0)
        elif c in _DIGITS and fmt == "plain" and "M " in line[pos + 4:pos + 10] and (z := _ZEROLOG.match(line, pos)):
            m = z
            level, fmt = _ZEROLOG_LEVEL[m["lvl"]], "zerolog"
        elif c in _DIGITS and fmt == "plain" and "." in line[pos + 1:pos + 3]:
            m = _LLAMACPP.match(line, pos)
            if m:  # llama.cpp's "3.02.199.202 E message" (time since start, one-letter level)
                level, fmt = _LETTER_LEVEL[m["lvl"]], "llamacpp"
        elif c in _DIGITS and "|" in line[pos + 19:pos + 60]:
            m = _PIPES.match(line, pos)
            if m:  # a logger that takes over stderr writes each of its lines at ERROR: that is no level of the line's
                level = None if m["name"] == "stderr" else _PIPES_LEVEL.get(m["lvl"], m["lvl"])
                time = m["ts"]
                if fmt == "plain":
                    fmt = "pipes"
                if line.startswith("[rank", m.end()) and (r := _TORCH_RANK.match(line, m.end())):
                    torch_rank = "rank" + r["r"]  # what the logger took over was torch's "[rankN]: " line
                    rank = rank or torch_rank
                    m = r
        elif c == "T":
            m = _UVICORN.match(line, pos)
            if m:
                level, fmt, header = m["lvl"], "uvicorn", m["lvl"]
        if m is not None:
            pos = m.end()
        elif level is None and fmt in ("plain", "journal", "compose"):
            start = stamp if fmt == "plain" and time is not None else pos  # a collector's time may be the record's own
            c = line[start]
            if c in _DIGITS or (c == "[" and line[start + 1:start + 2] in _DIGITS):
                if (fmt == "plain" and not inner and (ts := _PLAIN_STAMP.match(line, start)) is not None
                        and ts.end() < n):  # a time before a header this parser knows: that header's record (once)
                    known = _parse(line[ts.end():], inner=True)
                    if known[0].format != "plain":
                        found, origin, header = known
                        found.raw, found.time = raw, found.time or ts["ts"]
                        return found, origin, header
                r = _PLAIN_RECORD.match(line, start)
                if r is None and (b := _BRACKETED_RECORD.match(line, start) or _THREAD_RECORD.match(line, start)):
                    time, location, pos, word = b["ts"], b["bloc"] or location, b.end(), b["blvl"].upper()
                    level, fmt = _PLAIN_LEVEL.get(word, word), "bracketed" if fmt == "plain" else fmt
                if r is not None:
                    time, level = r["ts"], r["lvl"] or r["blvl"]
                    level, location = _PLAIN_LEVEL.get(level, level), r["loc"] or r["bloc"] or location
                    rank = r["ranks"] or rank
                    fmt = "pylogging" if fmt == "plain" else fmt
                    pos = r.end()  # (no header: a traceback under one record is not repeated after its prefix)
                    if not inner and fmt == "pylogging" and _NESTED_START.match(line, pos) is not None:
                        # a launcher's logger relaying its child's lines ("2025-03-08 10:00:01,693 - launcher - INFO -
                        # ERROR 03-13 09:00:43 [core.py:330] ..."): the child's record, the relay's time where it has none
                        known = _parse(line[pos:], inner=True)
                        if known[0].format != "plain":
                            found, origin, header = known
                            found.raw, found.time = raw, found.time or time
                            return found, origin, header
                elif level is None and (w := _WINSTON.match(line, start)) is not None:
                    word = w["lvl"].upper()
                    time, level, pos = w["ts"], _PLAIN_LEVEL.get(word, word), w.end()
                    fmt = "pylogging" if fmt == "plain" else fmt
                elif level is None and (a := _LOGCAT.match(line, start) or _NGINX.match(line, start)) is not None:
                    key = a["word"] if a.re is _NGINX else a["lvl"] or a["lvl2"]
                    time, level, pos = a["ts"], _SEVERITY[key], a.end()
                    fmt = "pylogging" if fmt == "plain" else fmt

    message = line[pos:] if pos else line
    if level is None and "NCCL " in message:
        m = _NCCL.match(message)
        if m:
            level = _NCCL_LEVEL[m["lvl"]]
            pid = pid if pid is not None else int(m["pid"])
            if fmt == "plain":
                fmt = "nccl"
    if pid is None and jpid is not None:
        pid = int(jpid)
    parsed = LogLine(raw, message, time, level or wrapper_level, rank, process, pid, service, host, location, fmt)
    origin = (host, service, jpid, process, str(pid) if process else None, torch_rank)
    return parsed, origin, header


def parse_line(line: str) -> LogLine:
    """Parse one log line (no trailing newline needed). Never raises."""
    try:
        if not isinstance(line, str):
            line = bytes(line).decode("utf-8", "replace") if isinstance(line, bytes | bytearray) else str(line)
        return _parse(line)[0]
    except Exception:  # a parser fed by the journal must not take the caller down
        return LogLine(raw=str(line), message=str(line))


_TIME_FORMATS = (
    ("%Y-%m-%d %H:%M:%S.%f", False),
    ("%Y-%m-%d %H:%M:%S", False),
    ("%m-%d %H:%M:%S", True),
    ("%b %d %H:%M:%S.%f", True),
    ("%b %d %H:%M:%S", True),
    ("%a %b %d %H:%M:%S %Y", False),
    ("%m%d %H:%M:%S.%f", True),
    ("%Y%m%d %H:%M:%S.%f", False),  # glog from 0.7 on prints the year
)


# a month as a Chinese or Japanese locale writes it before the day ("5月 17 17:09:51", journalctl under zh_CN)
_CJK_MONTH = re.compile(r"^(\d{1,2})月\s+(\d{1,2}) ")
# ``%Y-%m-%d %H:%M:%S[.%f]`` and ``%m-%d %H:%M:%S`` (SGLang, vLLM, Python logging) read by hand
_NUMERIC_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?\Z|()(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)()\Z")


def parse_time(text: str | None, *, year: int | None = None) -> datetime | None:
    """Turn a ``LogLine.time`` into a datetime; formats without a year get ``year`` (default: this year).

    ISO timestamps with an offset come back timezone-aware; all others are naive.
    Returns None for text it does not recognise (including dmesg's seconds-since-boot).
    """
    if not text:
        return None
    text = text.strip()
    if "T" in text and text[:4].isdigit():
        try:
            return datetime.fromisoformat(text.replace(",", ".").replace("Z", "+00:00"))
        except ValueError:
            return None
    text = text.replace(",", ".")
    if "月" in text:  # a month in Chinese or Japanese ("5月 17 17:09:51"): as its number
        text = _CJK_MONTH.sub(lambda m: f"{m[1]:0>2}-{m[2]:0>2} ", text)
    if (m := _NUMERIC_TIME.match(text)) is not None:  # the common shapes, without strptime's cost
        y, mo, d, h, mi, sec, frac = m.groups()[:7] if m.group(1) else m.groups()[7:]
        try:
            return datetime(int(y) if y else year or datetime.now().year, int(mo), int(d), int(h), int(mi),
                            int(sec), int(frac[:6].ljust(6, "0")) if frac else 0)
        except ValueError:
            pass  # not a date (a month 13): the formats below decide, as they always did
    if len(text) > 4 and text[:3].isdigit() and text[3] == " ":  # torch's glog drops the month's zero
        text = "0" + text
    if "." in text and len(text.rsplit(".", 1)[1]) > 6:  # glog prints nanoseconds
        head, frac = text.rsplit(".", 1)
        text = head + "." + frac[:6]
    for fmt, needs_year in _TIME_FORMATS:
        try:
            if needs_year:
                y = year or datetime.now().year
                return datetime.strptime(f"{y} {text}", f"%Y {fmt}")
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


_SHAPE_LEVEL = re.compile(r"\b(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b")
_SHAPE_TOKEN = re.compile(r"\d+|\b(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b")


# a c10 native frame under a torch error ("frame #4: c10d::... (0x7f... in .../libtorch_cuda.so)"); the traceback
# reader's native backtrace pattern includes it
_C10_FRAME = re.compile(r"frame #\d+: \S.* \(0x[0-9a-fA-F]+ in ")
# pytest's short frame (its --tb=short and its "ERROR collecting" report: "tests/x.py:19: in <module>"): a line that is
# one is a frame (tracebacks.stack); at the end of a line, what stands before it is a prefix (LineShapes.learn)
PYTEST_FRAME = re.compile(r"([^\s:\]]+\.pyx?):(\d+): in ([\w<>.]+)\s*$")


class LineShapes:
    """Prefixes a log puts before every line that no known format explains, learned from the log.

    A frame line (``File "...", line N, in f``) is unmistakable; whatever stands before it on
    its line, once the known prefixes are gone, is this log's own prefix (a Python logging
    format, a collector's tag, a container name, a CI timestamp). ``learn`` turns that text into
    a pattern (digits and level words generalised) and ``strip`` removes it from any line of
    the same shape. At most ``limit`` shapes are kept, so the cost per line stays bounded.
    """

    def __init__(self, limit: int = 8) -> None:
        self.limit = limit
        self._keys: set[str] = set()
        self._patterns: list[re.Pattern[str]] = []

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def learn(self, message: str, *, outermost: bool = True) -> bool:
        """Learn the prefix before a frame line's ``File "`` (or c10's ``frame #N:``, or pytest's ``path:N: in f``); True
        when a new shape was added.

        ``outermost``: no known format stood before ``message`` on its line, so a known prefix
        inside it is the writer's own (its header and rank are read, not learned)."""
        i = message.find('File "')
        if i < 0 and (native := _C10_FRAME.search(message)) is not None:
            i = native.start()  # c10's native frame under a torch error ("frame #4: c10d::... (0x7f... in ...)")
        if i < 0 and ": in " in message and (short := PYTEST_FRAME.search(message)) is not None:
            i = short.start()  # pytest's short frame ("[2025-08-01T22:33:04Z] /usr/lib/.../__init__.py:90: in f")
        if i <= 0 or len(self._patterns) >= self.limit:
            return False
        prefix = message[:i].rstrip()
        if (not prefix.strip() or len(prefix) > 160 or "Traceback" in prefix or '"' in prefix
                or prefix.lstrip()[:1] == ">"):
            return False
        if outermost:
            prefix = _unknown_head(prefix, message[i:])
        return self.learn_head(prefix)

    def learn_head(self, prefix: str) -> bool:
        """Learn ``prefix`` (what stands before a line's own text) as a shape; True when a new one was added."""
        key = _SHAPE_TOKEN.sub("0", prefix.strip())
        if not key or key in self._keys or len(self._patterns) >= self.limit:
            return False
        self._keys.add(key)
        self._patterns.append(shape_pattern(prefix))
        return True

    def full(self) -> bool:
        return len(self._patterns) >= self.limit

    def strip(self, message: str) -> str | None:
        """The message without a learned prefix, or None when no learned shape starts it."""
        for pattern in self._patterns:
            m = pattern.match(message)
            if m is not None and m.end() > 0:
                return message[m.end():]
        return None


def shape_pattern(prefix: str) -> re.Pattern[str]:
    """The pattern a learned prefix becomes (:meth:`LineShapes.learn_head`): its digits and level words generalised,
    blanks around it optional."""
    parts: list[str] = []
    pos = 0
    body = prefix.strip()
    for m in _SHAPE_TOKEN.finditer(body):
        parts.append(re.escape(body[pos:m.start()]))
        parts.append(r"\d+" if m.group(0)[0].isdigit() else r"[A-Z]+")
        pos = m.end()
    parts.append(re.escape(body[pos:]))
    return re.compile(r"[ \t]*" + "".join(parts) + r"[ \t]?")


def _unknown_head(prefix: str, frame: str) -> str:
    """The part of a frame line's prefix that no known format reads: a CI timestamp before vLLM's
    ``(Worker_TP0 pid=N) ERROR ...`` is learned alone, so the known prefix after it is still parsed
    (its rank, its process) once the head is stripped. The whole prefix when no tail is known."""
    body = prefix.strip()
    for m in _HEAD_CUT.finditer(body):
        tail = body[m.end():]
        if tail[:1] in ("(", "[") or tail[:1].isdigit() or tail[:1].isupper():
            inner, origin, _ = _parse(tail + " " + frame)
            if inner.message.lstrip().startswith('File "') and (any(origin) or inner.format != "plain"):
                return body[:m.start()]
    return prefix


_HEAD_CUT = re.compile(r"[ \t]+")


# the characters of log text, most common first (from every log in tests/fixtures/): a search whose
# first characters are rare skips most places of a line at once (see any_part_of)
_COMMON_CHARS = ' enrit^laos/c1pd_0:um.2g,h3yvk-b5f46=9"(]w[xIS)7F8'


def any_part_of(words: Iterable[str], *, shortest: int = 3) -> re.Pattern[str]:
    """A quick pre-filter for :func:`any_of`: a regex that finds, for each word, the end of it
    (at least ``shortest`` characters) that begins with its rarest character. The part of a word
    begins less than ``max(len(w) for w in words)`` characters after the word.

    Every text that holds a word holds that part of it, so a text it does not match holds
    none of the words; a text it matches may hold none (the caller asks :func:`any_of`). Its
    first characters are rare ones, which is what makes the regex engine fast: it tries the
    trie only where a line holds one of them (two to three times fewer places in a log)."""
    return any_of(rare_parts(words, shortest=shortest))


def rare_parts(words: Iterable[str], *, shortest: int = 3) -> set[str]:
    """The parts :func:`any_part_of` searches for: of each word, its end that begins with its
    rarest character (at least ``shortest`` characters long)."""
    rank = {ch: i for i, ch in enumerate(_COMMON_CHARS)}
    parts = set()
    for word in words:
        last = len(word) - min(shortest, len(word))
        k = max(range(last + 1), key=lambda i: (rank.get(word[i], len(rank)), -i))
        parts.add(word[k:])
    return parts


def any_of_bytes(words: Iterable[str]) -> Any:
    """:func:`any_of` for UTF-8 bytes, compiled by RE2: one automaton run over the text, no per-place
    backtracking, about ten times faster than ``re`` over a log with a hundred words (bench in
    BENCHMARKS.md, issue 15 throughput).  RE2 is only given bytes: on ``str`` it would encode the whole
    text again on each search from a position.  The pattern has ``re``'s ``search(text, pos, endpos)``.
    """
    words = sorted(set(words))
    if not words:
        raise ValueError("any_of_bytes needs at least one word")
    return re2.compile(b"|".join(re2.escape(w.encode()) for w in words))


# lookarounds RE2 has no automaton for, and the characters where ``re``'s classes (``\s``) and RE2's differ on ASCII
_LOOKAROUND = re.compile(r"\(\?<?[=!]")
_ODD_SPACE = re.compile("[\x0b\x1c-\x1f]")


def finds(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    r"""Whether ``pattern`` occurs in a text, as ``pattern.search(text) is not None``, run by RE2 on ASCII texts: one
    automaton pass instead of a long alternation tried at every place (a phrase table's hundred alternatives over a
    failure's words).  On ASCII RE2's ``\b``, ``\w``, ``\d`` and ``\s`` are ``re``'s, but for a vertical tab and
    the separators ``\x1c``-``\x1f``: texts holding those, and any other text, go to ``re``.  The pattern's flags
    (``re.I``, ``re.S``, ``re.M``) go with it; a lookaround RE2 cannot run is dropped from its copy (which then finds
    more) and a find is confirmed by ``re``."""
    loose = _LOOKAROUND.search(pattern.pattern) is not None
    flags = "".join(f for flag, f in ((re.I, "i"), (re.S, "s"), (re.M, "m")) if pattern.flags & flag)
    fast = re2.compile((f"(?{flags})" if flags else "")
                       + (_without_lookarounds(pattern.pattern) if loose else pattern.pattern))

    def found(text: str) -> bool:
        if text.isascii() and _ODD_SPACE.search(text) is None:
            return fast.search(text) is not None and (not loose or pattern.search(text) is not None)
        return pattern.search(text) is not None
    return found


def _without_lookarounds(pattern: str) -> str:
    """``pattern`` with each lookaround group removed (its brackets balanced by counting, escapes and classes skipped;
    a class holding an escaped ``]`` is not read right -- none of the patterns given here has one)."""
    out, i = [], 0
    while (m := _LOOKAROUND.search(pattern, i)) is not None:
        out.append(pattern[i:m.start()])
        depth, j = 1, m.end()
        while depth:
            ch = pattern[j]
            if ch == "\\":
                j += 2
                continue
            if ch == "[":  # a class: its brackets are characters ("[)(]")
                j = pattern.index("]", j + 2 if pattern[j + 1] == "]" else j + 1)
            depth += (ch == "(") - (ch == ")")
            j += 1
        i = j
    out.append(pattern[i:])
    return "".join(out)


def any_of(words: Iterable[str]) -> re.Pattern[str]:
    """A regex that finds any of ``words`` (literal), built as a trie: one character test per
    branch instead of one alternative per word, about twice as fast as ``a|b|c`` on long lists.

    Only presence is meant: where one word is a prefix of another, the shorter one matches.
    """
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        if "" in node:
            return ""  # a word ends here: enough to match
        alts = [re.escape(ch) + build(sub) for ch, sub in sorted(node.items())]
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return re.compile(build(trie) if trie else r"(?!)")
