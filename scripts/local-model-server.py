"""llama.cpp's own OpenAI-compatible server (C++, streaming, tools through the chat
template) from the prebuilt `xllamacpp` wheel, for scripts/local-model: no compiler needed.

    python local-model-server.py --model M [--host H] [--port P] [--n_ctx N] [--model_alias A]
            [--threads T] [--batch_threads T] [--chat_template_file F] [--seed S] [--temp T]
        serve until SIGTERM/SIGINT; "listening on http://H:P" goes to stderr once it answers
    python local-model-server.py --probe --model M
        load the model and generate a few tokens, then exit 0: proof that the wheel runs on
        this CPU (an instruction it lacks kills the process with SIGILL instead)
"""
import argparse
import os
import signal
import sys

import xllamacpp as xlc


def params(args):
    p = xlc.CommonParams()
    p.model.path = args.model
    p.n_ctx = args.n_ctx
    # One slot: the whole window for one request at a time; a second request waits its
    # turn instead of cutting the one running (what --interrupt_requests False did).
    p.n_parallel = 1
    if args.threads > 0:
        p.cpuparams.n_threads = args.threads
    if args.batch_threads > 0:
        p.cpuparams_batch.n_threads = args.batch_threads
    p.hostnames = [args.host]
    p.port = args.port
    p.model_alias = {args.model_alias}
    if args.chat_template_file:
        # What llama-server's --chat-template-file does: the template's text replaces the
        # one in the GGUF (rendered by llama.cpp's Jinja engine, use_jinja is on).
        with open(args.chat_template_file, encoding="utf-8") as f:
            p.chat_template = f.read()
    # A fixed default seed and greedy sampling by default (a request's own "seed" and
    # "temperature" still win): the outcome is reproducible on one build, and the tool calls
    # were measured so. At llama.cpp's default 0.8, Qwen wrote 19 calls of read_file on the same
    # file in one answer to ./run's question (agentls sends no temperature unless configured).
    p.sampling.seed = args.seed
    p.sampling.temp = args.temp
    return p


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--n_ctx", type=int, default=2048)
    parser.add_argument("--model_alias", default="smollm2")
    parser.add_argument("--threads", type=int, default=0, help="generation threads (0: llama.cpp's default)")
    parser.add_argument("--batch_threads", type=int, default=0, help="prompt threads (0: llama.cpp's default)")
    parser.add_argument("--chat_template_file", default="", help="a Jinja chat template replacing the GGUF's")
    parser.add_argument("--seed", type=int, default=42, help="the default sampling seed")
    parser.add_argument("--temp", type=float, default=0.0, help="the default sampling temperature")
    parser.add_argument("--probe", action="store_true")
    args = parser.parse_args()
    server = xlc.Server(params(args))
    if args.probe:
        answer = server.handle_chat_completions(
            {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4}
        )
        if "choices" not in answer:
            sys.exit(f"the probe got no completion: {answer}")
        sys.stdout.flush()
        os._exit(0)
    print(f"listening on {server.listening_address}", file=sys.stderr, flush=True)

    def stop(*_):
        # The native server's threads would hold an orderly interpreter exit.
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
