"""Launch flags: SGLang spelling, aliases, choices and argparse errors (exit 2)."""

from __future__ import annotations

import subprocess
import sys

from simhelpers import MODEL, REPO

PARSE = (
    "import sys; sys.path.insert(0, 'workbench/sim');"
    "from sglang.srt.server_args import prepare_server_args, flag_view;"
    "a = prepare_server_args(sys.argv[1:]);"
    "print(a.tp_size, a.ep_size, a.dp_size, a.speculative_algorithm, a.enable_nccl_nvls,"
    " a.speculative_num_draft_tokens, sorted(a.given_dests))"
)


def parse(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PARSE, "--model-path", str(MODEL), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
    )


def test_aliases_and_prefix_abbreviations():
    r = parse(
        "--tp",
        "8",
        "--expert-parallel-size",
        "8",
        "--dp-size",
        "1",
        "--enable-nccl-nvls",
        "--speculative-algorithm",
        "DDTREE",
        "--speculative-draft-model",
        str(MODEL),
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("8 8 1 DDTREE True 16 ")
    r = parse("--tensor-parallel-size=4", "--ep", "2", "--decode-log", "10")
    assert r.stdout.split()[:2] == ["4", "2"] and "'decode_log_interval'" in r.stdout


def test_speculative_choices_include_dflash_and_ddtree():
    for algo in ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"):
        assert parse("--speculative-algorithm", algo).returncode == 0
    for algo in ("DFLASH", "DDTREE"):
        assert (
            parse(
                "--speculative-algorithm", algo, "--speculative-draft-model-path", str(MODEL)
            ).returncode
            == 0
        )
    r = parse("--speculative-algorithm", "DDTree")
    assert r.returncode == 2
    assert "argument --speculative-algorithm: invalid choice: 'DDTree'" in r.stderr


def test_unknown_flag_is_a_usage_error():
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench.sim.server",
            "--model-path",
            str(MODEL),
            "--tp-size",
            "8",
            "--no-such-flag",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2
    assert r.stderr.startswith("usage: server.py [-h] --model-path MODEL_PATH")
    assert r.stderr.rstrip().endswith("error: unrecognized arguments: --no-such-flag")


def test_missing_model_dir_fails_like_transformers(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "workbench.sim.server", "--model-path", str(tmp_path / "nope")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1
    assert (
        f"OSError: Incorrect path_or_model_id: '{tmp_path / 'nope'}'. Please provide either the "
        "path to a local folder or the repo_id of a model on the Hub."
    ) in r.stderr
