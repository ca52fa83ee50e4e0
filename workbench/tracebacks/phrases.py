"""The phrases engines and their libraries print with no level, or at any level, that say a failure all the same.

One table that :mod:`workbench.tracebacks.patterns` builds the error-line pattern, its needles and the quiet
stretch's anchors from, and that :mod:`workbench.tracebacks.events` reads its two kinds from.  A row added here needs
a real line in ``tests/unit/logs/test_tracebacks_prefilter.py``.
"""

from __future__ import annotations

# Phrases an engine prints with no level, or at any level, that say a failure all the same: the one table the
# error-line pattern, its needles and the quiet stretch's anchors are built from (events reads its two kinds).
# Each row: (the phrase, which every match of its pattern holds; its pattern, None for the phrase itself).
# An exception whose type the paste lost: it counts as a bare exception line would, in line order.
LOST_TYPE_PHRASES: tuple[tuple[str, str | None], ...] = (
    # ggml's CUDA backend (llama.cpp and the servers built on it): "ggml_cuda_init: failed to initialize CUDA: unknown
    # error", "..._alloc_buffer: allocating 3257.82 MiB on device 0: cudaMalloc failed: out of memory"; ahead of the
    # generic "failed to initialize ...: " and "out of memory", which need a level
    ("failed to initialize CUDA: ", None),
    ("cudaMalloc failed: ", None),
    # the NCCLCHECK macro of NCCL's examples and tests, which TensorRT-LLM's plugins copy ("Failed, NCCL error
    # .../allreducePlugin.cpp:183 'unknown result code'"): a call's failed status, just before the process exits
    ("Failed, NCCL error ", r"^Failed, NCCL error "),
    # a C++ CHECK that failed (glog, TurboMind's "[TM][FATAL] ... Check failed:")
    ("Check failed: ", None),
    # the engine's KV-cache size checks, also when the paste lost the exception's type
    ("can be stored in KV cache", None),
    ("No available memory for the cache blocks", None),
    # SGLang's wrapper of an error while capturing its graphs, also when the paste lost its type, and the hints it
    # prints under it, all a window may keep of it ("4. disable cuda graph by --disable-cuda-graph. (Not recommonded.
    # Huge perf loss)")
    ("Capture cuda graph failed: ", None),
    ("graph by --disable-cuda-graph", None),
    ("Piecewise CUDA Graph failed with error: ", None),
    # a program's own report that capturing its graphs failed, whatever its logger writes of the level ("CUDA graph
    # capture failed: 'X' object has no attribute '_warmup'")
    ("CUDA graph capture failed: ", None),
    # the dynamic loader refusing to start a program ("/usr/.../bin/executorWorker: error while loading shared
    # libraries: libnvinfer.so.10: cannot open ...")
    ("error while loading shared libraries: ", None),
    # NVSHMEM's error checks (DeepEP's transport): "ibrc.cpp:418: non-zero status: 22 ibv_modify_qp failed", then
    # each caller's "transport create connect failed", "connect EPS failed", "nvshmem setup connections failed"
    (": non-zero status: ", r": non-zero status: (?=\d+ )"),
    # (and their NULL checks: "ibgda.cpp:1889: NULL value cannot allocate mlx5dv_devx_uar", "NULL value Unable to create
    # ah.")
    (": NULL value ", r"\.(?:cpp|cu|cc|c|h):\d+: NULL value (?=\S)"),
    ("transport create connect failed", r"\btransport create connect failed\b"),
    ("connect EPS failed", r"\bconnect EPS failed\b"),
    ("ep_connect failed", r"\bep_connect failed\b"),
    # a model Triton could not load, as its model table gives the status ("UNAVAILABLE: Not found: unable to load
    # shared library: ...")
    ("UNAVAILABLE: ", r"(?<![\w.])UNAVAILABLE: (?=[A-Z])"),
)
# A failure at any level that is no exception line.
ANY_LEVEL_PHRASES: tuple[tuple[str, str | None], ...] = (
    # vLLM's own size of the KV cache's room, negative: the weights left none ("Available KV cache memory: -0.87
    # GiB"), logged at INFO just before the engine gives up (when the window holds that exception, it is the cause)
    ("KV cache memory: -", r"KV cache memory: -(?=\d)"),
    # NVIDIA's cuFile (GPUDirect Storage) API refusing a call ("cuFileBufRegister returned an error = 5016",
    # "cuFileHandleRegister failed")
    ("cuFile", r"\bcuFile(?=\w* (?:returned an error|failed|error))"),
    # tritonserver giving up building its server ("error: creating server: Internal - failed to load all models")
    ("error: creating server: ", r"^error: creating server: "),
    # a retried call whose last attempt failed too (SGLang's Rust router: "WARN - Generate request to
    # http://localhost:8001 failed (attempt 3/3)"): the retries gave up
    ("failed (attempt ", r"(?<= )failed \(attempt (?=(?P<tries>\d+)/(?P=tries)\))"),
    # ROCm's SMI library refusing a call, as a caller reports its status ("[.../topology/gpu.cpp:80] rocm smi failed with
    # RSMI_STATUS_INIT_ERROR: An error occurred during initialization")
    ("failed with RSMI_STATUS_", r"failed with RSMI_STATUS_(?=[A-Z])"),
    # a host-side C++ assertion of a kernel library (DeepGEMM's "Assertion failed: .../fp8_gemm.cuh:435, condition:
    # status == cudaSuccess"), the process aborting right after
    ("Assertion failed: ", r"^Assertion failed: (?=\S+:\d+)"),
    # DeepEP's kernels giving up on a peer ("DeepEP dispatch NVL receiver timeout, channel: 6, RDMA: 0, ...")
    ("DeepEP ", r"^DeepEP [\w ]*\btimeout\b"),
    # glibc's assert(), the process aborting right after ("llama-server: .../llama-sampler.cpp:1094: void
    # llama_sampler_dist_apply(...): Assertion `found' failed."), and a CUDA kernel's, its expression in backticks
    # ("TensorCompare.cu:109 _assert_async_cuda_kernel: Assertion `probability tensor contains either inf, nan or
    # element < 0` failed", the block and thread a paste may leave out)
    ("Assertion `", r"\bAssertion `[^\n]*?[`'] failed"),
    # NVML refusing to start (nvidia-smi, a container's hook, a server probing its GPUs): "Failed to initialize NVML:
    # Driver/library version mismatch"; and CDI refusing a GPU container a device it cannot resolve ("... OCI runtime
    # create failed: ... failed to inject CDI devices: unresolvable CDI devices nvidia.com/gpu=GPU-...")
    ("Failed to initialize NVML", r"\bFailed to initialize NVML\b"),
    ("unresolvable CDI device", r"\bunresolvable CDI devices?\b"),
    # NVIDIA's compute-sanitizer reporting a kernel's access outside any allocation ("========= Invalid __global__ write
    # of size 4 bytes", then where, which thread, how far past the nearest allocation): memcheck's error, the kernel's
    # own fault, whatever the program says after it
    ("========= Invalid __", r"^=+ Invalid __(?:global|shared|local)__ (?:read|write|atomic)\b"),
    # the kubelet giving up on a container's probe ("Startup probe failed: Get \"http://10.244.0.208:8000/health\": dial
    # tcp ...: connect: connection refused", "Liveness probe failed: HTTP probe failed with statuscode: 404")
    ("probe failed: ", r"\b(?:Startup|Liveness|Readiness) probe failed: "),
    # (and a container whose image it cannot pull: "Reason: ImagePullBackOff", "Failed to pull image ...: ErrImagePull")
    ("ImagePull", r"\b(?:ImagePullBackOff|ErrImagePull)\b"),
    # (the kubelet's or containerd's own words for it: "Failed to pull image \"docker.io/bitnami/etcd:3.5\": rpc error:
    # code = NotFound desc = failed to pull and unpack image")
    ("ailed to pull", r"\b[Ff]ailed to pull (?:and unpack )?image\b"),
    # vLLM's Ray executor still waiting, after 100 seconds or more, for the cluster to place its workers ("Waiting for
    # creating a placement group of specs for 150 seconds. specs=[{'GPU': 1.0, ...}]. Check `ray status` to see if you
    # have enough resources"; it says so every 10 seconds from the first, while a cluster that can brings its nodes up)
    ("placement group of specs for ", r"\bWaiting for creating a placement group of specs for \d{3,} seconds"),
    # (and the other hooks and steps its events report failed, a Warning row of "kubectl get events" or "describe":
    # "Warning   FailedPreStopHook   pod/deepeek-playground-0   PreStopHook failed", "FailedMount", "FailedScheduling")
    ("Failed", r"^\s*(?:\d+[smhd]\w*\s+)?Warning\s+Failed[A-Z]\w+\s+\S"),
    # ggml's assertion (llama.cpp, ollama), then an abort: "...cpp:728: GGML_ASSERT(x != y) failed", older "GGML_ASSERT:
    # .../ggml.c:4250: ne % 2 == 0"; not '!"CUDA error"', the abort after a CUDA error it printed
    ("GGML_ASSERT", r"\bGGML_ASSERT(?:\(.*\) failed|: \S+:\d+: (?!!\"CUDA error\"))"),
    # Apple's Metal driver aborting a GPU command buffer (MLX's servers: "Execution of the command buffer was aborted
    # due to an error during execution. Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)")
    ("Execution of the command buffer was aborted", None),
    # a cuBLAS call's failed status, as an engine's own GEMM wrapper prints it ("gemm.cu:635: gemm: cublasLtMatmul failed
    # (status 14) M=2048 K=2048 N=32"; the phrase is what every match holds, not the name, which warnings often hold)
    ("failed (status ", r"\bcublas\w* failed \(status (?=\d)"),
    # an HTTP call an HTTP client (httpx) saw refused, as its caller logs it whatever the level (an RL rollout's
    # "Error: Server error '503 Service Unavailable' for url 'http://.../generate', retrying...")
    ("' for url '", r"\b(?:Client|Server) error '\d{3} [^']*' for url '"),
    # Triton's Python backend quoting the exception its stub raised while loading a model (an INFO record of
    # pb_stub.cc: "Failed to initialize Python stub: AttributeError: 'AsyncLLM' object has no attribute 'engine'")
    ("Failed to initialize Python stub: ", None),
    # the Mellanox NIC's user-space driver reporting a work request the adapter completed in error (an RDMA transfer
    # failed: "mlx5: host_unknown: got completion with error:", a dump of the completion entry under it)
    ("got completion with error", r"\bmlx5: \S+: got completion with error\b"),
    # a launcher's own report that the server it started died, in a status panel with no level (vllm-cli's "✗ Server
    # process terminated unexpectedly"), or naming the server (Docker Model Runner's "llama.cpp terminated
    # unexpectedly: llama.cpp exit status: exit status 0xc0000135" in a warning)
    ("terminated unexpectedly", r"(?<=\S )terminated unexpectedly\b"),
    # a component's own report that a call of it raised ("Runner failed with exception: Runner has been initializing
    # for too long: 300 seconds", a serverless platform giving up on a server's start)
    ("failed with exception: ", r"\b[Ff]ailed with exception: (?=\S)"),
    # Ray Serve's controller giving up on a replica that stopped answering its health checks ("Didn't receive health check
    # response for replica Replica(id='rut1591v', deployment='vLLM:Qwen--Qwen3-32B', ...) after 10.0s, marking it
    # unhealthy"): the replica hung or died, whatever level the line is logged at
    ("health check response for replica", None),
    # macOS's dynamic loader refusing to start a program whose library is missing ("dyld[41630]: Library not loaded:
    # @rpath/libllama-common.0.dylib"), as Linux's "error while loading shared libraries"
    ("Library not loaded: ", r"\bdyld\[\d+\]: Library not loaded: "),
    # a check inside torch that failed, printed with no exception line ("cuda call failed lazily at initialization with
    # error: device >=0 && device < num_gpus INTERNAL ASSERT FAILED at \"../aten/src/ATen/cuda/CUDAContext.cpp\": 50")
    # (not one an exception line, or a record quoting one, carries: "Unexpected <class 'RuntimeError'>: ...")
    ("INTERNAL ASSERT FAILED at ", r"^(?![^\n]*\w(?:Error|Exception)\b)[^\n]*\bINTERNAL ASSERT FAILED at "),
    # torch finding no usable GPU as it starts CUDA, in a warning ("UserWarning: CUDA initialization: Unexpected error
    # from cudaGetDeviceCount() ... Error 803: system has unsupported display driver / cuda driver combination")
    ("UserWarning: CUDA initialization: ", None),
    # ROCm's runtime (AMD_LOG_LEVEL) failing a call on the HSA runtime (":1:rocmemory.cpp :1043: Failed to create memory
    # for IPC, failed with hsa_status: 4097")
    ("failed with hsa_status: ", None),
    # the amdgpu driver's scheduler timing out a GPU job ("amdgpu 0000:c2:00.0: ring gfx_0.0.0 timeout, signaled
    # seq=166926, emitted seq=166928"), as amdgpu_job_timedout does
    ("timeout, signaled seq=", r"\bring \S+ timeout, signaled seq="),
    # NVIDIA's fabric manager unable to reach its NVSwitches as it starts ("request to query NVSwitch device information
    # from NVSwitch driver failed with error:WARNING Nothing to do"): the GPUs' fabric never comes up
    ("from NVSwitch driver failed", None),
    # torch's CUDA out-of-memory message quoted by a program's own error line with no level ("Error during inference: CUDA
    # out of memory. Tried to allocate 730.00 MiB. GPU 0 has a total capacity of 7.57 GiB ...")
    ("CUDA out of memory. Tried to allocate ", None),
    # a CUDA driver call that failed under torch_memory_saver (SGLang's and verl's sleep and wake of an engine's memory:
    # "[torch_memory_saver.cpp] CUresult error: 2 (out of memory)  file=csrc/utils.h func=cu_mem_create line=194")
    ("CUresult error", None),
    # Ray's autoscaler unable to place what a job asked for ("(autoscaler +13s) Error: No available node types can fulfill
    # resource request {'GPU': 1.0}. Add suitable node types to this cluster to resolve this issue.")
    ("No available node types can fulfill resource request", None),
    # an Ascend AI Core reporting a kernel's memory access out of range ("The DDR address of the MTE instruction is out of
    # range"), the NPU's illegal address
    ("MTE instruction is out of range", None),
    # Open MPI's banner when its runtime could not start a rank ("It looks like orte_init failed for some reason; your
    # parallel process is likely to abort."): mpirun's ranks of TensorRT-LLM never came up
    ("orte_init failed", r"\borte_init failed\b"),
    # Ray's report of an actor task that raised while no caller took its result ("Unhandled error (suppress with
    # 'RAY_IGNORE_UNHANDLED_ERRORS=1'): ray::WorkerDict.actor_rollout_generate_sequences() (pid=6249, ...)"), the task's
    # traceback under it, often cut by the window
    ("Unhandled error (suppress with ", None),
    # a gRPC call that failed, as Go's gRPC status prints it whatever level its caller logs it at (LocalAI's "INF [rwkv]
    # Fails: could not load model: rpc error: code = Unavailable desc = error reading from server: EOF")
    ("rpc error: code = ", r"\brpc error: code = (?!OK\b)[A-Z]\w+ desc = "),
    # asyncio's create_server refusing the server's address, as uvicorn logs it or a paste keeps it alone ("[Errno 98]
    # error while attempting to bind on address ('0.0.0.0', 8000): address already in use")
    ("error while attempting to bind on address", None),
    # Apple's Metal failing a GPU command buffer under ggml ("ggml_metal_graph_compute: command buffer 0 failed with
    # status 5"), llama.cpp's own line with no level
    ("failed with status ", r"\bcommand buffer \d+ failed with status \d+"),
    # nccl-tests' own report of a failed call, per rank ("HCA-128: Test NCCL failure common.cu:1204 'unhandled cuda
    # error ...'", "Test CUDA failure common.cu:892 'out of memory'")
    ("Test NCCL failure ", r"\bTest NCCL failure \S+:\d+"),
    ("Test CUDA failure ", r"\bTest CUDA failure \S+:\d+"),
    # an Open MPI component's error, its host and pid before it ("[agzen-worker:386753] Error: coll_hcoll_module.c:312 -
    # mca_coll_hcoll_comm_query() Hcol library init failed")
    ("] Error: ", r"^\[[\w.-]+:\d+\] Error: \S+\.c:\d+ - "),
    # the NVIDIA container toolkit's hook refusing to start a GPU container (a kubelet event, docker's error: "nvidia-
    # container-cli: requirement error: unsatisfied condition: cuda>=12.8", "nvidia-container-cli: initialization
    # error: nvml error: driver not loaded")
    ("nvidia-container-cli: ", r"\bnvidia-container-cli: (?:\w+ )?error: "),
    # a GPU driver resetting an engine whose job hung (dmesg: Intel's xe "[drm] Tile0: GT0: Engine reset:
    # engine_class=ccs, ...", AMD's "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout"), as NVIDIA's
    # Xid lines report a fault
    ("Engine reset: engine_class=", None),
    ("amdgpu_job_timedout", None),
    # ROCm's runtime on a GPU page fault ("Memory access fault by GPU node-8 (Agent handle: 0x...) on address (nil).
    # Reason: Unknown."), the process aborting right after
    ("Memory access fault by GPU node", None),
    # the CUDA debugger's (and a GPU core dump's) exception code of a faulting warp ("CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS")
    ("CUDBG_EXCEPTION_", r"\bCUDBG_EXCEPTION_(?=[A-Z])"),
    # Open MPI refusing to place a job's ranks ("All nodes which are allocated for this job are already filled.",
    # "There are not enough slots available in the system to satisfy the 8 slots"): mpirun's ranks never came up
    ("are already filled", r"\bAll nodes which are allocated for this job are already filled\b"),
    ("not enough slots", r"\bThere are not enough slots available in the system\b"),
    # ggml's CUDA backend (llama.cpp, ollama...) naming the call that failed, at the head of a line, no level, before it
    # aborts ("CUDA error: an illegal memory access was encountered", then "  current device: 7, in function ...")
    ("CUDA error: ", r"^CUDA error: (?=[a-z])"),
    # c10d's socket giving up on a peer that never answered (a rendezvous or a store's read: "[c10d] waitForInput: socket
    # SocketImpl(fd=33, ...) timed out after 1800000ms"), a warning record of the rank that waited
    ("timed out after ", r"\[c10d\][^\n]{0,300}? timed out after (?=\d+ ?ms)"),
    # Ascend's runtime reporting the fault a device raised, under a CANN code or in a traceback's indented lines ("The
    # error from device(chipId:5, dieId:0), serial number is 17, hccl fftsplus task timeout occurred during task
    # execution, ..."; "... there is an exception of aivec error, core id is 9, ...")
    ("The error from device(", r"\bThe error from device\(chipId:\d+"),
    # glibc's own fatal checks, the process aborting right after ("*** buffer overflow detected ***: terminated", then
    # "*** SIGABRT received ..." and faulthandler's "Fatal Python error: Aborted"; "free(): invalid pointer", "double free
    # or corruption (out)", "malloc(): corrupted top size")
    ("detected ***", r"\*\*\* (?:buffer overflow|stack smashing) detected \*\*\*"),
    # (and its heap checks named for the chunk they found broken: "corrupted size vs. prev_size", "corrupted
    # double-linked list", "munmap_chunk(): invalid pointer", "malloc_consolidate(): invalid chunk size")
    ("(): ", r"(?<![\w.])(?:free|malloc|realloc|calloc|munmap_chunk|malloc_consolidate)\(\): "
             r"(?:invalid|corrupted|unaligned|double|memory corruption)\b"),
    ("double free or corruption", None),
    ("corrupted size vs. prev_size", r"^corrupted size vs\. prev_size\b"),
    ("corrupted double-linked list", r"^corrupted double-linked list\b"),
    # llama.cpp's loader giving up on a model file, at no level, before its callers' own failures ("llama_model_load:
    # error loading model: error loading model architecture: unknown model architecture: 'chatglm'", older builds
    # without the function's name)
    ("error loading model: ", r"(?:^|: )error loading model: (?=\S)"),
    # Triton's Python backend stub giving up on a request's batch, whatever its record's level (or the record's head
    # lost: "0603 11:27:18.631800 29219 pb_stub.cc:751] \"Failed to process the request(s) for model 'x', message: ...")
    ("Failed to process the request(s)", None),
    # Python refusing to run a module ``-m`` names ("/home/u/venv/bin/python: No module named bentoml", "/usr/bin/python3:
    # Error while finding module specification for 'vllm.entrypoints.openai.api_server' (ModuleNotFoundError: ...)")
    ("No module named ", r"\bpython[\d.]*(?:\.exe)?: No module named \S"),
    ("Error while finding module specification for ", None),
    # Go's os/exec on a child a signal ended, as a supervisor logs it at whatever level (ollama's "llama runner process
    # has terminated: signal: aborted (core dumped)", llama-swap's "cmd.Wait() returned error: signal: killed")
    ("signal: aborted", r"\bsignal: aborted\b"),
    ("signal: killed", r"\bsignal: killed\b"),
    ("signal: segmentation fault", r"\bsignal: segmentation fault\b"),
    # the OpenAI SDK's error for a server's error answer, as an application prints it at whatever level ("Error in
    # generating model output:" over "Error code: 500 - {'message': 'Internal server error'}")
    ("Error code: ", r"\bError code: [45]\d\d - [{\['\"]"),
)
