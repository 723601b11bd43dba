"""`orchviz reward ...`: train a reward model on the team's labels, serve it to the trainers,
score a rollout with it, list the stored models (docs/trainers/reward-server.md)."""

from __future__ import annotations

import argparse
import sys

from viz_app.cli.models import ModelLine, print_model_table, training_options, training_workspace
from viz_app.cli.workspace import add_db_option, open_workspace, store_options
from viz_app.errors import OrchvizError
from viz_app.text import terminal_text


def register(verbs: argparse._SubParsersAction) -> None:
    """Add `reward` and its verbs (`train`, `serve`, `score`, `models`)."""
    top = verbs.add_parser(
        "reward", help="train a reward model on the team's labels and serve it to trainers",
        description="The team's judgement as the trainer's reward: fit a reward model on the "
        "labels of a store or campaign (`train`), serve it over HTTP in the shapes TRL, "
        "OpenRLHF and verl send (`serve`), score a rollout with it (`score`), list the stored "
        "models (`models`). docs/trainers/reward-server.md.")
    sub = top.add_subparsers(dest="reward_verb", metavar="VERB", required=True)

    p = sub.add_parser(
        "train", help="fit the reward model on a store's or campaign's labels",
        description="Fit the default reward model (scikit-learn, CPU, milliseconds a rollout: "
        "a ridge model per sub-decision O1-O5 over the decision's words, its context and the "
        "trace's structure) on the team's labels: the answers of the O1-O5 questions as "
        "rewards (an adjudication first, else the blind reviewers' answer where they agree), "
        "the decision pairs of the decision-pairs export as preferences. Prints and stores "
        "its held-out figures (folds of whole traces: pairwise accuracy, Krippendorff's alpha "
        "and Cohen's kappa against the blind human labels, 95% bootstrap intervals, beside a "
        "baseline reading the decision's length alone), under the hash of its training set.")
    training_options(p)
    p.add_argument("-o", "--output", metavar="FILE",
                   help="also write the model as one JSON file, for `reward serve --model "
                   "FILE` and `compute_score(model=FILE)` on machines without the store")
    p.set_defaults(run=train_verb)

    p = sub.add_parser(
        "serve", help="serve a reward model over HTTP (OpenRLHF's protocol, /score)",
        description="Serve a reward model with FastAPI on uvicorn (`pip install "
        "'orchviz[reward]'`): POST /get_reward (and /) speaks OpenRLHF's remote reward "
        "protocol ({\"query\": [...]} -> {\"rewards\": [...]}, its --remote_rm_url); POST "
        "/score takes a whole rollout (a trace, or any file `orchviz import` reads) and "
        "answers each orchestration decision's reward, the team reward and the model "
        "version; GET /health. Requests that arrive together are scored in one batch; a "
        "body over --max-body-bytes or a request over --deadline is refused with one "
        "sentence, and the server keeps serving.")
    p.add_argument("--model", metavar="M", required=True,
                   help="a model file (`reward train -o FILE`), a transformers "
                   "sequence-classification folder (with --hf), or with --db a stored "
                   "version (16 hex digits) or `newest`")
    add_db_option(p, default=None, help="the store holding the model (a SQLAlchemy URL or "
                  "a SQLite file)")
    p.add_argument("--hf", action="store_true", help="--model is a folder of a "
                   "sequence-classification model (what TRL's RewardTrainer saves), read "
                   "with transformers from local files only")
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: "
                   "127.0.0.1, this machine only; 0.0.0.0 opens it to the network: give "
                   "--token-env then)")
    p.add_argument("--port", type=int, default=8000, help="the port (default: 8000)")
    p.add_argument("--workers", type=int, default=1, help="server processes sharing the "
                   "port, each with its own copy of the model (default: 1)")
    p.add_argument("--token-env", metavar="VAR", help="the environment variable holding a "
                   "shared token every request must carry (Authorization: Bearer TOKEN, or "
                   "?token= in the URL); the token itself is never an argument")
    p.add_argument("--max-body-bytes", type=int, default=8 * 1024 * 1024,
                   help="the largest request body read (default: 8 MiB)")
    p.add_argument("--max-queries", type=int, default=1024,
                   help="the most queries in one request (default: 1024)")
    p.add_argument("--max-query-chars", type=int, default=200_000,
                   help="the longest query (default: 200,000 characters)")
    p.add_argument("--deadline", type=float, default=30.0,
                   help="seconds a request may take before it is answered 503 (default: 30)")
    p.add_argument("--batch-wait", type=float, default=0.005,
                   help="seconds a request's queries wait for others to be scored with "
                   "(default: 0.005)")
    p.add_argument("--audit", metavar="LOCATION", help="log every rollout /score scores, with "
                   "the model's version and rewards, to a pool at LOCATION (a folder or an "
                   "fsspec URL such as s3://bucket/prefix), for reviewers to label")
    p.add_argument("--ray", action="store_true", help="deploy on Ray Serve instead of "
                   "uvicorn (`pip install 'ray[serve]'`): --workers replicas behind Ray's "
                   "proxy on --host/--port, for a cluster whose rollout workers outnumber one "
                   "server")
    p.set_defaults(run=serve_verb)

    p = sub.add_parser(
        "score", help="score rollouts with a reward model, without a server",
        description="Each orchestration decision's reward, the team reward and the model's "
        "version for every trace in the files given (any format `orchviz import` reads), as "
        "JSON Lines on stdout.")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--model", metavar="M", required=True, help="as `reward serve --model`")
    add_db_option(p, default=None, help="the store holding the model (a SQLAlchemy URL or a "
                  "SQLite file)")
    p.add_argument("--hf", action="store_true", help="--model is a transformers folder")
    p.set_defaults(run=score_verb)

    p = sub.add_parser("models", help="list the stored reward models",
                       description="Every stored reward model, newest first: its version, "
                       "when it was trained, what it learnt from and its held-out alpha per "
                       "sub-decision.")
    store_options(p, rubric=False)
    p.set_defaults(run=models_verb)


def train_verb(args: argparse.Namespace) -> int:
    """Fit, measure and store the reward model."""
    from viz_app.cli.traces import progress_bar
    from viz_app.reward.scoring import write_model_file
    from viz_app.reward.train import report_lines

    ws = training_workspace(args)
    model, added = ws.rewards.train(args.campaign, folds=args.folds, resamples=args.resamples,
                                    seed=args.seed, progress=progress_bar("reading labelled "
                                                                          "traces"))
    if args.output:
        write_model_file(model, args.output)
    if args.json:
        print(model.model_dump_json(include={"model_id", "kind", "campaign", "versions",
                                             "weights_sha256", "report"}, indent=2))
        return 0
    for line in report_lines(model):
        print(terminal_text(line))
    print(("stored" if added else "already stored (the same training set)")
          + f" as version {model.version}"
          + (f", and written to {terminal_text(args.output)}" if args.output else "")
          + f"; serve it: orchviz reward serve --db {terminal_text(args.db)} --model "
          f"{model.version}")
    return 0


def serve_verb(args: argparse.Namespace) -> int:
    """Serve a model until stopped."""
    import os

    from viz_app.reward.server import ServeSettings, serve

    for name in ("max_body_bytes", "max_queries", "max_query_chars", "workers"):
        if getattr(args, name) < 1:
            raise OrchvizError(f"--{name.replace('_', '-')} is a count: 1 or more")
    if args.deadline <= 0:
        raise OrchvizError("--deadline is a number of seconds above 0")
    token = ""
    if args.token_env:
        token = os.environ.get(args.token_env, "")
        if not token:
            raise OrchvizError(f"--token-env names {args.token_env}, which is not set or "
                               "empty: set it to the shared token")
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise OrchvizError("the reward server needs FastAPI and uvicorn: pip install "
                           "'orchviz[reward]'") from None
    settings = ServeSettings(model=args.model, db=args.db, hf=args.hf, token=token,
                             max_body_bytes=args.max_body_bytes, max_queries=args.max_queries,
                             max_query_chars=args.max_query_chars, deadline=args.deadline,
                             batch_wait=args.batch_wait, audit=args.audit)
    if args.ray:
        from viz_app.reward.ray_serve import run

        run(settings, host=args.host, port=args.port, replicas=args.workers)
        return 0
    print(f"orchviz reward server on http://{args.host}:{args.port} "
          f"({args.workers} worker{'s' if args.workers != 1 else ''}"
          + (", token required" if token else "") + ")", file=sys.stderr)
    serve(settings, host=args.host, port=args.port, workers=args.workers)
    return 0


def score_verb(args: argparse.Namespace) -> int:
    """Score every trace of the files given."""
    import orjson

    from viz_app.io.detect import read_any
    from viz_app.reward.scoring import load_scorer

    scorer = load_scorer(args.model, db=args.db, hf=args.hf)
    for file in args.files:
        traces = read_any(file)
        for score in scorer.score_rollouts(traces):
            sys.stdout.write(orjson.dumps(score.model_dump()).decode() + "\n")
    return 0


def models_verb(args: argparse.Namespace) -> int:
    """List the stored reward models."""
    lines = []
    for m in open_workspace(args, traces=()).rewards.models():
        r = m.report
        alphas = [f"{s.sub_decision} {row.alpha.value:.2f}"
                  for s in (r.sub_decisions if r else []) for row in s.agreement
                  if row.rater == "reward-model" and row.alpha.value is not None]
        lines.append(ModelLine(
            m.version, m.campaign, m.created_at,
            f"{r.answered if r else 0} answered, {r.pairs if r else 0} pairs",
            f"held-out alpha {', '.join(alphas) or '-'}"))
    print_model_table(lines, none="no reward model is stored: train one with `orchviz reward "
                      "train`")
    return 0
