"""Bad input is refused before anything touches a host: the same checks in the API, the CLI and
runbook parameters (issue 14, item 7)."""

import argparse
import math

import pytest

from workbench.cli import services as cli_services
from workbench.errors import ConfigError
from workbench.inputs import check_edits, check_timeout, loads_json
from workbench.runbooks.ab import ABParams
from workbench.runbooks.bisect import BisectParams
from workbench.runbooks.factorial import FactorialParams
from workbench.runbooks.params import validate
from workbench.session import HostSession
from workbench.variants import normalize_edits


@pytest.mark.parametrize("bad", [-5, 0, 0.0, math.nan, math.inf, -math.inf, "60", True, None])
def test_timeouts_must_be_finite_and_positive(bad):
    with pytest.raises(ConfigError, match="timeout"):
        check_timeout(bad)


def test_good_timeouts_pass_as_floats():
    assert check_timeout(60) == 60.0 and check_timeout(0.5) == 0.5


@pytest.mark.parametrize("edits", [{"ep-size": "8"}, {"--a b": True}, {"--a=b": "1"}, {"-": "1"}, {"--": True},
                                   {"-5": "1"}, {"--x\n": "1"}, {1: "8"}, {"--x": {"a": 1}}, {"--x": [True]},
                                   {"--x": [None]}, {"--x": math.nan}, [("--x",)], [("--x", 1), ("--x", 2)]])
def test_bad_edits_are_refused(edits):
    with pytest.raises(ConfigError):
        check_edits(edits)


def test_values_as_the_python_api_takes_them():
    got = check_edits({"--ep-size": 8, "--mem-fraction-static": 0.8, "--enable-nccl-nvls": True,
                       "--disable-cuda-graph": None, "--trust-remote-code": False, "--cuda-graph-bs": [1, "2"]})
    assert got == (("--ep-size", "8"), ("--mem-fraction-static", "0.8"), ("--enable-nccl-nvls", True),
                   ("--disable-cuda-graph", None), ("--trust-remote-code", None), ("--cuda-graph-bs", ("1", "2")))
    assert normalize_edits({"--ep-size": 8}) == normalize_edits({"--ep-size": "8"})


def test_empty_edit_sets_are_refused_unless_allowed():
    with pytest.raises(ConfigError, match="no flag edits"):
        check_edits({})
    assert check_edits({}, allow_empty=True) == ()


def test_json_duplicate_keys_and_nan_are_refused():
    with pytest.raises(ConfigError, match="duplicate key '--x'"):
        loads_json('{"--x": 1, "--y": 2, "--x": 3}', "edits")
    with pytest.raises(ConfigError, match="NaN"):
        loads_json('{"--x": NaN}', "edits")
    with pytest.raises(ConfigError, match="not valid JSON"):
        loads_json("{nope", "edits")
    assert loads_json('{"--ep-size": 8}') == {"--ep-size": 8}


# The parameters each needs besides the edits (required: no default deployment).
NEEDED: dict[type, dict[str, object]] = {BisectParams: {"host": "gpu-a", "base_unit": "u.service"}, FactorialParams: {"hosts": ["gpu-a"], "base_unit": "u.service"},
                                         ABParams: {"hosts": ["gpu-a"], "base_unit": "u.service"}}


@pytest.mark.parametrize("model, field", [(BisectParams, "edits"), (FactorialParams, "factors"), (ABParams, "edits")])
@pytest.mark.parametrize("text, message", [
    ('{"ep-size": "8"}', "not a flag"),
    ('{"--a b": true}', "not a flag"),
    ("{}", "no flag edits"),
    ('{"--x": 1, "--x": 2}', "duplicate key"),
    ('{"--x": {"y": 1}}', "edit for --x: value must be"),
])
def test_runbook_edits_are_checked_like_the_api(model, field, text, message):
    with pytest.raises(ConfigError, match=message):
        validate(model, {**NEEDED[model], field: text})


@pytest.mark.parametrize("model, field", [(BisectParams, "edits"), (FactorialParams, "factors")])
def test_runbook_edits_accept_numbers_and_lists_in_json(model, field):
    p = validate(model, {**NEEDED[model], field: '{"--ep-size": 8, "--cuda-graph-bs": [1, 2], "--enable-nccl-nvls": true}'})
    assert getattr(p, field) == {"--ep-size": 8, "--cuda-graph-bs": [1, 2], "--enable-nccl-nvls": True}


@pytest.mark.parametrize("value", [-5, 0, math.nan, "nan", math.inf, "-5"])
def test_runbook_timeouts_must_be_finite_and_positive(value):
    with pytest.raises(ConfigError, match="start_timeout"):
        validate(BisectParams, {**NEEDED[BisectParams], "edits": {"--ep-size": "8"}, "start_timeout": value})


class _Untouchable:
    """A host that fails the test if anything reaches it."""

    name = "never"

    def __getattr__(self, attr):
        raise AssertionError(f"the host was touched ({attr}) before the input was checked")


def _variant_args(*argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--ssh-config", default=None)
    sub = ap.add_subparsers()
    cli_services.register(sub)
    return ap.parse_args(["variant", "gpu-x", "base.service", *argv])


@pytest.mark.parametrize("argv, message", [
    (["--set", "ep-size=8", "--timeout", "-5"], "--timeout"),
    (["--set", "ep-size=8", "--timeout", "0"], "--timeout"),
    (["--set", "ep-size=8", "--timeout", "nan"], "--timeout"),
    (["--set", "ep-size=8", "--timeout", "inf"], "--timeout"),
    ([], "no flag edits"),
    (["--set", "a b=1"], "not a flag"),
    (["--set", "x=1", "--set", "x=2"], "edited twice"),
])
def test_cli_variant_refuses_bad_input_before_connecting(monkeypatch, argv, message):
    args = _variant_args(*argv)
    monkeypatch.setattr(cli_services, "_host", lambda a: _Untouchable())
    with pytest.raises(ConfigError, match=message):
        args.func(args)


def test_session_api_refuses_bad_input_before_the_host():
    with pytest.raises(ConfigError, match="ready_timeout"):
        HostSession(_Untouchable(), services=_Untouchable(), ready_timeout=math.nan)  # type: ignore[arg-type]
    s = HostSession.__new__(HostSession)  # no lock taken: the checks come first
    s.host = s.svc = _Untouchable()  # type: ignore[assignment]
    for edits, timeout in (({"ep-size": "8"}, None), ({"--ep-size": "8"}, -5.0), ({"--ep-size": "8"}, math.nan)):
        with pytest.raises(ConfigError):
            s.run_variant("base.service", edits, timeout=timeout)
