"""Launch the SGLang server (``python3 -m sglang.launch_server --model-path ...``)."""

from __future__ import annotations

import os
import sys

from sglang.srt.entrypoints.http_server import launch_server
from sglang.srt.server_args import prepare_server_args
from sglang.srt.utils import kill_process_tree


def main(argv: list[str] | None = None) -> None:
    server_args = prepare_server_args(sys.argv[1:] if argv is None else argv)
    try:
        launch_server(server_args)
    finally:
        kill_process_tree(os.getpid(), include_parent=False)


if __name__ == "__main__":
    main()
