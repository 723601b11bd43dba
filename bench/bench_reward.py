"""Benchmark: the reward model's speed and how far it agrees with labels it never saw.

1. **Latency** of scoring, p50 and p95 over repeated calls in this process, per decision and
   per rollout (synthetic rollouts of 36 and 1,000 events, `viz_app.synth`), at batch 1 and
   64, for the default model (trained on the planted tuning split, as in 3) and for a tiny
   transformers reward model (a one-layer Llama, random weights, saved to a temporary folder:
   its figures are the serving path's cost, not a model's quality). Target: the default model
   within 20 ms a 36-event rollout at p50.
2. **Throughput** of `orchviz reward serve` (real uvicorn on 127.0.0.1) with 1 and 2 workers:
   36-event rollouts posted to /score by 8 client threads for a fixed time, rollouts a second.
3. **Held-out agreement** of the default model: trained (`viz_app.reward.train.train`) on the
   planted tuning split's ground truth as blind labels, measured on the held-out split (other
   seeds, two domains never seen): pairwise accuracy over answered decisions whose rewards
   differ, and Krippendorff's alpha of the answer each score reads as against the ground
   truth, each with a bootstrap 95 % interval over traces, beside a baseline that reads the
   decision's length alone (fitted on the same tuning labels).
4. **The demo campaign**: the twelve demo traces with the answers a person wrote by reading
   them (`tests/fixtures/demo_expected_suggestions.yaml`, every other target sound), the
   model's cross-validated figures (folds of whole traces) as `orchviz reward train` prints
   them, and the planted-trained model's figures on those demos.

Run: `python bench/bench_reward.py [--repeats 200] [--seconds 10] [--resamples 1000]`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

import numpy as np  # noqa: E402
import yaml  # noqa: E402
from timing import machine  # noqa: E402

from viz_app.analysis import analyze  # noqa: E402
from viz_app.io.native import trace_from_dict  # noqa: E402
from viz_app.labels.agreement import suggestion_agreement  # noqa: E402
from viz_app.labels.rubric import default_rubric, reward_of, targets  # noqa: E402
from viz_app.reward.decisions import reward_questions, trace_decisions  # noqa: E402
from viz_app.reward.scoring import SklearnScorer, write_model_file  # noqa: E402
from viz_app.reward.train import (_bootstrap, _length_baseline, answer_pairs,  # noqa: E402
                                  build_training_set, held_out_suggestions, HeldOut,
                                  nearest_answer, report_lines, train)
from viz_app.suggest import rules  # noqa: E402
from viz_app.synth import synth_trace  # noqa: E402

QUESTIONS = ("stopping_correctness", "aggregation_quality", "spawn_necessity")


def percentiles(times: list[float]) -> str:
    ms = sorted(t * 1000 for t in times)
    p50 = statistics.median(ms)
    p95 = ms[min(len(ms) - 1, int(round(0.95 * (len(ms) - 1))))]
    return f"p50 {p50:8.2f} ms  p95 {p95:8.2f} ms"


def timed(step, repeats: int) -> list[float]:
    step()  # warm
    found = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        found.append(time.perf_counter() - start)
    return found


def planted_labelled(split: str, per_cell: int = 1):
    from reward_cases import planted_labels
    from viz_app import planted

    pairs = []
    for case in planted.cases(split, per_cell):
        trace = trace_from_dict(case.trace, case.name)
        pairs.append((trace, {(f.event_id, f.question): f.value for f in case.faults}))
    return pairs, planted_labels(pairs)


def latency(scorer, name: str, repeats: int, big_batch: bool = True) -> None:
    """Each call scores rollouts it has not seen: fresh trace objects (a trace's analysis is
    kept per object, and a server reads every rollout anew), so a rollout's time includes
    finding its decisions."""
    rubric = default_rubric()
    raw_small = [synth_trace(4, 36, seed=s) for s in range(64)]
    raw_large = [synth_trace(30, 1000, seed=s) for s in range(64)]

    def fresh(raws, n):
        made = iter([trace_from_dict(raws[k % len(raws)], f"r-{k}") for k in range(n)])
        return lambda: next(made)

    small = [trace_from_dict(r, f"d-{k}") for k, r in enumerate(raw_small)]
    decisions = [d for t in small for d in trace_decisions(t, rubric)][:64]
    large0 = trace_from_dict(raw_large[0], "count")
    print(f"\n== latency, {name} (version {scorer.version}); {repeats} calls each")
    print(f"36-event rollouts hold {len(trace_decisions(small[0], rubric))} decisions, "
          f"1,000-event ones {len(trace_decisions(large0, rubric))}")
    n_small_64 = max(5, repeats // 10)
    n_large = max(5, repeats // 10)
    n_large_64 = max(3, repeats // 50)
    one_small = fresh(raw_small, repeats + 1)
    many_small = fresh(raw_small, 64 * (n_small_64 + 1))
    one_large = fresh(raw_large, n_large + 1)
    rows = [("per decision, batch 1", lambda: scorer.score_decisions(decisions[:1]), repeats),
            ("per decision, batch 64", lambda: scorer.score_decisions(decisions), repeats),
            ("36-event rollout, batch 1", lambda: scorer.score_rollouts([one_small()]),
             repeats),
            ("36-event rollouts, batch 64",
             lambda: scorer.score_rollouts([many_small() for _ in range(64)]), n_small_64),
            ("1,000-event rollout, batch 1", lambda: scorer.score_rollouts([one_large()]),
             n_large)]
    if big_batch:
        many_large = fresh(raw_large, 64 * (n_large_64 + 1))
        rows.append(("1,000-event rollouts, batch 64",
                     lambda: scorer.score_rollouts([many_large() for _ in range(64)]),
                     n_large_64))
    for label, step, n in rows:
        found = timed(step, n)
        print(f"{label:<32} {percentiles(found)}  ({n} calls)")


def throughput(model_file: Path, seconds: float) -> None:
    from conftest import free_port

    body = json.dumps(synth_trace(4, 36, seed=7)).encode()
    print(f"\n== throughput of orchviz reward serve: 36-event rollouts on /score, 8 client "
          f"threads, {seconds:g} s each")
    for workers in (1, 2):
        port = free_port()
        log = tempfile.NamedTemporaryFile(prefix="reward-serve-", suffix=".log", delete=False)
        process = subprocess.Popen(
            [sys.executable, "-m", "viz_app", "reward", "serve", "--model", str(model_file),
             "--port", str(port), "--workers", str(workers), "--max-queries", "4096"],
            stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONPATH=str(REPO)))
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 300
            seen: set[int] = set()
            while time.monotonic() < deadline and len(seen) < workers:
                if process.poll() is not None:
                    raise SystemExit(f"the server exited: {Path(log.name).read_text()[-2000:]}")
                def ask(_):
                    try:
                        return json.loads(urllib.request.urlopen(
                            url + "/health", timeout=5).read())["worker"]
                    except OSError:
                        return None

                from concurrent.futures import ThreadPoolExecutor

                with ThreadPoolExecutor(8) as pool:  # every worker up (or a minute gone)
                    seen |= {w for w in pool.map(ask, range(16)) if w is not None}
                if not seen or (len(seen) < workers and time.monotonic() < deadline - 240):
                    time.sleep(1.0)
                elif len(seen) < workers:
                    break
            time.sleep(2.0)
            done = [0]
            lock = threading.Lock()
            stop_at = time.monotonic() + seconds

            def client():
                while time.monotonic() < stop_at:
                    request = urllib.request.Request(url + "/score", data=body, method="POST")
                    urllib.request.urlopen(request, timeout=60).read()
                    with lock:
                        done[0] += 1

            threads = [threading.Thread(target=client) for _ in range(8)]
            start = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            took = time.monotonic() - start
            print(f"{workers} worker{'s' if workers > 1 else ' '}: {done[0] / took:7.1f} "
                  f"rollouts/s ({done[0]} in {took:.1f} s)")
        finally:
            process.terminate()
            process.wait(timeout=30)


def held_out(model, pairs, labels, resamples: int, title: str, train_built=None) -> None:
    """The model's (and the length baseline's) figures on traces it never saw."""
    rubric = default_rubric()
    asked = reward_questions(rubric)
    traces = {t.trace_id: t for t, _ in pairs}
    built = build_training_set(rubric, labels, [], traces)
    data = built.data
    scorer = SklearnScorer(model, rubric)
    examples = list(range(len(data.examples)))
    scores = scorer.score_decisions([data.examples[i].decision() for i in examples])
    base = np.zeros(len(examples))
    if train_built is not None:  # the length baseline, fitted on the training labels
        joined = train_built.data.model_copy(deep=True)
        offset = len(joined.examples)
        joined.examples += data.examples
        train_at = np.array(sorted(train_built.data.rewards))
        base = _length_baseline(joined, train_at, [offset + i for i in examples])
    names = sorted(traces)
    group = {n: k for k, n in enumerate(names)}
    print(f"\n== {title}: {len(traces)} traces, {len(data.rewards)} answered decisions")
    for sub in sorted({asked[q].sub_decision for _, q, *_ in built.answered}):
        items = sorted(i for i in data.rewards if data.examples[i].sub_decision == sub)
        truth = np.array([data.rewards[i] for i in items])
        g = np.array([group[data.examples[i].trace_id] for i in items])
        line = []
        for label, found in (("model", scores), ("length baseline", base)):
            correct, a, b = answer_pairs(found[items], truth)
            line.append(f"{label} {_bootstrap(correct, g[a], g[b], len(names), resamples, 0).text()}")
        print(f"{sub}: pairwise accuracy over answers ({len(items)} decisions): "
              + ";  ".join(line))
        for qid in sorted({q for _, q, *_ in built.answered if asked[q].sub_decision == sub}):
            made = []
            for (i, q, sha, event_id, _v) in built.answered:
                if q != qid:
                    continue
                for label, found in (("reward-model", scores), ("length-baseline", base)):
                    means = model.answer_means.get(q) if label == "reward-model" else None
                    made += held_out_suggestions([HeldOut(
                        trace_id=data.examples[i].trace_id, trace_sha256=sha,
                        event_id=event_id, question=q, score=float(found[i]),
                        value=nearest_answer(asked[q], float(found[i]), means))],
                        model.version if label == "reward-model" else "baseline", name=label)
            result = suggestion_agreement(rubric, [x for x in labels if x["question"] == qid],
                                          made, question=qid, resamples=resamples)
            for row in result.rows:
                if row.rater != "reviewers":
                    print(f"  {qid} {row.rater:<16} alpha {_stat(row.alpha)}  kappa "
                          f"{_stat(row.kappa)}  ({row.targets} targets)")


def _stat(found) -> str:
    if found.value is None:
        return "-"
    if found.low is None:
        return f"{found.value:.3f}"
    return f"{found.value:.3f} [{found.low:.3f}, {found.high:.3f}]"


def demo_campaign():
    expected = yaml.safe_load((REPO / "tests" / "fixtures" /
                               "demo_expected_suggestions.yaml").read_text("utf-8"))
    rubric = default_rubric()
    from viz_app.io.detect import read_any

    pairs, labels = [], []
    for path in sorted((REPO / "demo_traces").glob("*.json")):
        trace = read_any(path)[0]
        pairs.append((trace, {}))
        for t in targets(rubric, analyze(trace)):
            for q in t.questions:
                if q not in QUESTIONS + ("message_necessity",):
                    continue
                value = expected.get(trace.trace_id, {}).get(t.key, {}).get(q, rules.FINE[q])
                labels.append({"trace_id": trace.trace_id, "trace_sha256": trace.sha256,
                               "event_id": t.key, "question": q, "value": value,
                               "reward": reward_of(rubric.question(q), value),
                               "reviewer": "person", "source": "human",
                               "suggestions_visible": False,
                               "created_at": "2026-01-01T00:00:00+00:00",
                               "label_id": f"{trace.trace_id}/{t.key}/{q}"})
    return pairs, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--skip-hf", action="store_true")
    parser.add_argument("--only-hf", action="store_true",
                        help="only the tiny transformers model's latency")
    args = parser.parse_args()
    print(machine())
    print(f"load average at start: {os.getloadavg()}")
    rubric = default_rubric()
    if args.only_hf:
        hf_latency(rubric, args.repeats)
        print(f"\nload average at end: {os.getloadavg()}")
        return

    tuning, tuning_labels = planted_labelled("tuning")
    start = time.process_time()
    model = train(rubric, tuning_labels, [], {t.trace_id: t for t, _ in tuning},
                  resamples=args.resamples)
    print(f"\n== trained on the planted tuning split: {len(tuning)} traces, "
          f"{time.process_time() - start:.1f} s CPU (with its cross-validation)")
    for line in report_lines(model):
        print(line)
    tuning_built = build_training_set(rubric, tuning_labels, [],
                                      {t.trace_id: t for t, _ in tuning})

    scorer = SklearnScorer(model, rubric)
    latency(scorer, "the default model", args.repeats)

    with tempfile.TemporaryDirectory() as tmp:
        model_file = Path(tmp) / "model.json"
        write_model_file(model, model_file)
        throughput(model_file, args.seconds)

    held, held_labels = planted_labelled("held-out")
    held_out(model, held, held_labels, args.resamples,
             "held out: the planted held-out split (seeds from 200,000, six domains, two "
             "never seen in tuning)", tuning_built)

    demos, demo_labels = demo_campaign()
    held_out(model, demos, demo_labels, args.resamples,
             "the demo campaign, scored by the planted-trained model", tuning_built)
    demo_model = train(rubric, demo_labels, [], {t.trace_id: t for t, _ in demos},
                       resamples=args.resamples)
    print("\n== the demo campaign, cross-validated (folds of whole demo traces)")
    for line in report_lines(demo_model):
        print(line)

    if not args.skip_hf:
        hf_latency(rubric, args.repeats)
    print(f"\nload average at end: {os.getloadavg()}")


def hf_latency(rubric, repeats: int) -> None:
    try:
        import torch

        from viz_app.reward.scoring import HFScorer

        hf_dir = make_tiny_hf(Path(tempfile.mkdtemp()))
    except ImportError as err:
        print(f"\n== the tiny transformers model: skipped ({err})")
        return
    torch.set_num_threads(1)  # as each server worker runs it
    latency(HFScorer(hf_dir, rubric), "the tiny transformers model (1 layer, width 32, "
            "random weights; one torch thread, as a server worker)", max(10, repeats // 20),
            big_batch=False)


def make_tiny_hf(folder: Path) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForSequenceClassification, \
        PreTrainedTokenizerFast

    texts = [p.read_text() for p in (REPO / "demo_traces").glob("*.json")]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=2000, special_tokens=["<pad>", "<s>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<pad>", bos_token="<s>",
                                  eos_token="</s>", unk_token="<unk>", model_max_length=4096)
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    LlamaForSequenceClassification(LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
        pad_token_id=tok.pad_token_id, num_labels=1)).save_pretrained(folder)
    return folder


if __name__ == "__main__":
    main()
