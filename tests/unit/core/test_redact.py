"""Redaction before truncation, token formats in any position, and no false positives on the real
version strings of pip and the NVIDIA driver (issue 14, item 4)."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from workbench.errors import CommandFailed
from workbench.hosts import Result, _check
from workbench.redact import ADDRESS, REDACTED, Redactor, clip
from workbench.runbooks.cause import first_line
from workbench.runbooks.report import export_fallback, export_html
from workbench.runbooks.sanitize import sanitize
from workbench.runs import Run
from workbench.trials import failure_words

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
VERSION_FILES = sorted([*(FIXTURES / "redact").glob("pip_*.txt"),
                        *(FIXTURES / "captured").glob("**/pip_list.out"),
                        *(FIXTURES / "captured").glob("**/driver_version.out"),
                        *(FIXTURES / "captured").glob("**/nvcc_version.out"),
                        *(FIXTURES / "captured" / "nvidia-smi").glob("*.out"),
                        *(FIXTURES / "bench" / "nvidia-smi").glob("*.txt"),
                        *(FIXTURES / "bench" / "nvidia-smi").glob("*.csv")])
# One example of each token format, built at run time so no scanner flags this file.
TOKENS = {
    "openai": "sk-" + "Ab3d" * 12,
    "openai project": "sk-proj-" + "Xy7_" * 12,
    "anthropic": "sk-ant-api03-" + "Qw9e" * 12,
    "huggingface": "hf_" + "Zq8Lm" * 7,
    "github classic": "ghp_" + "a1B2c" * 8,
    "github fine-grained": "github_pat_" + "11AB" * 10,
    "aws": "AKIA" + "Q7WX3ZK2M9PL4T8R",
    "nvidia": "nvapi-" + "k9Jx-" * 10,
    "slack": "xoxb-" + "1234567890-" * 2 + "AbCdEfGhIj",
    "gitlab": "glpat-" + "zX8y" * 5,
    "google": "AIza" + "Sy9" * 11 + "xy",
    "jwt": "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}


def windows(secret: str, n: int = 8) -> set[str]:
    return {secret[i:i + n] for i in range(len(secret) - n + 1)}


def assert_nowhere(blob: str, *secrets_: str, where: str = "") -> None:
    """Not a secret, nor any 8 characters of one (a cut leaves a piece)."""
    for s in secrets_:
        pieces = [w for w in windows(s) if w in blob]
        assert not pieces, f"{len(pieces)} piece(s) of a secret in {where or 'the output'}"


# -- versions are not addresses -------------------------------------------------------------------


def test_the_version_fixtures_are_real_and_have_four_part_versions():
    text = "\n".join(p.read_text(errors="replace") for p in VERSION_FILES)
    assert len(VERSION_FILES) >= 6 and "opencv-python-headless==5.0.0.93" in text
    assert "nvidia-cudnn-cu13       9.19.0.56" in text and "580.159.04" in text


@pytest.mark.parametrize("path", VERSION_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_real_pip_and_driver_output_is_left_alone(path):
    text = path.read_text(errors="replace")
    assert Redactor().text(text) == text


@pytest.mark.parametrize("text", [
    "nvidia-cudnn-cu12==9.1.0.70", "nvidia-cudnn-cu12 >= 9.1.0.70", "cuDNN version: 9.1.0.70",
    "nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl", "torch==2.5.1.0+cu124",
    "torch 2.5.1.0+cu124", "Package    Version\n---------- -------\nnvidia-cufile 1.15.1.6",
])
def test_version_strings_stay(text):
    assert Redactor().text(text) == text


@pytest.mark.parametrize("text", [
    "master_addr=192.0.2.2, mq_connect", "host_ip=192.0.2.2 (local)", "HostName 192.0.2.2", "ssh root@10.1.2.3",
    "at 10.77.3.4", "gpu-a 10.0.0.1\ngpu-b 10.0.0.2", "inet 10.1.2.3/24 brd 10.1.2.255", "peer 10.9.8.7",
    "tcp://10.1.2.3:29500", "nvidia-cufile 1.15.1.6\nserver 10.4.4.4",
])
def test_addresses_next_to_versions_still_go(text):
    out = Redactor().text(text)
    assert ADDRESS in out and not any(a in out for a in ("192.0.2.2", "10.1.2.3", "10.77.3.4", "10.0.0.1",
                                                          "10.9.8.7", "10.4.4.4"))


# -- token formats anywhere --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(TOKENS))
@pytest.mark.parametrize("shape", [
    "{t}", "export X={t}", "using {t} now", '{{"value": "{t}"}}', "curl 'https://x.org/v1?key={t}&a=1'",
    "value='{t}',", "({t})", "line1\n{t}\nline3", "RuntimeError: invalid credential {t}: 401",
])
def test_token_formats_are_found_in_any_position(kind, shape):
    token = TOKENS[kind]
    out = Redactor().text(shape.format(t=token))
    assert REDACTED in out
    assert_nowhere(out, token)


@pytest.mark.parametrize("text", [
    "sk-learn", "the task-manager-for-everything", "risk-assessment-framework-2024", "Bearer token expired",
    "hf_transformers_config_for_the_model", "--speculative-num-draft-tokens 8", "AKIA is not a key",
    "Authorization header missing", "eyJ alone", "ghp_short",
])
def test_look_alikes_stay(text):
    assert Redactor().text(text) == text


@pytest.mark.parametrize("text, kept", [
    ("Authorization: Bearer abcdefghijklmnop1234", "Authorization: Bearer "),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic "),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", ""),
])
def test_credentials_in_headers_and_keys(text, kept):
    out = Redactor().text(text)
    assert out.startswith(kept) and REDACTED in out and "dXNlcjpw" not in out and "MIIEow" not in out


# -- redaction before truncation ---------------------------------------------------------------------


@pytest.fixture
def canary() -> str:
    """A known secret (given by reference, no recognisable format), longer than every cut (500)."""
    return "wbcanary" + secrets.token_urlsafe(450)


def test_clip_redacts_before_it_cuts(canary):
    r = Redactor([canary])
    for width in (20, 90, 140, 200, 500):
        for tail in (False, True):
            out = clip(f"invalid key {canary} {TOKENS['openai']} rest", width, r, tail=tail)
            assert len(out) <= width
            assert_nowhere(out, canary, TOKENS["openai"])


def test_a_secret_cut_before_redaction_is_still_found(canary):
    r = Redactor([canary])
    for cut in (canary[:47] + "...", canary[:200] + "…", "..." + canary[-30:], canary[:9] + "\n" + canary[-9:],
                json.dumps(canary[:100])):
        assert_nowhere(r.text(f"error: {cut} (exit 1)"), canary)


def test_every_message_cut_redacts_first(canary):
    token = TOKENS["huggingface"]
    message = f"HTTP 401: token {token} rejected; key {canary} invalid"
    r = Redactor([canary])
    outputs = {"failure_words": failure_words("RuntimeError", message), "first_line": first_line(message, 90)}
    with pytest.raises(CommandFailed) as exc:
        _check(Result(f"curl -H 'Authorization: Bearer {token}' --key {canary}", "", "401", 1, "h"), True)
    outputs["CommandFailed"] = str(exc.value)
    for where, text in outputs.items():
        assert_nowhere(r.text(text), canary, token, where=where)
        assert_nowhere(text, token, where=where)  # a format is recognised before the cut, no redactor needed


def test_every_writer_of_a_run(tmp_path, canary):
    """result.json, tables, the sanitized notebook, report.html (both kinds) and the live stdout echo."""
    r = Redactor.for_params({"secret_env": ["WB_CANARY"]}, environ={"WB_CANARY": canary})
    tokens = " ".join(TOKENS.values())
    cut = canary[:160] + "..."
    run = Run.create("t", data_dir=tmp_path, redactor=r)
    message = f"RuntimeError: bad key {canary} {tokens}"
    run.write_result({"status": "failed", "conclusion": failure_words("RuntimeError", message),
                      "failure": {"kind": "cell_error", "message": message, "evalue": cut},
                      "trials": [{"message": cut, "reason": clip(message, 200)}]})
    run.table("trials", pd.DataFrame([{"message": message, "log_excerpt": cut, "edits": [["--api-key", canary]]}]))
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    nb.cells = [nbformat.v4.new_code_cell("run()", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text=f"{message}\n{cut}\n"),
        nbformat.v4.new_output("error", ename="RuntimeError", evalue=cut, traceback=[message])])]
    clean = sanitize(nb, r, {})
    nbformat.write(clean, str(run.dir / "notebook.ipynb"))
    export_html(clean, run.dir, redactor=r, result=run.result())
    export_fallback(tmp_path / "fallback", {"status": "failed", "conclusion": message}, cut, redactor=r)

    import io

    from workbench.runbooks.progress import RunProgress

    out = io.StringIO()
    echo = RunProgress("bisect", r, total_cells=1, stream=out, live=False)  # the kernel's lines on stderr
    for chunk in (message[:50], message[50:] + "\n", cut + "\n"):
        echo.write(chunk)
    echo.close()
    blobs = {p.name: p.read_text(errors="replace") for p in [*run.dir.iterdir(), *(tmp_path / "fallback").iterdir()]}
    blobs["trials.parquet (read back)"] = pd.read_parquet(run.dir / "trials.parquet").to_json()
    blobs["stdout"] = out.getvalue()
    assert {"result.json", "trials.parquet", "notebook.ipynb", "report.html"} <= set(blobs) and echo.lines == 2
    for where, blob in blobs.items():
        assert_nowhere(blob, canary, *TOKENS.values(), where=where)


def test_a_list_of_values_under_a_secret_flag_is_learnt_and_redacted() -> None:
    """A sweep's grid tries several values of one flag: {"--api-key": [X, Y]} hides both, anywhere."""
    grid = {"--api-key": ["grid-key-canary-1", "grid-key-canary-2"], "--tp-size": ["4", "8"]}
    r = Redactor.for_params({"grid": grid})
    assert r.obj({"grid": grid}) == {"grid": {"--api-key": [REDACTED, REDACTED], "--tp-size": ["4", "8"]}}
    text = r.text("started with --api-key=grid-key-canary-2; the other grid-key-canary-1")
    assert "grid-key-canary" not in text
