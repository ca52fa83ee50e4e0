from sglang.srt.utils.common import (
    configure_logger,
    get_exception_traceback,
    kill_itself_when_parent_died,
    kill_process_tree,
    set_process_title,
    uvicorn_loggers,
)

__all__ = [
    "configure_logger",
    "get_exception_traceback",
    "kill_itself_when_parent_died",
    "kill_process_tree",
    "set_process_title",
    "uvicorn_loggers",
]
