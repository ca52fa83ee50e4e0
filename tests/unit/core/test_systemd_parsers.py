from pathlib import Path

from workbench.systemd import UnitStatus, parse_show, parse_unit_names, valid_unit

FIX = Path(__file__).parents[2] / "fixtures" / "systemd"


def test_show_of_three_units_including_a_missing_one():
    blocks = [UnitStatus.from_show(b) for b in parse_show((FIX / "show_three_units.txt").read_text())]
    base, ssh, missing = blocks
    assert base.unit == "sglang-k26-ddtree.service"
    assert base.sub_state == "auto-restart" and base.failed and not base.running
    assert base.exit_code == "exited" and base.exit_status == 1 and base.n_restarts > 0
    assert ssh.running and ssh.control_group == "/system.slice/ssh.service"
    assert missing.missing and missing.load_state == "not-found"
    assert "not-found" in missing.describe() and "exit" not in missing.describe()


def test_killed_by_signal_is_not_an_exit_code():
    st = UnitStatus.from_show({"Id": "x.service", "LoadState": "loaded", "ActiveState": "failed",
                               "SubState": "failed", "Result": "signal", "ExecMainCode": "2", "ExecMainStatus": "9"})
    assert st.exit_code == "killed" and "signal 9" in st.describe()


def test_list_units_names():
    names = parse_unit_names((FIX / "list_units.txt").read_text())
    assert "ssh.service" in names and all(valid_unit(n) for n in names)


def test_unit_name_validation():
    assert valid_unit("sglang-k26-ddtree.service")
    assert not valid_unit("x; rm -rf /.service")
    assert not valid_unit("noext")


def test_a_failure_of_systemds_exec_step_is_named_as_systemctl_names_it():
    """Captured on a testbed host (systemd 252): a unit whose ExecStart does not exist fails 203/EXEC."""
    (block,) = parse_show((FIX / "exec_203_show.txt").read_text())
    st = UnitStatus.from_show(block)
    assert st.exec_step == "EXEC" and st.exit_label == "203/EXEC" and "exit 203/EXEC" in st.describe()
    plain = UnitStatus.from_show({**block, "ExecMainStatus": "1"})
    assert plain.exec_step == "" and plain.exit_label == "1"
    killed = UnitStatus.from_show({**block, "ExecMainCode": "2", "ExecMainStatus": "219"})
    assert killed.exec_step == ""  # signal 219 is not systemd's CGROUP step
