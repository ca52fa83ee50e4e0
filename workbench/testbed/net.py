"""Network plumbing of the testbed as pure argv builders (``ip`` from iproute2).

Layout: one bridge on the machine owns the testbed's subnet (``.1``); each host
has a network namespace joined to the bridge by a veth pair, with ``.11``,
``.12``, ... on its ``eth0``.  Every name carries the ``wb`` prefix so a crashed
run's leftovers can be found and removed.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

PREFIX = "wb"
BRIDGE = "wbbr0"
DEFAULT_SUBNET = "10.213.0.0/24"
FIRST_HOST = 11


@dataclass(frozen=True)
class HostNet:
    name: str  # host name, e.g. gpu-a
    netns: str  # e.g. wb-gpu-a
    veth: str  # machine side of the pair (<= 15 chars)
    peer: str  # temporary name of the far side before it moves into the namespace
    address: str  # e.g. 10.213.0.11
    prefixlen: int
    gateway: str


def host_net(name: str, index: int, subnet: str = DEFAULT_SUBNET) -> HostNet:
    net = ipaddress.ip_network(subnet)
    if index + FIRST_HOST >= net.num_addresses - 1:
        raise ValueError(f"subnet {subnet} too small for {index + 1} hosts")
    short = f"{PREFIX}{index}"
    return HostNet(
        name=name,
        netns=f"{PREFIX}-{name}",
        veth=f"{short}h",
        peer=f"{short}c",
        address=str(net.network_address + FIRST_HOST + index),
        prefixlen=net.prefixlen,
        gateway=str(net.network_address + 1),
    )


def bridge_up(subnet: str = DEFAULT_SUBNET) -> list[list[str]]:
    net = ipaddress.ip_network(subnet)
    return [
        ["ip", "link", "add", BRIDGE, "type", "bridge"],
        ["ip", "addr", "add", f"{net.network_address + 1}/{net.prefixlen}", "dev", BRIDGE],
        ["ip", "link", "set", BRIDGE, "up"],
    ]


def bridge_down() -> list[list[str]]:
    return [["ip", "link", "del", BRIDGE]]


def host_up(h: HostNet) -> list[list[str]]:
    inside = ["ip", "netns", "exec", h.netns]
    return [
        ["ip", "netns", "add", h.netns],
        ["ip", "link", "add", h.veth, "type", "veth", "peer", "name", h.peer],
        ["ip", "link", "set", h.veth, "master", BRIDGE],
        ["ip", "link", "set", h.veth, "up"],
        ["ip", "link", "set", h.peer, "netns", h.netns],
        [*inside, "ip", "link", "set", h.peer, "name", "eth0"],
        [*inside, "ip", "addr", "add", f"{h.address}/{h.prefixlen}", "dev", "eth0"],
        [*inside, "ip", "link", "set", "eth0", "up"],
        [*inside, "ip", "link", "set", "lo", "up"],
        [*inside, "ip", "route", "add", "default", "via", h.gateway],
    ]


def host_down(h: HostNet) -> list[list[str]]:
    # Deleting the namespace destroys the far end of the pair, and with it the near end.
    return [["ip", "netns", "del", h.netns], ["ip", "link", "del", h.veth]]
