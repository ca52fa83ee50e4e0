"""The testbed: simulated GPU hosts with real systemd, journald and sshd.

Each host is a Debian bookworm root filesystem booted with ``systemd-nspawn -b``
inside its own network namespace, reached over SSH by an alias of the
testbed's own ``ssh_config``.  Where there is no root or no systemd-nspawn, the
``local`` backend provides hosts on this machine whose services are plain
processes.  See :mod:`workbench.testbed.testbed` for ``up``/``status``/``down``.
"""
