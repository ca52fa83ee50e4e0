"""Deployments: one server made of units or containers on several hosts (SGLang ``--nnodes``), handled as one thing.

``model`` (the TOML description), ``flags`` (what may differ between nodes, and the topology every
node's command line must state), ``control`` (the pre-flight read of every node's command line, status,
ordered start/stop, the judged start, variants on every node with restore per node), ``clock``
(host clock offsets over SSH) and ``journals`` (one merged frame, the first failing node and rank).
"""

from workbench.deployment.model import Deployment, Node, load_deployments

__all__ = ["Deployment", "Node", "load_deployments"]
