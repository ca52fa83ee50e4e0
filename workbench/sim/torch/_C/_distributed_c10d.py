"""torch's C++ TCPStore (native: its frames never show in tracebacks)."""

from __future__ import annotations

from typing import Any

from simcore import distsim


class TCPStore:
    def __init__(
        self,
        host_name: str,
        port: int,
        world_size: int,
        is_master: bool,
        timeout: Any = None,
        multi_tenant: bool = False,
    ) -> None:
        import torch.distributed as dist

        setup = distsim.current()
        self.is_master = is_master
        self.setup = setup
        error = distsim.connect(setup, distsim.rank(), is_master)
        if error is not None:
            raise dist.DistNetworkError(error)
        if is_master:  # wait_for_workers=True, as torch's rendezvous asks of rank 0
            error = distsim.wait_for_workers(setup)
            if error is not None:
                raise dist.DistStoreError(error)
        else:
            distsim.wait_joined()
