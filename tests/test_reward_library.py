"""The scoring as library calls: `viz_app.reward.compute_score` with verl's signature, the reward
function TRL's GRPOTrainer takes, both from a model file in the process or from a reward server;
and a transformers sequence-classification model (what TRL's RewardTrainer saves) served
instead of the default model, made here tiny and random in a temporary folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import demo_paths
from reward_cases import small_model_file
from viz_app.reward import RewardCallError, compute_score, reward_function, score_rollout
from viz_app.reward.scoring import HFScorer, SklearnScorer, load_scorer, read_model_file

pytest.importorskip("sklearn", reason="the reward model needs scikit-learn (the test extra)")

STOP = "[t=9] orchestrator orchestrator_decision (stop): All results are in; stop."
PROMPT = ("Task: t1\nOrchestration:\n[t=1] orchestrator spawn -> worker_1: Spawn worker_1 to "
          "find the price.\n")


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return small_model_file(tmp_path_factory.mktemp("reward-lib") / "model.json")


def test_compute_score_has_verl_s_signature_and_scores_the_response(model):
    scorer = SklearnScorer(read_model_file(model))
    found = compute_score("orchviz/demo", STOP, "correct", {"prompt": PROMPT},
                          model=str(model))
    assert isinstance(found, float)
    assert found == pytest.approx(scorer.score_texts([STOP], [PROMPT])[0])
    # the prompt is context, never scored: a response alone in another prompt scores otherwise
    assert compute_score("orchviz/demo", STOP, None, {}, model=str(model)) == \
        pytest.approx(scorer.score_texts([STOP])[0])
    # verl's chat prompts are message lists
    chat = [{"role": "user", "content": PROMPT}]
    assert compute_score("d", STOP, None, {"prompt": chat}, model=str(model)) == \
        pytest.approx(found)


def test_compute_score_of_a_whole_rollout_is_its_team_reward(model, tmp_path):
    path = demo_paths()[0]
    by_path = compute_score("d", "", None, {"trace_path": str(path)}, model=str(model))
    by_dict = compute_score("d", "", None, {"trace": json.loads(path.read_text())},
                            model=str(model))
    rollout = score_rollout(path.read_bytes(), model=str(model))
    assert by_path == by_dict == pytest.approx(rollout["team_reward"])
    assert rollout["decisions"] and rollout["model_version"] == \
        read_model_file(model).version


def test_the_model_may_come_from_the_environment(model, monkeypatch):
    monkeypatch.setenv("ORCHVIZ_REWARD_MODEL", str(model))
    assert compute_score("d", STOP, None) == pytest.approx(
        compute_score("d", STOP, None, model=str(model)))
    monkeypatch.delenv("ORCHVIZ_REWARD_MODEL")
    monkeypatch.delenv("ORCHVIZ_REWARD_URL", raising=False)
    with pytest.raises(RewardCallError, match="no reward model named"):
        compute_score("d", STOP, None)


def test_trl_s_reward_function_gives_one_reward_per_completion(model):
    orchviz_reward = reward_function(model=str(model))
    completions = [STOP, "[t=2] orchestrator aggregate: The price is 12 USD.", "anything"]
    rewards = orchviz_reward(prompts=[PROMPT] * 3, completions=completions,
                             completion_ids=[[1], [2], [3]])
    scorer = SklearnScorer(read_model_file(model))
    assert rewards == pytest.approx(scorer.score_texts(completions, [PROMPT] * 3))
    # conversational: [{"role": ..., "content": ...}] prompts and completions
    chat = orchviz_reward(prompts=[[{"role": "user", "content": PROMPT}]] * 3,
                          completions=[[{"role": "assistant", "content": c}]
                                       for c in completions])
    assert chat == pytest.approx(rewards)


def test_a_server_answers_the_library_calls_alike(model, tmp_path):
    from test_reward_serve import TOKEN, start, stop

    server = start(tmp_path, model)
    try:
        local = compute_score("d", STOP, None, {"prompt": PROMPT}, model=str(model))
        remote = compute_score("d", STOP, None, {"prompt": PROMPT},
                               url=server.url + "/get_reward", token=TOKEN)
        assert remote == pytest.approx(local)
        path = demo_paths()[1]
        assert compute_score("d", "", None, {"trace_path": str(path)}, url=server.url,
                             token=TOKEN) == pytest.approx(
            compute_score("d", "", None, {"trace_path": str(path)}, model=str(model)))
        with pytest.raises(RewardCallError, match="answered 401: this reward server asks for"):
            compute_score("d", STOP, None, url=server.url, token="wrong")
    finally:
        stop(server)
    with pytest.raises(RewardCallError, match="cannot be reached"):
        compute_score("d", STOP, None, url=server.url, token=TOKEN, timeout=5)


# -- a transformers model, served instead -------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory) -> Path:
    """A one-layer Llama with a one-output score head and a byte-level BPE, randomly
    initialised and saved to a temporary folder: the shape of what TRL's RewardTrainer
    saves, with nothing fetched from a hub."""
    pytest.importorskip("torch", reason="--hf needs torch (pip install torch)")
    pytest.importorskip("transformers", reason="--hf needs transformers")
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForSequenceClassification, \
        PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-rm")
    texts = [p.read_text() for p in demo_paths()]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=500, special_tokens=["<pad>", "<s>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<pad>", bos_token="<s>",
                                  eos_token="</s>", unk_token="<unk>", model_max_length=4096)
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    net = LlamaForSequenceClassification(LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
        pad_token_id=tok.pad_token_id, num_labels=1))
    net.save_pretrained(folder)
    return folder


def test_a_transformers_reward_model_scores_each_decision(tiny_hf):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    scorer = load_scorer(str(tiny_hf))  # a folder with config.json is a transformers model
    assert isinstance(scorer, HFScorer) and len(scorer.version) == 16
    from viz_app.io.detect import read_any

    trace = read_any(demo_paths()[9])[0]
    (rollout,) = scorer.score_rollouts([trace])
    assert rollout.decisions and rollout.model_version == scorer.version
    # each decision's reward is the model's own logit on its context and words
    from viz_app.reward.decisions import trace_decisions

    first = trace_decisions(trace, scorer.rubric)[0]
    tok = AutoTokenizer.from_pretrained(tiny_hf)
    net = AutoModelForSequenceClassification.from_pretrained(tiny_hf).eval()
    with torch.no_grad():
        logit = net(**tok([first.context + first.text], return_tensors="pt")).logits[0, 0]
    assert rollout.decisions[0].reward == pytest.approx(float(logit), abs=1e-5)
    texts = scorer.score_texts([STOP, "free words"], [PROMPT, ""])
    assert len(texts) == 2 and all(isinstance(x, float) for x in texts)
    # the library call serves it the same way
    assert compute_score("d", STOP, None, {"prompt": PROMPT}, model=str(tiny_hf), hf=True) \
        == pytest.approx(texts[0], abs=1e-6)


def test_a_folder_that_is_no_model_is_one_sentence(tmp_path):
    from viz_app.reward.model import RewardError

    with pytest.raises(RewardError, match="is not a transformers model folder"):
        load_scorer(str(tmp_path), hf=True)
    with pytest.raises(RewardError, match="is no model file, transformers folder or stored"):
        load_scorer(str(tmp_path / "missing.json"))
