"""TokenizerManager: the main process's side of the schedulers (requests out, tokens back)."""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from sglang.srt.metrics.collector import TokenizerMetricsCollector
from simcore import tokenizer as synth

logger = logging.getLogger(__name__)


@dataclass
class ReqState:
    rid: int
    input_len: int
    text: synth.TextStream
    q: queue.SimpleQueue[Any] = field(default_factory=queue.SimpleQueue)
    created: float = field(default_factory=time.monotonic)
    first_token_at: float | None = None
    last_at: float | None = None
    out_len: int = 0
    finish_reason: str | None = None
    max_new_tokens: int = 0
    verify_ct: int = 0  # speculative verify calls that produced this request's tokens


class SchedulerDied(RuntimeError):
    pass


class TokenizerManager:
    def __init__(
        self,
        server_args: Any,
        leader_conns: list[Any],
        scheduler_info: dict[str, Any],
        model_config: Any,
    ) -> None:
        self.server_args = server_args
        self.model_config = model_config
        self.served_model_name = server_args.served_model_name
        self.context_len = scheduler_info["context_len"]
        self.max_req_input_len = scheduler_info["max_req_input_len"]
        self.scheduler_info = scheduler_info
        self.conns = leader_conns
        self.send_locks = [threading.Lock() for _ in leader_conns]
        self.rid_counter = itertools.count(1)
        self.rr = itertools.count()
        self.rid_to_state: dict[int, ReqState] = {}
        self.lock = threading.Lock()
        self.stats: list[dict[str, Any]] = [{} for _ in leader_conns]
        self.metrics = TokenizerMetricsCollector(
            self.served_model_name, speculative=server_args.speculative_algorithm is not None
        )
        self.dead = False
        for conn in leader_conns:
            threading.Thread(target=self.handle_loop, args=(conn,), daemon=True).start()

    # -- requests ------------------------------------------------------------------------------
    def validate(self, input_len: int, max_new_tokens: int | None) -> None:
        """SGLang's _validate_one_request messages (ValueError -> HTTP 400)."""
        if input_len >= self.context_len:
            raise ValueError(
                f"The input ({input_len} tokens) is longer than the model's context length "
                f"({self.context_len} tokens)."
            )
        if max_new_tokens is not None and max_new_tokens + input_len >= self.context_len:
            raise ValueError(
                "Requested token count exceeds the model's maximum context length of "
                f"{self.context_len} tokens. You requested a total of {max_new_tokens + input_len} "
                f"tokens: {input_len} tokens from the input messages and {max_new_tokens} tokens "
                "for the completion. Please reduce the number of tokens in the input messages or "
                "the completion to fit within the limit."
            )

    def generate(
        self,
        input_len: int,
        max_new_tokens: int | None,
        ignore_eos: bool,
        prompt_key: Any,
        is_warmup: bool = False,
    ) -> ReqState:
        if self.dead:
            raise SchedulerDied("The scheduler is not running.")
        self.validate(input_len, max_new_tokens)
        limit = self.context_len - input_len - 1
        max_new = limit if max_new_tokens is None else max_new_tokens
        seed = synth.request_seed(self.server_args.sim_seed, prompt_key)
        stop_at = None if ignore_eos else synth.natural_length(seed)
        rid = next(self.rid_counter)
        state = ReqState(rid, input_len, synth.TextStream(seed), max_new_tokens=max_new)
        with self.lock:
            self.rid_to_state[rid] = state
        group = next(self.rr) % len(self.conns) if not is_warmup else 0
        with self.send_locks[group]:
            self.conns[group].send(("req", rid, input_len, max_new, stop_at, seed, is_warmup))
        return state

    def abort(self, state: ReqState) -> None:
        with self.lock:
            known = self.rid_to_state.pop(state.rid, None)
        if known is not None and not self.dead:
            for i, conn in enumerate(self.conns):
                with self.send_locks[i]:
                    conn.send(("abort", state.rid))
            self.metrics.num_aborted_requests_total += 1

    # -- outputs -------------------------------------------------------------------------------
    def handle_loop(self, conn: Any) -> None:
        group = self.conns.index(conn)
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                self.dead = True
                with self.lock:
                    states = list(self.rid_to_state.values())
                for st in states:
                    st.q.put(None)
                return
            if msg[0] == "out":
                now = time.monotonic()
                # (rid, new tokens, finish reason[, verify calls]): a 3-tuple made no verify call
                for rid, n, finish, *verify in msg[1]:
                    with self.lock:
                        found = self.rid_to_state.get(rid)
                        if found is not None and finish is not None:
                            del self.rid_to_state[rid]
                    if found is None:
                        continue
                    self.observe(found, n, finish, now, verify[0] if verify else 0)
                    found.q.put((n, finish))
            elif msg[0] == "stats":
                self.stats[group] = msg[1]

    def observe(
        self, st: ReqState, n: int, finish: str | None, now: float, verify: int = 0
    ) -> None:
        m = self.metrics
        st.verify_ct += verify
        if st.first_token_at is None:
            st.first_token_at = now
            m.ttft.observe(now - st.created)
        elif n > 0 and st.last_at is not None:
            m.itl.observe((now - st.last_at) / n, count=n)
        st.last_at = now
        st.out_len += n
        if finish is not None:
            st.finish_reason = finish
            m.e2e.observe(now - st.created)
            m.prompt_tokens_total += st.input_len
            m.generation_tokens_total += st.out_len
            m.spec_verify_calls_total += st.verify_ct
            m.num_requests_total += 1
