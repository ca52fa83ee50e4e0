"""Line prefixes the known formats of :mod:`workbench.logformats` do not cover: JSON log lines
(docker's json-file driver, Ray's log monitor) and the shapes a log's own prefixes take
(CI timestamps, collectors, logging formats), learned from its frame lines and stripped."""

from __future__ import annotations

import json
import re

from workbench.logformats import LineShapes, LogLine, Parsed, _parse, shape_pattern
from workbench.tracebacks.patterns import _GROUP_MARGIN, _LOGGING_HEAD, _QUOTE, level_word

_JSON_LEVELS = frozenset({"TRACE", "DEBUG", "INFO", "WARN", "WARNING", "ERROR"})
_CUT_JSON = re.compile(r'"(?:level|severity)":"(?P<lvl>\w+)"|"(?:log|message|msg)":"(?P<text>(?:[^"\\]|\\.)*)')


def _cut_json(line: str) -> str:
    """The text of a JSON log record cut before its end (its level before it, as :func:`json_log` gives it), or the
    line as it is when it holds no text field."""
    level = text = None
    for m in _CUT_JSON.finditer(line):
        level, text = m["lvl"] or level, m["text"] if m["text"] is not None else text
    if text is None:
        return line
    head = text.split("\\n", 1)[0]
    try:
        head = json.loads(f'"{head.rstrip(chr(92))}"')
    except ValueError:
        pass
    return _with_level(level, head)


def _with_level(level: object, text: str) -> str:
    """A JSON record's text as one line of log: its first line, behind the record's level when it has one."""
    head = text.split("\n", 1)[0].rstrip("\r")
    level = level.upper() if isinstance(level, str) else level  # zap and logrus write it in lower case
    return f"{level}: {head}" if level in _JSON_LEVELS else head


def json_log(line: str) -> str:
    """The text of one line of a JSON log (docker's json-file driver, Ray's log monitor, Go's zap and logrus)."""
    try:
        record = json.loads(line)
    except ValueError:  # a record cut by the window or the paste: its text as far as it goes
        return _cut_json(line)
    if isinstance(record, dict):
        text = record.get("log", record.get("message"))
        if isinstance(text, str):
            return text.rstrip("\r\n")
        fields, level = record.get("fields"), record.get("level", record.get("severity"))
        if isinstance(text := record.get("msg"), str):  # zap's and logrus' JSON ({"level":"error","msg":"..."})
            return _with_level(level, text)
        if isinstance(fields, dict) and isinstance(text := fields.get("message"), str):
            # Rust's tracing-subscriber JSON (text-generation-inference's launcher: {"timestamp":...,"level":"ERROR",
            # "fields":{"message":"Shard complete standard error output:\n\n..."}}): its level, its message's first line
            return _with_level(level, text)
    return line


# pytest's report of a failed test writes the exception's lines behind an "E" margin aligned to the failing source line
# ("E       AssertionError: Tensor-likes are not close!", "E" alone for a blank line of the message)
_PYTEST_MARGIN = re.compile(r"E(?: {3,}(?=\S)| *\r?$)")


def unquote(line: str) -> str:
    """An indented line without the Markdown quote (``> ``) or the exception group's margin (PEP 654's
    ``  | `` before each line, ``  +-+---- 1 ----`` between sub-exceptions) that a paste put before it, a tab-indented
    record without its tabs when what follows reads as a prefixed record, or a line of pytest's report without its "E"
    margin."""
    if line[:1] == "E":
        margin = _PYTEST_MARGIN.match(line)
        return line if margin is None else line[margin.end():]
    stripped = line.lstrip(" \t")
    if stripped.startswith(">"):
        return _QUOTE.sub("", line, count=1)
    if stripped[:1] in "|+" and (margin := _GROUP_MARGIN.match(line)) is not None:
        return line[margin.end():]
    if stripped[:1].isdigit() and line[:1] == "\t" and _parse(stripped)[0].format != "plain":
        return stripped  # a viewer that indents every record by tabs (LM Studio's log: "\t\t0.00.951.571 E llama_...")
    return line


_MARGINS = frozenset(" \t>|+E")  # what a quote's, an exception group's or pytest's "E" margin begins with


def unquote_message(msg: str) -> str:
    """:func:`unquote` for the message behind a known prefix (an exception group's margin behind a container's
    prefix: "openwebui-1  |   | ExceptionGroup: ..."); the same object when there is nothing to remove."""
    return unquote(msg) if msg[:1] in _MARGINS else msg


# a progress bar (tqdm's) whose carriage return the capture lost, glued before the next record ("DeepGEMM warmup:
# 30%|████▌     | 4965/16384 [00:00<00:00, 24891.75it/s][2026-05-20 02:29:31 TP3] Scheduler hit an exception: ...")
_GLUED_BAR = re.compile(r"[^|]{0,120}?\d+%\|[^|]{0,200}\|[^\[|]{0,40}\[[^\]]{0,60}\]")


def unglue(line: str) -> tuple[str, Parsed | None]:
    """A log record a Markdown backtick or fence (``line`` starts with one) or a progress bar was glued before
    ("`Nov 13 01:50:23 host vllm[62501]: ...", "```(EngineCore_DP0 pid=7) ERROR ...", "...| 4965/16384 [00:00<00:00,
    24891.75it/s][2026-05-20 02:29:31 TP3] ..."): the record without it and its parse, when what follows reads
    as a prefixed record; else the line as it is and None (a quoted exception line keeps its quote)."""
    bar = _GLUED_BAR.match(line) if line[:1] != "`" else None
    rest = line[bar.end():] if bar is not None else line.lstrip("`")
    if (bar is None and len(line) - len(rest) > 3) or not rest[:1].strip():
        return line, None
    parsed = _parse(rest)
    return (rest, parsed) if parsed[0].format != "plain" else (line, None)


def reparse(outer: LogLine, origin: tuple[str | None, ...], header: str | None,
             rest: str) -> Parsed:
    """A line whose learned prefix was stripped: read the known prefixes of what remains."""
    inner, inner_origin, inner_header = _parse(rest)
    if any(inner_origin):
        origin = tuple(a or b for a, b in zip(origin, inner_origin, strict=True))
    merged = LogLine(outer.raw, inner.message, inner.time or outer.time, inner.level or outer.level,
                     inner.rank or outer.rank, inner.process or outer.process, inner.pid or outer.pid,
                     outer.service or inner.service, outer.host or inner.host, inner.location or outer.location,
                     inner.format if inner.format != "plain" else outer.format)
    if merged.level is None:
        word = level_word(outer.message, max(0, len(outer.message) - len(rest)))
        if word is not None:
            merged.level = "ERROR" if word.startswith(("E", "[E")) else word
    return merged, origin, inner_header if inner_header is not None else header


def indented_record(msg: str) -> bool:
    """A line whose whole record was indented (a paste quoted by indenting it, a logger that nests
    its child's output): its first text, at most 8 blanks in, is a timestamp, not code or a frame."""
    return _INDENTED_STAMP.match(msg) is not None


def indented_prefixed(msg: str) -> bool:
    """An indented line that may still carry the log's own prefix: a whole record indented (:func:`indented_record`),
    or a bracketed tag after the margin (a paste that indented every line, "  [S] (APIServer pid=9)   File ...", a
    fence's or a list item's margin before its own prefix), or a number (Slurm's srun --label puts the task's number,
    right-aligned, before each line of its output: " 0:   File ..."), or a level word and its time (vLLM's records,
    every one indented by the paste: "    ERROR 01-08 16:18:04 engine.py:366]   File ...")."""
    return indented_record(msg) or msg.lstrip()[:1] in "[(0123456789" or _INDENTED_LEVEL.match(msg) is not None


_INDENTED_STAMP = re.compile(r"[ \t]{1,8}\d{4}-\d\d-\d\d[T ]\d\d:\d\d")
_INDENTED_LEVEL = re.compile(r"[ \t]{1,8}(?:ERROR|WARNING|INFO|DEBUG|CRITICAL) \d\d-\d\d ")


def learn_shapes(shapes: LineShapes, text: str, *, samples: int = 64) -> None:
    """Learn the log's own line prefixes from its first frame lines, before the pass that reads it,
    so the lines above the first frame (the header with its rank) are read with them too; then from the
    records a known format reads behind a head no format knows (:func:`_learn_heads`)."""
    for anchor in ('File "', "frame #"):  # a Python frame line, or c10's native frame under a torch error
        _learn_from(shapes, text, anchor, samples)
    _learn_heads(shapes, text)


# where a line's unknown head may end: a run of blanks, or the colon of a tag glued to its text ("[1,0]<stderr>:ERROR")
_HEAD_END = re.compile(r"[ \t]+|(?<=[>:\]])(?=[A-Z(\[])")
_HEAD_LINES = 400  # lines of the log's head read for heads
_HEAD_MIN = 2  # records behind one head shape before it is learned
# what begins a failure's own line: an exception's type and its colon, a traceback's header, a C++ exception's report
_FAILURE_START = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failure): |"
                            r"Traceback \(most recent call last\)|terminate called after|  what\(\): ")
# the formats whose record is unmistakable behind a head (a bare "ERROR: " is uvicorn's only at a line's start)
_RECORDS = frozenset({"vllm", "sglang", "glog", "trtllm", "raycpp", "pylogging", "tracing", "bracketed", "pipes",
                      "llamacpp", "oneccl", "ucx"})


def _learn_heads(shapes: LineShapes, text: str) -> None:
    """Learn a head that a tool put before every line of the log, learned where known records follow it.

    Slurm's ``srun --label`` ("0: "), pdsh's and clush's host ("gpu-node-3: "), mpirun's ``--tag-output``
    ("[1,0]<stdout>:"), a multiplexer's tag ("[node-1] "): a line no format reads, where cutting such a head
    off at a blank (within its first 120 characters) leaves a record a known format reads (vLLM's, SGLang's,
    glog's...). The same head shape (digits and level words generalised) behind at least two records of the
    log's first lines, three in four of them, is learned as a prefix, so its frames, exception lines and markers
    are read too; so is a head before a record, an exception line or a traceback's header that begins nine in ten
    of the lines read (a short window of a tagged log)."""
    if shapes.full():
        return
    seen: dict[str, tuple[int, str]] = {}
    lines: list[str] = []  # the messages read (no format known before them)
    end = 0
    for _ in range(_HEAD_LINES):
        if end >= len(text):
            break
        nl = text.find("\n", end)
        nl = len(text) if nl < 0 else nl
        line, end = text[end:nl], nl + 1
        if len(line) < 8 or (line[0] in " \t" and not line.lstrip(" \t")[:1].isdigit()):
            continue  # (srun right-aligns its numbers: " 3: ")
        parsed, origin, _ = _parse(line)
        if parsed.format != "plain" or any(origin):
            continue
        msg = parsed.message
        for cut in _HEAD_END.finditer(msg, 1, 120):
            tail = msg[cut.end():]
            if not tail or tail[0] in " \t":
                continue
            record = _parse(tail)[0].format in _RECORDS
            if record or _FAILURE_START.match(tail) is not None:
                head = msg[:cut.start()]
                if len(head) > 64 or head.count(" ") > 2 or "%" in head or not any(c.isalnum() for c in head):
                    break  # a sentence, a progress bar or a border before a record: no tag
                key = head.strip()
                count, _first = seen.get(key, (0, head))
                seen[key] = (count + record, head)
                break
        lines.append(msg)
    by_shape: dict[str, tuple[int, str]] = {}
    for count, head in seen.values():
        shape = re.sub(r"\d+", "0", head.strip())
        total, first = by_shape.get(shape, (0, head))
        by_shape[shape] = (total + count, first)
    # one shape behind most of them (srun's "0: " and "1: " are one): a log whose records follow several heads
    # (stern's pod and container names) is left to its frames; or, behind a record, an exception line or a
    # traceback's header, a head that begins nine in ten of the lines read (a short window of a tagged log)
    records = sum(t for t, _ in by_shape.values())
    for total, head in by_shape.values():
        if shapes.full():
            break
        if total >= _HEAD_MIN and total * 4 >= records * 3:
            shapes.learn_head(head)
        elif len(lines) >= _HEAD_MIN:
            pattern = shape_pattern(head)
            if sum(pattern.match(m) is not None for m in lines) * 10 >= len(lines) * 9:
                shapes.learn_head(head)


def _learn_from(shapes: LineShapes, text: str, anchor: str, samples: int) -> None:
    pos = 0
    for _ in range(samples):
        if shapes.full():
            return
        i = text.find(anchor, pos)
        if i < 0:
            return
        start = text.rfind("\n", 0, i) + 1
        end = text.find("\n", i)
        end = len(text) if end < 0 else end
        line = text[start:end]
        if line[:2] == '{"':
            line = json_log(line)
        parsed, origin, _ = _parse(line)
        msg = parsed.message
        if msg and (msg[0] not in " \t" or indented_prefixed(msg)):
            shapes.learn(msg, outermost=parsed.format == "plain" and not any(origin))
        pos = end + 1


# a process's name in parentheses with no pid after it ("(APIServer) RuntimeError: ..."): vLLM's record tag as a
# wrapper or the user left it; a capitalised name, so a shell prompt's "(base) user@host" is not one
# the end of vLLM's record prefix, its source location, where a window began inside the prefix ("[multiproc_executor.py:
# 492] ValueError: Free memory on device ...")
_LOCATION_TAIL = re.compile(r"\[[\w.-]+\.py:\d+\] +(?=[A-Za-z_])")
_PROC_TAG = re.compile(r"\([A-Z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*\) +(?=[A-Za-z_])")


_RAISED_THEN_LINE = re.compile(r"raise ([\w.]+)\(\s*(?=\1: )")
# pytest's short summary of a test that failed or errored, its exception after the test's id ("FAILED tests/x.py::
# test_gsm8k[DeepSeek-R1-TP] - AssertionError: GSM8K metric too low: 0.0000 < 0.8700")
_PYTEST_SUMMARY = re.compile(r"(?:FAILED|ERROR) [^\s:]+::.*? - (?=[A-Za-z_][\w.]*(?:Error|Exception)\b)")


def after_label(msg: str) -> str:
    """The text between the ``**`` of a line a Markdown paste set in bold, after a label written with a full-width
    colon near the start of a line ("【BUG】：", "报错："), after a process tag with no pid ("(APIServer) "), after
    Python logging's head of a record at an error level, after SGLang's "hit an exception: ", after pytest's summary of
    a failed test ("FAILED tests/x.py::test_y - "), or after a raise whose
    exception line a paste glued to it ("raise RuntimeError( RuntimeError: ..."), where a pasted or logged exception line
    often follows; '' when there is no such label."""
    if msg[:2] == "**" and msg.rstrip().endswith("**"):  # a line a Markdown paste set in bold (and italic: "**_X: y_**")
        inner = msg.strip()[2:-2].strip()
        return inner[1:-1].strip() if len(inner) > 2 and inner[0] in "_*" and inner[-1] == inner[0] else inner
    pos = msg.find("\uff1a", 0, 24)
    if pos >= 0:
        return msg[pos + 1:].lstrip()
    if msg[:1].isdigit():  # lmdeploy logs an exception it caught as one record ("... - ERROR - RuntimeError: ...")
        head = _LOGGING_HEAD.match(msg)
        return msg[head.end():] if head is not None and head.group(1) in ("ERROR", "CRITICAL") else ""
    if msg[:1] == "[" and (loc := _LOCATION_TAIL.match(msg)) is not None:  # a window begun inside vLLM's prefix
        return msg[loc.end():]
    if "hit an exception: " in msg[:40]:  # SGLang's "Scheduler hit an exception: X: ..." when the stack is not printed
        return msg.split("hit an exception: ", 1)[1]
    if (msg[:7] == "FAILED " or msg[:6] == "ERROR ") and (test := _PYTEST_SUMMARY.match(msg)) is not None:
        return msg[test.end():]
    if msg[:6] == "raise " and (glued := _RAISED_THEN_LINE.match(msg)) is not None:
        return msg[glued.end():]  # the raise's code line and the exception line, their newline lost ("raise X( X: ...")
    tag = _PROC_TAG.match(msg) if msg[:1] == "(" else None
    return msg[tag.end():] if tag is not None else ""
