"""Mechanisms added after held-out 16 was measured (issue 15, fifteenth round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.tracebacks import analyze

# xinference#2634: an OCR-like paste of a vLLM v0 traceback, frames and code with no indentation, words split
# apart, and one frame whose opening quote is doubled
_GARBLED = ('File "/usr/local/lib/python3.10/dist-packages/vllm/engine/llm_engine.py", line 586, in _init_tokenizer\n'
            "return init tokenizer from configs(\n"
            'File ""/usr/local/lib/python3.10/dist-packages/vllm/transformers_utils/tokenizer_group/tokenizer_group.py",'
            " line 30, in from_config\n"
            "return cls(**init_kwargs\n")


def test_a_frame_whose_opening_quote_a_paste_doubled_keeps_its_file_and_function() -> None:
    rc = analyze(_GARBLED).root_cause
    assert rc is not None and rc.innermost_frame is not None
    assert rc.innermost_frame.function == "from_config"
    assert rc.innermost_frame.file.endswith("tokenizer_group/tokenizer_group.py")
    # a frame of an empty file name keeps its quotes: the doubled quote is skipped only before a path
    rc = analyze('Traceback (most recent call last):\n  File "", line 1, in <module>\nValueError: x\n').root_cause
    assert rc is not None and rc.innermost_frame is not None and rc.innermost_frame.function == "<module>"


def test_vllm_v0_building_its_tokenizer_group_is_start_up() -> None:
    """xinference#2634: the same window's frames, LLMEngine._init_tokenizer → the tokenizer group's from_config,
    and no other frame of the engine that would name its step."""
    rc = analyze(_GARBLED).root_cause
    assert rc is not None and rc.phase == "startup_other"
    clean = _GARBLED.replace('File ""', 'File "')
    rc = analyze(clean).root_cause
    assert rc is not None and rc.phase == "startup_other"
