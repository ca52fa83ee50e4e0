"""The forty-second stop's round (held-outs 221-223): a line set in Markdown emphasis, a 4xx answer a client
printed, a spawned child re-running its parent's main module, the model registry importing a class."""

from __future__ import annotations

from workbench.tracebacks import analyze

REC = "ERROR 11-25 06:52:24 engine.py:366] "


def test_an_exception_line_in_markdown_bold_is_the_exception() -> None:
    """vllm#10193: the reporter set the record's exception line in bold and italics ('**_..._**')."""
    text = (f'{REC}  File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/utils.py", line 218, '
            f"in _load_module\n{REC}    raise ValueError(msg)\n"
            f"**_{REC}ValueError: There is no module or parameter named 'embed_tokens' in Qwen2EmbeddingModel_**\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "ValueError"
    assert rc.message == "There is no module or parameter named 'embed_tokens' in Qwen2EmbeddingModel"
    # glibc's own stars, a blank inside them, stay: "*** Error in `python3': double free or corruption ***"
    glibc = "*** Error in `python3': double free or corruption (!prev): 0x00007f3c ***\n"
    rc = analyze(glibc).root_cause
    assert rc is not None and "double free" in (rc.message or "")


def test_a_4xx_answer_a_client_printed_is_the_requests_failure_and_a_servers_info_record_of_one_is_not() -> None:
    """gpustack#4435: curl's output, a 400 body whose message says what the server could not do."""
    curl = ('cat output.mp3\n{"error":{"message":"TTS model did not produce audio output.","type":"BadRequestError",'
            '"param":null,"code":400}}\n')
    rc = analyze(curl).root_cause
    assert rc is not None and rc.kind == "log_line" and rc.phase == "serving"
    assert rc.message == "TTS model did not produce audio output."
    # a gateway's body with its code first and more keys after its message (SillyTavern#3048's llama.cpp)
    first = ('{"error":{"code":400,"message":"Error: dry_sequence_breakers must be a non-empty array of strings",'
             '"type":"invalid_request_error"}}\n')
    rc = analyze(first).root_cause
    assert rc is not None and rc.message == "Error: dry_sequence_breakers must be a non-empty array of strings"
    info = ('INFO 05-01 10:00:00 [serving_chat.py:1] {"error":{"message":"This model\'s maximum context length is '
            '4096 tokens","type":"BadRequestError","param":null,"code":400}}\n')
    assert analyze(info).root_cause is None


def test_a_spawned_child_failing_as_it_re_runs_the_main_module_is_start_up() -> None:
    """vllm#19189: the engine's worker spawned, its preparation re-running the user's script, cut inside runpy."""
    text = ("DEBUG 06-04 16:44:21 [llm_engine.py:134] Enabling multiprocessing for LLMEngine.\n"
            "Traceback (most recent call last):\n"
            '  File "<string>", line 1, in <module>\n'
            '  File "/usr/lib/python3.12/multiprocessing/spawn.py", line 122, in spawn_main\n'
            "    exitcode = _main(fd, parent_sentinel)\n"
            '  File "/usr/lib/python3.12/multiprocessing/spawn.py", line 131, in _main\n'
            "    prepare(preparation_data)\n"
            '  File "/usr/lib/python3.12/multiprocessing/spawn.py", line 246, in prepare\n'
            "    _fixup_main_from_path(data['init_main_from_path'])\n"
            '  File "/usr/lib/python3.12/multiprocessing/spawn.py", line 297, in _fixup_main_from_path\n'
            "    main_content = runpy.run_path(main_path,\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.phase == "startup_other"


REGISTRY = "/usr/local/lib/python3.11/site-packages/vllm/model_executor/models/registry.py"
IMPORT = (f'  File "{REGISTRY}", line 741, in load_model_cls\n    mod = importlib.import_module(self.module_name)\n'
          '  File "/usr/lib/python3.11/importlib/__init__.py", line 126, in import_module\n'
          "    return _bootstrap._gcd_import(name[level:], package, level)\n"
          "ModuleNotFoundError: No module named 'vllm_omni.models.qwen3_tts'\n")


def test_the_registry_importing_a_model_class_loads_no_weight() -> None:
    """gpustack#4612: the registry's inspection of a model class, its module imported: start-up, not the weights;
    the same import under the loader's get_model is the weights' step."""
    inspect = (f"Traceback (most recent call last):\n  File \"{REGISTRY}\", line 728, in <lambda>\n"
               "    lambda: _ModelInfo.from_model_cls(self.load_model_cls())\n" + IMPORT)
    rc = analyze(inspect).root_cause
    assert rc is not None and rc.phase == "startup_other"
    loader = ("Traceback (most recent call last):\n"
              '  File "/usr/local/lib/python3.11/site-packages/vllm/model_executor/model_loader/utils.py", line 90, '
              "in get_model_architecture\n    model_cls, arch = model_config.registry.resolve_model_cls(architectures)\n"
              f'  File "{REGISTRY}", line 760, in resolve_model_cls\n    model_cls = self._try_load_model_cls(arch)\n'
              f'  File "{REGISTRY}", line 700, in _try_load_model_cls\n    return model.load_model_cls()\n' + IMPORT)
    rc = analyze(loader).root_cause
    assert rc is not None and rc.phase == "weight_loading"
