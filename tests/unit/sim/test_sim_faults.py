"""Fault files: validation errors, condition semantics and strike selection (pure)."""

from __future__ import annotations

import tomllib

import pytest

from workbench.sim.simcore.faults import (
    PACKAGED_FAULT_FILE,
    FaultFileError,
    FlagInfo,
    FlagView,
    parse_faults,
    select_strike,
)

OPTIONS = {
    "--tp-size": FlagInfo("tp_size", "int"),
    "--tp": FlagInfo("tp_size", "int"),
    "--tensor-parallel-size": FlagInfo("tp_size", "int"),
    "--ep-size": FlagInfo("ep_size", "int"),
    "--ep": FlagInfo("ep_size", "int"),
    "--enable-nccl-nvls": FlagInfo("enable_nccl_nvls", "bool"),
    "--enable-flashinfer-allreduce-fusion": FlagInfo("enable_flashinfer_allreduce_fusion", "bool"),
    "--speculative-algorithm": FlagInfo("speculative_algorithm", "str"),
    "--mem-fraction-static": FlagInfo("mem_fraction_static", "float"),
}


def view(given: dict[str, object]) -> FlagView:
    values = {
        "tp_size": 1,
        "ep_size": 1,
        "enable_nccl_nvls": False,
        "enable_flashinfer_allreduce_fusion": False,
        "speculative_algorithm": None,
        "mem_fraction_static": None,
        **given,
    }
    return FlagView(OPTIONS, values, frozenset(given))


def parse(text: str):
    return parse_faults(tomllib.loads(text), "f.toml", OPTIONS)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("version = 2", "f.toml: version: unsupported version 2"),
        ("nope = 1", "f.toml: nope: unknown top-level key"),
        (
            '[[fault]]\nphase = "boot"\nkind = "cublas"',
            "fault[0] (fault-0).phase: must be one of nccl_init",
        ),
        (
            '[[fault]]\nphase = "serving"\nkind = "segv"',
            "fault[0] (fault-0).kind: must be one of cublas",
        ),
        (
            '[[fault]]\nphase = "nccl_init"\nkind = "cublas"',
            "fault[0] (fault-0).phase: kind 'cublas' cannot strike in 'nccl_init'",
        ),
        (
            '[[fault]]\nphase = "serving"\nkind = "nccl"\nwhen.all_of = ["--ep-size=x"]',
            "when.all_of: '--ep-size=x': 'x' is not a valid int for --ep-size",
        ),
        (
            '[[fault]]\nphase = "serving"\nkind = "nccl"\nwhen.any_of = ["--tpp=1"]',
            "when.any_of: '--tpp=1': unknown flag '--tpp'",
        ),
        ('[[fault]]\nphase = "serving"\nkind = "nccl"\nranks = []', "ranks: a list must hold"),
        (
            '[[fault]]\nphase = "warmup"\nkind = "nccl"\nafter_seconds = 3',
            "after_seconds: only faults in phase 'serving' take triggers",
        ),
        (
            '[[fault]]\nphase = "serving"\nkind = "nccl"\nparams.error = "bad"',
            "params.error: must be one of",
        ),
        (
            '[[fault]]\nphase = "serving"\nkind = "nccl"\nextra = 1',
            "fault[0] (fault-0).extra: unknown key",
        ),
        (
            '[[fault]]\nid="a"\nphase = "serving"\nkind = "nccl"\n[[fault]]\nid="a"\nphase = "serving"\n'
            'kind = "nccl"',
            "fault[1].id: duplicate id 'a'",
        ),
    ],
)
def test_invalid_files_name_file_key_and_reason(text, error):
    with pytest.raises(FaultFileError) as e:
        parse(text)
    assert error in str(e.value)


def test_condition_semantics_aliases_and_values():
    (f,) = parse(
        '[[fault]]\nphase = "serving"\nkind = "nccl"\n'
        'when.all_of = ["--tp=8", "--enable-nccl-nvls"]\n'
        'when.any_of = ["--ep-size=8", "--speculative-algorithm=DDTREE"]\n'
        'when.none_of = ["--enable-flashinfer-allreduce-fusion"]'
    )
    base = {"tp_size": 8, "enable_nccl_nvls": True}
    assert f.condition_holds(view({**base, "ep_size": 8}))
    assert f.condition_holds(view({**base, "speculative_algorithm": "DDTREE"}))
    assert not f.condition_holds(view({**base, "speculative_algorithm": "DFLASH"}))
    assert not f.condition_holds(
        view({**base, "ep_size": 8, "enable_flashinfer_allreduce_fusion": True})
    )
    assert not f.condition_holds(view({"tp_size": 8, "ep_size": 8}))


def test_valued_flag_without_value_means_given_and_defaults_match_values():
    (f,) = parse(
        '[[fault]]\nphase = "serving"\nkind = "nccl"\n'
        'when.all_of = ["--mem-fraction-static", "--ep-size=1"]'
    )
    assert not f.condition_holds(view({}))
    assert f.condition_holds(view({"mem_fraction_static": 0.8}))


def test_selection_earliest_phase_then_file_order_and_ranks():
    faults = parse(
        '[[fault]]\nid="late"\nphase = "serving"\nkind = "nccl"\n'
        '[[fault]]\nid="a"\nphase = "cuda_graph_capture"\nkind = "cublas"\nranks=[2, 9]\n'
        '[[fault]]\nid="b"\nphase = "cuda_graph_capture"\nkind = "nonetype"\n'
        '[[fault]]\nid="c"\nphase = "warmup"\nkind = "nonetype"\nranks={count=3}\n'
    )
    s = select_strike(faults, view({}), 8, seed=0)
    assert s is not None and (s.fault.id, s.ranks) == ("a", (2,))
    s = select_strike(faults, view({}), 8, seed=0, graphs_enabled=False)
    assert s is not None and s.fault.id == "c" and len(s.ranks) == 3
    assert s.ranks == select_strike(faults, view({}), 8, 0, graphs_enabled=False).ranks
    s = select_strike(faults, view({}), 8, 0, warmup_enabled=False, graphs_enabled=False)
    assert s is not None and s.fault.id == "late" and s.ranks == tuple(range(8))
    assert select_strike(faults[1:2], view({}), 2, 0) is None  # rank 2 absent from a TP2 world


def test_probability_draw_is_deterministic_per_seed():
    faults = parse('[[fault]]\nphase = "serving"\nkind = "nccl"\nprobability = 0.5')
    draws = [select_strike(faults, view({}), 1, seed) is not None for seed in range(40)]
    assert draws == [select_strike(faults, view({}), 1, seed) is not None for seed in range(40)]
    assert 5 < sum(draws) < 35


def test_packaged_defaults_reproduce_the_seeds():
    with open(PACKAGED_FAULT_FILE, "rb") as fh:
        faults = parse_faults(tomllib.load(fh), PACKAGED_FAULT_FILE, OPTIONS)
    seed_tp8 = {"tp_size": 8, "speculative_algorithm": "DDTREE"}

    def strike(extra):
        return select_strike(faults, view({**seed_tp8, **extra}), 8, 0)

    assert strike({}) is None
    assert strike({"enable_nccl_nvls": True}) is None
    for extra in (
        {"ep_size": 8, "enable_nccl_nvls": True},
        {"ep_size": 8, "enable_nccl_nvls": True, "enable_flashinfer_allreduce_fusion": True},
    ):
        s = strike(extra)
        assert (s.kind, s.phase, s.ranks) == ("cublas", "cuda_graph_capture", tuple(range(8)))
    s = strike({"ep_size": 8})
    assert (s.kind, s.phase) == ("nonetype", "cuda_graph_capture")
