"""The HTTP server: OpenAI-compatible and SGLang endpoints, served uvicorn-style."""

from __future__ import annotations

import http.client
import json
import logging
import os
import signal
import socket
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import sglang
from sglang.srt.entrypoints.engine import _launch_subprocesses
from sglang.srt.entrypoints.openai.protocol import (
    JSONResponse,
    RequestValidationError,
    StreamingResponse,
    dumps,
    error_response,
    parse_body,
    validation_error_response,
)
from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat
from sglang.srt.entrypoints.openai.serving_completions import OpenAIServingCompletion
from sglang.srt.managers.tokenizer_manager import SchedulerDied, TokenizerManager
from sglang.srt.metrics.collector import render_scheduler_gauges
from sglang.srt.utils import uvicorn_loggers
from simcore import stamps
from simcore import tokenizer as synth

logger = logging.getLogger(__name__)


class _GlobalState:
    tokenizer_manager: TokenizerManager
    server_args: Any
    chat: OpenAIServingChat
    completion: OpenAIServingCompletion
    server_status = "Starting"
    access_logger: logging.Logger
    created = int(time.time())


_global_state = _GlobalState()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        # uvicorn (asyncio) serves with TCP_NODELAY, so SGLang's first chunk leaves at once; without it
        # Nagle holds the first chunk behind the unacknowledged response headers until a keep-alive
        # client's delayed ACK (~20-40 ms of TTFT that only clients reusing connections see).
        # SGLANG_SIM_NAGLE=1 keeps Nagle on (bench/client_accuracy.py --against sim shows both).
        if os.environ.get("SGLANG_SIM_NAGLE") != "1":
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def version_string(self) -> str:
        return "uvicorn"

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _access(self, status: int) -> None:
        phrase = http.client.responses.get(status, "")
        host, port = self.client_address[:2]
        _global_state.access_logger.info(
            f'{host}:{port} - "{self.command} {self.path} HTTP/1.1" {status} {phrase}'
        )

    def _send_json(self, resp: JSONResponse) -> None:
        data = (
            dumps(resp.content) if resp.content_type == "application/json" else str(resp.content)
        ).encode()
        self.send_response(resp.status)
        self.send_header("content-length", str(len(data)))
        self.send_header("content-type", resp.content_type)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self._access(resp.status)

    def _send_stream(self, resp: StreamingResponse) -> None:
        self.send_response(200)
        self.send_header("content-type", resp.content_type)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self._access(200)
        where = stamps.path()
        sent: list[list[Any]] = []
        try:
            for piece in resp.chunks:
                data = piece.encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                if where:
                    sent.append([time.time(), stamps.has_output(piece)])
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            if where:
                stamps.record(where, self._t_recv, self.path.split("?", 1)[0], sent)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            if resp.on_close:
                resp.on_close()

    def _dispatch(self, method: str) -> None:
        self._t_recv = time.time()  # the request line and headers are read: the server has the request
        path = self.path.split("?", 1)[0]
        try:
            resp = self._route(method, path)
        except RequestValidationError as e:
            resp = validation_error_response(e)
        except SchedulerDied as e:
            resp = error_response(f"Internal server error: {e}", "InternalServerError", 500)
        if isinstance(resp, StreamingResponse):
            self._send_stream(resp)
        else:
            self._send_json(resp)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_HEAD(self) -> None:
        self._dispatch("GET")

    def _body(self) -> bytes:
        n = int(self.headers.get("content-length") or 0)
        return self.rfile.read(n) if n else b""

    def _route(self, method: str, path: str) -> JSONResponse | StreamingResponse:
        gs = _global_state
        sa = gs.server_args
        post_routes = {
            "/v1/chat/completions": lambda: gs.chat.handle_request(parse_body(self._body())),
            "/v1/completions": lambda: gs.completion.handle_request(parse_body(self._body())),
            "/generate": lambda: generate_request(
                parse_body(self._body()), self.headers.get("x-sglang-sim-warmup") == "1"
            ),
            "/flush_cache": lambda: JSONResponse(
                200, "Cache flushed.\n", "text/plain; charset=utf-8"
            ),
        }
        get_routes = {
            "/health": health,
            "/health_generate": health_generate,
            "/get_model_info": model_info,
            "/model_info": model_info,
            "/get_server_info": server_info,
            "/server_info": server_info,
            "/v1/models": list_models,
            "/metrics": metrics,
            "/get_load": lambda: JSONResponse(
                200,
                [
                    {
                        "dp_rank": i,
                        "num_reqs": s.get("num_running_reqs", 0) + s.get("num_queue_reqs", 0),
                        "num_waiting_reqs": s.get("num_queue_reqs", 0),
                        "num_tokens": s.get("num_used_tokens", 0),
                    }
                    for i, s in enumerate(gs.tokenizer_manager.stats)
                ],
            ),
            "/ping": lambda: JSONResponse(200, "", "text/plain; charset=utf-8"),
        }
        if sa.api_key and path.startswith("/v1/"):
            if self.headers.get("authorization") != f"Bearer {sa.api_key}":
                if method == "POST":
                    self._body()
                return JSONResponse(401, {"error": "Unauthorized"})
        if method == "POST" and path in post_routes:
            return post_routes[path]()
        if method == "GET" and path in get_routes:
            return get_routes[path]()
        if method == "GET" and path.startswith("/v1/models/"):
            return retrieve_model(path[len("/v1/models/") :])
        if method == "POST":
            self._body()
        if path in post_routes or path in get_routes:
            return JSONResponse(405, {"detail": "Method Not Allowed"})
        return JSONResponse(404, {"detail": "Not Found"})


def health() -> JSONResponse:
    if _global_state.server_status != "Up":
        return JSONResponse(503, "", "text/plain; charset=utf-8")
    return JSONResponse(200, "", "text/plain; charset=utf-8")


def health_generate() -> JSONResponse:
    if _global_state.server_status != "Up":
        return JSONResponse(503, "", "text/plain; charset=utf-8")
    tm = _global_state.tokenizer_manager
    try:
        state = tm.generate(1, 1, True, ("health", time.time()))
    except SchedulerDied:
        return JSONResponse(503, "", "text/plain; charset=utf-8")
    while True:
        item = state.q.get()
        if item is None:
            return JSONResponse(503, "", "text/plain; charset=utf-8")
        if item[1] is not None:
            return JSONResponse(200, "", "text/plain; charset=utf-8")


def generate_request(body: dict[str, Any], is_warmup: bool) -> JSONResponse:
    tm = _global_state.tokenizer_manager
    sp = body.get("sampling_params") or {}
    if "input_ids" in body and isinstance(body["input_ids"], list):
        input_len = len(body["input_ids"])
    else:
        input_len = synth.count_tokens(str(body.get("text") or ""))
    max_new = sp.get("max_new_tokens", 128)
    started = time.monotonic()
    try:
        state = tm.generate(
            input_len,
            max_new,
            bool(sp.get("ignore_eos")),
            (dumps(body.get("text")), max_new),
            is_warmup=is_warmup,
        )
    except ValueError as e:
        return error_response(str(e))
    text = []
    while True:
        item = state.q.get()
        if item is None:
            return error_response("Internal server error", "InternalServerError", 500)
        text.append(state.text.next_pieces(item[0]))
        if item[1] is not None:
            break
    finish = (
        {"type": item[1], "length": state.out_len}
        if item[1] == "length"
        else {"type": "stop", "matched": synth.EOS_TOKEN_ID}
    )
    return JSONResponse(
        200,
        {
            "text": "".join(text),
            "meta_info": {
                "id": f"{state.rid:032x}",
                "finish_reason": finish,
                "prompt_tokens": input_len,
                "weight_version": "default",
                "completion_tokens": state.out_len,
                "cached_tokens": 0,
                "e2e_latency": time.monotonic() - started,
            },
        },
    )


def model_info() -> JSONResponse:
    tm = _global_state.tokenizer_manager
    sa = _global_state.server_args
    return JSONResponse(
        200,
        {
            "model_path": sa.model_path,
            "tokenizer_path": sa.tokenizer_path,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": tm.model_config.spec.model_type,
            "architectures": tm.model_config.architectures,
        },
    )


def server_info() -> JSONResponse:
    tm = _global_state.tokenizer_manager
    sa = _global_state.server_args
    args = sa.public_dict()
    info = tm.scheduler_info
    states = []
    for st in tm.stats:
        s: dict[str, Any] = {
            **args,
            "last_gen_throughput": st.get("gen_throughput", 0.0),
            "memory_usage": {
                "weight": round(info["weight_mem"], 2),
                "kvcache": round(
                    info["max_total_num_tokens"]
                    * tm.model_config.spec.kv_bytes_per_token
                    / 1024**3,
                    2,
                ),
                "token_capacity": info["max_total_num_tokens"],
                "graph": round(info["graph_mem"], 2),
            },
            "effective_max_running_requests_per_dp": info["max_running_requests"],
        }
        if sa.speculative_algorithm and st.get("avg_spec_accept_length") is not None:
            s["avg_spec_accept_length"] = st["avg_spec_accept_length"]
        states.append(s)
    return JSONResponse(
        200,
        {
            **args,
            "status": "ready",
            "max_total_num_tokens": info["max_total_num_tokens"],
            "max_req_input_len": info["max_req_input_len"],
            "internal_states": states,
            "version": sglang.__version__,
        },
    )


def _model_card() -> dict[str, Any]:
    tm = _global_state.tokenizer_manager
    name = tm.served_model_name
    return {
        "id": name,
        "object": "model",
        "created": _global_state.created,
        "owned_by": "sglang",
        "root": name,
        "max_model_len": tm.context_len,
    }


def list_models() -> JSONResponse:
    return JSONResponse(200, {"object": "list", "data": [_model_card()]})


def retrieve_model(model: str) -> JSONResponse:
    if model != _global_state.tokenizer_manager.served_model_name:
        return JSONResponse(
            404,
            {
                "error": {
                    "message": f"The model '{model}' does not exist",
                    "type": "invalid_request_error",
                    "param": "model",
                    "code": "model_not_found",
                }
            },
        )
    return JSONResponse(200, _model_card())


def metrics() -> JSONResponse:
    sa = _global_state.server_args
    if not sa.enable_metrics:
        return JSONResponse(404, {"detail": "Not Found"})
    tm = _global_state.tokenizer_manager
    lines = render_scheduler_gauges(tm.stats, tm.served_model_name, sa.tp_size)
    lines += tm.metrics.render()
    return JSONResponse(200, "\n".join(lines) + "\n", "text/plain; version=0.0.4; charset=utf-8")


def _wait_and_warmup(server_args: Any, uv_err: logging.Logger) -> None:
    host = "127.0.0.1" if server_args.host in ("0.0.0.0", "::", "") else server_args.host
    for _ in range(120):
        try:
            conn = http.client.HTTPConnection(host, server_args.port, timeout=5)
            conn.request("GET", "/get_model_info")
            ok = conn.getresponse().status == 200
            conn.close()
            if ok:
                break
        except OSError:
            threading.Event().wait(0.05)
    if not server_args.skip_server_warmup:
        conn = http.client.HTTPConnection(host, server_args.port, timeout=600)
        body = json.dumps(
            {
                "text": "The capital city of France is",
                "sampling_params": {"temperature": 0, "max_new_tokens": 8},
            }
        )
        conn.request(
            "POST",
            "/generate",
            body,
            {"content-type": "application/json", "x-sglang-sim-warmup": "1"},
        )
        resp = conn.getresponse()
        resp.read()
        conn.close()
        if resp.status != 200:
            logger.error(f"Initialization failed. warmup error: {resp.status}")
            return
    _global_state.server_status = "Up"
    logger.info("The server is fired up and ready to roll!")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 2048

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = (
            str(self.server_address[0]),
            int(self.server_address[1]),
        )


def launch_server(server_args: Any) -> None:
    leader_conns, scheduler_info, model_config = _launch_subprocesses(server_args)
    tm = TokenizerManager(server_args, leader_conns, scheduler_info, model_config)
    gs = _global_state
    gs.tokenizer_manager, gs.server_args = tm, server_args
    gs.chat, gs.completion = OpenAIServingChat(tm), OpenAIServingCompletion(tm)
    uv_err, gs.access_logger = uvicorn_loggers(server_args)
    uv_err.info(f"Started server process [{os.getpid()}]")
    uv_err.info("Waiting for application startup.")
    uv_err.info("Application startup complete.")
    try:
        httpd = _Server((server_args.host, server_args.port), Handler)
    except OSError as e:
        uv_err.error(
            f"[Errno {e.errno}] error while attempting to bind on address "
            f"{(server_args.host, server_args.port)!r}: {(e.strerror or '').lower()}"
        )
        uv_err.info("Waiting for application shutdown.")
        uv_err.info("Application shutdown complete.")
        raise SystemExit(1) from None
    uv_err.info(
        f"Uvicorn running on http://{server_args.host}:{server_args.port} (Press CTRL+C to quit)"
    )
    threading.Thread(target=_wait_and_warmup, args=(server_args, uv_err), daemon=True).start()

    def on_term(signum: int, frame: Any) -> None:
        threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    httpd.serve_forever(poll_interval=0.2)
    uv_err.info("Shutting down")
    uv_err.info("Waiting for application shutdown.")
    uv_err.info("Application shutdown complete.")
    uv_err.info(f"Finished server process [{os.getpid()}]")
    sys.stdout.flush()
