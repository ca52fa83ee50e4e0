"""Mechanisms added from misses of held-out 31 (projects around vLLM and SGLang, measured once untuned first), each
on lines written in the shapes of real logs (the thread says which)."""

from __future__ import annotations

from workbench.logformats import clean_line
from workbench.tracebacks import analyze


def test_a_drivers_stack_cut_inside_ray_get_gives_way_to_the_actors_interleaved_stack() -> None:
    """SkyRL#284: the driver's traceback, cut inside ``ray.get`` (it only waited), interleaved with the engine
    actor's own, cut inside vLLM's ``launch_core_engines``: the actor's stack says where it failed (start-up)."""
    a_ = "(AsyncVLLMInferenceEngine pid=891624) "
    log = "\n".join((
        '  File "/app/skyrl_train/entrypoints/main_base.py", line 288, in main',
        "    ray.get(skyrl_entrypoint.remote(cfg))",
        a_ + '  File "/usr/lib/python3.12/contextlib.py", line 144, in __exit__',
        '  File "/venv/lib/python3.12/site-packages/ray/_private/client_mode_hook.py", line 104, in wrapper',
        "    return func(*args, **kwargs)",
        a_ + "    next(self.gen)",
        a_ + '  File "/venv/lib/python3.12/site-packages/vllm/v1/engine/utils.py", line 706, in launch_core_engines',
        '  File "/venv/lib/python3.12/site-packages/ray/_private/worker.py", line 2858, in get',
        "    values, debugger_breakpoint = worker.get_objects(object_refs, timeout=timeout)",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type is None
    assert rc.innermost_frame is not None and rc.innermost_frame.function == "launch_core_engines"
    assert rc.phase == "startup_other"


def test_text_generation_inference_weights_loader_is_weight_loading() -> None:
    """text-generation-inference#1608: the shard's ``Weights.get_filename`` cannot find a tensor while the model
    is built (then "Error when initializing model"): weight loading, from TGI's own loader file."""
    w = "/opt/conda/lib/python3.10/site-packages/text_generation_server/utils/weights.py"
    log = "\n".join((
        "Traceback (most recent call last):",
        f'  File "{w}", line 257, in get_multi_weights_col',
        '    w = [self.get_sharded(f"{p}.weight", dim=0) for p in prefixes]',
        f'  File "{w}", line 63, in get_filename',
        '    raise RuntimeError(f"weight {tensor_name} does not exist")',
        "RuntimeError: weight model.layers.0.self_attn.q_proj.weight does not exist",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError" and rc.phase == "weight_loading"


def test_a_cloudwatch_csv_export_with_rsyslog_escapes_is_read_as_log_lines() -> None:
    """amazon-sagemaker-generativeai#111: CloudWatch's CSV export (epoch milliseconds, the message quoted with its
    quotes doubled) of lines rsyslog escaped (#033 for the ESC of vLLM's colours, #015 for a carriage return)."""
    row = ('1756144012376,"#033[1;36m(EngineCore_0 pid=75)#033[0;0m ERROR 08-25 10:46:52 [core.py:700]   File '
           '""/usr/lib/python3.12/dist-packages/vllm/v1/engine/core.py"", line 80, in __init__#015"')
    assert clean_line(row) == ('(EngineCore_0 pid=75) ERROR 08-25 10:46:52 [core.py:700]   File '
                               '"/usr/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 80, in __init__')
    p = "#033[1;36m(EngineCore_0 pid=75)#033[0;0m ERROR 08-25 10:46:52 [core.py:700] "
    lines = (
        f'1756144012376,"{p}  File ""/usr/lib/python3.12/dist-packages/vllm/v1/engine/core.py"", line 80, in __init__#015"',
        f"1756144012376,{p}    self.model_executor = executor_class(vllm_config)#015",
        f'1756144012376,"{p}  File ""/usr/lib/python3.12/dist-packages/vllm/executor/executor_base.py"", line 54, '
        'in __init__#015"',
    )
    a = analyze("\n".join(lines) + "\n")
    assert a.root_cause is not None and a.root_cause.exception_type is None
    assert a.root_cause.phase == "startup_other"
    assert a.final is not None and a.final.truncated


def test_a_gateways_structured_request_records_before_an_error_make_it_serving() -> None:
    """aibrix#1720: a gateway's klog records of a request it handles ('requestID="..." requestPath="/v1/chat/
    completions"'), then its error line: the failure came while serving."""
    log = "\n".join((
        'I1031 06:10:26.097871       1 gateway.go:94] "processing request" requestID="b826c66e-f8c8-48a9-b5e4-39daca741c67"',
        'I1031 06:10:26.103904       1 gateway_req_body.go:75] "request start" requestID="b826c66e-f8c8-48a9-b5e4-'
        '39daca741c67" requestPath="/v1/chat/completions" model="m" stream=false',
        "E1031 06:10:26.175809       1 zmq_client.go:214] Event consumption error for default/m: failed to process "
        "message: failed to decode event batch: failed to unmarshal event batch: msgpack : invalid code 93 decoding map",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and "failed to decode event batch" in rc.message
    assert rc.phase == "serving"


def test_a_5xx_error_body_with_its_code_first_is_the_failure() -> None:
    """aibrix#1070: the gateway's answer to a request, '{"error":{"code":500,"message":"..."}}' (code first, no
    type), under curl's verbose lines: the server's own words for what failed."""
    log = "\n".join((
        "< HTTP/1.1 500 Internal Server Error",
        "< content-length: 87",
        "* Connection #0 to host 10.0.102.94 left intact",
        '{"error":{"code":500,"message":"invalid character \'u\' looking for beginning of value"}}',
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line"
    assert rc.message == "invalid character 'u' looking for beginning of value"
