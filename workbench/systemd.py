"""systemctl facts as pure command builders and parsers of their real output.

``systemctl show`` always exits 0, even for a unit that does not exist (it
prints ``LoadState=not-found``, ``ActiveState=inactive``, ``ExecMainStatus=0``),
so :class:`UnitStatus` reads ``LoadState`` first and never reports a missing
unit as "inactive, exit 0".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

STATUS_PROPERTIES = (
    "Id",
    "LoadState",
    "ActiveState",
    "SubState",
    "Result",
    "ExecMainStatus",
    "ExecMainCode",
    "ExecMainPID",
    "MainPID",
    "NRestarts",
    "InvocationID",
    "ControlGroup",
    "FragmentPath",
    "DropInPaths",
    "NeedDaemonReload",
    "UnitFileState",
    "Description",
    "Type",
    "ActiveEnterTimestampMonotonic",
    "ExecMainStartTimestampMonotonic",
    "ExecMainExitTimestampMonotonic",
    "StateChangeTimestampMonotonic",
)

# ExecMainCode is a CLD_* code from waitid(2).
CLD_EXITED, CLD_KILLED, CLD_DUMPED = 1, 2, 3
# The exit statuses systemd's own exec step uses when it fails before the command runs
# (systemd.exec(5) "Process Exit Codes"): "status=219/CGROUP" as ``systemctl status`` prints them.
EXEC_EXIT_STATUS = {
    200: "CHDIR", 201: "NICE", 202: "FDS", 203: "EXEC", 204: "MEMORY", 205: "LIMITS", 206: "OOM_ADJUST",
    207: "SIGNAL_MASK", 208: "STDIN", 209: "STDOUT", 210: "CHROOT", 211: "IOPRIO", 212: "TIMERSLACK",
    213: "SECUREBITS", 214: "SETSCHEDULER", 215: "CPUAFFINITY", 216: "GROUP", 217: "USER",
    218: "CAPABILITIES", 219: "CGROUP", 220: "SETSID", 221: "CONFIRM", 222: "STDERR", 224: "PAM",
    225: "NETWORK", 226: "NAMESPACE", 227: "NO_NEW_PRIVILEGES", 228: "SECCOMP", 229: "SELINUX_CONTEXT",
    230: "PERSONALITY", 231: "APPARMOR_PROFILE", 232: "ADDRESS_FAMILIES", 233: "RUNTIME_DIRECTORY",
    235: "CHOWN", 236: "SMACK_PROCESS_LABEL", 237: "KEYRING", 238: "STATE_DIRECTORY",
    239: "CACHE_DIRECTORY", 240: "LOGS_DIRECTORY", 241: "CONFIGURATION_DIRECTORY", 242: "NUMA_POLICY",
    243: "CREDENTIALS", 245: "BPF",
}
UNIT_NAME = re.compile(r"^[A-Za-z0-9:_.\\@-]+\.(service|socket|target|timer|scope|slice|mount|path)$")


def valid_unit(name: str) -> bool:
    """systemd unit names: [A-Za-z0-9:_.\\-@] plus a type suffix, at most 255 characters."""
    return len(name) <= 255 and bool(UNIT_NAME.match(name))


def normalize_unit(name: str) -> str:
    return name if "." in name.rsplit("@", 1)[-1] else f"{name}.service"


def show_argv(units: list[str], properties: tuple[str, ...] = STATUS_PROPERTIES) -> list[str]:
    return ["systemctl", "show", "--no-pager", f"--property={','.join(properties)}", "--", *units]


def parse_show(text: str) -> list[dict[str, str]]:
    """``systemctl show`` output: blocks of ``Key=Value`` separated by blank lines."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        key, sep, value = line.partition("=")
        if sep:
            current[key] = value
    if current:
        blocks.append(current)
    return blocks


@dataclass(frozen=True)
class UnitStatus:
    """The state of one unit as systemd reports it."""

    unit: str
    load_state: str
    active_state: str
    sub_state: str
    result: str
    exit_status: int | None
    exit_code: str  # "exited", "killed", "dumped" or ""
    main_pid: int
    n_restarts: int
    invocation_id: str
    control_group: str = ""
    fragment_path: str = ""
    drop_in_paths: tuple[str, ...] = ()
    need_daemon_reload: bool = False
    unit_file_state: str = ""
    description: str = ""
    type: str = ""
    state_change_usec: int = 0
    exec_step: str = ""  # the service manager's own step that failed before the command ran ("CGROUP")
    raw: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def exit_label(self) -> str:
        """The exit status as ``systemctl status`` names it: ``1``, ``219/CGROUP``."""
        return f"{self.exit_status}/{self.exec_step}" if self.exec_step else str(self.exit_status)

    @property
    def missing(self) -> bool:
        return self.load_state in ("not-found", "masked", "error", "bad-setting")

    @property
    def running(self) -> bool:
        return self.active_state in ("active", "reloading", "activating") and self.sub_state != "auto-restart"

    @property
    def failed(self) -> bool:
        return self.active_state == "failed" or self.sub_state == "auto-restart"

    def describe(self) -> str:
        if self.missing:
            return f"{self.unit}: {self.load_state}"
        text = f"{self.unit}: {self.active_state} ({self.sub_state})"
        if self.result and self.result != "success":
            text += f", result {self.result}"
        if self.exit_code == "killed":
            text += f", killed by signal {self.exit_status}"
        elif self.exit_status:
            text += f", exit {self.exit_label}"
        return text

    @classmethod
    def from_show(cls, props: dict[str, str]) -> UnitStatus:
        code = _int(props.get("ExecMainCode"))
        status = _int(props.get("ExecMainStatus"))
        exit_code = {CLD_EXITED: "exited", CLD_KILLED: "killed", CLD_DUMPED: "dumped"}.get(code or 0, "")
        return cls(
            unit=props.get("Id", ""),
            load_state=props.get("LoadState", ""),
            active_state=props.get("ActiveState", ""),
            sub_state=props.get("SubState", ""),
            result=props.get("Result", ""),
            exit_status=status if exit_code else None,
            exit_code=exit_code,
            main_pid=_int(props.get("MainPID")) or 0,
            n_restarts=_int(props.get("NRestarts")) or 0,
            invocation_id=props.get("InvocationID", ""),
            control_group=props.get("ControlGroup", ""),
            fragment_path=props.get("FragmentPath", ""),
            drop_in_paths=tuple(props.get("DropInPaths", "").split()),
            need_daemon_reload=props.get("NeedDaemonReload") == "yes",
            unit_file_state=props.get("UnitFileState", ""),
            description=props.get("Description", ""),
            type=props.get("Type", ""),
            state_change_usec=_int(props.get("StateChangeTimestampMonotonic")) or 0,
            exec_step=EXEC_EXIT_STATUS.get(status or 0, "") if exit_code == "exited" else "",
            raw=props,
        )


def _int(value: str | None) -> int | None:
    if value is None or value in ("", "[not set]"):
        return None
    try:
        return int(value)
    except ValueError:
        return None


def list_units_argv(pattern: str) -> list[str]:
    return ["systemctl", "list-units", "--all", "--plain", "--no-legend", "--no-pager", "--type=service", "--", pattern]


def list_unit_files_argv(pattern: str) -> list[str]:
    return ["systemctl", "list-unit-files", "--no-legend", "--no-pager", "--type=service", "--", pattern]


def parse_unit_names(text: str) -> list[str]:
    """First column of ``list-units``/``list-unit-files`` output (the ``●`` marker dropped)."""
    names = []
    for line in text.splitlines():
        parts = line.replace("●", " ").split()
        if parts and valid_unit(parts[0]):
            names.append(parts[0])
    return names


def parse_timestamp(value: str) -> datetime | None:
    """``Sun 2026-11-29 13:11:26 UTC`` (systemctl's format) into a datetime."""
    m = re.match(r"\w{3} (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})", value or "")
    return datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S") if m else None
